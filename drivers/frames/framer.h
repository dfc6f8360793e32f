// framer.h: a port's frames, below the provider.  The Framer turns the
// transport's segments into frames and frames back into segments, so the
// provider never reads or writes a header:
//   - on receive (take, framer_receive.cc) it tells our EtherType from
//     ARP, IPv4 and IPv6, checks each frame (lib/proto/frame_codec.h:
//     length, version, checksum or keyed tag), and hands back the segment
//     and its sender (a MAC, or the peer id of an IP sender); what is IP
//     alone (ARP, neighbour discovery, echo, a router's packet-too-big) it
//     answers or takes here;
//   - on transmit (build, framer_transmit.cc) it writes a segment's frame
//     into an mbuf: Ethernet and our header, or Ethernet, IPv4 or IPv6 and
//     UDP before it, to the next hop's MAC, and holds the frames whose next
//     hop has not answered yet (framer_neighbours.cc asks: ARP, neighbour
//     discovery);
//   - it keeps what path MTU discovery learned per peer
//     (framer_path_mtu.cc).
// The wire format is in doc/wire-protocol.md.  One framer per open port;
// every call is made under the port's lock (a port with an IP address is
// one lane, doc/architecture.md).
#pragma once

#include <rte_mbuf.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "drivers/net/port.h"
#include "lib/av/address.h"
#include "lib/ip/arp.h"
#include "lib/ip/icmp6.h"
#include "lib/ip/ipv4.h"
#include "lib/ip/ipv6.h"
#include "lib/ip/ipv6_peers.h"
#include "lib/ip/neighbour_table.h"
#include "lib/ip/too_big.h"
#include "lib/ip/udp4.h"
#include "lib/ip/udp6.h"
#include "lib/proto/frame_codec.h"
#include "lib/proto/frame_tag.h"
#include "lib/proto/transport.h"

namespace ofi_dpdk::frames {

// Whether two MACs are the same (two loads each, no call).
inline bool same_mac(const uint8_t* a, const uint8_t* b) {
  uint32_t a4, b4;
  uint16_t a2, b2;
  std::memcpy(&a4, a, 4);
  std::memcpy(&b4, b, 4);
  std::memcpy(&a2, a + 4, 2);
  std::memcpy(&b2, b + 4, 2);
  return a4 == b4 && a2 == b2;
}

// A count of something rare (a refused frame) that two lanes' passes may
// both add to: an atomic, so the count is exact; never on a good frame's
// path.
class RareCount {
 public:
  uint64_t operator++() { return value_.fetch_add(1, std::memory_order_relaxed) + 1; }
  uint64_t operator++(int) { return value_.fetch_add(1, std::memory_order_relaxed); }
  operator uint64_t() const { return value_.load(std::memory_order_relaxed); }
  uint64_t get() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> value_{0};
};

// What the provider's settings say of frames, read once when the port opens.
struct Settings {
  uint16_t port_base = 9228;  // the UDP port of endpoint queue 0 (FI_DPDK_PORT_BASE)
  uint16_t queues = 64;       // endpoint queues a port has: their UDP ports are ours
  bool ecn = true;            // UDP frames carry ECT(0) (FI_DPDK_ECN)
  uint32_t routed_mtu = 0;    // the MTU beyond the gateway (FI_DPDK_ROUTED_MTU), 0: the port's
  uint32_t resolve_timeout_ms = 3000;  // a silent next hop is given up after it
  uint64_t (*clock_ns)() = nullptr;    // the transport's clock (nanoseconds)
};

// What the framer's owner (the provider's port) does for it.  Rare events
// only: nothing here is called for a good frame.
class Owner {
 public:
  // A router said frames to the peer at `link` must carry at most
  // `payload` bytes (its MTU `mtu`), quoting a frame whose header names
  // the sending endpoint and its connection (`quoted`): true when that
  // endpoint exists and its connection narrowed (then the framer keeps the
  // size for the peer's later connections).
  virtual bool narrow_path(const proto::QuotedHeader& quoted, const uint8_t link[6],
                           const ip::Ipv6& destination, uint32_t mtu, uint32_t payload,
                           uint64_t now) = 0;
  // `next_hop` never answered within resolve_timeout_ms: the frames held
  // for it are gone, and what the endpoints send to peers behind it
  // should fail.
  virtual void next_hop_silent(const ip::Ipv6& next_hop) = 0;
  // A frame was refused for a reason worth one warning: the first of each
  // kind (the counts in Framer say how many followed).
  enum class Refusal { kUnsealed, kBadTag, kKeyed, kNotKeyed };
  virtual void first_refusal(Refusal refusal) = 0;

 protected:
  ~Owner() = default;
};

class Framer {
 public:
  // Serves `port` for `owner`; both outlive it.  The addresses, encapsulation
  // and checks are set by the port's opener before the first frame.
  Framer(net::Port& port, Owner& owner, const Settings& settings)
      : port_(port), owner_(owner), settings_(settings) {}
  Framer(const Framer&) = delete;
  Framer& operator=(const Framer&) = delete;
  ~Framer();

  // ---- What the port opener sets (dpdk_domain.cc's acquire_port).
  // The port's IPv4 address (FI_DPDK_PORT_ADDR), its IPv6 address, and
  // whether peers named by them travel in UDP (FI_DPDK_ENCAP=udp).
  std::optional<ip::Interface> interface;
  std::optional<ip::Interface6> interface6;
  bool udp = false;
  bool udp6 = false;
  // Frames are sealed with a CRC-32C (FI_DPDK_CHECKSUM; off on a memory
  // port) or, with a job key (FI_DPDK_AUTH_KEY), with its keyed tag
  // (lib/proto/frame_tag.h); every frame taken must carry the same.
  bool checksums = true;
  std::optional<proto::FrameKey> frame_key;
  // Frames to the port's own MAC go to the device, which hands them back
  // (a single net_ring), or which must because another open port has the
  // same MAC (they may be that port's, as a switch would have them);
  // otherwise they are the port's to loop back itself (Built::kLoopBack).
  bool loops_back = false;
  proto::FrameCheck frame_check() const { return {checksums, frame_key ? &*frame_key : nullptr}; }

  // ---- Receive (framer_receive.cc).
  // Takes one received frame: true when it holds a segment for an
  // endpoint, *out then its header, payload (inside the frame) and sender;
  // false when it was IP's own (answered or learned here), not ours, or
  // refused (counted below).  The frame stays the caller's either way.
  // (Our own frames' path inline: it is every good frame's.)
  bool take(rte_mbuf* frame, uint64_t now, proto::DecodedFrame* out) {
    const auto result =
        frame->nb_segs == 1
            ? proto::decode_frame(rte_pktmbuf_mtod(frame, const uint8_t*),
                                  rte_pktmbuf_data_len(frame), port_.ether_type(), out,
                                  frame_check())
            : proto::DecodeResult::kTruncated;  // we never send chained frames
    if (result != proto::DecodeResult::kOk) [[unlikely]]
      return take_other(frame, now, out, result);
    if (!same_mac(out->dst_mac, port_.mac())) {
      ++rx_not_ours;
      return false;
    }
    // No sender's MAC has the group bit: a forged source that would pass
    // for a peer named by IP address (a peer id).
    if ((out->src_mac[0] & 1) != 0) {
      ++rx_bad_frames;
      return false;
    }
    return true;
  }
  // An ARP or neighbour discovery frame that reached us another way (an
  // af_xdp port's kernel copies: drivers/ofi/dpdk_neighbour_copies.h),
  // heard by the same rules.
  void take_neighbour_frame(const uint8_t* frame, size_t length, uint64_t now);

  // ---- Transmit (framer_transmit.cc).
  enum class Built : uint8_t {
    kSend,      // in the mbuf, for the device
    kLoopBack,  // in the mbuf, for an endpoint of this port, on a device that hands none back
    kHeld,      // the framer holds it until its next hop answers (the mbuf is the framer's)
    kDropped,   // not built (no room, no route): the mbuf is still the caller's to free
  };
  // Builds the frame of `frame` (a segment of the transport) into `mbuf`,
  // which is empty and of queue pair `hw_queue`'s cache; a frame held for
  // its next hop goes on `tx_queue` when it answers.  `now` is read at the
  // first frame that needs the clock (0: not yet).  *lent: the payload
  // went in a second mbuf chained to it that lends the transport's memory
  // to a device that copies at transmit (net/lent_payload.h).
  // (A frame in Ethernet inline: it is every frame's on a port without an
  // address.)
  Built build(rte_mbuf* mbuf, const proto::OutFrame& frame, uint16_t hw_queue, uint16_t tx_queue,
              uint64_t& now, bool* lent) {
    *lent = false;
    if (in_udp(frame.dst_mac) || may_lend(frame)) [[unlikely]]
      return build_other(mbuf, frame, hw_queue, tx_queue, now, lent);
    const size_t length =
        sizeof(wire::EtherHeader) + sizeof(wire::FrameHeader) + frame.header.payload_len;
    auto* bytes = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(mbuf, uint16_t(length)));
    if (bytes == nullptr) return Built::kDropped;
    proto::encode_headers(bytes, frame.dst_mac, port_.mac(), port_.ether_type(), frame.header);
    seal_ethernet(bytes, frame);
    // A frame to an endpoint of this port goes back through the device
    // where the device hands it back (a net_ring), else through the
    // port's loop: a NIC does not hand a frame back to its sender.
    return !loops_back && same_mac(frame.dst_mac, port_.mac()) ? Built::kLoopBack : Built::kSend;
  }
  // Whether frames to the peer of link address `link` travel in UDP on
  // this port.
  bool in_udp(const uint8_t link[6]) const {
    return (udp && ip::is_peer_id(link)) || (udp6 && ip::is_ipv6_peer_id(link));
  }
  // What each frame loses to the IP and UDP headers on such a port: the
  // IPv6 ones' where the port reaches peers in UDP/IPv6 (a frame's size is
  // the port's, whichever peer it is for).
  uint32_t encap_overhead() const {
    return udp6  ? static_cast<uint32_t>(ip::kUdp6Overhead)
           : udp ? static_cast<uint32_t>(ip::kUdp4Overhead)
                 : 0;
  }
  // RSS steering: up to out.size() UDP source ports that frames from the
  // peer at `link`, its endpoint queue `peer_queue`, to endpoint queue
  // `queue` should come from for this port's RSS to put them on `hw_queue`
  // (proto::ReachingPorts); 0 on other ports, or for a peer not in UDP.
  size_t reaching_ports(const uint8_t* link, uint16_t peer_queue, uint16_t queue, uint16_t hw_queue,
                        std::span<uint16_t> out) const;
  // The next hop of a peer id, :: when it has none (IPv4 ones mapped).
  ip::Ipv6 next_hop_of(const uint8_t link[6]) const;
  // Sends frames on queue pair `hw_queue` if the link is up; returns how
  // many the device took.
  uint16_t transmit(uint16_t hw_queue, rte_mbuf** frames, uint16_t count) {
    // A port whose link is down (a memif peer that went away) takes
    // nothing.  Up, the answer the passes refresh will do (no clock read
    // per burst); down, or not yet asked (a send before the port's first
    // pass), the device is asked when due.
    if (!port_.link_up_cached() && !port_.link_up()) return 0;
    return port_.tx_burst(hw_queue, frames, count);
  }

  // ---- Neighbours (framer_neighbours.cc).
  ip::NeighbourTable neighbours;
  ip::Neighbour6Table neighbours6;
  static constexpr uint64_t kArpRetryMs = 200;
  // Asks ARP for `ip` again on behalf of a peer inserted before it
  // answered, or whose entry is due for a refresh, at most once per
  // kArpRetryMs for the whole port (false: not now).
  bool ask_neighbour(uint32_t ip, uint64_t now);
  // The same without the port-wide pace (an ARP request now, unless the
  // table refuses another question).
  void ask_neighbour_now(uint32_t ip, uint64_t now);
  // A neighbour solicitation for `target`, unless the table refuses
  // another question.
  void solicit_neighbour(const ip::Ipv6& target, uint64_t now);
  // Fills address->ipv4 and ->ipv6 where the port knows them: its own
  // MAC's are its addresses; a peer id's, its address; a neighbour's, the
  // table's.
  void name_by_ip(av::Address* address, uint64_t now) const;
  // Runs the next hops' questions (asked again every kArpRetryMs, given up
  // after resolve_timeout_ms: Owner::next_hop_silent); each pass.
  void chase_neighbours(uint64_t now);
  bool resolving_any() const { return !resolving_.empty(); }
  size_t frames_waiting() const { return waiting_frames_.size(); }

  // ---- Path MTU (framer_path_mtu.cc).
  // The largest payload of a frame to the peer of link address `link`:
  // for one beyond the gateway, what FI_DPDK_ROUTED_MTU leaves of a frame,
  // and less where path MTU discovery found less; 0 (the port's own)
  // otherwise (proto::PathLimit).
  uint32_t path_limit(const uint8_t* link, uint64_t now) const;
  // What a connection's silence taught: frames to `link` carry at most
  // `payload` bytes, believed for kLearnedPathLife.
  void learn_path(const uint8_t* link, uint32_t payload, uint64_t now);
  size_t paths_learned() const { return learned_paths_.size(); }
  static constexpr size_t kMaxLearnedPaths = 4096;
  static constexpr uint64_t kLearnedPathLife = 600'000'000'000;

  // ---- What was counted (the port's close log, telemetry, fi_dpdk stats).
  RareCount rx_not_ours;
  RareCount rx_bad_frames;
  RareCount rx_unsealed;      // frames without a checksum while we want one
  RareCount rx_bad_tags;      // a wrong keyed tag: forged, changed, another key
  RareCount rx_key_mismatch;  // keyed where we have no key, or not where we have one
  uint64_t arp_requests_answered = 0;
  uint64_t arp_ignored = 0;  // not for our address, or a reply not to us
  uint64_t neighbour_solicitations_answered = 0;
  uint64_t neighbour_messages_ignored = 0;  // not for our address, or not to us
  uint64_t echo_requests_answered = 0;
  uint64_t echo6_requests_answered = 0;
  uint64_t rx_udp = 0;
  uint64_t rx_udp_checked_by_device = 0;  // of rx_udp: its IPv4 header not summed again
  uint64_t rx_udp6 = 0;
  uint64_t rx_udp6_checked_by_device = 0;  // of rx_udp6: its UDP checksum not summed again
  uint64_t rx_strangers_not_named = 0;     // UDP/IPv6 from a sender the peer table had no room for
  uint64_t frames_waited = 0;              // held for ARP, then sent
  uint64_t frames_not_resolved = 0;        // dropped while their next hop was silent
  uint64_t next_hops_given_up = 0;
  uint64_t neighbour_refreshes = 0;      // entries in use asked for again
  uint64_t neighbour_confirmations = 0;  // asked again for a peer that did not answer
  uint64_t too_big_taken = 0, too_big_ignored = 0;

 private:
  enum class Route : uint8_t {
    kSend,         // addressed to its next hop
    kLoopBack,     // to an endpoint of this port
    kWait,         // the next hop has not answered ARP yet: hold it
    kUnreachable,  // no next hop (off the subnet, no gateway)
  };
  // framer_receive.cc
  // take() for a frame the codec did not decode as ours: IP's, or refused.
  bool take_other(rte_mbuf* frame, uint64_t now, proto::DecodedFrame* out,
                  proto::DecodeResult result);
  bool refused(proto::DecodeResult result);
  void receive_ipv4(rte_mbuf* frame, uint64_t now, proto::DecodedFrame* out, bool* segment);
  void receive_ipv6(rte_mbuf* frame, uint64_t now, proto::DecodedFrame* out, bool* segment);
  bool take_datagram(const ip::UdpDatagram& datagram, proto::DecodedFrame* decoded);
  // Echo replies: at most kEchoesPerSecond (a ping flood costs the
  // endpoints' queue pair 0 little).
  static constexpr uint32_t kEchoesPerSecond = 100;
  uint64_t echo_window_ns_ = 0;
  uint32_t echoes_in_window_ = 0;
  bool echo_allowed(uint64_t now);

  // framer_transmit.cc
  // Payloads from this size are lent to a device that copies at transmit
  // (net/lent_payload.h) rather than copied into the frame: below it, a
  // second mbuf and its chaining cost about what the copy saves.  Only
  // unsealed frames (a seal would read the payload anyway).
  static constexpr uint16_t kLendFrom = 2048;
  bool may_lend(const proto::OutFrame& frame) const {
    return frame.header.payload_len >= kLendFrom && port_.lends_at_transmit() && !frame_key &&
           !checksums;
  }
  // Our header's seal, as the payload is copied in after it (one pass
  // over it): the job key's tag, a CRC-32C, or marked unsealed.
  void seal_ethernet(uint8_t* bytes, const proto::OutFrame& frame) const {
    uint8_t* payload = bytes + sizeof(wire::EtherHeader) + sizeof(wire::FrameHeader);
    if (frame_key) {
      frame.copy_payload(payload);
      proto::seal_keyed(
          bytes, sizeof(wire::EtherHeader) + sizeof(wire::FrameHeader) + frame.header.payload_len,
          *frame_key);
    } else if (checksums) {
      proto::finish_seal(bytes, frame.copy_payload(payload, proto::begin_seal(bytes)));
    } else {
      frame.copy_payload(payload);
      proto::mark_unsealed(bytes);
    }
  }
  // build() for a frame in UDP, or whose payload is lent.
  Built build_other(rte_mbuf* mbuf, const proto::OutFrame& frame, uint16_t hw_queue,
                    uint16_t tx_queue, uint64_t& now, bool* lent);
  // Writes the Ethernet, IP and UDP headers (udp_lead(peer) bytes) of a
  // frame for peer id `peer` from UDP port `source_port` whose UDP payload
  // (our header and payload, already in place: IPv6's checksum covers it)
  // is `udp_payload` bytes, and says where it goes; *next_hop is the
  // neighbour it waits for (an IPv4 one IPv4-mapped).  *tx_offloads: the
  // mbuf flags of the checksums left to the device (0 when the frame is
  // summed whole, as one that loops back is).
  Route route_udp(uint8_t* frame, const uint8_t peer[6], uint16_t source_port, uint16_t dst_queue,
                  size_t udp_payload, uint64_t now, ip::Ipv6* next_hop, uint64_t* tx_offloads);
  Route route_udp6(uint8_t* frame, const uint8_t peer[6], uint16_t source_port, uint16_t dst_queue,
                   size_t udp_payload, uint64_t now, ip::Ipv6* next_hop, uint64_t* tx_offloads);
  Built build_udp(rte_mbuf* mbuf, uint8_t* bytes, const proto::OutFrame& frame, size_t ours,
                  uint16_t tx_queue, uint64_t& now);
  // Whether `next_hop` is the port's router (of its family).
  bool is_gateway(const ip::Ipv6& next_hop) const;

  // framer_neighbours.cc
  // An ARP frame received: a request for our address is answered; the
  // table hears only answers to its questions (lib/ip/neighbour_table.h).
  void take_arp(const uint8_t* frame, size_t length, uint64_t now);
  // An IPv6 frame's packet, neighbour discovery taken here.
  enum class Ipv6Frame { kNotOurs, kNeighbour, kOther };
  Ipv6Frame take_ipv6_neighbour(const uint8_t* bytes, size_t length, uint64_t now,
                                ip::Ipv6Packet* packet, bool* to_us);
  void take_neighbour_message(const ip::NeighbourMessage& message, const uint8_t* frame, bool to_us,
                              uint64_t now);
  void send_solicitation(const ip::Ipv6& target);
  bool send_arp(const ip::ArpMessage& message);
  // Sends one frame of at most `capacity` bytes that `build` writes
  // (returning its length, 0 for none) on queue pair 0: the port's own
  // answers (ARP, neighbour discovery, echo).  False when nothing was
  // built, no mbuf could be had or the device took none (the asker asks
  // again, as after a lost frame).
  bool send_built(size_t capacity, const std::function<size_t(uint8_t*)>& build);
  // Holds a frame (its Ethernet destination still to be written) until
  // `next_hop` answers: take_arp then sends it on `hw_queue`.  At most
  // kMaxWaitingFrames wait (beyond, the oldest is lost like a dropped frame
  // and the transport resends it), for at most kMaxResolving next hops
  // (false: the frame is the caller's to drop).
  static constexpr size_t kMaxWaitingFrames = 256;
  static constexpr size_t kMaxResolving = 16;
  bool wait_for_neighbour(const ip::Ipv6& next_hop, rte_mbuf* frame, uint16_t hw_queue,
                          uint64_t now);
  void send_waiting(const ip::Ipv6& neighbour, const uint8_t mac[6]);
  // Asks for a next hop's MAC: ARP for an IPv4-mapped one, a neighbour
  // solicitation for an IPv6 one.
  void ask_next_hop(const ip::Ipv6& next_hop, uint64_t now);
  // A frame to `next_hop` at `mac` went again because its peer did not
  // answer: the next hop is asked again at that MAC (a unicast ARP
  // request or solicitation), at most every kConfirmEveryMs.  The request
  // also shows it our MAC: a peer that learns a stranger only by asking
  // back a request (lib/ip/neighbour_table.h) may have missed ours (its
  // pool of questions full under a flood) and then drops what we send.
  static constexpr uint64_t kConfirmEveryMs = 1000;
  void confirm_next_hop(const ip::Ipv6& next_hop, const uint8_t mac[6], uint64_t now);
  // Whether a question for that next hop is open: an answer to a sender
  // we know nothing of may wait for it (we asked it back).
  bool asking_for(const ip::Ipv6& next_hop, uint64_t now) const;
  struct WaitingFrame {
    ip::Ipv6 next_hop;
    uint16_t hw_queue;
    rte_mbuf* frame;
  };
  std::deque<WaitingFrame> waiting_frames_;
  struct Resolving {
    ip::Ipv6 next_hop;
    uint64_t since_ns;
    uint64_t asked_ns;
  };
  std::vector<Resolving> resolving_;  // the next hops frames wait for
  uint64_t last_neighbour_ask_ns_ = 0;

  // framer_path_mtu.cc
  // A router's "fragmentation needed" or "packet too big": it counts when
  // it quotes a frame of ours far enough to name the connection (number
  // and token), which then narrows (Owner::narrow_path).
  void on_too_big(const ip::TooBig& word, uint64_t now);
  uint32_t routed_limit(const uint8_t* link) const;
  uint32_t learned_payload(const uint8_t* link, uint64_t now) const;
  struct LearnedPath {
    uint32_t payload;
    uint64_t until_ns;
  };
  std::unordered_map<uint64_t, LearnedPath> learned_paths_;

  net::Port& port_;
  Owner& owner_;
  const Settings settings_;
};

}  // namespace ofi_dpdk::frames
