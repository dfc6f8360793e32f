// lossy_link.h: an in-memory Ethernet segment joining transport engines, for
// unit tests.  Every step it takes each engine's outbox, turns each OutFrame
// into real frame bytes (encode_headers, then the payload copied and
// checksummed at once between begin_seal and finish_seal), applies
// faults from its own seeded generator (drop, duplicate, reorder by holding a
// frame back, flip one bit), then decodes what survives with decode_frame, as
// the provider's receive path does, and hands it to the engine that owns the
// destination (MAC, queue), lending the frame (FrameKeeper) as the provider
// lends its mbufs.  Time is simulated: each step advances the clock
// by a fixed amount and polls every engine, so runs are exact replays of
// their seed and take no wall-clock waiting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include "lib/proto/frame_codec.h"
#include "lib/proto/transport.h"

namespace ofi_dpdk::proto::sim {

// A small deterministic generator (splitmix64): the same seed gives the same
// run on every platform and standard library.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t next();
  // Uniform in [0, bound); 0 when bound is 0.
  uint64_t below(uint64_t bound) { return bound == 0 ? 0 : next() % bound; }
  // Uniform in [0, 1).
  double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  bool chance(double p) { return p > 0 && unit() < p; }

 private:
  uint64_t state_;
};

// Probabilities per frame, applied independently.
struct LinkFaults {
  double drop = 0;
  double duplicate = 0;  // one extra copy
  double reorder = 0;    // held back 1..max_hold_steps steps
  double corrupt = 0;    // one bit flipped after the Ethernet header
  uint32_t max_hold_steps = 8;
};

struct LinkCounters {
  uint64_t launched = 0;  // frames taken from outboxes (and injected)
  uint64_t dropped = 0;   // by LinkFaults::drop or the keep filter
  uint64_t duplicated = 0;
  uint64_t reordered = 0;
  uint64_t corrupted = 0;
  uint64_t decode_failed = 0;
  uint64_t partitioned = 0;  // to or from a partitioned engine
  uint64_t unroutable = 0;   // no engine owns the destination
  uint64_t congested = 0;    // tail-dropped at a bottleneck
  uint64_t marked = 0;       // handed over marked CE by a bottleneck (set_marking)
  uint64_t deepest = 0;      // the most frames a bottleneck's queue held
  uint64_t delivered = 0;    // handed to Engine::on_frame
};

class LossyLink {
 public:
  static constexpr size_t kNobody = static_cast<size_t>(-1);

  explicit LossyLink(uint64_t seed, uint64_t step_ns = 5'000);
  ~LossyLink();

  // Attaches an engine; returns its index.
  size_t add(const TransportConfig& config, const uint8_t mac[6], uint16_t queue, uint32_t session);
  Engine& engine(size_t i) { return *ports_[i].engine; }
  size_t size() const { return ports_.size(); }
  const uint8_t* mac(size_t i) const { return ports_[i].mac; }
  uint16_t queue(size_t i) const { return ports_[i].queue; }
  uint32_t session(size_t i) const { return ports_[i].session; }
  uint64_t key(size_t i) const { return peer_key(ports_[i].mac, ports_[i].queue); }
  // The address of engine i as an application would insert it.
  PeerAddress address(size_t i, bool with_session = false) const;

  // Replaces engine i by a new incarnation (same MAC and queue, new session).
  // Frames already on the wire reach the new one; the old one's unsent
  // outbox is lost with it.
  Engine& restart(size_t i, uint32_t session);
  // A partitioned engine neither sends nor receives anything.
  void set_partitioned(size_t i, bool partitioned) { ports_[i].partitioned = partitioned; }
  // A bottleneck in front of engine i: at most frames_per_step frames reach it
  // per step; up to queue_frames wait in a FIFO, the rest are dropped.
  // frames_per_step 0 removes the limit.
  void set_bottleneck(size_t i, size_t frames_per_step, size_t queue_frames);
  // That bottleneck marks instead of waiting to drop, as an ECN switch
  // does (DCTCP's threshold K): a frame that leaves the queue while more
  // than `mark_above` frames wait behind it reaches engine i marked CE
  // (Segment::congestion_experienced).  0: no marks.
  void set_marking(size_t i, size_t mark_above);

  LinkFaults& faults() { return faults_; }
  // Optional: sees every frame engine `from` sends, before anything drops it.
  std::function<void(size_t from, const OutFrame&)> sent;
  // Optional: return false to drop a frame as it leaves engine `from`.
  std::function<bool(size_t from, const wire::FrameHeader&)> keep;
  // Optional: the same by the frame's path (OutFrame::path: the route a
  // router would choose by its source port).
  std::function<bool(size_t from, uint8_t path)> keep_path;
  // Optional: extra steps a frame leaving engine `from` spends on the wire:
  // late, not lost (frames held until the same step keep their order).
  std::function<uint64_t(size_t from, const wire::FrameHeader&)> delay;
  // Optional: return true to hand a frame from `from` to `to` over marked
  // CE, as a router on the way would (Segment::congestion_experienced).
  std::function<bool(size_t from, size_t to, const wire::FrameHeader&)> mark;
  // Optional: sees every frame handed to an engine (decoded, host order).
  std::function<void(size_t from, size_t to, const wire::FrameHeader&)> tap;

  // Puts raw bytes on the wire, as they are, for the next step.
  void inject(const uint8_t* frame, size_t length);

  // One step: advance the clock, deliver what is due, poll every engine,
  // then send every outbox (so completions the caller reads after step()
  // are never for a buffer a queued frame still points into).
  void step();
  uint64_t now() const { return now_ns_; }
  uint64_t steps() const { return steps_; }
  uint64_t step_ns() const { return step_ns_; }
  // True when no frame is on the wire or in a bottleneck queue.
  bool wire_empty() const;
  // Frames engines keep (FrameKeeper) right now.
  size_t frames_kept() const { return lender_.kept(); }
  // Keeps granted so far.
  uint64_t frames_lent() const { return lender_.lent(); }
  const LinkCounters& counters() const { return counters_; }
  Random& random() { return random_; }

 private:
  struct Port {
    std::unique_ptr<Engine> engine;
    TransportConfig config;
    uint8_t mac[6];
    uint16_t queue;
    uint32_t session;
    bool partitioned = false;
    size_t per_step = 0;
    size_t queue_frames = 0;
    size_t mark_above = 0;
    std::deque<std::vector<uint8_t>> backlog;
  };

  // Lends delivered frames to the engines, as the provider lends mbufs: a
  // kept frame lives (counted per keep) until released.  Every third keep
  // is refused, so held segments are also copied.
  class Lender final : public FrameKeeper {
   public:
    bool keep(void* frame) override;
    void release(void* frame) override;
    // The frame being delivered, which keep() may take.
    std::unique_ptr<std::vector<uint8_t>> offered;
    size_t kept() const { return kept_.size(); }
    uint64_t lent() const { return lent_; }

   private:
    std::map<void*, std::pair<std::unique_ptr<std::vector<uint8_t>>, int>> kept_;
    uint64_t asked_ = 0;
    uint64_t lent_ = 0;
  };

  void send_outbox(size_t i);
  void launch(std::vector<uint8_t> bytes, uint64_t extra_steps = 0);
  size_t route(const uint8_t mac[6], uint16_t queue) const;
  size_t raw_destination(const std::vector<uint8_t>& bytes) const;
  void hand_over(std::vector<uint8_t> bytes, bool marked = false);

  // Before ports_: engines give their kept frames back as they go.
  Lender lender_;
  Random random_;
  LinkFaults faults_;
  LinkCounters counters_;
  std::vector<Port> ports_;
  // On the wire: (due step, launch order) -> frame bytes.
  std::map<std::pair<uint64_t, uint64_t>, std::vector<uint8_t>> wire_;
  uint64_t order_ = 0;
  uint64_t steps_ = 0;
  uint64_t now_ns_ = 1'000'000;  // not 0: the engine uses 0 for "timer off"
  uint64_t step_ns_;
};

}  // namespace ofi_dpdk::proto::sim
