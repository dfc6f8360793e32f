// dpdk_auto_progress.cc: FI_PROGRESS_AUTO.  Progress loops serve every
// port that has a domain opened with automatic progress: one, or one per
// lcore of FI_DPDK_PROGRESS_LCORES.  Each runs on a DPDK worker lcore
// (rte_eal_remote_launch) when it is idle, else on a thread of its own.
// Ports join the loops in turn (each has a loop of its own), and a port
// split in lanes (PortContext: a queue pair with the endpoints and CQs
// that use it, under its own lock; a net_ring steered by sender) is
// shared out: its lanes with endpoints go to the loops in turn, counted
// from the port's own loop.  So each loop passes over its own queues, one
// loop at a time a lane (a lane moves when lanes before it gain or lose
// their endpoints; a loop idle for a while may help a lane left alone:
// PortContext::help_lanes_left_alone), and no lock is held across ports.
// A pass is the same PortContext::progress() that fi_cq_read runs under
// manual progress, so the two modes share one data path.
#include <pthread.h>
#include <rte_cycles.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_pause.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "drivers/ofi/dpdk_clock.h"
#include "drivers/ofi/dpdk_log.h"
#include "drivers/ofi/dpdk_port.h"

namespace ofi_dpdk::ofi {
namespace {

// A thread shares its core with the application: after this many passes
// that found nothing to receive it sleeps, so an idle process does not
// burn a core.  A dedicated lcore never sleeps (poll-mode, as DPDK intends).
constexpr unsigned kIdlePassesBeforeSleep = 256;
constexpr auto kIdleSleep = std::chrono::microseconds(20);

// One progress loop: `index` of `count`, on lcore `wanted` (-1: the
// first idle worker) or a thread.
class ProgressLoop {
 public:
  ProgressLoop(unsigned index, unsigned count, int wanted)
      : index_(index), count_(count), wanted_(wanted) {}
  ProgressLoop(const ProgressLoop&) = delete;
  ProgressLoop& operator=(const ProgressLoop&) = delete;
  // A program that exits with domains still open: stop the loop before
  // the thread object goes (a joinable std::thread would terminate us).
  ~ProgressLoop() { stop(); }

  // `whole_port_loop`: the loop that passes over the port while it is one
  // lane.
  void add(PortContext* port, unsigned whole_port_loop) {
    std::lock_guard guard(ports_lock_);
    ports_.push_back({port, whole_port_loop});
  }
  // Once removed under ports_lock_, the loop no longer touches the port.
  void remove(PortContext* port) {
    std::lock_guard guard(ports_lock_);
    std::erase_if(ports_, [port](const Served& served) { return served.port == port; });
  }

  void start() {
    stopping_.store(false);
    lcore_ = pick_lcore();
    if (lcore_ >= 0) {
      DPDK_INFO(FI_LOG_DOMAIN, "automatic progress on lcore %d (loop %u of %u)\n", lcore_,
                index_ + 1, count_);
      return;
    }
    thread_ = std::thread([this] { run(/*may_sleep=*/true); });
    DPDK_INFO(FI_LOG_DOMAIN,
              "automatic progress on a thread (loop %u of %u): no idle DPDK worker lcore%s\n",
              index_ + 1, count_,
              wanted_ >= 0 ? " (the lcore asked for, FI_DPDK_PROGRESS_LCORE(S), is not one)" : "");
  }

  void stop() {
    stopping_.store(true);
    if (lcore_ >= 0) {
      rte_eal_wait_lcore(static_cast<unsigned>(lcore_));
      lcore_ = -1;
    } else if (thread_.joinable()) {
      thread_.join();
    }
  }

  int lcore() const { return lcore_; }

 private:
  struct Served {
    PortContext* port;
    unsigned whole_port_loop;
  };

  static int run_on_lcore(void* self) {
    static_cast<ProgressLoop*>(self)->run(/*may_sleep=*/false);
    return 0;
  }

  // rte_eal_remote_launch belongs to the main lcore; from any other thread
  // (or when every worker is busy with the application's own work) the
  // loop runs on a thread instead.
  int pick_lcore() {
    if (rte_lcore_id() != rte_get_main_lcore()) return -1;
    unsigned id;
    RTE_LCORE_FOREACH_WORKER(id) {
      if (wanted_ >= 0 && id != static_cast<unsigned>(wanted_)) continue;
      if (rte_eal_get_lcore_state(id) != WAIT) continue;
      if (rte_eal_remote_launch(run_on_lcore, this, id) == 0) return static_cast<int>(id);
    }
    return -1;
  }

  // A pass over each of this loop's lanes, under its lock alone: the
  // application's threads on other lanes, and the other loops, go on
  // meanwhile.  Which lanes lead (have endpoints) is read from the port's
  // snapshot without a lock; under the lane's lock it is asked again.
  uint32_t pass_share(const Served& served) {
    PortContext& port = *served.port;
    if (port.lanes() == 1) {
      if (served.whole_port_loop != index_) return 0;
      std::lock_guard guard(port.lock);
      port.lane_state[0].passed_by_loop.store(index_ + 1, std::memory_order_relaxed);
      return port.progress();
    }
    const uint32_t leaders = port.leading_lanes.load(std::memory_order_relaxed);
    uint32_t received = 0;
    unsigned ordinal = 0;
    for (uint16_t lane = 0; lane < port.lanes(); ++lane) {
      if (((leaders >> lane) & 1) == 0) continue;
      // Counted from the port's own loop: a port in one lane (lane 0 the
      // whole port) is its loop's, and the ports' first lanes spread.
      if ((served.whole_port_loop + ordinal++) % count_ != index_) continue;
      std::lock_guard guard(port.lock.lane(lane));
      if (!port.leads_lane(lane)) continue;
      port.lane_state[lane].passed_by_loop.store(index_ + 1, std::memory_order_relaxed);
      received += port.progress_lane(lane, now_ns());
    }
    return received;
  }

  void run(bool may_sleep) {
    unsigned idle_passes = 0;
    while (!stopping_.load(std::memory_order_relaxed)) {
      uint32_t received = 0;
      {
        std::lock_guard guard(ports_lock_);
        for (const Served& served : ports_) received += pass_share(served);
      }
      if (received != 0) {
        idle_passes = 0;
      } else if (may_sleep && ++idle_passes >= kIdlePassesBeforeSleep) {
        std::this_thread::sleep_for(kIdleSleep);
      } else {
        rte_pause();
      }
    }
  }

  const unsigned index_, count_;
  const int wanted_;
  std::mutex ports_lock_;  // ports_; held while a pass runs, so remove() waits for it
  std::vector<Served> ports_;
  std::atomic<bool> stopping_{false};
  int lcore_ = -1;
  std::thread thread_;
};

// The loops, made at the first automatic port and kept; started while some
// port has an automatic domain.
class ProgressLoops {
 public:
  static ProgressLoops& instance() {
    static ProgressLoops loops;
    return loops;
  }

  void add(PortContext* port) {
    std::lock_guard guard(lock_);
    if (port->auto_progress_users++ != 0) return;
    if (loops_.empty()) make_loops();
    const unsigned whole_port_loop = next_whole_port_loop_++ % loops_.size();
    for (auto& loop : loops_) loop->add(port, whole_port_loop);
    if (ports_++ == 0)
      for (auto& loop : loops_) loop->start();
  }

  void remove(PortContext* port) {
    std::lock_guard guard(lock_);
    if (port->auto_progress_users == 0 || --port->auto_progress_users != 0) return;
    for (auto& loop : loops_) loop->remove(port);
    if (--ports_ == 0)
      for (auto& loop : loops_) loop->stop();
  }

  int lcore() {
    std::lock_guard guard(lock_);
    return loops_.empty() ? -1 : loops_.front()->lcore();
  }

 private:
  void make_loops() {
    const std::vector<int>& lcores = params().progress_lcores;
    if (lcores.empty()) {
      loops_.push_back(std::make_unique<ProgressLoop>(0, 1, params().progress_lcore));
      return;
    }
    for (size_t i = 0; i < lcores.size(); ++i)
      loops_.push_back(std::make_unique<ProgressLoop>(
          static_cast<unsigned>(i), static_cast<unsigned>(lcores.size()), lcores[i]));
  }

  std::mutex lock_;  // loops_, ports_, next_whole_port_loop_, the ports' auto_progress_users
  std::vector<std::unique_ptr<ProgressLoop>> loops_;
  size_t ports_ = 0;
  unsigned next_whole_port_loop_ = 0;
};

// The safety net of manual progress.  A reliable transport must retransmit
// what was lost even while the application waits somewhere else (in a
// socket read, a barrier, a sleep): the peer may be waiting for exactly that
// frame.  This thread looks at every port once per kNetPeriod and runs one
// progress pass on a port nobody has progressed for FI_DPDK_PROGRESS_NET_MS,
// if its lock is free.  An application that keeps calling fi_cq_read never meets it.
//
// It looks at SCHED_IDLE priority while every port is being progressed by
// the application: then each look finds nothing to do, and at normal
// priority it would preempt a poller on a machine with no core to spare (a
// context switch each millisecond, both ways: app/bench --pattern latency
// over a memif pair on 2 cores, 100000 round trips, interleaved runs gave
// p99 2.3-25 us, p99.9 36-61 us and 390-765 tail loss probes, against
// 1.9-6.2, 25-52 and 111-436 with the looks at idle priority;
// doc/performance.md).  Once it finds a port to progress it takes normal
// priority back, until a look finds nothing again: an application that
// computes for a while then has its retransmissions run without waiting
// for an idle core.
class ProgressNet {
 public:
  static ProgressNet& instance() {
    static ProgressNet net;
    return net;
  }

  void add(PortContext* port) {
    if (params().progress_net_ms == 0) return;
    std::lock_guard guard(lock_);
    ports_.push_back(port);
    if (!thread_.joinable()) {
      stopping_ = false;
      thread_ = std::thread([this] { run(); });
    }
  }

  void remove(PortContext* port) {
    std::unique_lock guard(lock_);
    ports_.erase(std::remove(ports_.begin(), ports_.end(), port), ports_.end());
    if (!ports_.empty() || !thread_.joinable()) return;
    stopping_ = true;
    guard.unlock();
    wake_.notify_all();
    thread_.join();
  }

  ~ProgressNet() {
    {
      std::lock_guard guard(lock_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  static constexpr auto kNetPeriod = std::chrono::milliseconds(1);
  static constexpr uint64_t kLongAbsenceNs = 500'000'000;

  // Whether this thread may go to SCHED_IDLE: only if it can come back
  // (sched(7): leaving SCHED_IDLE needs CAP_SYS_NICE or an RLIMIT_NICE
  // that allows nice 0).
  static bool may_idle() {
    rlimit nice{};
    return geteuid() == 0 || (getrlimit(RLIMIT_NICE, &nice) == 0 && nice.rlim_cur >= 20);
  }

  // Returns whether the thread now runs at `idle` priority.
  static bool set_idle(bool idle) {
    sched_param none{};
    return sched_setscheduler(0, idle ? SCHED_IDLE : SCHED_OTHER, &none) == 0 ? idle : !idle;
  }

  void run() {
    // Named for top(1) and for the test that reads its policy.
    pthread_setname_np(pthread_self(), "fi_dpdk_net");
    const bool may = may_idle();
    bool idle = false;
    std::chrono::nanoseconds period = kNetPeriod;
    std::unique_lock guard(lock_);
    while (!stopping_) {
      wake_.wait_for(guard, period, [this] { return stopping_; });
      if (stopping_) break;
      const uint64_t now = now_ns();
      const uint64_t idle_ns = uint64_t{params().progress_net_ms} * 1'000'000;
      bool needed = false;  // some port's application is away
      // While every application calls, the next look is due only when the
      // port passed over longest ago could have waited idle_ns: a look takes
      // the CPU a poller's idle yield gives up (a two-rank MPI pingpong's
      // 8-byte p99 went from ~10 to ~4 us when looks came every 2 ms, not
      // every 1).
      uint64_t next_look_ns = now + idle_ns;
      for (PortContext* port : ports_) {
        if (port->auto_progress_users.load(std::memory_order_relaxed) != 0) continue;
        if (port->lanes() > 1) {
          needed |= look_at_lanes(*port, now, idle_ns);
          next_look_ns = now;  // lanes are looked at every period
          continue;
        }
        const uint64_t last = port->last_progress_ns.load(std::memory_order_relaxed);
        const bool ours = last == port->safety_net_pass_ns;
        needed |= ours;
        // The application may have stamped a pass after `now` was read.
        if (last >= now || now - last < idle_ns) {
          if (last < now) next_look_ns = std::min(next_look_ns, last + idle_ns);
          continue;
        }
        needed = true;
        std::unique_lock port_guard(port->lock, std::try_to_lock);
        if (!port_guard.owns_lock()) continue;
        // Peers may have waited that long for an answer: if one timed out,
        // this says why (the application was away, or got no core).
        if (!ours && now - last >= kLongAbsenceNs)
          DPDK_INFO(FI_LOG_EP_DATA, "%s: nobody progressed the port for %lu ms\n",
                    port->port->name().c_str(), (now - last) / 1'000'000);
        port->progress();
        port->safety_net_pass_ns = port->last_progress_ns.load(std::memory_order_relaxed);
      }
      if (may && idle == needed) idle = set_idle(!needed);
      period = needed ? kNetPeriod
                      : std::max<std::chrono::nanoseconds>(
                            kNetPeriod, std::chrono::nanoseconds(next_look_ns - now));
    }
  }

  // The same look per lane of a port of several: a lane nobody passed over
  // for idle_ns gets a pass, if its lock is free.  Returns whether some
  // lane's application is away.
  static bool look_at_lanes(PortContext& port, uint64_t now, uint64_t idle_ns) {
    bool needed = false;
    for (uint16_t lane = 0; lane < port.lanes(); ++lane) {
      std::unique_lock guard(port.lock.lane(lane), std::try_to_lock);
      if (!guard.owns_lock() || !port.leads_lane(lane)) continue;
      const uint64_t last = port.lane_last_progress(lane);
      const bool ours = last == port.lane_net_pass_ns[lane];
      needed |= ours;
      if (last >= now || now - last < idle_ns) continue;
      needed = true;
      port.progress_lane(lane, now);
      port.lane_net_pass_ns[lane] = port.lane_last_progress(lane);
    }
    return needed;
  }

  std::mutex lock_;  // ports_, stopping_; held while a pass runs, so remove() waits for it
  std::condition_variable wake_;
  std::vector<PortContext*> ports_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace

void progress_net_add(PortContext* port) {
  ProgressNet::instance().add(port);
}
void progress_net_remove(PortContext* port) {
  ProgressNet::instance().remove(port);
}

void auto_progress_add(PortContext* port) {
  ProgressLoops::instance().add(port);
}
void auto_progress_remove(PortContext* port) {
  ProgressLoops::instance().remove(port);
}
int auto_progress_lcore() {
  return ProgressLoops::instance().lcore();
}

}  // namespace ofi_dpdk::ofi
