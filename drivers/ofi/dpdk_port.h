// dpdk_port.h: one open port and what shares it (PortContext), and its progress.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <vector>

#include "drivers/frames/framer.h"
#include "drivers/net/port.h"
#include "drivers/ofi/dpdk_clock.h"
#include "drivers/ofi/dpdk_kernel_ports.h"
#include "drivers/ofi/dpdk_limits.h"
#include "drivers/ofi/dpdk_neighbour_copies.h"
#include "drivers/ofi/dpdk_params.h"
#include "drivers/ofi/dpdk_port_lock.h"
#include "drivers/ofi/dpdk_trigger.h"
#include "lib/av/address.h"
#include "lib/proto/frame_codec.h"
#include "lib/proto/transport.h"

struct rte_mbuf;

namespace ofi_dpdk::ofi {

struct Endpoint;

static_assert(KernelPorts::kQueues >= kMaxEndpointsPerPort);

using frames::RareCount;

// One open ethdev port and what shares it: the port lock serialises the
// data path of every endpoint on the port, and the endpoint table is the
// software demultiplexer's map from queue id to endpoint.
//
// Lanes.  On a port whose device lets the sender choose the queue a frame
// arrives on (net::Steering::kSender: a net_ring of several queue pairs,
// where TX queue q delivers to RX queue q), each queue pair is a lane with
// a lock of its own, and "the port lock" is every lane's lock in order.
// The endpoints that share a CQ or a counter, and the queue pairs they
// receive on, are put in one lane (assign_lanes, at each fi_enable and
// fi_close); a data-path call, a CQ or counter read and its progress pass
// then take that lane's lock only and poll that lane's queues, so threads
// whose endpoints share nothing no longer take turns.  What lanes share is
// written under the whole port lock (the AV, the endpoint table, lane
// assignment) or is atomic (the mbuf pool, RareCounts, kept_frames); a
// sender writes its frame into its destination's queue under that
// queue's transmit lock.  Everything else (IP on the port, connection
// management, triggered operations, shared contexts, scalable endpoints)
// keeps the port in one lane.
struct PortContext final : proto::FrameKeeper, frames::Owner {
  std::unique_ptr<net::Port> port;
  LaneLocks lock;
  // Per lane (indexed by the lane's first queue pair): what a pass over the
  // lane and its readers keep.  A cache line each.
  struct alignas(64) LaneState {
    std::atomic<uint64_t> last_progress_ns{0};
    uint64_t idle_since_ns = 0;  // idle_poll's, 0: the last poll found work
    // The passes CQ reads ran on the lane, and the CQ whose read ran the
    // latest (dpdk_cq.cc's take_entries); compared, never dereferenced.
    uint64_t reader_passes = 0;
    const void* last_pass_reader = nullptr;
    uint64_t shared_passes = 0;  // reads that took another's pass instead
    // The automatic progress loop (1, 2, ...) whose own share last had
    // this lane, or the port while it is one lane (lane_state[0]); 0: none.
    std::atomic<uint32_t> passed_by_loop{0};
  };
  std::array<LaneState, kMaxLanes> lane_state;
  // The lane of each queue pair (the first queue pair of its lane); all 0
  // on a port of one lane.  Written with the whole port lock held.
  std::array<uint16_t, kMaxLanes> lane_of_queue{};
  // A sender's lock on the queue it writes into (its destination's, of any
  // lane): net_ring's rings take one writer at a time.  Ports of several
  // lanes only.
  struct alignas(64) TransmitLock {
    PortLock lock;
  };
  std::array<TransmitLock, kMaxLanes> transmit_locks;
  uint16_t lanes() const { return lock.count(); }
  // Whether every enabled endpoint is in lane 0 (assign_lanes): then lane
  // 0's lock keeps every data-path caller out, and a pass under it is a
  // pass over the whole port (triggers, held frames and all).  A pass
  // under another lane's lock then finds no endpoint of its lane (a CQ
  // whose endpoints closed may still name that lane): it stays a lane pass.
  bool one_lane = true;
  uint16_t effective_lane(uint16_t lane) const {
    return lanes() == 1 || (one_lane && lane == 0) ? kWholePort : lane;
  }
  // The queue pairs an enabled endpoint receives on (assign_lanes): on a
  // port of lanes, the only ones frames come to, and so the only ones a
  // pass polls and the only lanes the helpers look at.
  // Until the lanes split every frame goes through queue pair 0, as on a
  // port of one queue pair.
  uint32_t occupied_queues = 0;
  bool polls(uint16_t queue) const {
    return lanes() == 1 || (one_lane ? queue == 0 : ((occupied_queues >> queue) & 1) != 0);
  }
  // The queue pair an endpoint on `hw_queue` sends on when its frames do
  // not go into their destinations' queues (Endpoint::flush).
  uint16_t own_transmit_queue(uint16_t hw_queue) const {
    return lanes() > 1 && one_lane ? 0 : hw_queue;
  }
  // Whether `queue` is the first of a lane with endpoints: the lane a
  // helper passes over by that queue's lock.  Some lane's lock held.
  bool leads_lane(uint16_t queue) const { return lane_of_queue[queue] == queue && polls(queue); }
  // The queues that lead_lane(), a bit each, as assign_lanes last left
  // them: read without a lock by the progress loops to share the lanes
  // out (each asks leads_lane again under the lane's lock).
  std::atomic<uint32_t> leading_lanes{1};
  // Lanes are split only once a data-path call waits for lane 0's lock
  // while another application thread called last (LaneGuard): one thread
  // gains nothing from them and would pay for passes over lanes its calls
  // do not reach, and threads that never meet need none.  (The progress
  // loop's and the safety net's passes do not count.)  Until then every
  // endpoint is in lane 0.
  bool lanes_wanted = false;
  const void* last_caller = nullptr;  // its thread pointer; lane 0's lock
  // Splits the port (lane 0's lock held, the port in one lane); returns
  // whether its lanes changed (the caller's object may be in another now).
  bool split_lanes();
  // Puts each enabled endpoint, and the CQs and counters bound to it, in a
  // lane (sets their `lane`).  Whole port lock held.
  void assign_lanes();
  // The queue pair frames for endpoint queue `queue` arrive on, on a port
  // steered by sender.
  uint16_t queue_pair_of(uint16_t queue) const { return queue % port->queue_pairs(); }
  // Written through place_endpoint / remove_endpoint only, which keep
  // endpoint_end: each progress pass visits the slots below it, not all 64.
  std::array<Endpoint*, kMaxEndpointsPerPort> endpoints{};
  uint16_t endpoint_end = 0;  // one past the highest occupied slot
  void place_endpoint(uint16_t queue, Endpoint* ep) {
    endpoints[queue] = ep;
    endpoint_end = std::max<uint16_t>(endpoint_end, static_cast<uint16_t>(queue + 1));
  }
  void remove_endpoint(uint16_t queue) {
    endpoints[queue] = nullptr;
    while (endpoint_end > 0 && endpoints[endpoint_end - 1] == nullptr) --endpoint_end;
  }
  std::span<Endpoint* const> open_endpoints() const { return {endpoints.data(), endpoint_end}; }
  // Queue ids a scalable endpoint holds for its contexts, open or not
  // (dpdk_sep.cc): no other endpoint may claim them.
  std::bitset<kMaxEndpointsPerPort> held;
  // The UDP ports of the queues endpoints or `held` have, held in the
  // kernel where it shares the port's address (dpdk_kernel_ports.h): taken
  // with a queue, let go when neither has it any more.  Lock held.
  KernelPorts kernel_ports;
  void release_queue_port(uint16_t queue) {
    if (queue < kMaxEndpointsPerPort && endpoints[queue] == nullptr && !held[queue])
      kernel_ports.release(queue);
  }
  // Beside another process's af_xdp port: when the last kernel_ports
  // .recheck_xdp ran (the pass runs it every KernelPorts::kXdpRecheckNs).
  uint64_t xdp_rechecked_ns = 0;
  void recheck_xdp(uint64_t now);
  RareCount rx_no_endpoint;
  // The device queue a frame was read from (kNoPolledQueue for frames that
  // never left this process): deliver() tells, per endpoint, whether its
  // frames came on its own queue, which is what rte_flow steering promises.
  static constexpr uint16_t kNoPolledQueue = 0xFFFF;
  // Engine calls that ran out of memory for a record (std::bad_alloc,
  // caught in progress: it never reaches the application or the progress
  // loop); the frame is lost like a dropped one.
  RareCount no_memory;
  // Domains on this port opened with FI_PROGRESS_AUTO: while non-zero the
  // progress loop drives the port and fi_* calls need not.
  std::atomic<uint32_t> auto_progress_users{0};
  // When a pass over the whole port last ran (now_ns()); last_progress()
  // is the latest of it and the lanes' own: the manual-progress safety net
  // (dpdk_auto_progress.cc) steps in on ports left alone too long.
  std::atomic<uint64_t> last_progress_ns{0};
  uint64_t last_progress() const;
  // The same for one lane: its own pass or a pass over the whole port.
  uint64_t lane_last_progress(uint16_t lane) const {
    return std::max(last_progress_ns.load(std::memory_order_relaxed),
                    lane_state[lane].last_progress_ns.load(std::memory_order_relaxed));
  }
  // The stamp the safety net's own last pass left: while it is still the
  // last one, the application has not come back.  The net's thread alone
  // reads and writes it.
  uint64_t safety_net_pass_ns = 0;
  std::array<uint64_t, kMaxLanes> lane_net_pass_ns{};  // the same per lane

  // Frames from one endpoint of this port to another, delivered by the next
  // progress pass instead of the device: a NIC does not hand a frame back
  // to the port that sent it (FI_LOCAL_COMM).  Bounded like a TX ring.
  static constexpr size_t kLoopbackFrames = 1024;
  // (Whether they go through the device instead: Framer::loops_back.)
  std::vector<rte_mbuf*> looped;

  ~PortContext();
  // Polls the port, hands each frame to its endpoint, runs the endpoints'
  // transport timers and sends what they produced.  Lock held.  Returns the
  // frames received.  `now` is the caller's clock read (now_ns()): one
  // read per API call.
  uint32_t progress(uint64_t now) { return pass(kWholePort, now); }
  uint32_t progress() { return progress(now_ns()); }
  // The same for one lane (its lock held, or the whole port's): its queues
  // and endpoints only.  kWholePort is progress().
  uint32_t progress_lane(uint16_t lane, uint64_t now) { return pass(lane, now); }
  uint32_t pass(uint16_t lane, uint64_t now, bool helping = false);
  // After an idle pass of `lane`: a pass over each other lane nobody passed
  // over for kLaneLeftAloneNs, if its lock is free.  One thread that polls
  // one endpoint's CQ so still moves the others it talks to, as on a port
  // of one lane; threads that poll their own lanes never meet here.
  static constexpr uint64_t kLaneLeftAloneNs = 100'000;
  void help_lanes_left_alone(uint16_t lane, uint64_t now);
  bool in_lane(const Endpoint* ep, uint16_t lane) const;
  // The link's changes the port counted (net::Port::link_changes) as of
  // the last whole pass, and when it last went down: each change is
  // logged, and a link that comes back has its endpoints' retransmissions
  // go at once (proto::Engine::link_restored).  Lock held.
  uint32_t link_changes_seen = 0;
  uint64_t link_down_since_ns = 0;
  void note_link_change(uint64_t now);
  // Triggered operations of this port's endpoints, in the order they go:
  // by threshold, then as posted (dpdk_trigger.cc).  Lock held.
  std::vector<TriggeredOp> triggered;
  // Posts those whose counter reached their threshold.  Lock held.
  void run_due_triggers();
  // Forgets `ep`'s (it closes: they never ran).  Lock held.
  void drop_triggers(const Endpoint* ep);
  // Checks one received frame and hands it to its endpoint; frees it.
  // `polled_queue`: the device queue it was read from, or kNoPolledQueue.
  void receive(rte_mbuf* frame, uint64_t now, uint16_t polled_queue = kNoPolledQueue);
  // Runs an engine call of the progress pass, counting (never passing on)
  // a std::bad_alloc.
  template <typename Call>
  void contain(Call&& call);
  void warn_no_memory() const;  // once per port, at the first
  // Mid-pass: each endpoint of `lane` answers the frames it took
  // (Engine::answer) and sends its outbox.
  void answer(uint16_t lane, uint64_t now);
  // proto::FrameKeeper: an endpoint keeps a received frame whose segment
  // waits ahead of a gap, if the mbuf is of the port's own pool, up to an
  // eighth of it (the rest stays for the RX ring).  Otherwise the segment
  // is copied: a sender's mbufs (shared port, net_ring) are its to reuse.
  bool keep(void* frame) override;
  void release(void* frame) override;
  std::atomic<uint32_t> kept_frames{0};
  // Queues a frame for an endpoint of this port; false when the queue is
  // full (the frame is then the caller's, lost like a dropped one).
  bool loop_back(rte_mbuf* frame);
  // Whether a send may wait in the outbox for the next progress pass
  // (proto::Engine::holding_bundle): only where a pass comes without the
  // application's help too (the progress loop, or the safety net).
  bool passes_come_anyway() const {
    return safety_net || auto_progress_users.load(std::memory_order_relaxed) != 0;
  }
  // FI_DPDK_PROGRESS_NET_MS is not 0: the safety net's passes come (read
  // once: every small send asks).
  const bool safety_net = params().progress_net_ms != 0;
  // Progress for calls that wait on the application's behalf (fi_cq_read,
  // posting when full): skipped while the progress loop owns the port.
  uint32_t progress_if_manual() {
    return auto_progress_users.load(std::memory_order_relaxed) == 0 ? progress() : 0;
  }
  uint32_t progress_if_manual(uint16_t lane, uint64_t now) {
    return auto_progress_users.load(std::memory_order_relaxed) == 0 ? pass(lane, now) : 0;
  }
  // Whether a thread polling this port (fi_cq_read, fi_cntr_read) should
  // yield its CPU once it dropped the lock: it found nothing to hand out
  // and the port received nothing for FI_DPDK_IDLE_YIELD_US (under
  // automatic progress, where reads make no pass, a CQ read found no
  // completion for that long; a counter read never yields there).  One
  // clock per port: any reader's work restarts it.  A blocking
  // MPI_Send over Open MPI's OFI MTL spins on fi_cq_read without yielding
  // until the send completes, which needs the peer's answer; with more
  // ranks than CPUs the peer may be waiting for this very CPU.  sched_yield
  // returns at once where nothing else wants the CPU.  Lock held.
  // Per lane (`lane`'s lock held; kWholePort: the port's, lane 0's clock).
  // (Here, inline: every CQ read calls it, and found work is the usual
  // answer.)
  bool idle_poll(uint16_t lane, bool found_work, uint64_t now) {
    uint64_t& idle_since_ns =
        lane_state[effective_lane(lane) == kWholePort ? 0 : lane].idle_since_ns;
    if (found_work || idle_yield_ns == 0) {
      idle_since_ns = 0;
      return false;
    }
    return idle_long_enough(idle_since_ns, now);
  }
  bool idle_long_enough(uint64_t& idle_since_ns, uint64_t now);
  uint64_t idle_yield_ns = 0;  // FI_DPDK_IDLE_YIELD_US (acquire_port), 0: never
  RareCount idle_yields;
  // Sends frames, as many as the port takes; returns how many it took.
  uint16_t transmit(uint16_t hw_queue, rte_mbuf** frames, uint16_t count) {
    return framer->transmit(hw_queue, frames, count);
  }

  // The port's frames (drivers/frames/framer.h): what turns segments into
  // frames and back, with the port's IP addresses, neighbours and path
  // sizes.  Made with the port (acquire_port), under whose lock it runs.
  std::unique_ptr<frames::Framer> framer;
  // frames::Owner (dpdk_progress.cc): the endpoints' side of what IP says.
  bool narrow_path(const proto::QuotedHeader& quoted, const uint8_t link[6],
                   const ip::Ipv6& destination, uint32_t mtu, uint32_t payload,
                   uint64_t now) override;
  void next_hop_silent(const ip::Ipv6& next_hop) override;
  void first_refusal(Refusal refusal) override;
  // Whether the port speaks IP (it has an address): then it is one lane.
  bool has_ip() const { return framer->interface || framer->interface6; }
  // On an af_xdp port: the ARP and neighbour discovery frames the kernel
  // received, when the XDP program passes them to it
  // (dpdk_neighbour_copies.h).  Read while a next hop is asked for, and
  // every kNeighbourCopiesNs otherwise.  Lock held.
  NeighbourCopies neighbour_copies;
  uint64_t neighbour_copies_read_ns = 0;
  static constexpr uint64_t kNeighbourCopiesNs = 10'000'000;
  void take_neighbour_copies(uint64_t now);
  // Pins the static neighbours on the port's links when it opens: the
  // kernel's permanent ones on the interface it shares (`kernel`, read
  // before it opened), then FI_DPDK_NEIGHBOURS, which wins
  // (dpdk_neighbours.cc).
  void pin_static_neighbours(const KernelNeighbours& kernel, const std::string& kernel_interface);
  // Gives the addresses named by IPv4 alone their link addresses: in UDP
  // their peer ids, at once; else their MACs, from the neighbour table, or
  // by asking (ARP, every Framer::kArpRetryMs) until each is answered or
  // FI_DPDK_RESOLVE_TIMEOUT_MS passes, progressing the port meanwhile.
  // Call without the lock.  Per address: 0, -FI_EINVAL (a broadcast or
  // multicast address), -FI_EADDRNOTAVAIL (the port has no address),
  // -FI_EHOSTUNREACH (off its subnet, no way beyond), -FI_ETIMEDOUT (no
  // answer).  Addresses without an IPv4 address, or with
  // a MAC, are left as they are (a wildcard sockaddr is the caller's to
  // refuse).
  std::vector<int> resolve(const std::vector<av::Address*>& addresses);
  // resolve() for an address named by IPv6 alone: its peer id, with a
  // named use of it taken that the caller gives back (release_ipv6_peer:
  // the AV once its entry holds its own, fi_connect's endpoint at close),
  // or why not (-FI_EADDRNOTAVAIL: the port has no IPv6 address;
  // -FI_EINVAL: no unicast address; -FI_EHOSTUNREACH: off its prefix with
  // no router, or not in UDP; -FI_ENOSPC: the peer table is full).
  int name_ipv6_peer(av::Address& address) const;
  int resolve(av::Address* address) { return resolve(std::vector<av::Address*>{address})[0]; }
  // Fills address->ipv4 and ->ipv6 where the port knows them
  // (Framer::name_by_ip).  Lock held.
  void name_by_ip(av::Address* address) const { framer->name_by_ip(address, now_ns()); }
  // What the endpoints send to peers behind `next_hop` fails with
  // FI_EHOSTUNREACH.  Lock held.
  void fail_peers_behind(const ip::Ipv6& next_hop);
  // A decoded frame to the endpoint its header names.  Lock held.
  void deliver(const proto::DecodedFrame& decoded, rte_mbuf* frame, uint64_t now,
               uint16_t polled_queue);
};

template <typename Call>
void PortContext::contain(Call&& call) {
  // The engine answers a failed buffer allocation itself; a record's or a
  // queue node's throws, and stops here, in the receive path, never in the
  // progress loop or the application.
  try {
    call();
  } catch (const std::bad_alloc&) {
    if (no_memory++ == 0) warn_no_memory();
  }
}

// FI_PROGRESS_AUTO (dpdk_auto_progress.cc): a domain's port joins or leaves
// the progress loop, which runs on a DPDK worker lcore or a thread.  Call
// without the port lock.  auto_progress_lcore() is -1 when on a thread.
void auto_progress_add(PortContext* port);
// Every open port is watched by the manual-progress safety net: a port no
// fi_* call has progressed for FI_DPDK_PROGRESS_NET_MS gets a pass from a
// helper thread (none when it is 0), so
// retransmissions go on while the application waits elsewhere.
void progress_net_add(PortContext* port);
void progress_net_remove(PortContext* port);
void auto_progress_remove(PortContext* port);
int auto_progress_lcore();

// Finds or opens the port with that id; shared by every domain on it.
int acquire_port(uint16_t port_id, std::shared_ptr<PortContext>* out, std::string* error);

// Holds the lock of the lane an endpoint's, CQ's or counter's `lane` names,
// or the whole port lock for kWholePort and on a port of one lane.  `lane`
// changes only under the whole port lock: once its lane's lock is held and
// it still names that lane, it stays so.
class LaneGuard {
 public:
  LaneGuard(PortContext& port, const std::atomic<uint16_t>& lane) : locks_(port.lock) {
    if (locks_.count() == 1) {
      locks_.lock();
      return;
    }
    for (;;) {
      const uint16_t seen = lane.load(std::memory_order_relaxed);
      if (seen == kWholePort) {
        locks_.lock();
        return;
      }
      PortLock& lane_lock = locks_.lane(seen);
      const bool contended = !lane_lock.try_lock();
      if (contended) lane_lock.lock();
      if (lane.load(std::memory_order_relaxed) == seen) {
        if (!port.one_lane || port.lanes_wanted) {
          lane_ = seen;
          return;
        }
        // A port not split yet: the application thread that called last
        // on it.  Waiting here on another application thread's call (not
        // on a helper's pass) splits it, then the object's own lane is
        // taken.
        const void* me = __builtin_thread_pointer();
        const void* before = port.last_caller;
        port.last_caller = me;
        if (!contended || before == me || before == nullptr || !port.split_lanes()) {
          lane_ = seen;
          return;
        }
      }
      lane_lock.unlock();
    }
  }
  ~LaneGuard() {
    if (lane_ == kWholePort)
      locks_.unlock();
    else
      locks_.lane(lane_).unlock();
  }
  LaneGuard(const LaneGuard&) = delete;
  LaneGuard& operator=(const LaneGuard&) = delete;
  // The lane held, kWholePort for the whole port.
  uint16_t lane() const { return lane_; }

 private:
  LaneLocks& locks_;
  uint16_t lane_ = kWholePort;
};

}  // namespace ofi_dpdk::ofi
