#include "lib/proto/frame_codec.h"

#include "lib/proto/crc32c.h"
#include "lib/proto/frame_tag.h"

#include <endian.h>

#include <cstring>

namespace ofi_dpdk::proto {
namespace {

// Field-by-field copies keep the wire layout independent of host order and
// of the compiler; memcpy avoids unaligned loads from packet buffers.
template <typename T>
void put(uint8_t* out, size_t offset, T value) {
  std::memcpy(out + offset, &value, sizeof(T));
}
template <typename T>
T get(const uint8_t* in, size_t offset) {
  T value;
  std::memcpy(&value, in + offset, sizeof(T));
  return value;
}

// The header's fields are laid out in memory as on the wire (wire.h pins
// every offset), so converting a whole header between host and wire order
// is reversing each field's bytes in place.  No field straddles a 16-byte
// boundary: on a little-endian host each 16 bytes are one byte shuffle (a
// single instruction where the CPU has one), where field-by-field swaps
// took some 80 instructions a header each way.
using Bytes16 = uint8_t __attribute__((vector_size(16)));

template <int... kOrder>
void swap_block(uint8_t* to, const uint8_t* from) {
  Bytes16 block;
  std::memcpy(&block, from, sizeof(block));
  block = __builtin_shufflevector(block, block, kOrder...);
  std::memcpy(to, &block, sizeof(block));
}

void header_byte_order(uint8_t* to, const uint8_t* from) {
  using wire::FrameHeader;
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  std::memmove(to, from, sizeof(FrameHeader));
#else
  // version, opcode, flags, dst_queue, src_queue, src_session, dst_session
  swap_block<0, 1, 3, 2, 5, 4, 7, 6, 11, 10, 9, 8, 15, 14, 13, 12>(to, from);
  // seq, ack, msg_id, msg_len
  swap_block<3, 2, 1, 0, 7, 6, 5, 4, 11, 10, 9, 8, 15, 14, 13, 12>(to + 16, from + 16);
  // offset, payload_len, window, tag
  swap_block<3, 2, 1, 0, 5, 4, 7, 6, 15, 14, 13, 12, 11, 10, 9, 8>(to + 32, from + 32);
  // cq_data, integrity; token, ack_token
  swap_block<7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8>(to + 48, from + 48);
  swap_block<7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8>(to + 64, from + 64);
  // conn, ack_conn, auth_key, group, src_ep_queue, segment_len
  swap_block<1, 0, 3, 2, 7, 6, 5, 4, 11, 10, 9, 8, 13, 12, 15, 14>(to + 80, from + 80);
  // piece_offset, duplicate_delta, duplicate_copies: the last 8 bytes
  put(to, offsetof(FrameHeader, piece_offset),
      __builtin_bswap32(get<uint32_t>(from, offsetof(FrameHeader, piece_offset))));
  put(to, offsetof(FrameHeader, duplicate_delta),
      __builtin_bswap16(get<uint16_t>(from, offsetof(FrameHeader, duplicate_delta))));
  put(to, offsetof(FrameHeader, duplicate_copies),
      __builtin_bswap16(get<uint16_t>(from, offsetof(FrameHeader, duplicate_copies))));
#endif
}
static_assert(sizeof(wire::FrameHeader) == 6 * 16 + 8);
static_assert(offsetof(wire::FrameHeader, seq) == 16 && offsetof(wire::FrameHeader, offset) == 32 &&
              offsetof(wire::FrameHeader, cq_data) == 48 &&
              offsetof(wire::FrameHeader, segment_len) == 94 &&
              offsetof(wire::FrameHeader, duplicate_copies) == 102);

constexpr size_t kEtherLead = sizeof(wire::EtherHeader);
constexpr size_t kChecksumField = offsetof(wire::FrameHeader, integrity);
constexpr size_t kIntegrityBytes = sizeof(wire::FrameHeader::integrity);
constexpr size_t kFlagsField = offsetof(wire::FrameHeader, flags);

// The CRC-32C (not yet inverted) of the encoded headers from `start`, our
// header `lead` bytes in, with the checksum field counted as zero.  On our
// EtherType the Ethernet header is covered (lead 14): the transport names
// peers by their MACs, and a flipped source MAC on a link that checks
// nothing (memif, a ring) must not make a frame another peer's.  In UDP
// (lead 0) our header starts the cover: routers rewrite the MACs, and the
// IPv4 header that names the peer has its own checksum.
static_assert(kIntegrityBytes == 8, "crc32c_zero8_at skips an 8-byte field");
uint32_t headers_crc(const uint8_t* start, size_t lead) {
  return crc32c_zero8_at(0xFFFFFFFFu, start, lead + sizeof(wire::FrameHeader),
                         lead + kChecksumField);
}

// The keyed tag over what the CRC would cover, the integrity field as 0.
uint64_t frame_tag(const FrameKey& key, const uint8_t* start, size_t lead, size_t payload_len) {
  const size_t field = lead + kChecksumField;
  const size_t end = lead + sizeof(wire::FrameHeader) + payload_len;
  FrameKey::Tagger tagger(key);
  tagger.add(start, field);
  tagger.add_zeros(kIntegrityBytes);
  tagger.add(start + field + kIntegrityBytes, end - field - kIntegrityBytes);
  return tagger.finish();
}

void set_flag(uint8_t* header, uint16_t flag) {
  const uint16_t flags = be16toh(get<uint16_t>(header, kFlagsField)) | flag;
  put(header, kFlagsField, htobe16(flags));
}

// The checksum of headers and payload, `payload_len` bytes after them.
uint32_t frame_checksum(const uint8_t* start, size_t lead, size_t payload_len) {
  // Headers and payload are one run of bytes: one call covers both.
  return ~crc32c_zero8_at(0xFFFFFFFFu, start, lead + sizeof(wire::FrameHeader) + payload_len,
                          lead + kChecksumField);
}

void set_unsealed(uint8_t* header) {
  set_flag(header, wire::kFlagUnsealed);
}

void seal_keyed_at(uint8_t* start, size_t lead, size_t payload_len, const FrameKey& key) {
  set_flag(start + lead, wire::kFlagKeyed);
  put(start + lead, kChecksumField, htobe64(frame_tag(key, start, lead, payload_len)));
}

}  // namespace

void seal_frame(uint8_t* frame, size_t length) {
  put(frame, kEtherLead + kChecksumField,
      htobe64(frame_checksum(frame, kEtherLead, length - wire::kHeadersSize)));
}

uint32_t begin_seal(const uint8_t* frame) {
  return headers_crc(frame, kEtherLead);
}

void finish_seal(uint8_t* frame, uint32_t crc) {
  put(frame, kEtherLead + kChecksumField, htobe64(uint64_t{~crc}));
}

void mark_unsealed(uint8_t* frame) {
  set_unsealed(frame + kEtherLead);
}

void seal_keyed(uint8_t* frame, size_t length, const FrameKey& key) {
  seal_keyed_at(frame, kEtherLead, length - wire::kHeadersSize, key);
}

uint32_t begin_seal_udp(const uint8_t* header) {
  return headers_crc(header, 0);
}

void finish_seal_udp(uint8_t* header, uint32_t crc) {
  put(header, kChecksumField, htobe64(uint64_t{~crc}));
}

void seal_keyed_udp(uint8_t* header, size_t length, const FrameKey& key) {
  seal_keyed_at(header, 0, length - sizeof(wire::FrameHeader), key);
}

void mark_unsealed_udp(uint8_t* header) {
  set_unsealed(header);
}

const char* decode_result_name(DecodeResult result) {
  switch (result) {
    case DecodeResult::kOk:
      return "ok";
    case DecodeResult::kNotOurs:
      return "not ours";
    case DecodeResult::kTruncated:
      return "truncated";
    case DecodeResult::kBadVersion:
      return "bad version";
    case DecodeResult::kBadOpcode:
      return "bad opcode";
    case DecodeResult::kBadLength:
      return "bad length";
    case DecodeResult::kBadChecksum:
      return "bad checksum";
    case DecodeResult::kUnsealed:
      return "no checksum (FI_DPDK_CHECKSUM=0 at the sender)";
    case DecodeResult::kBadTag:
      return "bad keyed tag (forged, changed, or another job key)";
    case DecodeResult::kKeyed:
      return "keyed by a job key this side does not have";
    case DecodeResult::kNotKeyed:
      return "not keyed, where a job key is required";
  }
  return "?";
}

size_t encode_headers(uint8_t* out, const uint8_t dst_mac[6], const uint8_t src_mac[6],
                      uint16_t ether_type, const wire::FrameHeader& h) {
  using wire::FrameHeader;
  std::memcpy(out, dst_mac, 6);
  std::memcpy(out + 6, src_mac, 6);
  put(out, 12, htobe16(ether_type));
  return kEtherLead + encode_header(out + kEtherLead, h);
}

size_t encode_header(uint8_t* f, const wire::FrameHeader& h) {
  using wire::FrameHeader;
  header_byte_order(f, reinterpret_cast<const uint8_t*>(&h));
  put(f, offsetof(FrameHeader, integrity), uint64_t{0});  // sealing fills it
  return sizeof(FrameHeader);
}

size_t encode_bundle_entry(uint8_t* out, const wire::BundleEntry& e) {
  using wire::BundleEntry;
  out[offsetof(BundleEntry, opcode)] = e.opcode;
  out[offsetof(BundleEntry, reserved8)] = 0;
  put(out, offsetof(BundleEntry, flags), htobe16(e.flags));
  put(out, offsetof(BundleEntry, seq), htobe32(e.seq));
  put(out, offsetof(BundleEntry, msg_id), htobe32(e.msg_id));
  put(out, offsetof(BundleEntry, msg_len), htobe32(e.msg_len));
  put(out, offsetof(BundleEntry, offset), htobe32(e.offset));
  put(out, offsetof(BundleEntry, group), htobe32(e.group));
  put(out, offsetof(BundleEntry, payload_len), htobe16(e.payload_len));
  put(out, offsetof(BundleEntry, reserved16), uint16_t{0});
  put(out, offsetof(BundleEntry, reserved32), uint32_t{0});
  put(out, offsetof(BundleEntry, tag), htobe64(e.tag));
  put(out, offsetof(BundleEntry, cq_data), htobe64(e.cq_data));
  return sizeof(BundleEntry);
}

DecodeResult next_bundle_entry(const uint8_t** cursor, const uint8_t* end,
                               const wire::FrameHeader& frame, wire::FrameHeader* out,
                               const uint8_t** payload) {
  using wire::BundleEntry;
  const uint8_t* in = *cursor;
  if (end < in || static_cast<size_t>(end - in) < sizeof(BundleEntry))
    return DecodeResult::kTruncated;
  wire::FrameHeader& h = *out;
  h = frame;
  h.opcode = in[offsetof(BundleEntry, opcode)];
  if (!wire::opcode_is_data(h.opcode)) return DecodeResult::kBadOpcode;
  const uint16_t flags = be16toh(get<uint16_t>(in, offsetof(BundleEntry, flags)));
  if (flags & ~wire::kSegmentFlags) return DecodeResult::kBadOpcode;
  h.flags = static_cast<uint16_t>(frame.flags | flags);
  h.seq = be32toh(get<uint32_t>(in, offsetof(BundleEntry, seq)));
  h.msg_id = be32toh(get<uint32_t>(in, offsetof(BundleEntry, msg_id)));
  h.msg_len = be32toh(get<uint32_t>(in, offsetof(BundleEntry, msg_len)));
  h.offset = be32toh(get<uint32_t>(in, offsetof(BundleEntry, offset)));
  h.group = be32toh(get<uint32_t>(in, offsetof(BundleEntry, group)));
  h.payload_len = be16toh(get<uint16_t>(in, offsetof(BundleEntry, payload_len)));
  h.tag = be64toh(get<uint64_t>(in, offsetof(BundleEntry, tag)));
  h.cq_data = be64toh(get<uint64_t>(in, offsetof(BundleEntry, cq_data)));
  in += sizeof(BundleEntry);
  if (static_cast<size_t>(end - in) < h.payload_len) return DecodeResult::kTruncated;
  if (h.offset > h.msg_len || h.msg_len - h.offset < h.payload_len) return DecodeResult::kBadLength;
  *payload = in;
  *cursor = in + h.payload_len;
  return DecodeResult::kOk;
}

namespace {

// Our header at `start` + `lead` and its payload, `length` bytes from
// `start` in all.
DecodeResult decode_from(const uint8_t* start, size_t lead, size_t length, DecodedFrame* out,
                         const FrameCheck& check) {
  using wire::FrameHeader;
  const size_t headers = lead + sizeof(FrameHeader);
  if (length < headers) return DecodeResult::kTruncated;
  const uint8_t* f = start + lead;
  FrameHeader& h = out->header;
  if (f[offsetof(FrameHeader, version)] != wire::kWireVersion) return DecodeResult::kBadVersion;
  if (!wire::opcode_known(f[offsetof(FrameHeader, opcode)])) return DecodeResult::kBadOpcode;
  header_byte_order(reinterpret_cast<uint8_t*>(&h), f);
  // The duplicate report is an ACK's, the piece's place a piece's: a
  // sender's values there mean nothing otherwise.
  if (!(h.flags & wire::kFlagDuplicate) || h.opcode != static_cast<uint8_t>(wire::Opcode::kAck)) {
    h.duplicate_delta = 0;
    h.duplicate_copies = 0;
  }
  if (!(h.flags & wire::kFlagPiece)) {
    h.segment_len = 0;
    h.piece_offset = 0;
  }

  // Ethernet pads short frames, so more bytes than announced is fine.
  if (length - headers < h.payload_len) return DecodeResult::kTruncated;
  if (h.opcode == static_cast<uint8_t>(wire::Opcode::kBundle)) {
    // Its entries say what they are (next_bundle_entry).
    if (h.msg_len != 0 || h.offset != 0) return DecodeResult::kBadLength;
  } else if (h.opcode == static_cast<uint8_t>(wire::Opcode::kDatagram)) {
    // A whole message in one frame, and only the flags a datagram has.
    if (h.offset != 0 || h.msg_len != h.payload_len) return DecodeResult::kBadLength;
    if (h.flags & ~wire::kDatagramFlags) return DecodeResult::kBadOpcode;
  } else if (h.offset > h.msg_len || h.msg_len - h.offset < h.payload_len) {
    return DecodeResult::kBadLength;
  }
  if (h.flags & wire::kFlagPiece) {
    // A piece lies within its segment, and the segment within its message.
    if (!wire::opcode_is_data(h.opcode)) return DecodeResult::kBadOpcode;
    if (h.payload_len == 0 || h.piece_offset > h.offset || h.piece_offset > h.segment_len ||
        h.segment_len - h.piece_offset < h.payload_len ||
        h.msg_len - (h.offset - h.piece_offset) < h.segment_len)
      return DecodeResult::kBadLength;
  }
  if (check.watching) {
    // A watcher's: nothing checked.
  } else if (check.key != nullptr) {
    // With a job key nothing else passes: not a CRC, not an unsealed frame.
    if (!(h.flags & wire::kFlagKeyed)) return DecodeResult::kNotKeyed;
    if (!tags_equal(h.integrity, frame_tag(*check.key, start, lead, h.payload_len)))
      return DecodeResult::kBadTag;
  } else if (h.flags & wire::kFlagKeyed) {
    return DecodeResult::kKeyed;
  } else if (check.checksums) {
    if (h.flags & wire::kFlagUnsealed) return DecodeResult::kUnsealed;
    if (h.integrity != frame_checksum(start, lead, h.payload_len))
      return DecodeResult::kBadChecksum;
  }
  out->payload = start + headers;
  return DecodeResult::kOk;
}

}  // namespace

DecodeResult decode_frame(const uint8_t* frame, size_t length, uint16_t ether_type,
                          DecodedFrame* out, const FrameCheck& check) {
  if (length < sizeof(wire::EtherHeader)) return DecodeResult::kTruncated;
  if (be16toh(get<uint16_t>(frame, 12)) != ether_type) return DecodeResult::kNotOurs;
  if (length < wire::kHeadersSize) return DecodeResult::kTruncated;
  std::memcpy(out->dst_mac, frame, 6);
  std::memcpy(out->src_mac, frame + 6, 6);
  return decode_from(frame, kEtherLead, length, out, check);
}

DecodeResult decode_udp_payload(const uint8_t* header, size_t length, DecodedFrame* out,
                                const FrameCheck& check) {
  return decode_from(header, 0, length, out, check);
}

bool decode_quoted_header(const uint8_t* header, size_t length, QuotedHeader* out) {
  using wire::FrameHeader;
  if (length < offsetof(FrameHeader, conn) + sizeof(uint16_t) ||
      header[offsetof(FrameHeader, version)] != wire::kWireVersion)
    return false;
  out->opcode = header[offsetof(FrameHeader, opcode)];
  out->dst_queue = be16toh(get<uint16_t>(header, offsetof(FrameHeader, dst_queue)));
  out->src_queue = be16toh(get<uint16_t>(header, offsetof(FrameHeader, src_queue)));
  out->conn = be16toh(get<uint16_t>(header, offsetof(FrameHeader, conn)));
  out->token = be64toh(get<uint64_t>(header, offsetof(FrameHeader, token)));
  out->payload_len = be16toh(get<uint16_t>(header, offsetof(FrameHeader, payload_len)));
  return true;
}

}  // namespace ofi_dpdk::proto
