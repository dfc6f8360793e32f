// forge.cc: see forge.h.
#include "test/adversarial/forge.h"

#include <endian.h>

#include <cstdio>
#include <cstring>

#include "lib/av/address.h"
#include "lib/proto/crc32c.h"

namespace ofi_dpdk::adversarial {

std::optional<Station> station_from_name(std::string_view hex) {
  while (!hex.empty() && (hex.back() == '\n' || hex.back() == '\r' || hex.back() == ' '))
    hex.remove_suffix(1);
  if (hex.size() != 2 * av::kNativeAddressSize) return std::nullopt;
  uint8_t bytes[av::kNativeAddressSize];
  for (size_t i = 0; i < sizeof(bytes); ++i) {
    unsigned value = 0;
    if (std::sscanf(std::string(hex.substr(2 * i, 2)).c_str(), "%2x", &value) != 1)
      return std::nullopt;
    bytes[i] = static_cast<uint8_t>(value);
  }
  const std::optional<av::Address> address = av::from_native(bytes, sizeof(bytes));
  if (!address) return std::nullopt;
  Station s;
  std::memcpy(s.mac.data(), address->mac, 6);
  s.queue = address->queue;
  s.session = address->session;
  return s;
}

std::string mac_text(const Mac& mac) {
  char text[18];
  std::snprintf(text, sizeof(text), "%02x:%02x:%02x:%02x:%02x:%02x", mac[0], mac[1], mac[2], mac[3],
                mac[4], mac[5]);
  return text;
}

wire::FrameHeader header_between(wire::Opcode opcode, const Station& from, const Station& to) {
  wire::FrameHeader h{};
  h.version = wire::kWireVersion;
  h.opcode = static_cast<uint8_t>(opcode);
  h.dst_queue = to.queue;
  h.src_queue = from.queue;
  h.src_ep_queue = from.queue;
  h.src_session = from.session;
  h.dst_session = to.session;
  return h;
}

std::vector<uint8_t> seal(const Mac& from, const Mac& to, wire::FrameHeader header,
                          std::span<const uint8_t> payload) {
  header.payload_len = static_cast<uint16_t>(payload.size());
  std::vector<uint8_t> frame(wire::kHeadersSize + payload.size());
  proto::encode_headers(frame.data(), to.data(), from.data(), wire::kDefaultEtherType, header);
  if (!payload.empty())
    std::memcpy(frame.data() + wire::kHeadersSize, payload.data(), payload.size());
  proto::seal_frame(frame.data(), frame.size());
  return frame;
}

std::vector<uint8_t> seal_udp(wire::FrameHeader header, std::span<const uint8_t> payload) {
  header.payload_len = static_cast<uint16_t>(payload.size());
  std::vector<uint8_t> datagram(sizeof(wire::FrameHeader) + payload.size());
  proto::encode_header(datagram.data(), header);
  if (!payload.empty())
    std::memcpy(datagram.data() + sizeof(wire::FrameHeader), payload.data(), payload.size());
  proto::finish_seal_udp(
      datagram.data(), proto::crc32c(proto::begin_seal_udp(datagram.data()),
                                     datagram.data() + sizeof(wire::FrameHeader), payload.size()));
  return datagram;
}

std::array<uint8_t, sizeof(wire::HandshakeBody)> handshake_body(uint64_t token,
                                                                uint32_t max_payload) {
  wire::HandshakeBody body{};
  body.token = htobe64(token);
  body.max_payload = htobe32(max_payload);
  std::array<uint8_t, sizeof(wire::HandshakeBody)> bytes;
  std::memcpy(bytes.data(), &body, sizeof(body));
  return bytes;
}

std::optional<wire::HandshakeBody> read_handshake_body(const proto::DecodedFrame& frame) {
  if (frame.header.payload_len < sizeof(wire::HandshakeBody)) return std::nullopt;
  wire::HandshakeBody body;
  std::memcpy(&body, frame.payload, sizeof(body));
  body.token = be64toh(body.token);
  body.max_payload = be32toh(body.max_payload);
  return body;
}

std::array<uint8_t, 40> read_request(uint64_t key, uint64_t address, uint64_t length) {
  constexpr uint8_t kRead = 2;
  std::array<uint8_t, 40> bytes{};
  bytes[0] = kRead;
  const uint64_t fields[] = {htobe64(key), htobe64(address), htobe64(length)};
  std::memcpy(bytes.data() + 8, fields, sizeof(fields));
  return bytes;
}

std::array<uint8_t, 40> write_with_data_request(uint64_t key, uint64_t address, uint64_t length,
                                                uint64_t cq_data) {
  constexpr uint8_t kWrite = 1;
  constexpr uint8_t kHasData = 1;
  std::array<uint8_t, 40> bytes{};
  bytes[0] = kWrite;
  bytes[1] = kHasData;
  const uint64_t fields[] = {htobe64(key), htobe64(address), htobe64(length), htobe64(cq_data)};
  std::memcpy(bytes.data() + 8, fields, sizeof(fields));
  return bytes;
}

}  // namespace ofi_dpdk::adversarial
