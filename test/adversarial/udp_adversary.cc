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
// And one against a client that starts while the target's questions are
// crowded out (test_udp_adversarial.sh starts it):
//
//   newcomer       ARP requests from made-up neighbours, a thousand a
//                  second, keep the target's pool of questions asked back
//                  full, from before the newcomer (--newcomer IP) starts
//                  and without a pause: the target cannot ask it back at
//                  its first request, so it does not know the newcomer's
//                  MAC and drops its HELLOs.  Within 10 s, the flood still
//                  on, the target sends the newcomer UDP: the newcomer,
//                  unanswered, polled the target's address again, and an
//                  asker refused that asks again takes the place of the
//                  oldest question (lib/ip/neighbour_table.h).
//
//   udp_adversary --iface IFACE --target-mac MAC --target-ip A --own-ip B
//                 --prefix N --target-pid PID [--avoid C --avoid-mac M] [--port-base P]
//                 [--static IP=MAC]...
//                 [--target-ip6 A6 --own-ip6 B6] [--rss-limit-kb N] [--seed N]
//                 [--cases a,b,...] [--rendezvous DIR] [--client-datagrams N]
//                 [--newcomer IP]
//
// Exit 0 when every case passed, 1 otherwise, 2 on set-up errors.
//
// What the program shares with its cases is in udp_adversary.h; the cases
// are in udp_adversary_ipv4.cc and udp_adversary_ipv6.cc.
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
#include "test/adversarial/udp_adversary.h"

namespace ofi_dpdk::adversarial {
namespace {

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
    if (arg == "--iface")
      o.iface = value();
    else if (arg == "--target-mac")
      o.target_mac = mac_option(value());
    else if (arg == "--target-ip")
      o.target_ip = address_option(value());
    else if (arg == "--own-ip")
      o.own_ip = address_option(value());
    else if (arg == "--avoid")
      o.avoid_ip = address_option(value());
    else if (arg == "--avoid-mac")
      o.avoid_mac = mac_option(value());
    else if (arg == "--static") {
      const std::string item = value();
      const size_t equals = item.find('=');
      if (equals == std::string::npos) setup_error("--static wants IP=MAC: " + item);
      o.statics.emplace_back(address_option(item.substr(0, equals)),
                             mac_option(item.substr(equals + 1)));
    } else if (arg == "--target-ip6")
      o.target_ip6 = address6_option(value());
    else if (arg == "--own-ip6")
      o.own_ip6 = address6_option(value());
    else if (arg == "--prefix")
      o.prefix = static_cast<unsigned>(std::stoul(value()));
    else if (arg == "--target-pid")
      o.target_pid = std::stol(value());
    else if (arg == "--port-base")
      o.port_base = static_cast<uint16_t>(std::stoul(value()));
    else if (arg == "--rss-limit-kb")
      o.rss_limit_kb = std::stol(value());
    else if (arg == "--seed")
      o.seed = std::stoull(value());
    else if (arg == "--rendezvous")
      o.rendezvous = value();
    else if (arg == "--newcomer")
      o.newcomer_ip = address_option(value());
    else if (arg == "--client-datagrams")
      o.client_datagrams = std::stoi(value());
    else if (arg == "--cases") {
      const std::string list = value();
      for (size_t start = 0; start <= list.size();) {
        const size_t comma = std::min(list.find(',', start), list.size());
        if (comma > start) o.cases.push_back(list.substr(start, comma - start));
        start = comma + 1;
      }
    } else
      setup_error("unknown option " + arg);
  }
  for (const std::string& name : o.cases)
    if ((name == "ipv6_table_flush" || name == "dgram_share") &&
        (o.rendezvous.empty() || !o.target_ip6 || !o.own_ip6))
      setup_error(name + " needs --rendezvous, --target-ip6 and --own-ip6");
    else if (name == "newcomer" && o.newcomer_ip == 0)
      setup_error("newcomer needs --newcomer");
  if (o.iface.empty() || o.target_ip == 0 || o.own_ip == 0 || o.target_pid <= 0 || o.prefix < 8 ||
      o.prefix > 30)
    setup_error(
        "--iface, --target-mac, --target-ip, --own-ip, --prefix (8-30) and "
        "--target-pid are required");
  return o;
}

}  // namespace

[[noreturn]] void setup_error(const std::string& what) {
  std::fprintf(stderr, "udp_adversary: %s\n", what.c_str());
  std::exit(2);
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
