// udp_adversary_ipv4.cc: udp_adversary's cases in IPv4: answers, spoofed
// HELLOs, broadcasts, floods of echo requests and ARP, a forged "too big",
// ARP redirects, static neighbours and the neighbour table's evictions.
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

UdpAdversary::Result UdpAdversary::answers() {
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

UdpAdversary::Result UdpAdversary::spoofed_hellos() {
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

UdpAdversary::Result UdpAdversary::broadcasts() {
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

UdpAdversary::Result UdpAdversary::echo_flood() {
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
void UdpAdversary::send_too_big(uint16_t conn, uint64_t token, uint16_t mtu) {
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

UdpAdversary::Result UdpAdversary::forged_too_big() {
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
    r.fail("the target's frames to the pair's peer shrank from " + std::to_string(before) + " to " +
           std::to_string(after) + " bytes");
  r.note(std::to_string(kWords) + " words; largest frame to the peer " + std::to_string(before) +
         " bytes before, " + std::to_string(after) + " after");
  return r;
}

// An ARP request for the target's address from (frame_source,
// sender_mac, sender_ip).
void UdpAdversary::send_arp_claim(const Mac& frame_source, const Mac& sender_mac,
                                  ip::Ipv4 sender_ip) {
  uint8_t frame[ip::kArpFrameSize];
  ip::build_arp(ip::arp_request(sender_mac.data(), sender_ip, o_.target_ip), frame);
  std::memcpy(frame + 6, frame_source.data(), 6);
  link_.send(frame);
}

UdpAdversary::Result UdpAdversary::arp_redirect() {
  Result r;
  if (o_.avoid_mac == Mac{}) {
    r.fail("--avoid-mac (the live peer's MAC) is needed");
    return r;
  }
  const Seen before = listen(milliseconds(300));
  if (before.to_avoid == 0 || before.to_avoid_elsewhere != 0) {
    r.fail("before the attack the target sent the peer " + std::to_string(before.to_avoid) +
           " frames, " + std::to_string(before.to_avoid_elsewhere) + " elsewhere: nothing to show");
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

UdpAdversary::Result UdpAdversary::static_neighbours() {
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

UdpAdversary::Result UdpAdversary::arp_evict() {
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
  // (A request at the peer's MAC polls an entry the target still holds.)
  if (seen.arp_broadcast.count(o_.avoid_ip) != 0)
    r.fail("the target looked the peer up again: its entry was evicted");
  if (seen.to_avoid_elsewhere != 0)
    r.fail(std::to_string(seen.to_avoid_elsewhere) + " frames to the peer not at its MAC");
  if (seen.to_avoid == 0) r.fail("the pair stopped");
  r.note(std::to_string(kNeighbours) + " neighbours, " + std::to_string(asked_back) +
         " asked back and answered; " + std::to_string(seen.to_avoid) + " frames to the peer, " +
         std::to_string(seen.to_avoid_elsewhere) + " not at its MAC");
  return r;
}

UdpAdversary::Result UdpAdversary::newcomer() {
  constexpr int kNewcomerFloodSeconds = 10;
  Result r;
  Seen seen;
  auto flood_for = [&](Clock::duration length) {
    const auto until = Clock::now() + length;
    while (Clock::now() < until) {
      send_arp_request(made_up_mac(), made_up_address());
      merge(&seen, listen(milliseconds(1)));
    }
  };
  const auto flood_start = Clock::now();
  while (!seen.arp_replied_to.contains(o_.newcomer_ip) &&
         Clock::now() - flood_start < std::chrono::seconds(30))
    flood_for(milliseconds(50));
  if (!seen.arp_replied_to.contains(o_.newcomer_ip)) {
    r.fail("the newcomer never asked for the target within 30 s");
    return r;
  }
  // The flood goes on, without a pause, until the target sends the
  // newcomer UDP (it asked the newcomer back and took its HELLO) or for
  // kNewcomerFloodSeconds: a flood must not lock a neighbour out while it
  // lasts.
  const auto answered_by = Clock::now() + std::chrono::seconds(kNewcomerFloodSeconds);
  while (!seen.udp_to.contains(o_.newcomer_ip) && Clock::now() < answered_by)
    flood_for(milliseconds(50));
  const double waited = std::chrono::duration<double>(Clock::now() - flood_start).count();
  char text[160];
  if (!seen.udp_to.contains(o_.newcomer_ip)) {
    std::snprintf(
        text, sizeof(text),
        "the target sent the newcomer nothing in %d s of flood: locked out while it lasts",
        kNewcomerFloodSeconds);
    r.fail(text);
  } else {
    std::snprintf(text, sizeof(text),
                  "the target answered the newcomer during the flood, %.1f s after it began",
                  waited);
    r.note(text);
  }
  return r;
}

UdpAdversary::Result UdpAdversary::arp_flood() {
  return bounded_flood("ARP requests", [&] { send_arp_request(made_up_mac(), made_up_address()); });
}

}  // namespace ofi_dpdk::adversarial
