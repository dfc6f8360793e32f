// udp_adversary_ipv6.cc: udp_adversary's cases in IPv6: a neighbour
// discovery redirect, answers, spoofed HELLOs, floods of echo requests,
// solicitations and strangers, and the cases run against test_tables.sh's
// peers (the IPv6 peer table's flush, a DGRAM target's shared budget).
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

UdpAdversary::Result UdpAdversary::nd_redirect() {
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

UdpAdversary::Result UdpAdversary::answers6() {
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

UdpAdversary::Result UdpAdversary::spoofed_hellos6() {
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
  r.note(std::to_string(sources.size()) + " sources, " + std::to_string(asked) + " solicited, " +
         std::to_string(answered) + " answered");
  return r;
}

UdpAdversary::Result UdpAdversary::echo6_flood() {
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
UdpAdversary::Result UdpAdversary::bounded_flood(const char* what,
                                                 const std::function<void()>& send) {
  Result r;
  constexpr int kRequests = 20000;
  const long before = resident_kb(o_.target_pid);
  for (int i = 0; i < kRequests; ++i) {
    send();
    if (i % 500 == 499) listen(milliseconds(10));
  }
  listen(milliseconds(500));
  const long after = resident_kb(o_.target_pid);
  if (after < 0)
    r.fail("the target is gone");
  else if (after - before > o_.rss_limit_kb)
    r.fail("the target grew by " + std::to_string(after - before) + " kB");
  r.note(std::to_string(kRequests) + " " + what + " from as many neighbours, target " +
         std::to_string(after - before) + " kB");
  return r;
}

UdpAdversary::Result UdpAdversary::solicitation_flood() {
  return bounded_flood("solicitations",
                       [&] { send_solicitation(made_up_mac(), made_up_address6()); });
}

UdpAdversary::Result UdpAdversary::stranger_flood6() {
  uint16_t queue = 0;
  return bounded_flood("HELLOs", [&] {
    send_hello6(made_up_mac(), made_up_address6(), static_cast<uint16_t>(queue++ % 64));
  });
}

// The first line of DIR/name once it appears, within `limit`; "" if it
// does not (the target's frames are taken meanwhile, as they come).
std::string UdpAdversary::await(const std::string& name, Clock::duration limit) {
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

UdpAdversary::Result UdpAdversary::ipv6_table_flush() {
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
void UdpAdversary::send_datagram6(uint16_t length) {
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

UdpAdversary::Result UdpAdversary::dgram_share() {
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
  r.note(std::to_string(kDatagrams) +
         " datagrams from one forged source; waiting when the "
         "target took them: " +
         std::to_string(from_client) + " of the client's " + std::to_string(o_.client_datagrams) +
         ", " + std::to_string(others) + " forged");
  return r;
}

}  // namespace ofi_dpdk::adversarial
