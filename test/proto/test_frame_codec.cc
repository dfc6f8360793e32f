// Frame codec: what goes out comes back, and every malformed frame is
// refused with the reason named.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "lib/proto/crc32c.h"
#include "lib/proto/frame_codec.h"

namespace ofi_dpdk::proto {
namespace {

constexpr uint8_t kDst[6] = {0x02, 0, 0, 0, 0, 0x01};
constexpr uint8_t kSrc[6] = {0x02, 0, 0, 0, 0, 0x02};
constexpr uint16_t kType = wire::kDefaultEtherType;

wire::FrameHeader sample_header(uint16_t payload_len) {
  wire::FrameHeader h{};
  h.version = wire::kWireVersion;
  h.opcode = static_cast<uint8_t>(wire::Opcode::kMsg);
  h.flags = wire::kFlagRemoteData;
  h.dst_queue = 3;
  h.src_queue = 7;
  h.src_session = 0xA1B2C3D4;
  h.dst_session = 0x01020304;
  h.seq = 0xFFFFFFFE;
  h.ack = 42;
  h.msg_id = 9;
  h.msg_len = 1000;
  h.offset = 1000 - payload_len;
  h.payload_len = payload_len;
  h.window = 64;
  h.tag = 0x1122334455667788ull;
  h.cq_data = 0xCAFEF00DDEADBEEFull;
  return h;
}

std::vector<uint8_t> frame_with(const wire::FrameHeader& h, size_t payload_bytes) {
  std::vector<uint8_t> frame(wire::kHeadersSize + payload_bytes, 0x5A);
  encode_headers(frame.data(), kDst, kSrc, kType, h);
  seal_frame(frame.data(), wire::kHeadersSize + h.payload_len);
  return frame;
}

TEST(FrameCodec, RoundTripKeepsEveryField) {
  const wire::FrameHeader h = sample_header(100);
  auto frame = frame_with(h, 100);
  DecodedFrame out;
  ASSERT_EQ(decode_frame(frame.data(), frame.size(), kType, &out), DecodeResult::kOk);
  EXPECT_EQ(std::memcmp(out.dst_mac, kDst, 6), 0);
  EXPECT_EQ(std::memcmp(out.src_mac, kSrc, 6), 0);
  EXPECT_EQ(out.header.flags, h.flags);
  EXPECT_EQ(out.header.dst_queue, 3);
  EXPECT_EQ(out.header.src_queue, 7);
  EXPECT_EQ(out.header.src_session, h.src_session);
  EXPECT_EQ(out.header.dst_session, h.dst_session);
  EXPECT_EQ(out.header.seq, h.seq);
  EXPECT_EQ(out.header.ack, 42u);
  EXPECT_EQ(out.header.msg_id, 9u);
  EXPECT_EQ(out.header.msg_len, 1000u);
  EXPECT_EQ(out.header.offset, 900u);
  EXPECT_EQ(out.header.payload_len, 100);
  EXPECT_EQ(out.header.window, 64);
  EXPECT_EQ(out.header.tag, h.tag);
  EXPECT_EQ(out.header.cq_data, h.cq_data);
  EXPECT_EQ(out.payload, frame.data() + wire::kHeadersSize);
}

TEST(FrameCodec, FieldsAreBigEndianOnTheWire) {
  auto frame = frame_with(sample_header(0), 0);
  // Expect: EtherType 0x88B5 at bytes 12-13, dst_queue 3 at 14+4.
  EXPECT_EQ(frame[12], 0x88);
  EXPECT_EQ(frame[13], 0xB5);
  EXPECT_EQ(frame[14 + 4], 0x00);
  EXPECT_EQ(frame[14 + 5], 0x03);
  EXPECT_EQ(frame[14 + 8], 0xA1);  // src_session's high byte first
}

// Every field of the header at its offset, most significant byte first,
// and back again: the reference here writes each field by itself, the codec
// converts the header in blocks.
TEST(FrameCodec, EveryFieldIsWhereTheWireSaysHighByteFirst) {
  using wire::FrameHeader;
  FrameHeader h{};
  h.version = wire::kWireVersion;
  h.opcode = static_cast<uint8_t>(wire::Opcode::kAck);
  h.flags = wire::kFlagAckValid | wire::kFlagDuplicate | wire::kFlagPiece;
  h.dst_queue = 0x0102;
  h.src_queue = 0x0304;
  h.src_session = 0x05060708;
  h.dst_session = 0x090A0B0C;
  h.seq = 0x0D0E0F10;
  h.ack = 0x11121314;
  h.msg_id = 0x15161718;
  h.msg_len = 0x191A1B1C;
  h.offset = 0x1D1E1F20;
  h.payload_len = 0x2122;
  h.window = 0x2324;
  h.tag = 0x25262728292A2B2Cull;
  h.cq_data = 0x2D2E2F3031323334ull;
  h.integrity = 0x35363738393A3B3Cull;  // sent as 0: sealing fills it
  h.token = 0x3D3E3F4041424344ull;
  h.ack_token = 0x45464748494A4B4Cull;
  h.conn = 0x4D4E;
  h.ack_conn = 0x4F50;
  h.auth_key = 0x51525354;
  h.group = 0x55565758;
  h.src_ep_queue = 0x595A;
  h.segment_len = 0x5B5C;
  h.piece_offset = 0x5D5E5F60;
  h.duplicate_delta = 0x6162;
  h.duplicate_copies = 0x6364;
  uint8_t expected[sizeof(FrameHeader)] = {};
  auto field = [&](size_t offset, uint64_t value, size_t size) {
    for (size_t i = 0; i < size; ++i)
      expected[offset + i] = static_cast<uint8_t>(value >> (8 * (size - 1 - i)));
  };
  field(offsetof(FrameHeader, version), h.version, 1);
  field(offsetof(FrameHeader, opcode), h.opcode, 1);
  field(offsetof(FrameHeader, flags), h.flags, 2);
  field(offsetof(FrameHeader, dst_queue), h.dst_queue, 2);
  field(offsetof(FrameHeader, src_queue), h.src_queue, 2);
  field(offsetof(FrameHeader, src_session), h.src_session, 4);
  field(offsetof(FrameHeader, dst_session), h.dst_session, 4);
  field(offsetof(FrameHeader, seq), h.seq, 4);
  field(offsetof(FrameHeader, ack), h.ack, 4);
  field(offsetof(FrameHeader, msg_id), h.msg_id, 4);
  field(offsetof(FrameHeader, msg_len), h.msg_len, 4);
  field(offsetof(FrameHeader, offset), h.offset, 4);
  field(offsetof(FrameHeader, payload_len), h.payload_len, 2);
  field(offsetof(FrameHeader, window), h.window, 2);
  field(offsetof(FrameHeader, tag), h.tag, 8);
  field(offsetof(FrameHeader, cq_data), h.cq_data, 8);
  field(offsetof(FrameHeader, token), h.token, 8);
  field(offsetof(FrameHeader, ack_token), h.ack_token, 8);
  field(offsetof(FrameHeader, conn), h.conn, 2);
  field(offsetof(FrameHeader, ack_conn), h.ack_conn, 2);
  field(offsetof(FrameHeader, auth_key), h.auth_key, 4);
  field(offsetof(FrameHeader, group), h.group, 4);
  field(offsetof(FrameHeader, src_ep_queue), h.src_ep_queue, 2);
  field(offsetof(FrameHeader, segment_len), h.segment_len, 2);
  field(offsetof(FrameHeader, piece_offset), h.piece_offset, 4);
  field(offsetof(FrameHeader, duplicate_delta), static_cast<uint16_t>(h.duplicate_delta), 2);
  field(offsetof(FrameHeader, duplicate_copies), h.duplicate_copies, 2);
  uint8_t wire_bytes[sizeof(FrameHeader)];
  ASSERT_EQ(encode_header(wire_bytes, h), sizeof(FrameHeader));
  for (size_t i = 0; i < sizeof(FrameHeader); ++i) EXPECT_EQ(wire_bytes[i], expected[i]) << i;

  // Decoded, every field comes back (the integrity as sent).
  std::vector<uint8_t> frame(wire::kHeadersSize, 0);
  std::memcpy(frame.data() + sizeof(wire::EtherHeader), wire_bytes, sizeof(wire_bytes));
  frame[12] = static_cast<uint8_t>(kType >> 8);
  frame[13] = static_cast<uint8_t>(kType);
  h.payload_len = 0;  // what the frame holds; its piece within its segment
  frame[sizeof(wire::EtherHeader) + offsetof(FrameHeader, payload_len)] = 0;
  frame[sizeof(wire::EtherHeader) + offsetof(FrameHeader, payload_len) + 1] = 0;
  DecodedFrame out;
  const FrameCheck unchecked = FrameCheck::watch();
  ASSERT_EQ(decode_frame(frame.data(), frame.size(), kType, &out, unchecked),
            DecodeResult::kBadLength);  // a piece of no bytes: refused
  h.flags = wire::kFlagAckValid | wire::kFlagDuplicate;
  field(offsetof(FrameHeader, flags), h.flags, 2);
  std::memcpy(frame.data() + sizeof(wire::EtherHeader), expected, sizeof(expected));
  frame[sizeof(wire::EtherHeader) + offsetof(FrameHeader, payload_len)] = 0;
  frame[sizeof(wire::EtherHeader) + offsetof(FrameHeader, payload_len) + 1] = 0;
  h.msg_len = h.offset = 0;
  std::memset(frame.data() + sizeof(wire::EtherHeader) + offsetof(FrameHeader, msg_len), 0, 8);
  ASSERT_EQ(decode_frame(frame.data(), frame.size(), kType, &out, unchecked), DecodeResult::kOk);
  h.integrity = 0;
  h.segment_len = 0;  // not a piece: its place is not read
  h.piece_offset = 0;
  EXPECT_EQ(std::memcmp(&out.header, &h, sizeof(h)), 0);
}

// An ACK's duplicate report (kFlagDuplicate) travels in the header's last
// four bytes, big-endian, the delta signed; without the flag, or on any
// other frame, the decoder reads nothing there.
TEST(FrameCodec, AnAckCarriesItsDuplicateReportAndNothingElseDoes) {
  wire::FrameHeader ack = sample_header(0);
  ack.opcode = static_cast<uint8_t>(wire::Opcode::kAck);
  ack.msg_len = ack.offset = 0;
  ack.flags = wire::kFlagAckValid | wire::kFlagDuplicate;
  ack.duplicate_delta = -3;
  ack.duplicate_copies = 513;
  auto frame = frame_with(ack, 0);
  EXPECT_EQ(frame[14 + 100], 0xFF);  // -3, high byte first
  EXPECT_EQ(frame[14 + 101], 0xFD);
  EXPECT_EQ(frame[14 + 102], 0x02);  // 513
  EXPECT_EQ(frame[14 + 103], 0x01);
  DecodedFrame out;
  ASSERT_EQ(decode_frame(frame.data(), frame.size(), kType, &out), DecodeResult::kOk);
  EXPECT_EQ(out.header.duplicate_delta, -3);
  EXPECT_EQ(out.header.duplicate_copies, 513);

  ack.flags = wire::kFlagAckValid;  // the fields without the flag
  frame = frame_with(ack, 0);
  ASSERT_EQ(decode_frame(frame.data(), frame.size(), kType, &out), DecodeResult::kOk);
  EXPECT_EQ(out.header.duplicate_delta, 0);
  EXPECT_EQ(out.header.duplicate_copies, 0);

  wire::FrameHeader data = sample_header(4);  // the flag on a data segment
  data.flags |= wire::kFlagDuplicate;
  data.duplicate_delta = 5;
  data.duplicate_copies = 1;
  frame = frame_with(data, 4);
  ASSERT_EQ(decode_frame(frame.data(), frame.size(), kType, &out), DecodeResult::kOk);
  EXPECT_EQ(out.header.duplicate_delta, 0);
  EXPECT_EQ(out.header.duplicate_copies, 0);
}

TEST(FrameCodec, EthernetPaddingIsAccepted) {
  auto frame = frame_with(sample_header(4), 4);
  frame.resize(frame.size() + 20, 0);  // a short frame padded to 60+ bytes
  DecodedFrame out;
  EXPECT_EQ(decode_frame(frame.data(), frame.size(), kType, &out), DecodeResult::kOk);
}

TEST(FrameCodec, OtherEtherTypeIsNotOurs) {
  auto frame = frame_with(sample_header(0), 0);
  frame[12] = 0x08;
  frame[13] = 0x00;
  DecodedFrame out;
  EXPECT_EQ(decode_frame(frame.data(), frame.size(), kType, &out), DecodeResult::kNotOurs);
}

TEST(FrameCodec, EveryTruncationIsRefused) {
  auto frame = frame_with(sample_header(100), 100);
  DecodedFrame out;
  for (size_t length = 0; length < frame.size(); ++length) {
    const auto result = decode_frame(frame.data(), length, kType, &out);
    EXPECT_EQ(result, DecodeResult::kTruncated) << "length " << length;
  }
}

TEST(FrameCodec, BadVersionIsRefused) {
  wire::FrameHeader h = sample_header(0);
  h.version = wire::kWireVersion + 1;
  auto frame = frame_with(h, 0);
  DecodedFrame out;
  EXPECT_EQ(decode_frame(frame.data(), frame.size(), kType, &out), DecodeResult::kBadVersion);
}

TEST(FrameCodec, UnknownOpcodesAreRefused) {
  for (int opcode = 0; opcode < 256; ++opcode) {
    wire::FrameHeader h = sample_header(0);
    h.opcode = static_cast<uint8_t>(opcode);
    if (opcode == static_cast<int>(wire::Opcode::kBundle)) h.msg_len = h.offset = 0;
    if (opcode == static_cast<int>(wire::Opcode::kDatagram)) h.msg_len = h.offset = 0;
    auto frame = frame_with(h, 0);
    DecodedFrame out;
    const auto result = decode_frame(frame.data(), frame.size(), kType, &out);
    if (wire::opcode_known(static_cast<uint8_t>(opcode))) {
      EXPECT_EQ(result, DecodeResult::kOk) << opcode;
    } else {
      EXPECT_EQ(result, DecodeResult::kBadOpcode) << opcode;
    }
  }
}

TEST(FrameCodec, SegmentBeyondMessageIsRefused) {  // checked before the checksum
  wire::FrameHeader h = sample_header(100);
  h.offset = 950;  // 950 + 100 > msg_len 1000
  auto frame = frame_with(h, 100);
  DecodedFrame out;
  EXPECT_EQ(decode_frame(frame.data(), frame.size(), kType, &out), DecodeResult::kBadLength);
  h.offset = 0xFFFFFFF0;  // would wrap in 32 bits
  frame = frame_with(h, 100);
  EXPECT_EQ(decode_frame(frame.data(), frame.size(), kType, &out), DecodeResult::kBadLength);
}

TEST(FrameCodec, EveryFlippedBitIsCaught) {
  const auto clean = frame_with(sample_header(40), 40);
  DecodedFrame out;
  // Expect: any single-bit error is refused, by the checksum or by an
  // earlier check: in the addresses too (a flipped source MAC would make
  // the frame another peer's), and in the EtherType (not ours then).
  for (size_t bit = 0; bit < clean.size() * 8; ++bit) {
    auto frame = clean;
    frame[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    EXPECT_NE(decode_frame(frame.data(), frame.size(), kType, &out), DecodeResult::kOk)
        << "bit " << bit;
  }
}

TEST(FrameCodec, FramesWithoutChecksumOnlyWhereBothSidesSaySo) {
  // Expect: a frame marked unsealed (FI_DPDK_CHECKSUM=0 at the sender) is
  // refused as kUnsealed by a receiver that checks, and taken by one that
  // does not, even with a byte changed; a sealed frame is taken by both.
  const wire::FrameHeader h = sample_header(40);
  auto sealed = frame_with(h, 40);
  std::vector<uint8_t> unsealed(wire::kHeadersSize + 40);
  encode_headers(unsealed.data(), kDst, kSrc, kType, h);
  mark_unsealed(unsealed.data());
  DecodedFrame out;
  EXPECT_EQ(decode_frame(unsealed.data(), unsealed.size(), kType, &out), DecodeResult::kUnsealed);
  EXPECT_EQ(decode_frame(unsealed.data(), unsealed.size(), kType, &out, false), DecodeResult::kOk);
  EXPECT_TRUE(out.header.flags & wire::kFlagUnsealed);
  unsealed.back() ^= 0x40;
  EXPECT_EQ(decode_frame(unsealed.data(), unsealed.size(), kType, &out, false), DecodeResult::kOk);
  EXPECT_EQ(decode_frame(sealed.data(), sealed.size(), kType, &out, false), DecodeResult::kOk);
  EXPECT_EQ(decode_frame(sealed.data(), sealed.size(), kType, &out, true), DecodeResult::kOk);
}

// Our header and payload as a UDP datagram carries them (no Ethernet
// header before them).
std::vector<uint8_t> udp_payload_with(const wire::FrameHeader& h, size_t payload_bytes) {
  std::vector<uint8_t> bytes(sizeof(wire::FrameHeader) + payload_bytes, 0x5A);
  EXPECT_EQ(encode_header(bytes.data(), h), sizeof(wire::FrameHeader));
  finish_seal_udp(bytes.data(), crc32c(begin_seal_udp(bytes.data()),
                                       bytes.data() + sizeof(wire::FrameHeader), h.payload_len));
  return bytes;
}

TEST(FrameCodec, UdpPayloadRoundTripsAndEveryFlippedBitIsCaught) {
  const wire::FrameHeader h = sample_header(40);
  const auto clean = udp_payload_with(h, 40);
  DecodedFrame out{};
  ASSERT_EQ(decode_udp_payload(clean.data(), clean.size(), &out), DecodeResult::kOk);
  EXPECT_EQ(out.header.seq, h.seq);
  EXPECT_EQ(out.header.tag, h.tag);
  EXPECT_EQ(out.payload, clean.data() + sizeof(wire::FrameHeader));
  for (size_t bit = 0; bit < clean.size() * 8; ++bit) {
    auto bytes = clean;
    bytes[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    EXPECT_NE(decode_udp_payload(bytes.data(), bytes.size(), &out), DecodeResult::kOk)
        << "bit " << bit;
  }
  for (size_t length = 0; length < clean.size(); ++length)
    EXPECT_EQ(decode_udp_payload(clean.data(), length, &out), DecodeResult::kTruncated);
  // The same header sealed for our EtherType has another checksum: the
  // Ethernet header is not in the UDP cover.
  const auto l2 = frame_with(h, 40);
  EXPECT_NE(
      std::memcmp(l2.data() + sizeof(wire::EtherHeader), clean.data(), sizeof(wire::FrameHeader)),
      0);
}

TEST(FrameCodec, UdpPayloadWithoutChecksumOnlyWhereBothSidesSaySo) {
  const wire::FrameHeader h = sample_header(40);
  std::vector<uint8_t> unsealed(sizeof(wire::FrameHeader) + 40);
  encode_header(unsealed.data(), h);
  mark_unsealed_udp(unsealed.data());
  DecodedFrame out;
  EXPECT_EQ(decode_udp_payload(unsealed.data(), unsealed.size(), &out), DecodeResult::kUnsealed);
  EXPECT_EQ(decode_udp_payload(unsealed.data(), unsealed.size(), &out, false), DecodeResult::kOk);
  EXPECT_TRUE(out.header.flags & wire::kFlagUnsealed);
}

TEST(FrameCodec, Crc32cMatchesTheKnownCheckValue) {
  const char* text = "123456789";
  EXPECT_EQ(~crc32c(0xFFFFFFFFu, reinterpret_cast<const uint8_t*>(text), 9), 0xE3069283u);
}

TEST(FrameCodec, Crc32cInstructionAndTableAgree) {
  // Expect: the check value from the portable path too, and the same CRC
  // from both paths for every length 0..300 at every alignment 0..7, and
  // when continued across a split.
  const char* text = "123456789";
  EXPECT_EQ(~crc32c_portable(0xFFFFFFFFu, reinterpret_cast<const uint8_t*>(text), 9), 0xE3069283u);
  std::vector<uint8_t> bytes(320);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 7919u >> 3);
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t length = 0; length <= 300; ++length) {
      const uint8_t* at = bytes.data() + offset;
      ASSERT_EQ(crc32c(0xFFFFFFFFu, at, length), crc32c_portable(0xFFFFFFFFu, at, length))
          << "offset " << offset << " length " << length;
    }
  }
  const uint32_t whole = crc32c(0xFFFFFFFFu, bytes.data(), 300);
  EXPECT_EQ(crc32c_portable(crc32c(0xFFFFFFFFu, bytes.data(), 123), bytes.data() + 123, 177),
            whole);
}

TEST(FrameCodec, Crc32cEveryPathAgreesAtEveryLengthAndStart) {
  // Expect: crc32c (whatever path this CPU takes: the folding one from 512
  // bytes on where it has VPCLMULQDQ), the instruction path and the table
  // give the same CRC for every length 0..4200, lengths around each fold
  // round up to 64 KiB, every alignment 0..7 and several starting values,
  // and when continued across a split.
  std::vector<uint8_t> bytes((64 << 10) + 300);
  uint64_t state = 0x9E3779B97F4A7C15ull;
  for (auto& b : bytes) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    b = static_cast<uint8_t>(state);
  }
  std::vector<size_t> lengths;
  for (size_t length = 0; length <= 4200; ++length) lengths.push_back(length);
  for (size_t round = 256; round <= (64u << 10); round += 256)
    for (const size_t delta : {size_t{0}, size_t{1}, size_t{7}, size_t{255}})
      lengths.push_back(round + delta);
  for (const uint32_t start : {0xFFFFFFFFu, 0u, 0x12345678u}) {
    for (size_t offset = 0; offset < 8; ++offset) {
      for (const size_t length : lengths) {
        if (offset != 0 && length > 4200 && length % 1024 != 7) continue;  // keep it quick
        const uint8_t* at = bytes.data() + offset;
        const uint32_t want = crc32c_portable(start, at, length);
        ASSERT_EQ(crc32c(start, at, length), want)
            << crc32c_path() << " start " << start << " offset " << offset << " length " << length;
        ASSERT_EQ(crc32c_instruction(start, at, length), want) << length;
        ASSERT_EQ(crc32c_fold128_path(start, at, length), want) << length;
      }
    }
  }
  const uint32_t whole = crc32c(0xFFFFFFFFu, bytes.data(), 9000);
  EXPECT_EQ(crc32c(crc32c(0xFFFFFFFFu, bytes.data(), 3000), bytes.data() + 3000, 6000), whole);
}

TEST(FrameCodec, Crc32cWithAHoleCountsTheHoleAsZeroAtEveryLengthAndPlace) {
  // Expect: crc32c_zero8_at gives the table path's CRC of the same bytes
  // with the eight at the hole zeroed, for every hole 0..80 and length from
  // hole + 8 to 400 (both sides of the 256-byte switch to folding), at
  // every alignment 0..7, and leaves the bytes as they were.
  std::vector<uint8_t> bytes(420);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 40503u >> 5 | 1);
  const std::vector<uint8_t> before = bytes;
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t hole = 0; hole <= 80; ++hole) {
      std::vector<uint8_t> zeroed(bytes.begin() + offset, bytes.end());
      std::fill_n(zeroed.begin() + hole, 8, 0);
      for (size_t length = hole + 8; length <= 400; ++length) {
        ASSERT_EQ(crc32c_zero8_at(0xFFFFFFFFu, bytes.data() + offset, length, hole),
                  crc32c_portable(0xFFFFFFFFu, zeroed.data(), length))
            << crc32c_path() << " offset " << offset << " hole " << hole << " length " << length;
      }
    }
  }
  EXPECT_EQ(bytes, before);
}

TEST(FrameCodec, Crc32cCopyCopiesAndChecksumsAtEveryLengthAndStart) {
  // Expect: crc32c_copy leaves at `out` exactly the source bytes (and not one
  // byte past them) and returns the table path's CRC of them, for every
  // length 0..1100, lengths around each fold round up to 9 KiB, source and
  // destination alignments 0..7, and several starting values.
  std::vector<uint8_t> bytes((9 << 10) + 300);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 2654435761u >> 11);
  std::vector<size_t> lengths;
  for (size_t length = 0; length <= 1100; ++length) lengths.push_back(length);
  for (size_t round = 256; round <= (9u << 10); round += 256)
    for (const size_t delta : {size_t{0}, size_t{1}, size_t{63}, size_t{255}})
      lengths.push_back(round + delta);
  std::vector<uint8_t> out(bytes.size() + 16);
  for (const uint32_t start : {0xFFFFFFFFu, 0x12345678u}) {
    for (size_t from = 0; from < 8; from += 3) {
      for (size_t to = 0; to < 8; to += 5) {
        for (const size_t length : lengths) {
          std::fill(out.begin(), out.end(), 0xA5);
          const uint8_t* at = bytes.data() + from;
          ASSERT_EQ(crc32c_copy(start, out.data() + to, at, length),
                    crc32c_portable(start, at, length))
              << crc32c_path() << " from " << from << " to " << to << " length " << length;
          ASSERT_EQ(std::memcmp(out.data() + to, at, length), 0) << length;
          ASSERT_EQ(out[to + length], 0xA5) << "wrote past the copy, length " << length;
          if (to != 0) {
            ASSERT_EQ(out[to - 1], 0xA5) << "wrote before the copy";
          }
        }
      }
    }
  }
}

TEST(FrameCodec, SealingInTwoStepsIsSealing) {
  // Expect: begin_seal, the payload's CRC continued from it, finish_seal
  // give the same frame as seal_frame, and it decodes.
  for (const uint16_t payload : {uint16_t{0}, uint16_t{1}, uint16_t{600}, uint16_t{1000}}) {
    wire::FrameHeader h = sample_header(payload);
    std::vector<uint8_t> whole = frame_with(h, payload);
    std::vector<uint8_t> steps(wire::kHeadersSize + payload, 0x5A);
    encode_headers(steps.data(), kDst, kSrc, kType, h);
    finish_seal(steps.data(),
                crc32c(begin_seal(steps.data()), steps.data() + wire::kHeadersSize, payload));
    EXPECT_EQ(steps, whole) << payload;
    DecodedFrame decoded;
    EXPECT_EQ(decode_frame(steps.data(), steps.size(), kType, &decoded), DecodeResult::kOk);
  }
}

TEST(FrameCodec, OpcodeNamesComeFromTheTable) {
  EXPECT_STREQ(wire::opcode_name(static_cast<uint8_t>(wire::Opcode::kMsg)), "MSG");
  EXPECT_STREQ(wire::opcode_name(200), "UNKNOWN");
}

}  // namespace
}  // namespace ofi_dpdk::proto
