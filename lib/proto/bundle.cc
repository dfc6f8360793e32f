// bundle.cc: BUNDLE frames (wire.h).  Small messages sent to one peer in
// a row share a frame: the first goes into the outbox as a frame of its own,
// and each next one that fits turns it into a bundle or joins it.  Every
// entry keeps its own sequence number and transmit slot, so acks, SACK and
// repair see segments as before; a repair goes alone, in a frame of its own.
// On the receiving side each entry goes through on_data as the frame it
// stands for.
#include "lib/proto/engine_state.h"
#include "lib/proto/frame_codec.h"
#include "lib/proto/seq.h"

namespace ofi_dpdk::proto {
namespace {

// Entries of all BUNDLE frames of one outbox: two windows' worth, as the
// outbox itself reserves.
constexpr size_t kBundleStore = 2 * kMaxWindow;

wire::BundleEntry entry_of(const wire::FrameHeader& h) {
  wire::BundleEntry e{};
  e.opcode = h.opcode;
  e.flags = h.flags & wire::kSegmentFlags;
  e.seq = h.seq;
  e.msg_id = h.msg_id;
  e.msg_len = h.msg_len;
  e.offset = h.offset;
  e.group = h.group;
  e.payload_len = h.payload_len;
  e.tag = h.tag;
  e.cq_data = h.cq_data;
  return e;
}

// The bytes of a BUNDLE's entries that `frame` is or would become.
size_t bundle_body(const OutFrame& frame) {
  return frame.bundled != 0 ? frame.header.payload_len
                            : sizeof(wire::BundleEntry) + frame.header.payload_len;
}

}  // namespace

bool Engine::bundles(const wire::FrameHeader& h) const {
  return config_.bundle_bytes != 0 && wire::opcode_is_data(h.opcode) && h.offset == 0 &&
         h.payload_len == h.msg_len && h.payload_len <= config_.bundle_bytes;
}

bool Engine::join_bundle(Connection& c, const wire::FrameHeader& h, const TxMessage& m) {
  if (open_bundle_.connection != &c || open_bundle_.frame + 1 != outbox_.size() || !bundles(h))
    return false;
  OutFrame& frame = outbox_.back();
  const bool first_join = frame.bundled == 0;
  const size_t body = bundle_body(frame);
  const size_t added = sizeof(wire::BundleEntry) + h.payload_len;
  if (body + added > c.tx_max_payload) return false;
  if (bundle_used_ + (first_join ? 2 : 1) > kBundleStore) return false;
  if (!bundle_store_) bundle_store_ = std::make_unique<BundledSegment[]>(kBundleStore);
  if (first_join) {
    BundledSegment& first = bundle_store_[bundle_used_++];
    first.entry = entry_of(frame.header);
    first.message = frame.message;
    first.offset = frame.offset;
    frame.bundle = &first;
    frame.bundled = 1;
    frame.message = nullptr;
    ++stats_.bundled_segments;
  }
  BundledSegment& next = bundle_store_[bundle_used_++];
  next.entry = entry_of(h);
  next.message = &m;
  next.offset = h.offset;
  ++frame.bundled;
  ++stats_.bundled_segments;
  // The frame's own fields as of now: the ack may have moved since its
  // first entry was cut.
  // (A congestion echo the frame or the joining segment carried stays:
  // base_header gave it once.)
  const uint16_t echo = (frame.header.flags | h.flags) & wire::kFlagCongestionSeen;
  frame.header = base_header(c, static_cast<uint8_t>(wire::Opcode::kBundle));
  frame.header.flags |= echo;
  frame.header.payload_len = static_cast<uint16_t>(body + added);
  return true;
}

bool Engine::holding_bundle() const {
  if (open_bundle_.connection == nullptr || open_bundle_.frame + 1 != outbox_.size()) return false;
  // A frame held before this one (another peer's) is closed: send both
  // rather than hold frames that nothing more can join.
  if (outbox_.size() != 1) return false;
  const Connection& c = *open_bundle_.connection;
  const OutFrame& frame = outbox_.back();
  const uint32_t first_seq = frame.bundled != 0 ? frame.bundle[0].entry.seq : frame.header.seq;
  // Nothing of c's before this frame is unacknowledged: it is the first
  // send after a quiet spell (a pingpong's every message), which goes now.
  if (!seq_lt(c.una, first_seq)) return false;
  // Full for the largest message that could join: send it.
  return bundle_body(frame) + sizeof(wire::BundleEntry) + config_.bundle_bytes <=
             c.tx_max_payload &&
         bundle_used_ + 2 <= kBundleStore;
}

void Engine::on_bundle(Connection* c, const Segment& bundle, uint64_t now_ns) {
  const wire::FrameHeader& frame = *bundle.header;
  if (frame.payload_len > config_.max_payload) {
    ++stats_.bad_frames;
    return;
  }
  const uint8_t* cursor = bundle.payload;
  const uint8_t* const end = bundle.payload + frame.payload_len;
  while (cursor != end) {
    wire::FrameHeader h;
    const uint8_t* payload = nullptr;
    if (next_bundle_entry(&cursor, end, frame, &h, &payload) != DecodeResult::kOk) {
      // The checksum held, so its sender wrote it so: nothing after it is
      // trusted either.
      ++stats_.bad_frames;
      return;
    }
    const Segment entry{bundle.src_mac, &h, payload, bundle.frame, bundle.congestion_experienced};
    c = receive_half_for(c, entry, now_ns);
    if (c == nullptr) return;
    c->last_heard_ns = now_ns;
    last_data_ns_ = now_ns;
    on_data(*c, entry, now_ns);
  }
}

}  // namespace ofi_dpdk::proto
