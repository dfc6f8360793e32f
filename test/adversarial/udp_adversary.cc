// udp_adversary: hostile traffic at a provider process whose port has an
// IPv4 address (FI_DPDK_ENCAP=udp), while a live pair runs beside it
// (test_udp_adversarial.sh).  It sits on the peer's end of a veth pair, so
// what it sends reaches the target as from the wire, and it sees what the
// target sends.  It answers the target's ARP requests and neighbour
// solicitations for its own addresses (--own-ip, --own-ip6), as a
// neighbour does.  Cases, in order:
//
//   answers        (the control) an ARP request for the target's address
//                  gets a reply, and a HELLO in UDP from that sender a
//                  HELLO_ACK: the target does answer a stranger it knows.
//   spoofed_hellos HELLOs from made-up sources on the subnet, which never
//                  asked ARP for the target: no ARP request and no UDP
//                  frame toward any of them (resolving each would let a
//                  stranger fill the target's resolution slots, and answer
//                  floods at addresses that never spoke).
//   broadcasts     HELLOs to the subnet's broadcast address, to
//                  255.255.255.255, from a broadcast source, and to a port
//                  no endpoint can have: nothing answers them.
//   echo_flood     echo requests far above the target's limit: ping works,
//                  and replies stay within 100 a second.
//   arp_flood      ARP requests from a different made-up neighbour each:
//                  the target's memory stays bounded.
//   forged_too_big ICMP "fragmentation needed" (MTU 576) from a made-up
//                  router, each quoting a frame of the target's to the
//                  live pair's peer with a guessed connection number and
//                  token: the target's frames to that peer keep their size
//                  (as large as before, above 576 bytes).
//   arp_redirect   ARP requests for the target's address claiming the live
//                  peer's (--avoid): from a made-up MAC, with the
//                  broadcast MAC, and with a sender MAC that is not the
//                  frame's source: the target's frames to the peer keep
//                  going to the peer's MAC (--avoid-mac), none to the
//                  claimed one, and keep coming (issue 42, finding 2).
//   static_neighbours  with --static IP=MAC (FI_DPDK_NEIGHBOURS, or the
//                  kernel's permanent entry on the target's interface): a
//                  HELLO from IP is answered at MAC without a question,
//                  and after an ARP request claiming IP from a made-up MAC
//                  still at MAC, never at the claimed one.
//   arp_evict      1200 made-up neighbours each ask ARP for the target and
//                  answer when it asks them back, so that each takes a
//                  place in its neighbour table (1024): the peer's entry,
//                  in use, is not evicted (the target never asks for the
//                  peer again, with FI_DPDK_NEIGHBOUR_LIFETIME_MS long) and
//                  its frames go nowhere else.
//
// With --target-ip6 and --own-ip6 (the target's port has an IPv6 address
// on a /64 too), the same in IPv6:
//
//   answers6       (the control) a neighbour solicitation for the target's
//                  address gets an advertisement, a HELLO in UDP/IPv6 from
//                  that sender a HELLO_ACK, an echo request a reply.
//   nd_redirect    the target now sends to our IPv6 address (the live pair
//                  is IPv4): a solicitation from a made-up MAC claiming
//                  that address: the target's answers to our HELLOs keep
//                  going to our own MAC, none to the claimed one.
//   spoofed_hellos6 HELLOs from made-up sources on the prefix that never
//                  solicited the target: no solicitation and no UDP frame
//                  toward any of them.
//   echo6_flood    echo requests far above the limit: replies stay within
//                  100 a second.
//   solicitation_flood  solicitations from a different made-up neighbour
//                  each: the target's memory stays bounded.
//   stranger_flood6  HELLOs from a different made-up source each, each of
//                  which takes a place in the target's IPv6 peer table:
//                  its memory stays bounded.
//
// Two more run only when named (--cases), against the IPv6 peers of
// test_tables.sh (table_peer.cc), which meet them through --rendezvous DIR:
//
//   ipv6_table_flush  the target's peer (rdm-client) made a round of
//                  messages, a write and a read (DIR/round1), and went
//                  idle; the target never inserted it.  Then HELLOs in
//                  UDP/IPv6 from 3,000 made-up sources on the /64, each a
//                  stranger the target's IPv6 peer table makes room for
//                  (DIR/flooded).  The peer's second round passes
//                  (DIR/round2): its entry, which its live connection
//                  holds, was not among those that made room.
//   dgram_share    a DGRAM target posts no receive (dgram-target); from one
//                  forged source (our address), 2,000 datagrams of 1 KiB,
//                  far more than its unexpected budget holds
//                  (DIR/flooded).  Then an honest client sends
//                  --client-datagrams (DIR/sent), the target takes all that
//                  waits (DIR/drain), and at least half of the client's
//                  were there (DIR/dgram-result): the flood held only its
//                  sender's share of the budget.
//
//   udp_adversary --iface IFACE --target-mac MAC --target-ip A --own-ip B
//                 --prefix N --target-pid PID [--avoid C --avoid-mac M] [--port-base P]
//                 [--static IP=MAC]...
//                 [--target-ip6 A6 --own-ip6 B6] [--rss-limit-kb N] [--seed N]
//                 [--cases a,b,...] [--rendezvous DIR] [--client-datagrams N]
//
// Exit 0 when every case passed, 1 otherwise, 2 on set-up errors.
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
namespace {

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
};

[[noreturn]] void setup_error(const std::string& what) {
  std::fprintf(stderr, "udp_adversary: %s\n", what.c_str());
  std::exit(2);
}

ip::Ipv4 address_option(const std::string& text) {
  const auto address = ip::parse_ipv4(text);
  if (!address) setup_error("not an IPv4 address: " + text);
  return *address;
}

ip::Ipv6 address6_option(const std::string& text) {
  const auto address = ip::parse_ipv6(text);
  if (!address) setup_error("not an IPv6 address: " + text);
  return *address;
}

Mac mac_option(const std::string& text) {
  Mac mac{};
  unsigned b[6];
  if (std::sscanf(text.c_str(), "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6)
    setup_error("not a MAC address: " + text);
  for (int i = 0; i < 6; ++i) mac[i] = static_cast<uint8_t>(b[i]);
  return mac;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) setup_error(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--iface") o.iface = value();
    else if (arg == "--target-mac") o.target_mac = mac_option(value());
    else if (arg == "--target-ip") o.target_ip = address_option(value());
    else if (arg == "--own-ip") o.own_ip = address_option(value());
    else if (arg == "--avoid") o.avoid_ip = address_option(value());
    else if (arg == "--avoid-mac") o.avoid_mac = mac_option(value());
    else if (arg == "--static") {
      const std::string item = value();
      const size_t equals = item.find('=');
      if (equals == std::string::npos) setup_error("--static wants IP=MAC: " + item);
      o.statics.emplace_back(address_option(item.substr(0, equals)),
                             mac_option(item.substr(equals + 1)));
    }
    else if (arg == "--target-ip6") o.target_ip6 = address6_option(value());
    else if (arg == "--own-ip6") o.own_ip6 = address6_option(value());
    else if (arg == "--prefix") o.prefix = static_cast<unsigned>(std::stoul(value()));
    else if (arg == "--target-pid") o.target_pid = std::stol(value());
    else if (arg == "--port-base") o.port_base = static_cast<uint16_t>(std::stoul(value()));
    else if (arg == "--rss-limit-kb") o.rss_limit_kb = std::stol(value());
    else if (arg == "--seed") o.seed = std::stoull(value());
    else if (arg == "--rendezvous") o.rendezvous = value();
    else if (arg == "--client-datagrams") o.client_datagrams = std::stoi(value());
    else if (arg == "--cases") {
      const std::string list = value();
      for (size_t start = 0; start <= list.size();) {
        const size_t comma = std::min(list.find(',', start), list.size());
        if (comma > start) o.cases.push_back(list.substr(start, comma - start));
        start = comma + 1;
      }
    } else setup_error("unknown option " + arg);
  }
  for (const std::string& name : o.cases)
    if ((name == "ipv6_table_flush" || name == "dgram_share") &&
        (o.rendezvous.empty() || !o.target_ip6 || !o.own_ip6))
      setup_error(name + " needs --rendezvous, --target-ip6 and --own-ip6");
  if (o.iface.empty() || o.target_ip == 0 || o.own_ip == 0 || o.target_pid <= 0 ||
      o.prefix < 8 || o.prefix > 30)
    setup_error("--iface, --target-mac, --target-ip, --own-ip, --prefix (8-30) and "
                "--target-pid are required");
  return o;
}

long resident_kb(long pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  return -1;  // gone
}

void put16(uint8_t* at, uint16_t value) {
  at[0] = static_cast<uint8_t>(value >> 8);
  at[1] = static_cast<uint8_t>(value);
}

// Everything the target sends but the live pair's frames to the peer.
std::vector<sock_filter> from_target(const Mac& target) {
  FilterBuilder f;
  f.load_word(6);
  f.jump_unless_equal(uint32_t{target[0]} << 24 | target[1] << 16 | target[2] << 8 | target[3],
                      "reject");
  f.load_half(10);
  f.jump_unless_equal(uint32_t{target[4]} << 8 | target[5], "reject");
  f.load_half(12);
  f.jump_if_equal(ip::kEtherTypeArp, "accept");
  f.jump_if_equal(ip::kEtherTypeIpv4, "accept");
  f.jump_if_equal(ip::kEtherTypeIpv6, "accept");
  f.label("reject");
  f.reject();
  f.label("accept");
  f.accept();
  return f.finish();
}

// What the target sent during a listen.
struct Seen {
  std::set<ip::Ipv4> arp_asked;        // addresses its ARP requests asked for
  uint64_t arp_replies_to_us = 0;      // replies to our own MAC
  std::set<ip::Ipv4> udp_to;           // destinations of its UDP frames
  uint64_t hello_acks_to_us = 0;       // HELLO_ACKs in UDP to our own address
  uint64_t answers_to_broadcast = 0;   // UDP to a broadcast address or MAC
  uint64_t echo_replies = 0;
  std::set<ip::Ipv6> solicited;        // targets of its neighbour solicitations
  uint64_t advertisements_to_us = 0;   // advertisements to our own IPv6 address
  std::set<ip::Ipv6> udp6_to;          // destinations of its UDP/IPv6 frames
  uint64_t hello_acks6_to_us = 0;
  uint64_t echo6_replies = 0;
  size_t largest_to_avoid = 0;         // its largest IPv4 frame to --avoid (the pair's peer)
  uint64_t to_avoid = 0;               // its UDP frames to --avoid
  uint64_t to_avoid_elsewhere = 0;     // of those, not to --avoid-mac
  uint64_t to_watched = 0;             // UDP frames to the MAC a case watches
  uint64_t udp6_to_our_mac = 0;        // UDP/IPv6 to our address and our MAC
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
    std::printf("target memory: %ld kB -> %ld kB (%+ld kB, limit %ld kB)\n", rss_before,
                rss_after, growth, o_.rss_limit_kb);
    if (growth > o_.rss_limit_kb) all = false;
    return all ? 0 : 1;
  }

 private:
  int run_named() {
    bool all = true;
    for (const std::string& name : o_.cases) {
      if (name == "answers6") all &= report("answers6", answers6());
      else if (name == "ipv6_table_flush") all &= report("ipv6_table_flush", ipv6_table_flush());
      else if (name == "dgram_share") all &= report("dgram_share", dgram_share());
      else setup_error("no case " + name + " runs alone");
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
    proto::finish_seal_udp(
        header, proto::crc32c(proto::begin_seal_udp(header), body.data(), body.size()));
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
    if (!o_.own_ip6 || ip::parse_ipv6_packet(frame, length, &packet) != ip::Ipv6Result::kOk)
      return;
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
      } else if (std::memcmp(arp->target_mac, own_mac_.data(), 6) == 0) ++seen->arp_replies_to_us;
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

  Result answers() {
    Result r;
    uint64_t replies = 0, acks = 0;
    for (int attempt = 0; attempt < 5 && (replies == 0 || acks == 0); ++attempt) {
      send_arp_request(own_mac_, o_.own_ip);
      replies += listen(milliseconds(200)).arp_replies_to_us;
      send_hello(own_mac_, o_.own_ip, o_.target_mac, o_.target_ip, o_.port_base, 7);
      acks += listen(milliseconds(300)).hello_acks_to_us;
    }
    if (replies == 0) r.fail("no ARP reply to a request for the target's address");
    if (acks == 0) r.fail("no HELLO_ACK to a HELLO from a neighbour that asked ARP");
    r.note(std::to_string(replies) + " ARP replies, " + std::to_string(acks) + " HELLO_ACKs");
    return r;
  }

  Result spoofed_hellos() {
    Result r;
    constexpr int kHellos = 2000;
    std::set<ip::Ipv4> sources;
    Seen seen;
    for (int i = 0; i < kHellos; ++i) {
      const ip::Ipv4 source = made_up_address();
      sources.insert(source);
      send_hello(made_up_mac(), source, o_.target_mac, o_.target_ip, o_.port_base,
                 static_cast<uint16_t>(i % 64));
      if (i % 200 == 199) merge(&seen, listen(milliseconds(20)));
    }
    merge(&seen, listen(milliseconds(1500)));
    size_t asked = 0, answered = 0;
    for (const ip::Ipv4 a : seen.arp_asked) asked += sources.count(a);
    for (const ip::Ipv4 a : seen.udp_to) answered += sources.count(a);
    if (asked != 0) r.fail(std::to_string(asked) + " made-up sources asked for by ARP");
    if (answered != 0) r.fail(std::to_string(answered) + " made-up sources sent UDP");
    r.note(std::to_string(sources.size()) + " sources, " + std::to_string(asked) +
           " ARP requests for them, " + std::to_string(answered) + " answered");
    return r;
  }

  Result broadcasts() {
    Result r;
    const Mac everyone = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    Seen seen;
    for (int round = 0; round < 20; ++round) {
      send_hello(own_mac_, o_.own_ip, everyone, broadcast_, o_.port_base, 9);
      send_hello(own_mac_, o_.own_ip, everyone, 0xffffffffu, o_.port_base, 9);
      send_hello(own_mac_, broadcast_, o_.target_mac, o_.target_ip, o_.port_base, 9);
      send_hello(own_mac_, o_.own_ip, o_.target_mac, o_.target_ip, 0xffff, 9);
      merge(&seen, listen(milliseconds(25)));
    }
    merge(&seen, listen(milliseconds(500)));
    if (seen.answers_to_broadcast != 0)
      r.fail(std::to_string(seen.answers_to_broadcast) + " frames to a broadcast address");
    if (seen.hello_acks_to_us != 0)
      r.fail(std::to_string(seen.hello_acks_to_us) +
             " HELLO_ACKs to HELLOs sent to a broadcast address or a port no endpoint has");
    r.note("80 HELLOs, " + std::to_string(seen.answers_to_broadcast) + " broadcast answers, " +
           std::to_string(seen.hello_acks_to_us) + " HELLO_ACKs");
    return r;
  }

  Result echo_flood() {
    Result r;
    constexpr int kRequests = 3000;
    Seen seen;
    const auto start = Clock::now();
    for (int i = 0; i < kRequests; ++i) {
      send_echo_request(static_cast<uint16_t>(i));
      if (i % 100 == 99) merge(&seen, listen(milliseconds(30)));
    }
    merge(&seen, listen(milliseconds(500)));
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    // (100 a second, and one second's worth at once.)
    const auto most = static_cast<uint64_t>(100 * (seconds + 1));
    if (seen.echo_replies == 0) r.fail("no echo reply at all");
    if (seen.echo_replies > most)
      r.fail(std::to_string(seen.echo_replies) + " replies, above " + std::to_string(most));
    char text[96];
    std::snprintf(text, sizeof text, "%d requests in %.2f s, %lu replies", kRequests, seconds,
                  static_cast<unsigned long>(seen.echo_replies));
    r.note(text);
    return r;
  }

  // A router's "fragmentation needed" (MTU `mtu`), from a made-up router
  // on the subnet, quoting the start of a frame the target might have sent
  // the pair's peer: its IPv4 and UDP headers and our header with the
  // given connection number and token.
  void send_too_big(uint16_t conn, uint64_t token, uint16_t mtu) {
    wire::FrameHeader h{};
    h.version = wire::kWireVersion;
    h.opcode = static_cast<uint8_t>(wire::Opcode::kResponse);
    h.src_session = static_cast<uint32_t>(rng_()) | 1;
    h.conn = conn;
    h.token = token;
    h.payload_len = 1384;
    h.msg_len = 4096;
    std::vector<uint8_t> sent(ip::kUdp4Lead + sizeof(wire::FrameHeader));
    proto::encode_header(sent.data() + ip::kUdp4Lead, h);
    ip::Udp4Addresses addresses;
    addresses.source = o_.target_ip;
    addresses.destination = o_.avoid_ip;
    addresses.source_port = 50000;
    addresses.destination_port = o_.port_base;
    ip::encode_udp4(sent.data(), own_mac_.data(), o_.target_mac.data(), addresses,
                    sizeof(wire::FrameHeader) + h.payload_len);
    const size_t quote = sent.size() - ip::kEthernetHeaderSize;
    std::vector<uint8_t> frame(ip::kEthernetHeaderSize + ip::kIpv4HeaderSize + 8 + quote);
    uint8_t* icmp = icmp_to_target(frame.data(), 8 + quote);
    icmp[0] = 3;  // destination unreachable
    icmp[1] = 4;  // fragmentation needed
    put16(icmp + 6, mtu);
    std::memcpy(icmp + 8, sent.data() + ip::kEthernetHeaderSize, quote);
    put16(icmp + 2, ip::internet_checksum(icmp, 8 + quote));
    link_.send(frame);
  }

  Result forged_too_big() {
    // The pair's fetch-adds of 4096 bytes go in full frames: the control.
    Result r;
    const size_t before = listen(milliseconds(300)).largest_to_avoid;
    if (before <= 700) {
      r.fail("the target sent the pair's peer no frame above 700 bytes before the attack (" +
             std::to_string(before) + "): nothing to show");
      return r;
    }
    constexpr int kWords = 5000;
    for (int i = 0; i < kWords; ++i) {
      send_too_big(static_cast<uint16_t>(1 + i % 64), static_cast<uint32_t>(rng_()), 576);
      if (i % 500 == 499) (void)listen(milliseconds(5));
    }
    (void)listen(milliseconds(100));  // what left before the words were read
    const size_t after = listen(milliseconds(500)).largest_to_avoid;
    if (after + 100 < before)
      r.fail("the target's frames to the pair's peer shrank from " + std::to_string(before) +
             " to " + std::to_string(after) + " bytes");
    r.note(std::to_string(kWords) + " words; largest frame to the peer " + std::to_string(before) +
           " bytes before, " + std::to_string(after) + " after");
    return r;
  }

  // An ARP request for the target's address from (frame_source,
  // sender_mac, sender_ip).
  void send_arp_claim(const Mac& frame_source, const Mac& sender_mac, ip::Ipv4 sender_ip) {
    uint8_t frame[ip::kArpFrameSize];
    ip::build_arp(ip::arp_request(sender_mac.data(), sender_ip, o_.target_ip), frame);
    std::memcpy(frame + 6, frame_source.data(), 6);
    link_.send(frame);
  }

  Result arp_redirect() {
    Result r;
    if (o_.avoid_mac == Mac{}) {
      r.fail("--avoid-mac (the live peer's MAC) is needed");
      return r;
    }
    const Seen before = listen(milliseconds(300));
    if (before.to_avoid == 0 || before.to_avoid_elsewhere != 0) {
      r.fail("before the attack the target sent the peer " + std::to_string(before.to_avoid) +
             " frames, " + std::to_string(before.to_avoid_elsewhere) +
             " elsewhere: nothing to show");
      return r;
    }
    const Mac everyone = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    struct Claim {
      const char* what;
      Mac frame_source, sender_mac;
    };
    const Mac forged = made_up_mac();
    const Claim claims[] = {
        {"a made-up MAC", forged, forged},
        {"the broadcast MAC", forged, everyone},
        {"a sender MAC not the frame's source", own_mac_, made_up_mac()},
    };
    for (const Claim& claim : claims) {
      watched_ = claim.sender_mac;
      Seen after;
      for (int i = 0; i < 3; ++i) {
        send_arp_claim(claim.frame_source, claim.sender_mac, o_.avoid_ip);
        merge(&after, listen(milliseconds(150)));
      }
      merge(&after, listen(milliseconds(300)));
      if (after.to_watched != 0 || after.to_avoid_elsewhere != 0)
        r.fail(std::to_string(after.to_watched) + " of the target's frames to " + claim.what +
               " claiming the peer's address, " + std::to_string(after.to_avoid_elsewhere) +
               " to the peer's address not at its MAC");
      if (after.to_avoid == 0) r.fail(std::string("the pair stopped after ") + claim.what);
      r.note(std::string(claim.what) + ": " + std::to_string(after.to_avoid) +
             " frames to the peer, " + std::to_string(after.to_watched) + " to the claimed MAC");
    }
    watched_ = {};
    return r;
  }

  Result static_neighbours() {
    Result r;
    for (const auto& [address, mac] : o_.statics) {
      const std::string name = ip::format_ipv4(address);
      watched_ = mac;
      Seen first;
      for (int i = 0; i < 3 && first.to_watched == 0; ++i) {
        send_hello(own_mac_, address, o_.target_mac, o_.target_ip, o_.port_base,
                   static_cast<uint16_t>(20 + i));
        merge(&first, listen(milliseconds(300)));
      }
      if (first.to_watched == 0) r.fail("no answer to " + name + " at its static MAC");
      if (first.arp_asked.count(address) != 0) r.fail(name + " was asked for by ARP");
      // A claim from the wire changes nothing.
      const Mac forged = made_up_mac();
      send_arp_claim(forged, forged, address);
      (void)listen(milliseconds(100));
      Seen second;
      for (int i = 0; i < 3; ++i) {
        send_hello(own_mac_, address, o_.target_mac, o_.target_ip, o_.port_base,
                   static_cast<uint16_t>(23 + i));
        watched_ = forged;
        const Seen seen = listen(milliseconds(200));
        if (seen.to_watched != 0) r.fail(name + " answered at the MAC a request claimed");
        merge(&second, seen);
      }
      if (second.udp_to.count(address) == 0)
        r.fail("no answer to " + name + " after a request claimed it");
      r.note(name + ": " + std::to_string(first.to_watched) + " answers at its static MAC");
    }
    watched_ = {};
    return r;
  }

  Result arp_evict() {
    Result r;
    constexpr int kNeighbours = 1200;
    Seen seen;
    claimed_.clear();
    for (int i = 0; i < kNeighbours; ++i) {
      ip::Ipv4 address = made_up_address();
      while (claimed_.contains(address)) address = made_up_address();
      const Mac mac = made_up_mac();
      claimed_[address] = mac;
      send_arp_request(mac, address);
      // Answered within the target's ask-back pool (64 open at once).
      if (i % 32 == 31) merge(&seen, listen(milliseconds(10)));
    }
    merge(&seen, listen(milliseconds(1000)));
    size_t asked_back = 0;
    for (const auto& [address, mac] : claimed_) asked_back += seen.arp_asked.count(address);
    claimed_.clear();
    if (seen.arp_asked.count(o_.avoid_ip) != 0)
      r.fail("the target asked for the peer again: its entry was evicted");
    if (seen.to_avoid_elsewhere != 0)
      r.fail(std::to_string(seen.to_avoid_elsewhere) + " frames to the peer not at its MAC");
    if (seen.to_avoid == 0) r.fail("the pair stopped");
    r.note(std::to_string(kNeighbours) + " neighbours, " + std::to_string(asked_back) +
           " asked back and answered; " + std::to_string(seen.to_avoid) + " frames to the peer, " +
           std::to_string(seen.to_avoid_elsewhere) + " not at its MAC");
    return r;
  }

  Result nd_redirect() {
    // answers6 left the target sending to our address, at our MAC.
    Result r;
    Seen before;
    for (int i = 0; i < 3 && before.udp6_to_our_mac == 0; ++i) {
      send_hello6(own_mac_, *o_.own_ip6, 11);
      merge(&before, listen(milliseconds(300)));
    }
    if (before.udp6_to_our_mac == 0) {
      r.fail("the target sent nothing to our IPv6 address before the attack: nothing to show");
      return r;
    }
    const Mac forged = made_up_mac();
    watched_ = forged;
    Seen after;
    for (int i = 0; i < 3; ++i) {
      send_solicitation(forged, *o_.own_ip6);
      merge(&after, listen(milliseconds(100)));
      send_hello6(own_mac_, *o_.own_ip6, static_cast<uint16_t>(12 + i));
      merge(&after, listen(milliseconds(300)));
    }
    watched_ = {};
    if (after.to_watched != 0)
      r.fail(std::to_string(after.to_watched) + " of the target's frames to the claimed MAC");
    if (after.udp6_to_our_mac == 0) r.fail("the target stopped answering us at our MAC");
    r.note(std::to_string(after.udp6_to_our_mac) + " frames to us at our MAC, " +
           std::to_string(after.to_watched) + " to the claimed one");
    return r;
  }

  Result arp_flood() {
    return bounded_flood("ARP requests", [&] { send_arp_request(made_up_mac(), made_up_address()); });
  }

  Result answers6() {
    Result r;
    uint64_t advertisements = 0, acks = 0, echoes = 0;
    for (int attempt = 0; attempt < 5 && (advertisements == 0 || acks == 0 || echoes == 0);
         ++attempt) {
      send_solicitation(own_mac_, *o_.own_ip6);
      advertisements += listen(milliseconds(200)).advertisements_to_us;
      send_hello6(own_mac_, *o_.own_ip6, 7);
      acks += listen(milliseconds(300)).hello_acks6_to_us;
      send_echo6_request(static_cast<uint16_t>(attempt));
      echoes += listen(milliseconds(200)).echo6_replies;
    }
    if (advertisements == 0) r.fail("no advertisement answering a solicitation for the target");
    if (acks == 0) r.fail("no HELLO_ACK to a HELLO from a neighbour that solicited");
    if (echoes == 0) r.fail("no echo reply");
    r.note(std::to_string(advertisements) + " advertisements, " + std::to_string(acks) +
           " HELLO_ACKs, " + std::to_string(echoes) + " echo replies");
    return r;
  }

  Result spoofed_hellos6() {
    Result r;
    constexpr int kHellos = 2000;
    std::set<ip::Ipv6> sources;
    Seen seen;
    for (int i = 0; i < kHellos; ++i) {
      const ip::Ipv6 source = made_up_address6();
      sources.insert(source);
      send_hello6(made_up_mac(), source, static_cast<uint16_t>(i % 64));
      if (i % 200 == 199) merge(&seen, listen(milliseconds(20)));
    }
    merge(&seen, listen(milliseconds(1500)));
    size_t asked = 0, answered = 0;
    for (const ip::Ipv6& a : seen.solicited) asked += sources.count(a);
    for (const ip::Ipv6& a : seen.udp6_to) answered += sources.count(a);
    if (asked != 0) r.fail(std::to_string(asked) + " made-up sources solicited");
    if (answered != 0) r.fail(std::to_string(answered) + " made-up sources sent UDP");
    r.note(std::to_string(sources.size()) + " sources, " + std::to_string(asked) +
           " solicited, " + std::to_string(answered) + " answered");
    return r;
  }

  Result echo6_flood() {
    Result r;
    constexpr int kRequests = 3000;
    Seen seen;
    const auto start = Clock::now();
    for (int i = 0; i < kRequests; ++i) {
      send_echo6_request(static_cast<uint16_t>(i));
      if (i % 100 == 99) merge(&seen, listen(milliseconds(30)));
    }
    merge(&seen, listen(milliseconds(500)));
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const auto most = static_cast<uint64_t>(100 * (seconds + 1));
    if (seen.echo6_replies == 0) r.fail("no echo reply at all");
    if (seen.echo6_replies > most)
      r.fail(std::to_string(seen.echo6_replies) + " replies, above " + std::to_string(most));
    char text[96];
    std::snprintf(text, sizeof text, "%d requests in %.2f s, %lu replies", kRequests, seconds,
                  static_cast<unsigned long>(seen.echo6_replies));
    r.note(text);
    return r;
  }

  // `send` kRequests times from a new made-up neighbour each: the target's
  // memory stays within the limit.
  Result bounded_flood(const char* what, const std::function<void()>& send) {
    Result r;
    constexpr int kRequests = 20000;
    const long before = resident_kb(o_.target_pid);
    for (int i = 0; i < kRequests; ++i) {
      send();
      if (i % 500 == 499) listen(milliseconds(10));
    }
    listen(milliseconds(500));
    const long after = resident_kb(o_.target_pid);
    if (after < 0) r.fail("the target is gone");
    else if (after - before > o_.rss_limit_kb)
      r.fail("the target grew by " + std::to_string(after - before) + " kB");
    r.note(std::to_string(kRequests) + " " + what + " from as many neighbours, target " +
           std::to_string(after - before) + " kB");
    return r;
  }

  Result solicitation_flood() {
    return bounded_flood("solicitations",
                         [&] { send_solicitation(made_up_mac(), made_up_address6()); });
  }

  Result stranger_flood6() {
    uint16_t queue = 0;
    return bounded_flood("HELLOs", [&] {
      send_hello6(made_up_mac(), made_up_address6(), static_cast<uint16_t>(queue++ % 64));
    });
  }

  // The first line of DIR/name once it appears, within `limit`; "" if it
  // does not (the target's frames are taken meanwhile, as they come).
  std::string await(const std::string& name, Clock::duration limit) {
    const std::string path = o_.rendezvous + "/" + name;
    const auto end = Clock::now() + limit;
    while (!std::ifstream(path).good()) {
      if (Clock::now() > end) return "";
      (void)listen(milliseconds(20));
    }
    std::string line;
    std::getline(std::ifstream(path) >> std::ws, line);
    return line;
  }
  void put_file(const std::string& name) { std::ofstream(o_.rendezvous + "/" + name) << "\n"; }

  Result ipv6_table_flush() {
    Result r;
    const std::string first = await("round1", std::chrono::seconds(60));
    if (first != "ok") {
      r.fail("the peer's first round: " + (first.empty() ? "none within 60 s" : first));
      return r;
    }
    constexpr int kSources = 3000;
    for (int i = 0; i < kSources; ++i) {
      send_hello6(made_up_mac(), made_up_address6(), static_cast<uint16_t>(i % 64));
      if (i % 250 == 249) (void)listen(milliseconds(10));
    }
    (void)listen(milliseconds(500));  // taken in before the peer speaks again
    put_file("flooded");
    const std::string second = await("round2", std::chrono::seconds(90));
    if (second != "ok")
      r.fail("the peer's round after the flood: " + (second.empty() ? "none within 90 s" : second));
    r.note(std::to_string(kSources) + " strangers while the peer was idle; its round after: " +
           (second.empty() ? "none" : second));
    return r;
  }

  // One DATAGRAM frame of `length` bytes in UDP/IPv6 from us to the
  // target's queue 0.
  void send_datagram6(uint16_t length) {
    wire::FrameHeader h{};
    h.version = wire::kWireVersion;
    h.opcode = static_cast<uint8_t>(wire::Opcode::kDatagram);
    h.src_queue = h.src_ep_queue = 1;
    h.src_session = 0x5eed;
    h.msg_len = length;
    h.payload_len = length;
    std::vector<uint8_t> frame(ip::kUdp6Lead + sizeof(wire::FrameHeader) + length, 0xD6);
    uint8_t* header = frame.data() + ip::kUdp6Lead;
    proto::encode_header(header, h);
    proto::finish_seal_udp(header, proto::crc32c(proto::begin_seal_udp(header),
                                                 header + sizeof(wire::FrameHeader), length));
    ip::Udp6Addresses addresses;
    addresses.source = *o_.own_ip6;
    addresses.destination = *o_.target_ip6;
    addresses.source_port = 50001;
    addresses.destination_port = o_.port_base;
    ip::encode_udp6(frame.data(), o_.target_mac.data(), own_mac_.data(), addresses,
                    frame.size() - ip::kUdp6Lead);
    link_.send(frame);
  }

  Result dgram_share() {
    Result r;
    if (await("ready", std::chrono::seconds(60)).empty()) {
      r.fail("no DGRAM target within 60 s");
      return r;
    }
    constexpr int kDatagrams = 2000;
    for (int i = 0; i < kDatagrams; ++i) {
      send_datagram6(1024);
      if (i % 100 == 99) (void)listen(milliseconds(5));
    }
    (void)listen(milliseconds(500));
    put_file("flooded");
    if (await("sent", std::chrono::seconds(60)).empty()) {
      r.fail("the honest client sent nothing within 60 s");
      return r;
    }
    (void)listen(milliseconds(300));  // its last datagrams taken in
    put_file("drain");
    const std::string result = await("dgram-result", std::chrono::seconds(60));
    unsigned long from_client = 0, others = 0;
    if (std::sscanf(result.c_str(), "client %lu others %lu", &from_client, &others) != 2) {
      r.fail("no result from the DGRAM target: '" + result + "'");
      return r;
    }
    if (from_client * 2 < static_cast<unsigned long>(o_.client_datagrams))
      r.fail("of the honest client's " + std::to_string(o_.client_datagrams) + " datagrams, " +
             std::to_string(from_client) + " waited for the receives");
    r.note(std::to_string(kDatagrams) + " datagrams from one forged source; waiting when the "
           "target took them: " + std::to_string(from_client) + " of the client's " +
           std::to_string(o_.client_datagrams) + ", " + std::to_string(others) + " forged");
    return r;
  }

  static void merge(Seen* into, const Seen& more) {
    into->arp_asked.insert(more.arp_asked.begin(), more.arp_asked.end());
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
  Mac watched_{};                        // a case's forged MAC (zero: none)
  std::map<ip::Ipv4, Mac> claimed_;      // made-up neighbours we answer ARP for
};

}  // namespace
}  // namespace ofi_dpdk::adversarial

int main(int argc, char** argv) {
  using namespace ofi_dpdk::adversarial;
  const Options options = parse(argc, argv);
  try {
    UdpAdversary adversary(options);
    return adversary.run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "udp_adversary: %s\n", e.what());
    return 2;
  }
}
