// lossy_link.cc: see lossy_link.h.
#include "test/proto/lossy_link.h"

#include <endian.h>

#include <cstdlib>
#include <cstring>

namespace ofi_dpdk::proto::sim {

uint64_t Random::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

LossyLink::LossyLink(uint64_t seed, uint64_t step_ns) : random_(seed), step_ns_(step_ns) {}

LossyLink::~LossyLink() = default;

size_t LossyLink::add(const TransportConfig& config, const uint8_t mac[6], uint16_t queue,
                      uint32_t session) {
  Port port;
  port.config = config;
  std::memcpy(port.mac, mac, 6);
  port.queue = queue;
  port.session = session;
  port.engine = std::make_unique<Engine>(config, mac, queue, session);
  port.engine->set_frame_keeper(&lender_);
  ports_.push_back(std::move(port));
  return ports_.size() - 1;
}

PeerAddress LossyLink::address(size_t i, bool with_session) const {
  PeerAddress a;
  std::memcpy(a.mac, ports_[i].mac, 6);
  a.queue = ports_[i].queue;
  a.session = with_session ? ports_[i].session : 0;
  return a;
}

Engine& LossyLink::restart(size_t i, uint32_t session) {
  Port& port = ports_[i];
  port.session = session;
  port.engine = std::make_unique<Engine>(port.config, port.mac, port.queue, session);
  port.engine->set_frame_keeper(&lender_);
  return *port.engine;
}

void LossyLink::set_bottleneck(size_t i, size_t frames_per_step, size_t queue_frames) {
  ports_[i].per_step = frames_per_step;
  ports_[i].queue_frames = queue_frames;
}

void LossyLink::set_marking(size_t i, size_t mark_above) {
  ports_[i].mark_above = mark_above;
}

bool LossyLink::wire_empty() const {
  if (!wire_.empty()) return false;
  for (const Port& port : ports_)
    if (!port.backlog.empty()) return false;
  return true;
}

void LossyLink::inject(const uint8_t* frame, size_t length) {
  ++counters_.launched;
  wire_.emplace(std::make_pair(steps_ + 1, order_++), std::vector<uint8_t>(frame, frame + length));
}

size_t LossyLink::route(const uint8_t mac[6], uint16_t queue) const {
  for (size_t i = 0; i < ports_.size(); ++i)
    if (ports_[i].queue == queue && std::memcmp(ports_[i].mac, mac, 6) == 0) return i;
  return kNobody;
}

// The destination a frame names, read from the raw bytes (before any check),
// as a switch would; kNobody when the frame is too short to say.
size_t LossyLink::raw_destination(const std::vector<uint8_t>& bytes) const {
  if (bytes.size() < wire::kHeadersSize) return kNobody;
  uint16_t queue;
  std::memcpy(&queue,
              bytes.data() + sizeof(wire::EtherHeader) + offsetof(wire::FrameHeader, dst_queue), 2);
  return route(bytes.data(), be16toh(queue));
}

void LossyLink::launch(std::vector<uint8_t> bytes, uint64_t extra_steps) {
  if (random_.chance(faults_.drop)) {
    ++counters_.dropped;
    return;
  }
  const int copies = random_.chance(faults_.duplicate) ? 2 : 1;
  if (copies == 2) ++counters_.duplicated;
  for (int copy = 0; copy < copies; ++copy) {
    std::vector<uint8_t> frame = copy + 1 == copies ? std::move(bytes) : bytes;
    if (random_.chance(faults_.corrupt) && frame.size() > sizeof(wire::EtherHeader)) {
      const size_t first_bit = sizeof(wire::EtherHeader) * 8;
      const size_t bit = first_bit + random_.below(frame.size() * 8 - first_bit);
      frame[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      ++counters_.corrupted;
    }
    uint64_t due = steps_ + 1 + extra_steps;
    if (random_.chance(faults_.reorder)) {
      due += 1 + random_.below(faults_.max_hold_steps);
      ++counters_.reordered;
    }
    wire_.emplace(std::make_pair(due, order_++), std::move(frame));
  }
}

void LossyLink::send_outbox(size_t i) {
  Port& port = ports_[i];
  Engine& engine = *port.engine;
  for (const OutFrame& out : engine.outbox()) {
    ++counters_.launched;
    if (sent) sent(i, out);
    if (port.partitioned) {
      ++counters_.partitioned;
      continue;
    }
    if ((keep && !keep(i, out.header)) || (keep_path && !keep_path(i, out.path))) {
      ++counters_.dropped;
      continue;
    }
    std::vector<uint8_t> bytes(wire::kHeadersSize + out.header.payload_len);
    encode_headers(bytes.data(), out.dst_mac, port.mac, wire::kDefaultEtherType, out.header);
    // As the provider writes frames: the payload checksummed as it is copied.
    finish_seal(bytes.data(),
                out.copy_payload(bytes.data() + wire::kHeadersSize, begin_seal(bytes.data())));
    launch(std::move(bytes), delay ? delay(i, out.header) : 0);
  }
  engine.frames_sent();
}

bool LossyLink::Lender::keep(void* frame) {
  if (++asked_ % 3 == 0) return false;
  auto it = kept_.find(frame);
  if (it != kept_.end()) {
    ++it->second.second;  // another entry of the same BUNDLE frame
    ++lent_;
    return true;
  }
  if (offered == nullptr || offered.get() != frame) return false;
  kept_.emplace(frame, std::make_pair(std::move(offered), 1));
  ++lent_;
  return true;
}

void LossyLink::Lender::release(void* frame) {
  auto it = kept_.find(frame);
  if (it == kept_.end()) std::abort();  // released twice, or never kept
  if (--it->second.second == 0) kept_.erase(it);
}

// Decodes a frame as the provider's receive path does and gives it to the
// engine that owns its destination.
void LossyLink::hand_over(std::vector<uint8_t> bytes, bool marked) {
  DecodedFrame frame;
  if (decode_frame(bytes.data(), bytes.size(), wire::kDefaultEtherType, &frame) !=
      DecodeResult::kOk) {
    ++counters_.decode_failed;
    return;
  }
  const size_t to = route(frame.dst_mac, frame.header.dst_queue);
  if (to == kNobody) {
    ++counters_.unroutable;
    return;
  }
  if (ports_[to].partitioned) {
    ++counters_.partitioned;
    return;
  }
  ++counters_.delivered;
  if (tap) tap(route(frame.src_mac, frame.header.src_queue), to, frame.header);
  lender_.offered = std::make_unique<std::vector<uint8_t>>(std::move(bytes));
  void* lent = lender_.offered.get();
  if (!marked && mark)
    marked = mark(route(frame.src_mac, frame.header.src_queue), to, frame.header);
  if (marked) ++counters_.marked;
  ports_[to].engine->on_frame(Segment{frame.src_mac, &frame.header, frame.payload, lent, marked},
                              now_ns_);
  lender_.offered.reset();
}

void LossyLink::step() {
  ++steps_;
  now_ns_ += step_ns_;
  // Deliver what is due, in launch order, through any bottleneck queue.
  while (!wire_.empty() && wire_.begin()->first.first <= steps_) {
    std::vector<uint8_t> bytes = std::move(wire_.begin()->second);
    wire_.erase(wire_.begin());
    const size_t to = raw_destination(bytes);
    if (to != kNobody && ports_[to].per_step != 0) {
      Port& port = ports_[to];
      if (port.backlog.size() >= port.queue_frames) {
        ++counters_.congested;
      } else {
        port.backlog.push_back(std::move(bytes));
        counters_.deepest = std::max<uint64_t>(counters_.deepest, port.backlog.size());
      }
      continue;
    }
    hand_over(std::move(bytes));
  }
  for (Port& port : ports_) {
    for (size_t n = 0; n < port.per_step && !port.backlog.empty(); ++n) {
      std::vector<uint8_t> bytes = std::move(port.backlog.front());
      port.backlog.pop_front();
      hand_over(std::move(bytes), port.mark_above != 0 && port.backlog.size() > port.mark_above);
    }
  }
  for (Port& port : ports_) port.engine->poll(now_ns_);
  for (size_t i = 0; i < ports_.size(); ++i) send_outbox(i);
}

}  // namespace ofi_dpdk::proto::sim
