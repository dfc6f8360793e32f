// frame_codec.h: turns FrameHeader values into wire bytes and back, checking
// everything a hostile or broken sender could get wrong.  No DPDK here: the
// receive path hands in a byte span, unit tests hand in arrays.
#pragma once

#include <cstddef>
#include <cstdint>

#include "lib/proto/crc32c.h"
#include "lib/proto/wire.h"

namespace ofi_dpdk::proto {

// A decoded frame in host byte order.  payload points into the frame.
struct DecodedFrame {
  uint8_t dst_mac[6];
  uint8_t src_mac[6];
  wire::FrameHeader header;  // host byte order
  const uint8_t* payload;
  // The IP header around it said CE: a router's queue marked it (set by
  // whoever parsed that header; raw Ethernet frames never have it).
  bool congestion_experienced = false;
};

enum class DecodeResult : uint8_t {
  kOk,
  kNotOurs,    // another EtherType: not for this stack
  kTruncated,  // shorter than the headers, or than payload_len says
  kBadVersion,
  kBadOpcode,
  kBadLength,    // offset + payload_len beyond msg_len
  kBadChecksum,  // corrupted on the way (the fault injector, a bad link)
  kUnsealed,     // sent without a checksum, to a receiver that wants one
  kBadTag,       // keyed, and the tag is wrong: forged, changed, or another key
  kKeyed,        // keyed, to a receiver without a job key
  kNotKeyed,     // not keyed, to a receiver with a job key
};

class FrameKey;
// How received frames are checked: a job key's tag (then nothing else
// passes), else the CRC unless `checksums` is off (FI_DPDK_CHECKSUM=0).
// A tool that only watches the wire (a capture, the adversarial harness)
// takes `watch()`: every well-formed frame, keyed or not, nothing checked.
struct FrameCheck {
  FrameCheck(bool checksums_wanted = true, const FrameKey* job_key = nullptr)
      : checksums(checksums_wanted), key(job_key) {}
  static FrameCheck watch() {
    FrameCheck check(false);
    check.watching = true;
    return check;
  }
  bool checksums;
  const FrameKey* key;
  bool watching = false;
};

const char* decode_result_name(DecodeResult result);

// Writes the Ethernet header and `header` (host order) to `out`, which must
// hold wire::kHeadersSize bytes.  Returns the bytes written.  (The frame of
// our own EtherType; the UDP encapsulation's follow below.)
size_t encode_headers(uint8_t* out, const uint8_t dst_mac[6], const uint8_t src_mac[6],
                      uint16_t ether_type, const wire::FrameHeader& header);

// Computes the checksum over a complete frame (headers written by
// encode_headers, payload in place) and stores it.  `length` is
// kHeadersSize + payload_len.
void seal_frame(uint8_t* frame, size_t length);
// seal_frame in two steps, for a sender that checksums the payload as it
// copies it in (OutFrame::copy_payload with a CRC): the CRC of the encoded
// headers so far, to continue over the payload; then the finished CRC
// stored.  finish_seal(f, crc32c(begin_seal(f), payload, n)) is seal_frame.
uint32_t begin_seal(const uint8_t* frame);
void finish_seal(uint8_t* frame, uint32_t crc);
// Instead of seal_frame, on a link without checksums: flags the encoded
// frame kFlagUnsealed (its checksum field stays 0).
void mark_unsealed(uint8_t* frame);
// Instead of seal_frame, with a job key: flags the encoded frame
// kFlagKeyed and stores its keyed tag (frame_tag.h).
void seal_keyed(uint8_t* frame, size_t length, const FrameKey& key);

// The UDP encapsulation (FI_DPDK_ENCAP=udp, lib/ip/udp4.h): our header
// starts a UDP datagram's payload, and its checksum covers our header and
// payload alone (routers rewrite the MACs; the IPv4 header that names the
// peer has a checksum of its own).  encode_header writes `header` alone
// (sizeof(wire::FrameHeader) bytes) and returns that size; the seal and
// mark functions are those above for a header at `header`.
size_t encode_header(uint8_t* out, const wire::FrameHeader& header);
uint32_t begin_seal_udp(const uint8_t* header);
void finish_seal_udp(uint8_t* header, uint32_t crc);
void mark_unsealed_udp(uint8_t* header);
void seal_keyed_udp(uint8_t* header, size_t length, const FrameKey& key);

// Writes one entry of a BUNDLE frame's payload (host order in `entry`) to
// `out`, which must hold sizeof(wire::BundleEntry) bytes; its payload goes
// right after.  Returns the bytes written.
size_t encode_bundle_entry(uint8_t* out, const wire::BundleEntry& entry);

// Reads the entry at *cursor of a BUNDLE frame whose payload ends at `end`
// and whose decoded header is `frame`.  On kOk, *out is the header a frame
// of its own would have had (the frame's, with the entry's fields), *payload
// the entry's bytes, and *cursor moves past them.  An entry no correct
// sender writes (cut short, not a data opcode, other flags, beyond its
// message) gives kTruncated, kBadOpcode or kBadLength, and the rest of the
// frame is not to be read.
DecodeResult next_bundle_entry(const uint8_t** cursor, const uint8_t* end,
                               const wire::FrameHeader& frame, wire::FrameHeader* out,
                               const uint8_t** payload);

// Parses `length` bytes at `frame`.  On kOk fills `out`; otherwise `out` is
// unspecified.  Never reads past frame + length.  With a job key
// (check.key) only keyed frames with the right tag pass.  Otherwise keyed
// frames are refused, and with check.checksums the frame's CRC must be
// right and kFlagUnsealed frames are refused; without, no CRC is checked.
DecodeResult decode_frame(const uint8_t* frame, size_t length, uint16_t ether_type,
                          DecodedFrame* out, const FrameCheck& check = {});
// The same for a UDP datagram's payload of `length` bytes at `header`:
// out's MACs are left as they are (the caller names the peer).
DecodeResult decode_udp_payload(const uint8_t* header, size_t length, DecodedFrame* out,
                                const FrameCheck& check = {});

// The start of one of our frames quoted back to us by a router (ICMP
// "fragmentation needed", "packet too big"): enough to name the sending
// endpoint's connection.  A quote must reach past `conn` (82 bytes of our
// header): one shorter names nothing we could check.
struct QuotedHeader {
  uint8_t opcode = 0;
  uint16_t dst_queue = 0;
  uint16_t src_queue = 0;
  uint16_t conn = 0;
  uint64_t token = 0;
  uint16_t payload_len = 0;
};
bool decode_quoted_header(const uint8_t* header, size_t length, QuotedHeader* out);

}  // namespace ofi_dpdk::proto
