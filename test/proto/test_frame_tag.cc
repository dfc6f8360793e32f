// The keyed tag of authenticated frames (frame_tag.h) and the codec's use
// of it: both multiplies agree, pieces tag as their whole, any change to a
// frame or its key changes the tag, and the decoder takes only frames
// keyed with its key.
#include "lib/proto/frame_tag.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "lib/proto/frame_codec.h"

namespace ofi_dpdk::proto {
namespace {

std::vector<uint8_t> bytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> out(n);
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

FrameKey key_of(uint8_t fill, size_t length = 32) {
  const std::vector<uint8_t> job(length, fill);
  auto key = FrameKey::derive(job);
  EXPECT_TRUE(key.has_value());
  return *key;
}

TEST(FrameTag, JobKeysOfSixteenToSixtyFourBytesOnly) {
  EXPECT_FALSE(FrameKey::derive(std::vector<uint8_t>(15, 1)).has_value());
  EXPECT_TRUE(FrameKey::derive(std::vector<uint8_t>(16, 1)).has_value());
  EXPECT_TRUE(FrameKey::derive(std::vector<uint8_t>(64, 1)).has_value());
  EXPECT_FALSE(FrameKey::derive(std::vector<uint8_t>(65, 1)).has_value());
}

TEST(FrameTag, TheCarrylessInstructionAndThePortableMultiplyAgree) {
  // Expect: every length from 0 to 300 and a jumbo frame's, on random
  // bytes and keys, tag alike by both paths (wire compatibility between
  // CPUs with and without PCLMULQDQ).
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const FrameKey key = *FrameKey::derive(bytes(16 + seed * 8, seed));
    const auto data = bytes(9000, seed + 100);
    for (size_t n = 0; n <= 300; ++n)
      ASSERT_EQ(key.tag(data.data(), n), key.tag_portable(data.data(), n)) << n;
    EXPECT_EQ(key.tag(data.data(), 9000), key.tag_portable(data.data(), 9000));
  }
}

constexpr uint64_t kPinnedTag = 3456278307393956631ull;

TEST(FrameTag, AValueFixedOnTheWire) {
  // Expect: the tag of a fixed key and input does not change between
  // versions (peers built apart must agree).  Pinned from the portable path.
  std::vector<uint8_t> job(32);
  for (size_t i = 0; i < job.size(); ++i) job[i] = static_cast<uint8_t>(i);
  const FrameKey key = *FrameKey::derive(job);
  std::vector<uint8_t> data(100);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(0xA0 + i);
  EXPECT_EQ(key.tag_portable(data.data(), data.size()), kPinnedTag);
  EXPECT_EQ(key.tag(data.data(), data.size()), kPinnedTag);
}

TEST(FrameTag, PiecesTagAsTheirWhole) {
  const FrameKey key = key_of(7);
  const auto data = bytes(1000, 9);
  const uint64_t whole = key.tag(data.data(), data.size());
  for (size_t cut1 : {0u, 1u, 15u, 16u, 17u, 63u, 64u, 65u, 500u}) {
    for (size_t cut2 : {cut1, cut1 + 3, cut1 + 48, size_t{1000}}) {
      if (cut2 > 1000) continue;
      FrameKey::Tagger t(key);
      t.add(data.data(), cut1);
      t.add(data.data() + cut1, cut2 - cut1);
      t.add(data.data() + cut2, 1000 - cut2);
      EXPECT_EQ(t.finish(), whole) << cut1 << " " << cut2;
    }
  }
  std::vector<uint8_t> zeros(40, 0);
  FrameKey::Tagger t(key);
  t.add(data.data(), 10);
  t.add_zeros(40);
  std::vector<uint8_t> joined(data.begin(), data.begin() + 10);
  joined.insert(joined.end(), zeros.begin(), zeros.end());
  EXPECT_EQ(t.finish(), key.tag(joined.data(), joined.size()));
}

TEST(FrameTag, EveryBitFlippedOrByteAddedChangesTheTag) {
  const FrameKey key = key_of(3);
  auto data = bytes(200, 11);
  const uint64_t tag = key.tag(data.data(), data.size());
  for (size_t bit = 0; bit < data.size() * 8; ++bit) {
    data[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    EXPECT_NE(key.tag(data.data(), data.size()), tag) << bit;
    data[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
  }
  // A trailing zero byte is not the same cover (the length is in the tag).
  std::vector<uint8_t> longer = data;
  longer.push_back(0);
  EXPECT_NE(key.tag(longer.data(), longer.size()), tag);
}

TEST(FrameTag, AnotherKeyGivesAnotherTag) {
  const auto data = bytes(64, 5);
  EXPECT_NE(key_of(1).tag(data.data(), 64), key_of(2).tag(data.data(), 64));
  // Keys that differ in length only.
  EXPECT_NE(key_of(1, 16).tag(data.data(), 64), key_of(1, 17).tag(data.data(), 64));
}

// A whole frame on our EtherType: headers and a payload.
std::vector<uint8_t> frame(size_t payload) {
  static constexpr uint8_t kDst[6] = {0x02, 0, 0, 0, 0, 0xB};
  static constexpr uint8_t kSrc[6] = {0x02, 0, 0, 0, 0, 0xA};
  wire::FrameHeader h{};
  h.version = wire::kWireVersion;
  h.opcode = static_cast<uint8_t>(wire::Opcode::kMsg);
  h.flags = wire::kFlagLastSegment;
  h.src_session = 1;
  h.seq = 1;
  h.msg_len = h.payload_len = static_cast<uint16_t>(payload);
  h.token = 0x1234567890abcdefull;
  std::vector<uint8_t> f(wire::kHeadersSize + payload, 0x5A);
  encode_headers(f.data(), kDst, kSrc, wire::kDefaultEtherType, h);
  return f;
}

TEST(FrameTagCodec, ADecoderWithTheKeyTakesOnlyFramesKeyedWithIt) {
  // Expect: a frame keyed with K passes a decoder holding K, and is refused
  // as kBadTag with any bit changed (header, Ethernet addresses, payload)
  // or by a decoder holding another key; as kKeyed by a decoder with no
  // key; a CRC-sealed frame is kNotKeyed to a decoder with a key.
  const FrameKey k = key_of(0x11), other = key_of(0x22);
  auto f = frame(300);
  seal_keyed(f.data(), f.size(), k);
  DecodedFrame out;
  ASSERT_EQ(decode_frame(f.data(), f.size(), wire::kDefaultEtherType, &out, {true, &k}),
            DecodeResult::kOk);
  EXPECT_TRUE(out.header.flags & wire::kFlagKeyed);
  EXPECT_EQ(out.header.token, 0x1234567890abcdefull);
  EXPECT_EQ(decode_frame(f.data(), f.size(), wire::kDefaultEtherType, &out, {true, &other}),
            DecodeResult::kBadTag);
  EXPECT_EQ(decode_frame(f.data(), f.size(), wire::kDefaultEtherType, &out, {true}),
            DecodeResult::kKeyed);
  EXPECT_EQ(decode_frame(f.data(), f.size(), wire::kDefaultEtherType, &out, {false}),
            DecodeResult::kKeyed);
  for (size_t at :
       {size_t{0}, size_t{6}, size_t{14 + 16}, size_t{14 + 64}, size_t{14 + 100}, f.size() - 1}) {
    f[at] ^= 0x01;
    EXPECT_EQ(decode_frame(f.data(), f.size(), wire::kDefaultEtherType, &out, {true, &k}),
              DecodeResult::kBadTag)
        << at;
    f[at] ^= 0x01;
  }
  auto crc = frame(300);
  seal_frame(crc.data(), crc.size());
  EXPECT_EQ(decode_frame(crc.data(), crc.size(), wire::kDefaultEtherType, &out, {true, &k}),
            DecodeResult::kNotKeyed);
  EXPECT_EQ(decode_frame(crc.data(), crc.size(), wire::kDefaultEtherType, &out, {true}),
            DecodeResult::kOk);
}

TEST(FrameTagCodec, UdpPayloadsAreKeyedWithoutTheEthernetHeader) {
  const FrameKey k = key_of(0x33);
  auto f = frame(64);
  uint8_t* header = f.data() + sizeof(wire::EtherHeader);
  const size_t ours = f.size() - sizeof(wire::EtherHeader);
  seal_keyed_udp(header, ours, k);
  DecodedFrame out;
  EXPECT_EQ(decode_udp_payload(header, ours, &out, {true, &k}), DecodeResult::kOk);
  header[20] ^= 0x80;  // seq
  EXPECT_EQ(decode_udp_payload(header, ours, &out, {true, &k}), DecodeResult::kBadTag);
}

}  // namespace
}  // namespace ofi_dpdk::proto
