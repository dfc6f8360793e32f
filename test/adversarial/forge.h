// forge.h: frames as an adversary builds them, with lib/proto's own codec
// (encode_headers, seal_frame), so every forged frame passes decode_frame
// and its CRC: what the target does with it is the transport's choice, not
// the decoder's.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "lib/proto/frame_codec.h"
#include "lib/proto/wire.h"

namespace ofi_dpdk::adversarial {

using Mac = std::array<uint8_t, 6>;

// An endpoint as frames name it.
struct Station {
  Mac mac{};
  uint16_t queue = 0;
  uint32_t session = 0;
};

// The bench's rendezvous line: the hex of the endpoint's native address
// (lib/av/address.h).
std::optional<Station> station_from_name(std::string_view hex);
std::string mac_text(const Mac& mac);

// What every frame from `from` to `to` carries: version, opcode, queues,
// sessions, and from's own queue as its address.
wire::FrameHeader header_between(wire::Opcode opcode, const Station& from, const Station& to);

// The whole frame: Ethernet header from from.mac to to.mac, `header` with
// payload_len set to the payload's size, the payload, and the CRC.
std::vector<uint8_t> seal(const Mac& from, const Mac& to, wire::FrameHeader header,
                          std::span<const uint8_t> payload);
// The same as a UDP datagram's payload (FI_DPDK_ENCAP=udp): `header`, with
// payload_len set, then the payload, sealed the UDP way (the CRC covers
// our header and payload alone).
std::vector<uint8_t> seal_udp(wire::FrameHeader header, std::span<const uint8_t> payload);

// A HandshakeBody in wire order, and read back from a decoded frame.
std::array<uint8_t, sizeof(wire::HandshakeBody)> handshake_body(uint64_t token,
                                                                uint32_t max_payload);
std::optional<wire::HandshakeBody> read_handshake_body(const proto::DecodedFrame& frame);

// The 40-byte head of an RMA or atomic request, as the provider's
// dpdk_remote_op.h lays it out: here always a read, which the target
// answers with an error for a key it never issued.
std::array<uint8_t, 40> read_request(uint64_t key, uint64_t address, uint64_t length);
// A write of `length` bytes (which follow it) with remote CQ data.
std::array<uint8_t, 40> write_with_data_request(uint64_t key, uint64_t address, uint64_t length,
                                                uint64_t cq_data);

}  // namespace ofi_dpdk::adversarial
