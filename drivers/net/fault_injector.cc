#include "drivers/net/fault_injector.h"
#include "drivers/net/mbuf_handoff.h"

#include <rte_cycles.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>

#include <algorithm>
#include <atomic>
#include <cmath>

namespace ofi_dpdk::net {
namespace {

constexpr uint32_t kEthHeaderLen = 14;  // never corrupted: see corrupt()

// Why a frame sits in the hold slots, which decides when it may leave.
enum class HoldKind : uint8_t {
  kReorder,  // leaves behind frames of a later burst (or when forced)
  kDelay,    // leaves once its time has come
  kCarry,    // was due but found no room in the caller's array: next call
};

struct HeldFrame {
  rte_mbuf* mbuf;
  uint64_t due_cycles;  // kDelay: release time; kReorder: forced release time
  uint32_t held_call;   // QueueState::call_ when it was held (wraps safely)
  HoldKind kind;
};

// One writer (the polling thread), any number of readers (stats()): a
// relaxed load and store compile to plain moves, with no torn reads.
class Counter {
 public:
  void add(uint64_t n) {
    value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  uint64_t get() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// Counts kept on the stack during one callback and published once at its
// end, so that readers cost the hot path one store per counter per burst.
struct BurstCounts {
  uint32_t dropped = 0, duplicated = 0, reordered = 0, corrupted = 0, delayed = 0, passed = 0;
};

uint64_t us_to_cycles(uint64_t us, uint64_t hz) {
  // Split to stay clear of 64-bit overflow for any uint32_t microseconds.
  return hz / 1000000 * us + hz % 1000000 * us / 1000000;
}

// A bit may be flipped in place only when nobody else sees this buffer: a
// net_ring or memif peer in the same process may still hold a reference
// (the sender keeping a frame for retransmission), and corrupting its copy
// would corrupt the retransmission too, which no real link does.
bool writable(const rte_mbuf* seg) {
  return RTE_MBUF_DIRECT(seg) && rte_mbuf_refcnt_read(seg) == 1;
}

// Finds the segment holding byte `offset` of the packet and the offset
// within it.  Returns nullptr when the chain is shorter than pkt_len says.
rte_mbuf* segment_at(rte_mbuf* m, uint32_t* offset) {
  while (m != nullptr && *offset >= m->data_len) {
    *offset -= m->data_len;
    m = m->next;
  }
  return m;
}

}  // namespace

struct alignas(RTE_CACHE_LINE_SIZE) FaultInjector::QueueState {
  QueueState(const FaultConfig& config, uint64_t seed, uint64_t hz)
      : plan(with_seed(config, seed)),
        delay_cycles(us_to_cycles(config.delay_us, hz)),
        reorder_max_cycles(us_to_cycles(kReorderMaxHoldUs, hz)),
        may_hold(config.reorder > 0 || config.delay > 0) {}

  static FaultConfig with_seed(FaultConfig config, uint64_t seed) {
    config.seed = seed;
    return config;
  }

  uint16_t process(rte_mbuf** pkts, uint16_t nb_pkts, uint16_t max_pkts);
  bool hold(rte_mbuf* m, HoldKind kind, uint64_t due_cycles);
  bool corrupt(rte_mbuf** m);
  uint32_t release(rte_mbuf** pkts, uint32_t total, uint32_t max_pkts, uint64_t now);
  void publish(const BurstCounts& counts);
  void free_held();

  FaultPlan plan;
  const uint64_t delay_cycles;
  const uint64_t reorder_max_cycles;
  const bool may_hold;  // without reorder or delay, the timer is never read
  const rte_eth_rxtx_callback* callback = nullptr;
  uint32_t call = 0;  // rx_burst calls seen on this queue
  uint32_t nb_held = 0;
  HeldFrame held[kMaxHeldFrames];

  // Read by other threads: kept apart from the hot fields above.
  alignas(RTE_CACHE_LINE_SIZE) Counter dropped;
  Counter duplicated, reordered, corrupted, delayed, passed;
  std::atomic<uint32_t> held_now{0};
};

namespace {

// The RX callback: runs inside rte_eth_rx_burst after the PMD filled
// pkts[0, nb_pkts), on every call, empty ones included, which is what lets
// held frames leave even when no new frame arrives.  pkts has room for
// max_pkts entries.  Returns how many entries of pkts the caller gets.
uint16_t on_rx_burst(uint16_t /*port_id*/, uint16_t /*queue*/, rte_mbuf* pkts[], uint16_t nb_pkts,
                     uint16_t max_pkts, void* user_param) {
  auto* queue = static_cast<FaultInjector::QueueState*>(user_param);
  return queue->process(pkts, nb_pkts, max_pkts);
}

}  // namespace

uint16_t FaultInjector::QueueState::process(rte_mbuf** pkts, uint16_t nb_pkts, uint16_t max_pkts) {
  ++call;
  if (nb_pkts == 0 && nb_held == 0) return 0;
  handoff_acquire(pkts, nb_pkts);  // runs inside rx_burst, before Port's acquire
  const uint64_t now = may_hold ? rte_get_timer_cycles() : 0;
  BurstCounts counts;

  // Decide each frame.  Kept frames are compacted to the front (out <= i,
  // so nothing unread is overwritten); duplicates go to the caller's spare
  // slots [nb_pkts, max_pkts) and are moved behind the kept frames after.
  uint32_t out = 0;
  uint32_t nb_dups = 0;
  for (uint32_t i = 0; i < nb_pkts; ++i) {
    rte_mbuf* m = pkts[i];
    switch (plan.next()) {
      case FaultAction::kPass:
        break;
      case FaultAction::kDrop:
        free_frame(m);
        ++counts.dropped;
        continue;
      case FaultAction::kDuplicate:
        if (m->pool != nullptr) {
          rte_mbuf* copy = rte_pktmbuf_copy(m, m->pool, 0, UINT32_MAX);
          // An empty pool just means no duplicate.  Without a spare slot
          // (a burst as large as the caller asked for) the copy comes with
          // the next burst.
          if (copy != nullptr && nb_pkts + nb_dups < max_pkts) {
            pkts[nb_pkts + nb_dups++] = copy;
          } else if (copy != nullptr && !hold(copy, HoldKind::kCarry, 0)) {
            free_frame(copy);
            copy = nullptr;
          }
          if (copy != nullptr) {
            pkts[out++] = m;
            ++counts.duplicated;
            continue;
          }
        }
        break;
      case FaultAction::kReorder:
        if (hold(m, HoldKind::kReorder, now + reorder_max_cycles)) {
          ++counts.reordered;
          continue;
        }
        break;
      case FaultAction::kCorrupt:
        if (corrupt(&m)) {
          pkts[out++] = m;
          ++counts.corrupted;
          continue;
        }
        break;
      case FaultAction::kDelay:
        if (hold(m, HoldKind::kDelay, now + delay_cycles)) {
          ++counts.delayed;
          continue;
        }
        break;
    }
    pkts[out++] = m;
    ++counts.passed;
  }
  if (nb_dups > 0 && out < nb_pkts) {
    std::copy_n(pkts + nb_pkts, nb_dups, pkts + out);  // moves down: safe
  }
  uint32_t total = out + nb_dups;

  if (nb_held > 0) total = release(pkts, total, max_pkts, now);
  publish(counts);
  return static_cast<uint16_t>(total);
}

bool FaultInjector::QueueState::hold(rte_mbuf* m, HoldKind kind, uint64_t due_cycles) {
  if (nb_held == kMaxHeldFrames) return false;
  held[nb_held++] = HeldFrame{m, due_cycles, call, kind};
  return true;
}

// Flips one random bit of one random byte past the Ethernet header, so the
// frame still reaches the stack and the stack's own checks must catch it.
// Returns false (frame untouched) when the frame has no such byte or a
// private copy was needed and the pool is empty.  May replace *m by a copy.
bool FaultInjector::QueueState::corrupt(rte_mbuf** m) {
  const uint32_t len = rte_pktmbuf_pkt_len(*m);
  if (len <= kEthHeaderLen) return false;
  const uint32_t target = kEthHeaderLen + plan.random_below(len - kEthHeaderLen);
  const uint8_t bit = static_cast<uint8_t>(1u << (plan.random_u32() & 7));

  uint32_t offset = target;
  rte_mbuf* seg = segment_at(*m, &offset);
  if (seg == nullptr) return false;
  if (!writable(seg)) {
    if ((*m)->pool == nullptr) return false;
    rte_mbuf* copy = rte_pktmbuf_copy(*m, (*m)->pool, 0, UINT32_MAX);
    if (copy == nullptr) return false;
    free_frame(*m);  // drops only our reference
    *m = copy;
    offset = target;
    seg = segment_at(copy, &offset);
    if (seg == nullptr) return false;  // cannot happen: a copy is whole
  }
  *rte_pktmbuf_mtod_offset(seg, uint8_t*, offset) ^= bit;
  return true;
}

// Moves held frames that are due into the caller's array behind the
// `total` frames of this burst and returns the new count.  The output is
//   [carried frames][this burst's frames][frames released now]
// capped at max_pkts.  What does not fit is held again as kCarry, taken
// from the newest end (this burst's tail first), so a busy queue delays
// held frames by one call instead of starving them, and carried frames
// keep their order because they go first next time.
uint32_t FaultInjector::QueueState::release(rte_mbuf** pkts, uint32_t total, uint32_t max_pkts,
                                            uint64_t now) {
  rte_mbuf* carry[kMaxHeldFrames];
  rte_mbuf* ready[kMaxHeldFrames];
  uint32_t nc = 0;
  uint32_t nr = 0;
  uint32_t kept = 0;
  const bool fresh = total > 0;  // frames of a later burst go out now
  for (uint32_t i = 0; i < nb_held; ++i) {
    const HeldFrame& h = held[i];
    const uint32_t since = call - h.held_call;
    bool due = false;
    switch (h.kind) {
      case HoldKind::kCarry:
        due = since > 0;
        break;
      case HoldKind::kDelay:
        due = now >= h.due_cycles;
        break;
      case HoldKind::kReorder:
        due = since > 0 && (fresh || since >= kReorderMaxCalls || now >= h.due_cycles);
        break;
    }
    if (!due) {
      held[kept++] = h;
    } else if (h.kind == HoldKind::kCarry) {
      carry[nc++] = h.mbuf;
    } else {
      ready[nr++] = h.mbuf;
    }
  }
  nb_held = kept;
  if (nc == 0 && nr == 0) return total;

  // Trim to max_pkts.  Hold slots suffice: what is held again (excess) is
  // at most nc + nr, the number of slots just freed, because total <=
  // max_pkts.
  uint32_t excess = nc + total + nr > max_pkts ? nc + total + nr - max_pkts : 0;
  const uint32_t cut_new = std::min(excess, total);
  excess -= cut_new;
  const uint32_t cut_ready = std::min(excess, nr);
  excess -= cut_ready;
  const uint32_t keep_carry = nc - excess;
  const uint32_t keep_new = total - cut_new;
  const uint32_t keep_ready = nr - cut_ready;

  // Held again oldest first, before pkts is rearranged below.
  for (uint32_t i = keep_carry; i < nc; ++i) {
    held[nb_held++] = HeldFrame{carry[i], 0, call, HoldKind::kCarry};
  }
  for (uint32_t i = keep_new; i < total; ++i) {
    held[nb_held++] = HeldFrame{pkts[i], 0, call, HoldKind::kCarry};
  }
  for (uint32_t i = keep_ready; i < nr; ++i) {
    held[nb_held++] = HeldFrame{ready[i], 0, call, HoldKind::kCarry};
  }

  if (keep_carry > 0) {
    std::copy_backward(pkts, pkts + keep_new, pkts + keep_carry + keep_new);
    std::copy_n(carry, keep_carry, pkts);
  }
  std::copy_n(ready, keep_ready, pkts + keep_carry + keep_new);
  return keep_carry + keep_new + keep_ready;
}

void FaultInjector::QueueState::publish(const BurstCounts& counts) {
  if (counts.dropped) dropped.add(counts.dropped);
  if (counts.duplicated) duplicated.add(counts.duplicated);
  if (counts.reordered) reordered.add(counts.reordered);
  if (counts.corrupted) corrupted.add(counts.corrupted);
  if (counts.delayed) delayed.add(counts.delayed);
  if (counts.passed) passed.add(counts.passed);
  held_now.store(nb_held, std::memory_order_relaxed);
}

void FaultInjector::QueueState::free_held() {
  for (uint32_t i = 0; i < nb_held; ++i) free_frame(held[i].mbuf);
  nb_held = 0;
  held_now.store(0, std::memory_order_relaxed);
}

FaultInjector::FaultInjector(uint16_t port_id) : port_id_(port_id) {}

FaultInjector::~FaultInjector() {
  detach_all();
}

std::unique_ptr<FaultInjector> FaultInjector::attach(uint16_t port_id, uint16_t nb_rx_queues,
                                                     const FaultConfig& config,
                                                     std::string* error) {
  if (!config.any()) return nullptr;
  const auto fail = [error](std::string why) {
    if (error != nullptr) *error = std::move(why);
    return std::unique_ptr<FaultInjector>();
  };
  if (!rte_eth_dev_is_valid_port(port_id)) {
    return fail("fault injector: no port " + std::to_string(port_id));
  }
  if (nb_rx_queues == 0) {
    return fail("fault injector: no RX queue to attach to");
  }
  for (double rate :
       {config.drop, config.reorder, config.duplicate, config.corrupt, config.delay}) {
    if (!(rate >= 0 && rate <= 1)) {
      return fail("fault injector: rates must lie in [0, 1]");
    }
  }

  std::unique_ptr<FaultInjector> injector(new FaultInjector(port_id));
  const uint64_t hz = rte_get_timer_hz();
  for (uint16_t q = 0; q < nb_rx_queues; ++q) {
    // Queue 0 replays FaultPlan(config) exactly; other queues get their own
    // stream, so that queues do not make the same choices in lockstep.
    const uint64_t seed = config.seed ^ (q * 0xd1b54a32d192ed03ULL);
    auto state = std::make_unique<QueueState>(config, seed, hz);
    state->callback = rte_eth_add_rx_callback(port_id, q, &on_rx_burst, state.get());
    if (state->callback == nullptr) {
      const int err = rte_errno;
      // The destructor of `injector` removes the callbacks added so far.
      return fail("fault injector: cannot add an RX callback on port " + std::to_string(port_id) +
                  " queue " + std::to_string(q) + ": " + rte_strerror(err));
    }
    injector->queues_.push_back(std::move(state));
  }
  return injector;
}

void FaultInjector::detach_all() {
  for (size_t i = 0; i < queues_.size(); ++i) {
    const auto q = static_cast<uint16_t>(i);  // attach made at most 65535
    std::unique_ptr<QueueState>& state = queues_[i];
    if (rte_eth_remove_rx_callback(port_id_, q, state->callback) != 0) {
      // Still (or no longer knowably) on the port's list: something may yet
      // call it with this state, so leaking it beats a use after free.
      static_cast<void>(state.release());
      continue;
    }
    // No rx_burst is in flight (see the threading rule in the header), so
    // the callback's memory can go now rather than after a grace period.
    rte_free(const_cast<rte_eth_rxtx_callback*>(state->callback));
    state->free_held();
  }
  queues_.clear();
}

FaultStats FaultInjector::stats() const {
  FaultStats total;
  for (const auto& state : queues_) {
    total.dropped += state->dropped.get();
    total.duplicated += state->duplicated.get();
    total.reordered += state->reordered.get();
    total.corrupted += state->corrupted.get();
    total.delayed += state->delayed.get();
    total.passed += state->passed.get();
  }
  return total;
}

uint32_t FaultInjector::held_frames() const {
  uint32_t total = 0;
  for (const auto& state : queues_) {
    total += state->held_now.load(std::memory_order_relaxed);
  }
  return total;
}

}  // namespace ofi_dpdk::net
