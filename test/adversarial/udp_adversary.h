// udp_adversary.h: udp_adversary's options, what a listen saw of the
// target, and UdpAdversary, which runs the cases (udp_adversary.cc says
// what they are; they are in udp_adversary_ipv4.cc and
// udp_adversary_ipv6.cc).
#pragma once

#include <linux/if_ether.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "lib/ip/arp.h"
#include "lib/ip/icmp6.h"
#include "lib/ip/ipv4.h"
#include "lib/ip/udp4.h"
#include "lib/ip/udp6.h"
#include "lib/proto/frame_codec.h"
#include "test/adversarial/forge.h"
#include "test/adversarial/raw_link.h"

namespace ofi_dpdk::adversarial {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

struct Options {
  std::string iface;
  Mac target_mac{};
  ip::Ipv4 target_ip = 0, own_ip = 0, avoid_ip = 0;
  Mac avoid_mac{};
  std::vector<std::pair<ip::Ipv4, Mac>> statics;
  std::optional<ip::Ipv6> target_ip6, own_ip6;
  unsigned prefix = 24;
  long target_pid = 0;
  uint16_t port_base = 9228;
  long rss_limit_kb = 8 * 1024;
  uint64_t seed = 1;
  std::vector<std::string> cases;  // empty: every case but those run only when named
  std::string rendezvous;
  int client_datagrams = 20;
  ip::Ipv4 newcomer_ip = 0;  // the newcomer case's honest client
};

[[noreturn]] void setup_error(const std::string& what);
long resident_kb(long pid);
void put16(uint8_t* at, uint16_t value);
// Everything the target sends but the live pair's frames to the peer.
std::vector<sock_filter> from_target(const Mac& target);

// What the target sent during a listen.
struct Seen {
  std::set<ip::Ipv4> arp_asked;  // addresses its ARP requests asked for
  // Those asked by broadcast (a lookup); the rest went to a MAC the target
  // holds (a unicast poll of a neighbour that did not answer in time).
  std::set<ip::Ipv4> arp_broadcast;
  uint64_t arp_replies_to_us = 0;     // replies to our own MAC
  std::set<ip::Ipv4> arp_replied_to;  // addresses its ARP replies went to
  std::set<ip::Ipv4> udp_to;          // destinations of its UDP frames
  uint64_t hello_acks_to_us = 0;      // HELLO_ACKs in UDP to our own address
  uint64_t answers_to_broadcast = 0;  // UDP to a broadcast address or MAC
  uint64_t echo_replies = 0;
  std::set<ip::Ipv6> solicited;       // targets of its neighbour solicitations
  uint64_t advertisements_to_us = 0;  // advertisements to our own IPv6 address
  std::set<ip::Ipv6> udp6_to;         // destinations of its UDP/IPv6 frames
  uint64_t hello_acks6_to_us = 0;
  uint64_t echo6_replies = 0;
  size_t largest_to_avoid = 0;      // its largest IPv4 frame to --avoid (the pair's peer)
  uint64_t to_avoid = 0;            // its UDP frames to --avoid
  uint64_t to_avoid_elsewhere = 0;  // of those, not to --avoid-mac
  uint64_t to_watched = 0;          // UDP frames to the MAC a case watches
  uint64_t udp6_to_our_mac = 0;     // UDP/IPv6 to our address and our MAC
};

class UdpAdversary {
 public:
  explicit UdpAdversary(const Options& o)
      : o_(o), link_(o.iface, ETH_P_ALL, from_target(o.target_mac)), rng_(o.seed) {
    own_mac_ = {0x02, 0xad, 0x00, 0x00, 0x00, 0x03};
    const uint32_t mask = o.prefix == 0 ? 0 : ~uint32_t{0} << (32 - o.prefix);
    network_ = o.target_ip & mask;
    broadcast_ = network_ | ~mask;
  }

  int run() {
    if (!o_.cases.empty()) return run_named();
    const long rss_before = resident_kb(o_.target_pid);
    bool all = true;
    // The cases compare the pair's frames before and after: it must be
    // running first (its ARP, handshake and full-sized fetch-adds).
    if (o_.avoid_ip != 0 && !pair_running(std::chrono::seconds(20))) {
      std::printf("FAIL: the live pair sent no full-sized frame within 20 s: nothing to attack\n");
      return 1;
    }
    all &= report("answers", answers());
    all &= report("spoofed_hellos", spoofed_hellos());
    all &= report("broadcasts", broadcasts());
    all &= report("echo_flood", echo_flood());
    all &= report("arp_flood", arp_flood());
    if (o_.avoid_ip != 0) all &= report("forged_too_big", forged_too_big());
    if (o_.avoid_ip != 0) all &= report("arp_redirect", arp_redirect());
    if (!o_.statics.empty()) all &= report("static_neighbours", static_neighbours());
    if (o_.avoid_ip != 0) all &= report("arp_evict", arp_evict());
    if (o_.target_ip6 && o_.own_ip6) {
      all &= report("answers6", answers6());
      all &= report("nd_redirect", nd_redirect());
      all &= report("spoofed_hellos6", spoofed_hellos6());
      all &= report("echo6_flood", echo6_flood());
      all &= report("solicitation_flood", solicitation_flood());
      all &= report("stranger_flood6", stranger_flood6());
    }
    const long rss_after = resident_kb(o_.target_pid);
    if (rss_after < 0) {
      std::printf("FAIL: the target is gone\n");
      return 1;
    }
    const long growth = rss_after - rss_before;
    std::printf("target memory: %ld kB -> %ld kB (%+ld kB, limit %ld kB)\n", rss_before, rss_after,
                growth, o_.rss_limit_kb);
    if (growth > o_.rss_limit_kb) all = false;
    return all ? 0 : 1;
  }

 private:
  int run_named() {
    bool all = true;
    for (const std::string& name : o_.cases) {
      if (name == "answers6")
        all &= report("answers6", answers6());
      else if (name == "ipv6_table_flush")
        all &= report("ipv6_table_flush", ipv6_table_flush());
      else if (name == "dgram_share")
        all &= report("dgram_share", dgram_share());
      else if (name == "newcomer")
        all &= report("newcomer", newcomer());
      else
        setup_error("no case " + name + " runs alone");
    }
    return all ? 0 : 1;
  }

  struct Result {
    bool ok = true;
    std::string detail;
    void fail(const std::string& why) {
      ok = false;
      note(why);
    }
    void note(const std::string& what) { detail += (detail.empty() ? "" : "; ") + what; }
  };

  // Whether the target sends the pair's peer frames above 700 bytes within
  // `limit`.
  bool pair_running(Clock::duration limit) {
    const auto until = Clock::now() + limit;
    while (Clock::now() < until)
      if (listen(std::chrono::milliseconds(100)).largest_to_avoid > 700) return true;
    return false;
  }

  bool report(const char* name, const Result& r) {
    std::printf("%s %s: %s\n", r.ok ? "PASS" : "FAIL", name, r.detail.c_str());
    std::fflush(stdout);
    return r.ok;
  }

  // A made-up unicast neighbour on the subnet: neither the target, the
  // peer, us, nor the network or broadcast address.
  ip::Ipv4 made_up_address() {
    for (;;) {
      const ip::Ipv4 a = network_ | (static_cast<uint32_t>(rng_()) & (broadcast_ - network_));
      if (a != network_ && a != broadcast_ && a != o_.target_ip && a != o_.own_ip &&
          a != o_.avoid_ip &&
          std::none_of(o_.statics.begin(), o_.statics.end(),
                       [&](const auto& s) { return s.first == a; }))
        return a;
    }
  }
  Mac made_up_mac() {
    Mac mac{};
    const uint64_t r = rng_();
    for (int i = 0; i < 6; ++i) mac[i] = static_cast<uint8_t>(r >> (8 * i));
    mac[0] = static_cast<uint8_t>((mac[0] & 0xfc) | 0x02);  // local, unicast
    return mac;
  }

  void send_arp_request(const Mac& mac, ip::Ipv4 address) {
    uint8_t frame[ip::kArpFrameSize];
    ip::build_arp(ip::arp_request(mac.data(), address, o_.target_ip), frame);
    link_.send(frame);
  }

  // A HELLO in UDP from (mac, source) to (dst_mac, destination), port
  // port_base + dst_queue, as a peer opening a connection sends it.
  void send_hello(const Mac& mac, ip::Ipv4 source, const Mac& dst_mac, ip::Ipv4 destination,
                  uint16_t destination_port, uint16_t src_queue) {
    std::vector<uint8_t> frame = hello_frame(ip::kUdp4Lead, src_queue);
    ip::Udp4Addresses addresses;
    addresses.source = source;
    addresses.destination = destination;
    addresses.source_port = 50000;
    addresses.destination_port = destination_port;
    ip::encode_udp4(frame.data(), dst_mac.data(), mac.data(), addresses,
                    frame.size() - ip::kUdp4Lead);
    link_.send(frame);
  }

  // A made-up unicast neighbour on the target's /64.
  ip::Ipv6 made_up_address6() {
    for (;;) {
      ip::Ipv6 a = *o_.target_ip6;
      const uint64_t r = rng_();
      for (int i = 0; i < 8; ++i) a.bytes[8 + i] = static_cast<uint8_t>(r >> (8 * i));
      if (a != *o_.target_ip6 && a != *o_.own_ip6) return a;
    }
  }

  // Our HELLO's header and body, sealed for UDP, after `lead` bytes.
  std::vector<uint8_t> hello_frame(size_t lead, uint16_t src_queue) {
    wire::FrameHeader h{};
    h.version = wire::kWireVersion;
    h.opcode = static_cast<uint8_t>(wire::Opcode::kHello);
    h.src_queue = h.src_ep_queue = src_queue;
    h.src_session = static_cast<uint32_t>(rng_()) | 1;
    h.conn = 1;
    h.token = rng_() | 1;
    h.msg_len = sizeof(wire::HandshakeBody);
    h.payload_len = sizeof(wire::HandshakeBody);
    const auto body = handshake_body(0, 1400);
    std::vector<uint8_t> frame(lead + sizeof(wire::FrameHeader) + body.size());
    uint8_t* header = frame.data() + lead;
    proto::encode_header(header, h);
    std::memcpy(header + sizeof(wire::FrameHeader), body.data(), body.size());
    proto::finish_seal_udp(header,
                           proto::crc32c(proto::begin_seal_udp(header), body.data(), body.size()));
    return frame;
  }

  void send_hello6(const Mac& mac, const ip::Ipv6& source, uint16_t src_queue) {
    std::vector<uint8_t> frame = hello_frame(ip::kUdp6Lead, src_queue);
    ip::Udp6Addresses addresses;
    addresses.source = source;
    addresses.destination = *o_.target_ip6;
    addresses.source_port = 50000;
    addresses.destination_port = o_.port_base;
    ip::encode_udp6(frame.data(), o_.target_mac.data(), mac.data(), addresses,
                    frame.size() - ip::kUdp6Lead);
    link_.send(frame);
  }

  void send_solicitation(const Mac& mac, const ip::Ipv6& source) {
    uint8_t frame[ip::kNeighbourFrameSize];
    ip::build_neighbour_solicitation(mac.data(), source, *o_.target_ip6, frame);
    link_.send(frame);
  }

  void send_echo6_request(uint16_t sequence) {
    uint8_t frame[ip::kEthernetHeaderSize + ip::kIpv6HeaderSize + 16] = {};
    std::memcpy(frame, o_.target_mac.data(), 6);
    std::memcpy(frame + 6, own_mac_.data(), 6);
    put16(frame + 12, ip::kEtherTypeIpv6);
    uint8_t* ipv6 = frame + ip::kEthernetHeaderSize;
    ipv6[0] = 0x60;
    put16(ipv6 + 4, 16);
    ipv6[6] = ip::kNextHeaderIcmp6;
    ipv6[7] = 64;
    std::memcpy(ipv6 + 8, o_.own_ip6->bytes.data(), 16);
    std::memcpy(ipv6 + 24, o_.target_ip6->bytes.data(), 16);
    uint8_t* icmp = ipv6 + ip::kIpv6HeaderSize;
    icmp[0] = 128;  // echo request
    put16(icmp + 4, 0x4f44);
    put16(icmp + 6, sequence);
    ip::ChecksumSum sum =
        ip::pseudo_header_sum(*o_.own_ip6, *o_.target_ip6, 16, ip::kNextHeaderIcmp6);
    sum.add(icmp, 16);
    put16(icmp + 2, sum.checksum());
    link_.send(frame);
  }

  // Writes the Ethernet and IPv4 headers of an ICMP message of
  // `icmp_length` bytes from us to the target at `frame` (zeroed, room for
  // both and the message); returns where the message goes.
  uint8_t* icmp_to_target(uint8_t* frame, size_t icmp_length) {
    std::memcpy(frame, o_.target_mac.data(), 6);
    std::memcpy(frame + 6, own_mac_.data(), 6);
    put16(frame + 12, ip::kEtherTypeIpv4);
    uint8_t* ipv4 = frame + ip::kEthernetHeaderSize;
    ipv4[0] = 0x45;
    put16(ipv4 + 2, static_cast<uint16_t>(ip::kIpv4HeaderSize + icmp_length));
    ipv4[8] = 64;
    ipv4[9] = ip::kProtocolIcmp;
    for (int i = 0; i < 4; ++i) {
      ipv4[12 + i] = static_cast<uint8_t>(o_.own_ip >> (24 - 8 * i));
      ipv4[16 + i] = static_cast<uint8_t>(o_.target_ip >> (24 - 8 * i));
    }
    put16(ipv4 + 10, ip::internet_checksum(ipv4, ip::kIpv4HeaderSize));
    return ipv4 + ip::kIpv4HeaderSize;
  }

  void send_echo_request(uint16_t sequence) {
    uint8_t frame[ip::kEthernetHeaderSize + ip::kIpv4HeaderSize + 16] = {};
    uint8_t* icmp = icmp_to_target(frame, 16);
    icmp[0] = 8;  // echo request
    put16(icmp + 4, 0x4f44);
    put16(icmp + 6, sequence);
    put16(icmp + 2, ip::internet_checksum(icmp, 16));
    link_.send(frame);
  }

  // Takes in the target's frames for `duration`.
  Seen listen(Clock::duration duration) {
    Seen seen;
    uint8_t buffer[2048];
    const auto end = Clock::now() + duration;
    for (auto now = Clock::now(); now < end; now = Clock::now()) {
      const auto left = std::chrono::duration_cast<std::chrono::microseconds>(end - now).count();
      const size_t length = link_.receive(buffer, std::max<int64_t>(left, 1));
      if (length != 0) take(buffer, length, &seen);
    }
    return seen;
  }

  // A UDP frame of the target's to `destination_mac`.
  void take_udp(const uint8_t* destination_mac, Seen* seen) {
    if (watched_ != Mac{} && std::memcmp(destination_mac, watched_.data(), 6) == 0)
      ++seen->to_watched;
  }

  void take6(const uint8_t* frame, size_t length, Seen* seen) {
    ip::Ipv6Packet packet;
    if (!o_.own_ip6 || ip::parse_ipv6_packet(frame, length, &packet) != ip::Ipv6Result::kOk) return;
    ip::NeighbourMessage message;
    if (ip::parse_neighbour_message(packet, &message)) {
      if (message.kind == ip::NeighbourMessage::Kind::kSolicitation) {
        seen->solicited.insert(message.target);
        if (message.target == *o_.own_ip6) {
          // A neighbour answers for its own address.
          uint8_t answer[ip::kNeighbourFrameSize];
          ip::build_neighbour_advertisement(message, frame + 6, own_mac_.data(), answer);
          link_.send(answer);
        }
      } else if (packet.destination == *o_.own_ip6) {
        ++seen->advertisements_to_us;
      }
      return;
    }
    if (packet.next_header == ip::kNextHeaderIcmp6 && packet.payload_length >= 8 &&
        packet.payload[0] == 129 && packet.destination == *o_.own_ip6) {
      ++seen->echo6_replies;
      return;
    }
    ip::UdpDatagram udp;
    if (!ip::parse_udp6(packet, &udp)) return;
    seen->udp6_to.insert(packet.destination);
    take_udp(frame, seen);
    if (packet.destination == *o_.own_ip6 && std::memcmp(frame, own_mac_.data(), 6) == 0)
      ++seen->udp6_to_our_mac;
    proto::DecodedFrame decoded;
    if (packet.destination == *o_.own_ip6 &&
        proto::decode_udp_payload(udp.payload, udp.payload_length, &decoded) ==
            proto::DecodeResult::kOk &&
        decoded.header.opcode == static_cast<uint8_t>(wire::Opcode::kHelloAck))
      ++seen->hello_acks6_to_us;
  }

  void take(const uint8_t* frame, size_t length, Seen* seen) {
    if (length >= 14 && frame[12] == 0x86 && frame[13] == 0xDD) return take6(frame, length, seen);
    if (const auto arp = ip::parse_arp(frame, length)) {
      if (arp->op == ip::ArpOp::kRequest) {
        seen->arp_asked.insert(arp->target_ip);
        if (std::all_of(frame, frame + 6, [](uint8_t b) { return b == 0xff; }))
          seen->arp_broadcast.insert(arp->target_ip);
        // A neighbour answers for its own address (ours, and the ones a
        // case makes up and claims).
        const auto claimed = claimed_.find(arp->target_ip);
        if (arp->target_ip == o_.own_ip || claimed != claimed_.end()) {
          uint8_t answer[ip::kArpFrameSize];
          ip::build_arp(ip::arp_reply(*arp, claimed == claimed_.end() ? own_mac_.data()
                                                                      : claimed->second.data()),
                        answer);
          link_.send(answer);
        }
      } else {
        seen->arp_replied_to.insert(arp->target_ip);
        if (std::memcmp(arp->target_mac, own_mac_.data(), 6) == 0) ++seen->arp_replies_to_us;
      }
      return;
    }
    ip::Ipv4Packet packet;
    if (ip::parse_ipv4_packet(frame, length, &packet) != ip::Ipv4Result::kOk) return;
    if (packet.destination == o_.avoid_ip)
      seen->largest_to_avoid = std::max(seen->largest_to_avoid, length);
    const bool broadcast_mac = std::all_of(frame, frame + 6, [](uint8_t b) { return b == 0xff; });
    if (packet.protocol == ip::kProtocolIcmp && packet.payload_length >= 8 &&
        packet.payload[0] == 0 && packet.destination == o_.own_ip) {
      ++seen->echo_replies;
      return;
    }
    ip::UdpDatagram udp;
    if (packet.protocol != ip::kProtocolUdp || !ip::parse_udp(packet, &udp)) return;
    seen->udp_to.insert(packet.destination);
    take_udp(frame, seen);
    if (packet.destination == o_.avoid_ip) {
      ++seen->to_avoid;
      if (std::memcmp(frame, o_.avoid_mac.data(), 6) != 0) ++seen->to_avoid_elsewhere;
    }
    if (broadcast_mac || packet.destination == broadcast_ || packet.destination == 0xffffffffu)
      ++seen->answers_to_broadcast;
    proto::DecodedFrame decoded;
    if (packet.destination == o_.own_ip &&
        proto::decode_udp_payload(udp.payload, udp.payload_length, &decoded) ==
            proto::DecodeResult::kOk &&
        decoded.header.opcode == static_cast<uint8_t>(wire::Opcode::kHelloAck))
      ++seen->hello_acks_to_us;
  }

  void put_file(const std::string& name) { std::ofstream(o_.rendezvous + "/" + name) << "\n"; }

  // The cases and their helpers, by file.
  // udp_adversary_ipv4.cc
  Result answers();
  Result spoofed_hellos();
  Result broadcasts();
  Result echo_flood();
  void send_too_big(uint16_t conn, uint64_t token, uint16_t mtu);
  Result forged_too_big();
  void send_arp_claim(const Mac& frame_source, const Mac& sender_mac, ip::Ipv4 sender_ip);
  Result arp_redirect();
  Result static_neighbours();
  Result arp_evict();
  Result arp_flood();
  // udp_adversary_ipv6.cc
  Result nd_redirect();
  Result answers6();
  Result spoofed_hellos6();
  Result echo6_flood();
  Result bounded_flood(const char* what, const std::function<void()>& send);
  Result solicitation_flood();
  Result stranger_flood6();
  std::string await(const std::string& name, Clock::duration limit);
  Result ipv6_table_flush();
  void send_datagram6(uint16_t length);
  Result dgram_share();
  Result newcomer();

  static void merge(Seen* into, const Seen& more) {
    into->arp_asked.insert(more.arp_asked.begin(), more.arp_asked.end());
    into->arp_broadcast.insert(more.arp_broadcast.begin(), more.arp_broadcast.end());
    into->arp_replied_to.insert(more.arp_replied_to.begin(), more.arp_replied_to.end());
    into->arp_replies_to_us += more.arp_replies_to_us;
    into->udp_to.insert(more.udp_to.begin(), more.udp_to.end());
    into->hello_acks_to_us += more.hello_acks_to_us;
    into->answers_to_broadcast += more.answers_to_broadcast;
    into->echo_replies += more.echo_replies;
    into->solicited.insert(more.solicited.begin(), more.solicited.end());
    into->advertisements_to_us += more.advertisements_to_us;
    into->udp6_to.insert(more.udp6_to.begin(), more.udp6_to.end());
    into->hello_acks6_to_us += more.hello_acks6_to_us;
    into->echo6_replies += more.echo6_replies;
    into->largest_to_avoid = std::max(into->largest_to_avoid, more.largest_to_avoid);
    into->to_avoid += more.to_avoid;
    into->to_avoid_elsewhere += more.to_avoid_elsewhere;
    into->to_watched += more.to_watched;
    into->udp6_to_our_mac += more.udp6_to_our_mac;
  }

  const Options o_;
  RawLink link_;
  std::mt19937_64 rng_;
  Mac own_mac_{};
  ip::Ipv4 network_ = 0, broadcast_ = 0;
  Mac watched_{};                    // a case's forged MAC (zero: none)
  std::map<ip::Ipv4, Mac> claimed_;  // made-up neighbours we answer ARP for
};

}  // namespace ofi_dpdk::adversarial
