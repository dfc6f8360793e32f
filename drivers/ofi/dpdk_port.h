// dpdk_port.h: one open port and what shares it (PortContext), and its progress.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <bitset>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "drivers/net/port.h"
#include "drivers/ofi/dpdk_clock.h"
#include "drivers/ofi/dpdk_kernel_ports.h"
#include "drivers/ofi/dpdk_limits.h"
#include "drivers/ofi/dpdk_neighbour_copies.h"
#include "drivers/ofi/dpdk_params.h"
#include "drivers/ofi/dpdk_port_lock.h"
#include "drivers/ofi/dpdk_trigger.h"
#include "lib/av/address.h"
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

struct rte_mbuf;

namespace ofi_dpdk::ofi {

struct Endpoint;

static_assert(KernelPorts::kQueues >= kMaxEndpointsPerPort);

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

// One open ethdev port and what shares it: the port lock serialises the
// data path of every endpoint on the port, and the endpoint table is the
// software demultiplexer's map from queue id to endpoint.
//
// Lanes.  On a port whose device lets the sender choose the queue a frame
// arrives on (net::Steering::kSender: a net_ring of several queue pairs,
// where TX queue q delivers to RX queue q), each queue pair is a lane with
// a lock of its own, and "the port lock" is every lane's lock in order.
// The endpoints that share a CQ or a counter, and the queue pairs they
// receive on, are put in one lane (assign_lanes, at each fi_enable and
// fi_close); a data-path call, a CQ or counter read and its progress pass
// then take that lane's lock only and poll that lane's queues, so threads
// whose endpoints share nothing no longer take turns.  What lanes share is
// written under the whole port lock (the AV, the endpoint table, lane
// assignment) or is atomic (the mbuf pool, RareCounts, kept_frames); a
// sender writes its frame into its destination's queue under that
// queue's transmit lock.  Everything else (IP on the port, connection
// management, triggered operations, shared contexts, scalable endpoints)
// keeps the port in one lane.
struct PortContext final : proto::FrameKeeper {
  std::unique_ptr<net::Port> port;
  LaneLocks lock;
  // Per lane (indexed by the lane's first queue pair): what a pass over the
  // lane and its readers keep.  A cache line each.
  struct alignas(64) LaneState {
    std::atomic<uint64_t> last_progress_ns{0};
    uint64_t idle_since_ns = 0;  // idle_poll's, 0: the last poll found work
    // The passes CQ reads ran on the lane, and the CQ whose read ran the
    // latest (dpdk_cq.cc's take_entries); compared, never dereferenced.
    uint64_t reader_passes = 0;
    const void* last_pass_reader = nullptr;
    uint64_t shared_passes = 0;  // reads that took another's pass instead
  };
  std::array<LaneState, kMaxLanes> lane_state;
  // The lane of each queue pair (the first queue pair of its lane); all 0
  // on a port of one lane.  Written with the whole port lock held.
  std::array<uint16_t, kMaxLanes> lane_of_queue{};
  // A sender's lock on the queue it writes into (its destination's, of any
  // lane): net_ring's rings take one writer at a time.  Ports of several
  // lanes only.
  struct alignas(64) TransmitLock {
    PortLock lock;
  };
  std::array<TransmitLock, kMaxLanes> transmit_locks;
  uint16_t lanes() const { return lock.count(); }
  // Whether every enabled endpoint is in lane 0 (assign_lanes): then lane
  // 0's lock keeps every data-path caller out, and a pass under it is a
  // pass over the whole port (triggers, held frames and all).  A pass
  // under another lane's lock then finds no endpoint of its lane (a CQ
  // whose endpoints closed may still name that lane): it stays a lane pass.
  bool one_lane = true;
  uint16_t effective_lane(uint16_t lane) const {
    return lanes() == 1 || (one_lane && lane == 0) ? kWholePort : lane;
  }
  // The queue pairs an enabled endpoint receives on (assign_lanes): on a
  // port of lanes, the only ones frames come to, and so the only ones a
  // pass polls and the only lanes the helpers look at.
  // Until the lanes split every frame goes through queue pair 0, as on a
  // port of one queue pair.
  uint32_t occupied_queues = 0;
  bool polls(uint16_t queue) const {
    return lanes() == 1 || (one_lane ? queue == 0 : ((occupied_queues >> queue) & 1) != 0);
  }
  // The queue pair an endpoint on `hw_queue` sends on when its frames do
  // not go into their destinations' queues (Endpoint::flush).
  uint16_t own_transmit_queue(uint16_t hw_queue) const {
    return lanes() > 1 && one_lane ? 0 : hw_queue;
  }
  // Whether `queue` is the first of a lane with endpoints: the lane a
  // helper passes over by that queue's lock.  Some lane's lock held.
  bool leads_lane(uint16_t queue) const { return lane_of_queue[queue] == queue && polls(queue); }
  // Lanes are split only once a data-path call waits for lane 0's lock
  // while another application thread called last (LaneGuard): one thread
  // gains nothing from them and would pay for passes over lanes its calls
  // do not reach, and threads that never meet need none.  (The progress
  // loop's and the safety net's passes do not count.)  Until then every
  // endpoint is in lane 0.
  bool lanes_wanted = false;
  const void* last_caller = nullptr;  // its thread pointer; lane 0's lock
  // Splits the port (lane 0's lock held, the port in one lane); returns
  // whether its lanes changed (the caller's object may be in another now).
  bool split_lanes();
  // Puts each enabled endpoint, and the CQs and counters bound to it, in a
  // lane (sets their `lane`).  Whole port lock held.
  void assign_lanes();
  // The queue pair frames for endpoint queue `queue` arrive on, on a port
  // steered by sender.
  uint16_t queue_pair_of(uint16_t queue) const { return queue % port->queue_pairs(); }
  // Written through place_endpoint / remove_endpoint only, which keep
  // endpoint_end: each progress pass visits the slots below it, not all 64.
  std::array<Endpoint*, kMaxEndpointsPerPort> endpoints{};
  uint16_t endpoint_end = 0;  // one past the highest occupied slot
  void place_endpoint(uint16_t queue, Endpoint* ep) {
    endpoints[queue] = ep;
    endpoint_end = std::max<uint16_t>(endpoint_end, static_cast<uint16_t>(queue + 1));
  }
  void remove_endpoint(uint16_t queue) {
    endpoints[queue] = nullptr;
    while (endpoint_end > 0 && endpoints[endpoint_end - 1] == nullptr) --endpoint_end;
  }
  std::span<Endpoint* const> open_endpoints() const { return {endpoints.data(), endpoint_end}; }
  // Queue ids a scalable endpoint holds for its contexts, open or not
  // (dpdk_sep.cc): no other endpoint may claim them.
  std::bitset<kMaxEndpointsPerPort> held;
  // The UDP ports of the queues endpoints or `held` have, held in the
  // kernel where it shares the port's address (dpdk_kernel_ports.h): taken
  // with a queue, let go when neither has it any more.  Lock held.
  KernelPorts kernel_ports;
  void release_queue_port(uint16_t queue) {
    if (queue < kMaxEndpointsPerPort && endpoints[queue] == nullptr && !held[queue])
      kernel_ports.release(queue);
  }
  // Beside another process's af_xdp port: when the last kernel_ports
  // .recheck_xdp ran (the pass runs it every KernelPorts::kXdpRecheckNs).
  uint64_t xdp_rechecked_ns = 0;
  void recheck_xdp(uint64_t now);
  RareCount rx_not_ours;
  RareCount rx_bad_frames;
  RareCount rx_unsealed;  // frames without a checksum while we want one
  void warn_unsealed();   // counts one, and says why at the first
  bool checksums = true;  // FI_DPDK_CHECKSUM, or off on a memory port (acquire_port)
  // The job key's tag keys (FI_DPDK_AUTH_KEY): every frame sent carries a
  // keyed tag, every frame taken must (lib/proto/frame_tag.h).
  std::optional<proto::FrameKey> frame_key;
  proto::FrameCheck frame_check() const { return {checksums, frame_key ? &*frame_key : nullptr}; }
  // Frames refused for their keyed tag: wrong (forged, changed, another
  // key), or keyed where we have no key, or not keyed where we have one.
  RareCount rx_bad_tags;
  RareCount rx_key_mismatch;
  // Counts a frame the decoder refused for its tag or key, and says why at
  // the first of each kind; false when `result` is not one of those.
  bool refused_for_key(proto::DecodeResult result);
  RareCount rx_no_endpoint;
  // The device queue a frame was read from (kNoPolledQueue for frames that
  // never left this process): deliver() tells, per endpoint, whether its
  // frames came on its own queue, which is what rte_flow steering promises.
  static constexpr uint16_t kNoPolledQueue = 0xFFFF;
  // Engine calls that ran out of memory for a record (std::bad_alloc,
  // caught in progress: it never reaches the application or the progress
  // loop); the frame is lost like a dropped one.
  RareCount no_memory;
  // Domains on this port opened with FI_PROGRESS_AUTO: while non-zero the
  // progress loop drives the port and fi_* calls need not.
  std::atomic<uint32_t> auto_progress_users{0};
  // When a pass over the whole port last ran (now_ns()); last_progress()
  // is the latest of it and the lanes' own: the manual-progress safety net
  // (dpdk_auto_progress.cc) steps in on ports left alone too long.
  std::atomic<uint64_t> last_progress_ns{0};
  uint64_t last_progress() const;
  // The same for one lane: its own pass or a pass over the whole port.
  uint64_t lane_last_progress(uint16_t lane) const {
    return std::max(last_progress_ns.load(std::memory_order_relaxed),
                    lane_state[lane].last_progress_ns.load(std::memory_order_relaxed));
  }
  // The stamp the safety net's own last pass left: while it is still the
  // last one, the application has not come back.  The net's thread alone
  // reads and writes it.
  uint64_t safety_net_pass_ns = 0;
  std::array<uint64_t, kMaxLanes> lane_net_pass_ns{};  // the same per lane

  // Frames from one endpoint of this port to another, delivered by the next
  // progress pass instead of the device: a NIC does not hand a frame back
  // to the port that sent it (FI_LOCAL_COMM).  Bounded like a TX ring.
  static constexpr size_t kLoopbackFrames = 1024;
  std::vector<rte_mbuf*> looped;
  // True when the device sends a frame for its own MAC back to itself (a
  // single net_ring), so frames between its endpoints go through it.
  bool device_loops_back = false;

  ~PortContext();
  // Polls the port, hands each frame to its endpoint, runs the endpoints'
  // transport timers and sends what they produced.  Lock held.  Returns the
  // frames received.  `now` is the caller's clock read (now_ns()): one
  // read per API call.
  uint32_t progress(uint64_t now) { return pass(kWholePort, now); }
  uint32_t progress() { return progress(now_ns()); }
  // The same for one lane (its lock held, or the whole port's): its queues
  // and endpoints only.  kWholePort is progress().
  uint32_t progress_lane(uint16_t lane, uint64_t now) { return pass(lane, now); }
  uint32_t pass(uint16_t lane, uint64_t now, bool helping = false);
  // After an idle pass of `lane`: a pass over each other lane nobody passed
  // over for kLaneLeftAloneNs, if its lock is free.  One thread that polls
  // one endpoint's CQ so still moves the others it talks to, as on a port
  // of one lane; threads that poll their own lanes never meet here.
  static constexpr uint64_t kLaneLeftAloneNs = 100'000;
  void help_lanes_left_alone(uint16_t lane, uint64_t now);
  bool in_lane(const Endpoint* ep, uint16_t lane) const;
  // The link's changes the port counted (net::Port::link_changes) as of
  // the last whole pass, and when it last went down: each change is
  // logged, and a link that comes back has its endpoints' retransmissions
  // go at once (proto::Engine::link_restored).  Lock held.
  uint32_t link_changes_seen = 0;
  uint64_t link_down_since_ns = 0;
  void note_link_change(uint64_t now);
  // Triggered operations of this port's endpoints, in the order they go:
  // by threshold, then as posted (dpdk_trigger.cc).  Lock held.
  std::vector<TriggeredOp> triggered;
  // Posts those whose counter reached their threshold.  Lock held.
  void run_due_triggers();
  // Forgets `ep`'s (it closes: they never ran).  Lock held.
  void drop_triggers(const Endpoint* ep);
  // Checks one received frame and hands it to its endpoint; frees it.
  // `polled_queue`: the device queue it was read from, or kNoPolledQueue.
  void receive(rte_mbuf* frame, uint64_t now, uint16_t polled_queue = kNoPolledQueue);
  // Runs an engine call of the progress pass, counting (never passing on)
  // a std::bad_alloc.
  template <typename Call>
  void contain(Call&& call);
  void warn_no_memory() const;  // once per port, at the first
  // Mid-pass: each endpoint of `lane` answers the frames it took
  // (Engine::answer) and sends its outbox.
  void answer(uint16_t lane, uint64_t now);
  // proto::FrameKeeper: an endpoint keeps a received frame whose segment
  // waits ahead of a gap, if the mbuf is of the port's own pool, up to an
  // eighth of it (the rest stays for the RX ring).  Otherwise the segment
  // is copied: a sender's mbufs (shared port, net_ring) are its to reuse.
  bool keep(void* frame) override;
  void release(void* frame) override;
  std::atomic<uint32_t> kept_frames{0};
  // Queues a frame for an endpoint of this port; false when the queue is
  // full (the frame is then the caller's, lost like a dropped one).
  bool loop_back(rte_mbuf* frame);
  // Whether a send may wait in the outbox for the next progress pass
  // (proto::Engine::holding_bundle): only where a pass comes without the
  // application's help too (the progress loop, or the safety net).
  bool passes_come_anyway() const {
    return safety_net || auto_progress_users.load(std::memory_order_relaxed) != 0;
  }
  // FI_DPDK_PROGRESS_NET_MS is not 0: the safety net's passes come (read
  // once: every small send asks).
  const bool safety_net = params().progress_net_ms != 0;
  // Progress for calls that wait on the application's behalf (fi_cq_read,
  // posting when full): skipped while the progress loop owns the port.
  uint32_t progress_if_manual() {
    return auto_progress_users.load(std::memory_order_relaxed) == 0 ? progress() : 0;
  }
  uint32_t progress_if_manual(uint16_t lane, uint64_t now) {
    return auto_progress_users.load(std::memory_order_relaxed) == 0 ? pass(lane, now) : 0;
  }
  // Whether a thread polling this port (fi_cq_read, fi_cntr_read) should
  // yield its CPU once it dropped the lock: it found nothing to hand out
  // and the port received nothing for FI_DPDK_IDLE_YIELD_US (under
  // automatic progress, where reads make no pass, a CQ read found no
  // completion for that long; a counter read never yields there).  One
  // clock per port: any reader's work restarts it.  A blocking
  // MPI_Send over Open MPI's OFI MTL spins on fi_cq_read without yielding
  // until the send completes, which needs the peer's answer; with more
  // ranks than CPUs the peer may be waiting for this very CPU.  sched_yield
  // returns at once where nothing else wants the CPU.  Lock held.
  // Per lane (`lane`'s lock held; kWholePort: the port's, lane 0's clock).
  // (Here, inline: every CQ read calls it, and found work is the usual
  // answer.)
  bool idle_poll(uint16_t lane, bool found_work, uint64_t now) {
    uint64_t& idle_since_ns =
        lane_state[effective_lane(lane) == kWholePort ? 0 : lane].idle_since_ns;
    if (found_work || idle_yield_ns == 0) {
      idle_since_ns = 0;
      return false;
    }
    return idle_long_enough(idle_since_ns, now);
  }
  bool idle_long_enough(uint64_t& idle_since_ns, uint64_t now);
  uint64_t idle_yield_ns = 0;  // FI_DPDK_IDLE_YIELD_US (acquire_port), 0: never
  RareCount idle_yields;
  // Sends frames, as many as the port takes; returns how many it took.
  uint16_t transmit(uint16_t hw_queue, rte_mbuf** frames, uint16_t count);

  // Addresses by IPv4 (dpdk_neighbours.cc).  The port's own address
  // (FI_DPDK_PORT_ADDR), if it has one, and its neighbours' MACs.
  std::optional<ip::Interface> interface;
  ip::NeighbourTable neighbours;
  uint64_t arp_requests_answered = 0;
  uint64_t arp_ignored = 0;  // not for our address, or a reply not to us
  // An ARP frame received (receive() hands it over): a request for our
  // address is answered; the table hears only answers to its questions
  // (lib/ip/neighbour_table.h, with the refusals it counts).  Lock held.
  void take_arp(const uint8_t* frame, size_t length, uint64_t now);
  // On an af_xdp port: the ARP and neighbour discovery frames the kernel
  // received, when the XDP program passes them to it
  // (dpdk_neighbour_copies.h).  Read while a next hop is asked for, and
  // every kNeighbourCopiesNs otherwise.  Lock held.
  NeighbourCopies neighbour_copies;
  uint64_t neighbour_copies_read_ns = 0;
  static constexpr uint64_t kNeighbourCopiesNs = 10'000'000;
  void take_neighbour_copies(uint64_t now);
  // Pins the static neighbours on the port's links when it opens: the
  // kernel's permanent ones on the interface it shares (`kernel`, read
  // before it opened), then FI_DPDK_NEIGHBOURS, which wins
  // (dpdk_neighbours.cc).
  void pin_static_neighbours(const KernelNeighbours& kernel, const std::string& kernel_interface);
  // Gives the addresses named by IPv4 alone their link addresses: in UDP
  // their peer ids, at once; else their MACs, from the neighbour table, or
  // by asking (ARP, every kArpRetryMs) until each is answered or
  // FI_DPDK_RESOLVE_TIMEOUT_MS passes, progressing the port meanwhile.
  // Call without the lock.  Per address: 0, -FI_EINVAL (a broadcast or
  // multicast address), -FI_EADDRNOTAVAIL (the port has no address),
  // -FI_EHOSTUNREACH (off its subnet, no way beyond), -FI_ETIMEDOUT (no
  // answer).  Addresses without an IPv4 address, or with
  // a MAC, are left as they are (a wildcard sockaddr is the caller's to
  // refuse).
  static constexpr uint64_t kArpRetryMs = 200;
  std::vector<int> resolve(const std::vector<av::Address*>& addresses);
  // resolve() for an address named by IPv6 alone: its peer id, with a
  // named use of it taken that the caller gives back (release_ipv6_peer:
  // the AV once its entry holds its own, fi_connect's endpoint at close),
  // or why not (-FI_EADDRNOTAVAIL: the port has no IPv6 address;
  // -FI_EINVAL: no unicast address; -FI_EHOSTUNREACH: off its prefix with
  // no router, or not in UDP; -FI_ENOSPC: the peer table is full).
  int name_ipv6_peer(av::Address& address) const;
  int resolve(av::Address* address) { return resolve(std::vector<av::Address*>{address})[0]; }
  // Fills address->ipv4 and ->ipv6 where the port knows them: its own
  // MAC's are its addresses; a peer id's, its address; a neighbour's, the
  // table's.  Lock held.
  void name_by_ip(av::Address* address) const;
  // Asks ARP for `ip` again on behalf of a peer inserted before it
  // answered, or whose entry is due for a refresh, at most once per
  // kArpRetryMs for the whole port (false: not now).  Lock held.
  bool ask_neighbour(uint32_t ip, uint64_t now);
  uint64_t last_neighbour_ask_ns = 0;
  // The same without the port-wide pace: for a next hop frames wait for
  // (its own pace is chase_neighbours').  Lock held.
  void ask_neighbour_now(uint32_t ip, uint64_t now);

  // The port's IPv6 address, if it has one (FI_DPDK_PORT_ADDR, or the
  // kernel's on its interface), dpdk_ipv6.cc.  It answers neighbour
  // solicitations for it and ping, and with FI_DPDK_ENCAP=udp (udp6) its
  // endpoints reach peers named by IPv6 address in UDP/IPv6: a peer id
  // from ipv6_peer_id (lib/ip/ipv6_peers.h) names each, and their next
  // hops are resolved by neighbour discovery into neighbours6.
  std::optional<ip::Interface6> interface6;
  bool udp6 = false;
  ip::Neighbour6Table neighbours6;
  uint64_t neighbour_solicitations_answered = 0;
  uint64_t neighbour_messages_ignored = 0;  // not for our address, or not to us
  uint64_t echo6_requests_answered = 0;
  uint64_t rx_udp6 = 0;
  uint64_t rx_udp6_checked_by_device = 0;  // of rx_udp6: its UDP checksum not summed again
  uint64_t rx_strangers_not_named = 0;     // UDP/IPv6 from a sender the peer table had no room for
  // An IPv6 frame received (receive() hands it over): a solicitation for
  // our address is answered, an advertisement we asked for learned, UDP
  // to an endpoint's port decoded and delivered, an echo request answered
  // (within echo_allowed's pace); the rest is counted as not ours.  Lock
  // held; the frame stays the caller's.
  void receive_ipv6(rte_mbuf* frame, uint64_t now, uint16_t polled_queue);
  // Its first part: the packet of an IPv6 frame to our MAC or to our
  // solicited-node group, neighbour discovery taken here.
  enum class Ipv6Frame { kNotOurs, kNeighbour, kOther };
  Ipv6Frame take_ipv6_neighbour(const uint8_t* bytes, size_t length, uint64_t now,
                                ip::Ipv6Packet* packet, bool* to_us);
  // A solicitation for `target` from our address, now (solicit_neighbour
  // first opens the question).  Lock held.
  void send_solicitation(const ip::Ipv6& target);
  // Sends one frame of at most `capacity` bytes that `build` writes
  // (returning its length, 0 for none) on queue pair 0: the port's own
  // answers (ARP, neighbour discovery, echo).  False when nothing was
  // built, no mbuf could be had or the device took none (the asker asks
  // again, as after a lost frame).  Lock held.
  bool send_built(size_t capacity, const std::function<size_t(uint8_t*)>& build);

  // The UDP/IPv4 encapsulation (dpdk_udp.cc).  On a port with an address
  // and FI_DPDK_ENCAP=udp, a peer named by IPv4 address is a transport peer
  // named by its peer id (lib/ip/udp4.h): its frames are UDP to
  // port_base + queue, through the gateway when it is off the subnet, and
  // fi_av_insert resolves nothing (the first frames wait for ARP instead).
  bool udp = false;
  // What each frame loses to the IP and UDP headers on such a port: the
  // IPv6 ones' where the port reaches peers in UDP/IPv6 (a frame's size is
  // the port's, whichever peer it is for).
  uint32_t encap_overhead() const {
    return udp6  ? static_cast<uint32_t>(ip::kUdp6Overhead)
           : udp ? static_cast<uint32_t>(ip::kUdp4Overhead)
                 : 0;
  }
  // The largest payload of a frame to the peer of link address `link`:
  // for one beyond the gateway, what FI_DPDK_ROUTED_MTU leaves of a frame,
  // and less where path MTU discovery found less (learned_paths); 0 (the
  // port's own) otherwise (proto::PathLimit).
  uint32_t path_limit(const uint8_t* link) const;
  // FI_DPDK_ROUTED_MTU's part of it: for a peer beyond the gateway.
  uint32_t routed_limit(const uint8_t* link) const;
  // RSS steering: up to out.size() UDP source ports that frames from the
  // peer at `link`, its endpoint queue `peer_queue`, to endpoint queue
  // `queue` should come from for this port's RSS to put them on `hw_queue`
  // (proto::ReachingPorts); 0 on other ports, or for a peer not in UDP.
  size_t reaching_ports(const uint8_t* link, uint16_t peer_queue, uint16_t queue, uint16_t hw_queue,
                        std::span<uint16_t> out) const;
  enum class Route : uint8_t {
    kSend,         // addressed to its next hop
    kLoopBack,     // to an endpoint of this port
    kWait,         // the next hop has not answered ARP yet: hold it
    kUnreachable,  // no next hop (off the subnet, no gateway)
  };
  // Writes the Ethernet, IP and UDP headers (udp_lead(peer) bytes) of a
  // frame for peer id `peer` (of an IPv4 or an IPv6 peer) from UDP port
  // `source_port` (source_port_of) whose UDP payload (our header and payload, already
  // in place: IPv6's checksum covers it) is `udp_payload` bytes, and says
  // where it goes; *next_hop is the neighbour it waits for (an IPv4 one
  // IPv4-mapped).  *tx_offloads: the mbuf flags of the checksums left to
  // the device (net::ChecksumOffloads; 0 when the frame is summed whole,
  // as one that loops back is), which the caller sets with the header
  // lengths.  Lock held.
  Route route_udp(uint8_t* frame, const uint8_t peer[6], uint16_t source_port, uint16_t dst_queue,
                  size_t udp_payload, uint64_t now, ip::Ipv6* next_hop, uint64_t* tx_offloads);
  // Whether frames to the peer of link address `link` travel in UDP on
  // this port, and the bytes before our header then.
  bool in_udp(const uint8_t link[6]) const {
    return (udp && ip::is_peer_id(link)) || (udp6 && ip::is_ipv6_peer_id(link));
  }
  static size_t udp_lead(const uint8_t link[6]) {
    return ip::is_ipv6_peer_id(link) ? ip::kUdp6Lead : ip::kUdp4Lead;
  }
  // The next hop of a peer id, :: when it has none (IPv4 ones mapped).
  ip::Ipv6 next_hop_of(const uint8_t link[6]) const;
  // Whether `next_hop` is the port's router (of its family).
  bool is_gateway(const ip::Ipv6& next_hop) const;
  // Holds a frame (its Ethernet destination still to be written) until
  // `next_hop` answers ARP: take_arp then sends it on `hw_queue`.  At most
  // kMaxWaitingFrames wait (beyond, the oldest is lost like a dropped frame
  // and the transport resends it), for at most kMaxResolving next hops
  // (false: the frame is the caller's to drop).  A next hop is asked every
  // kArpRetryMs; one silent for FI_DPDK_RESOLVE_TIMEOUT_MS is given up: its
  // frames are dropped and every endpoint's operations to peers behind it
  // fail with FI_EHOSTUNREACH (chase_neighbours, from progress;
  // fail_peers_behind).  Lock held.
  static constexpr size_t kMaxWaitingFrames = 256;
  static constexpr size_t kMaxResolving = 16;
  bool wait_for_neighbour(const ip::Ipv6& next_hop, rte_mbuf* frame, uint16_t hw_queue,
                          uint64_t now);
  void send_waiting(const ip::Ipv6& neighbour, const uint8_t mac[6]);
  void chase_neighbours(uint64_t now);
  void fail_peers_behind(const ip::Ipv6& next_hop);
  // Asks for a next hop's MAC: ARP for an IPv4-mapped one, a neighbour
  // solicitation for an IPv6 one.  Lock held.
  void ask_next_hop(const ip::Ipv6& next_hop, uint64_t now);
  // A frame to `next_hop` at `mac` went again because its peer did not
  // answer: the next hop is asked again at that MAC (a unicast ARP
  // request or solicitation), at most every kConfirmEveryMs.  The request
  // also shows it our MAC: a peer that learns a stranger only by asking
  // back a request (lib/ip/neighbour_table.h) may have missed ours (its
  // pool of questions full under a flood) and then drops what we send.
  // Lock held.
  static constexpr uint64_t kConfirmEveryMs = 1000;
  void confirm_next_hop(const ip::Ipv6& next_hop, const uint8_t mac[6], uint64_t now);
  // Whether a question for that next hop is open: an answer to a sender
  // we know nothing of may wait for it (we asked it back).  Lock held.
  bool asking_for(const ip::Ipv6& next_hop, uint64_t now) const;
  // A neighbour solicitation for `target`, unless kMaxExpected others are
  // being asked for (dpdk_ipv6.cc).  Lock held.
  void solicit_neighbour(const ip::Ipv6& target, uint64_t now);
  // route_udp for a peer named by IPv6 address (dpdk_ipv6.cc).
  Route route_udp6(uint8_t* frame, const uint8_t peer[6], uint16_t source_port, uint16_t dst_queue,
                   size_t udp_payload, uint64_t now, ip::Ipv6* next_hop, uint64_t* tx_offloads);
  struct WaitingFrame {
    ip::Ipv6 next_hop;
    uint16_t hw_queue;
    rte_mbuf* frame;
  };
  std::deque<WaitingFrame> waiting_frames;
  struct Resolving {
    ip::Ipv6 next_hop;
    uint64_t since_ns;
    uint64_t asked_ns;
  };
  std::vector<Resolving> resolving;  // the next hops frames wait for
  uint64_t frames_waited = 0;        // held for ARP, then sent
  uint64_t frames_not_resolved = 0;  // dropped while their next hop was silent
  uint64_t next_hops_given_up = 0;
  uint64_t neighbour_refreshes = 0;      // entries in use asked for again
  uint64_t neighbour_confirmations = 0;  // asked again for a peer that did not answer
  // An IPv4 frame (receive() hands it over): UDP to an endpoint's port is
  // decoded and delivered like ours, an echo request answered (ping), the
  // rest counted.  Lock held; the frame stays the caller's.
  void receive_ipv4(rte_mbuf* frame, uint64_t now, uint16_t polled_queue);
  // A UDP datagram of either family to one of the endpoints' ports: its
  // payload decoded as our header and payload (dst_mac ours, src_mac the
  // caller's to set), and checked to name the queue of the port it came to.
  // False (counted) when it is not to be delivered.  Lock held.
  bool take_datagram(const ip::UdpDatagram& datagram, proto::DecodedFrame* decoded);
  uint64_t rx_udp = 0;
  uint64_t rx_udp_checked_by_device = 0;  // of rx_udp: its IPv4 header not summed again
  uint64_t echo_requests_answered = 0;
  // Echo replies: at most kEchoesPerSecond (a ping flood costs the
  // endpoints' queue pair 0 little).
  static constexpr uint32_t kEchoesPerSecond = 100;
  uint64_t echo_window_ns = 0;
  uint32_t echoes_in_window = 0;
  bool echo_allowed(uint64_t now);
  // Path MTU discovery (dpdk_path_mtu.cc).  What routers' ICMP and
  // connections' silence taught about the path to a peer (by link
  // address): the largest payload its frames carry, believed until
  // until_ns (RFC 1191's ten minutes: a path may widen again), for the
  // connections made meanwhile (path_limit).  At most kMaxLearnedPaths;
  // lock held throughout.
  struct LearnedPath {
    uint32_t payload;
    uint64_t until_ns;
  };
  static constexpr size_t kMaxLearnedPaths = 4096;
  static constexpr uint64_t kLearnedPathLife = 600'000'000'000;
  std::unordered_map<uint64_t, LearnedPath> learned_paths;
  void learn_path(const uint8_t* link, uint32_t payload, uint64_t now);
  uint32_t learned_payload(const uint8_t* link, uint64_t now) const;
  // A router's "fragmentation needed" or "packet too big": it counts when
  // it quotes a frame of ours far enough to name the connection (number
  // and token), which then narrows (proto::Engine::on_path_too_big).
  void on_too_big(const ip::TooBig& word, uint64_t now);
  uint64_t too_big_taken = 0, too_big_ignored = 0;
  // A decoded frame to the endpoint its header names.  Lock held.
  void deliver(const proto::DecodedFrame& decoded, rte_mbuf* frame, uint64_t now,
               uint16_t polled_queue);
};

template <typename Call>
void PortContext::contain(Call&& call) {
  // The engine answers a failed buffer allocation itself; a record's or a
  // queue node's throws, and stops here, in the receive path, never in the
  // progress loop or the application.
  try {
    call();
  } catch (const std::bad_alloc&) {
    if (no_memory++ == 0) warn_no_memory();
  }
}

// FI_PROGRESS_AUTO (dpdk_auto_progress.cc): a domain's port joins or leaves
// the progress loop, which runs on a DPDK worker lcore or a thread.  Call
// without the port lock.  auto_progress_lcore() is -1 when on a thread.
void auto_progress_add(PortContext* port);
// Every open port is watched by the manual-progress safety net: a port no
// fi_* call has progressed for FI_DPDK_PROGRESS_NET_MS gets a pass from a
// helper thread (none when it is 0), so
// retransmissions go on while the application waits elsewhere.
void progress_net_add(PortContext* port);
void progress_net_remove(PortContext* port);
void auto_progress_remove(PortContext* port);
int auto_progress_lcore();

// Finds or opens the port with that id; shared by every domain on it.
int acquire_port(uint16_t port_id, std::shared_ptr<PortContext>* out, std::string* error);

// Holds the lock of the lane an endpoint's, CQ's or counter's `lane` names,
// or the whole port lock for kWholePort and on a port of one lane.  `lane`
// changes only under the whole port lock: once its lane's lock is held and
// it still names that lane, it stays so.
class LaneGuard {
 public:
  LaneGuard(PortContext& port, const std::atomic<uint16_t>& lane) : locks_(port.lock) {
    if (locks_.count() == 1) {
      locks_.lock();
      return;
    }
    for (;;) {
      const uint16_t seen = lane.load(std::memory_order_relaxed);
      if (seen == kWholePort) {
        locks_.lock();
        return;
      }
      PortLock& lane_lock = locks_.lane(seen);
      const bool contended = !lane_lock.try_lock();
      if (contended) lane_lock.lock();
      if (lane.load(std::memory_order_relaxed) == seen) {
        if (!port.one_lane || port.lanes_wanted) {
          lane_ = seen;
          return;
        }
        // A port not split yet: the application thread that called last
        // on it.  Waiting here on another application thread's call (not
        // on a helper's pass) splits it, then the object's own lane is
        // taken.
        const void* me = __builtin_thread_pointer();
        const void* before = port.last_caller;
        port.last_caller = me;
        if (!contended || before == me || before == nullptr || !port.split_lanes()) {
          lane_ = seen;
          return;
        }
      }
      lane_lock.unlock();
    }
  }
  ~LaneGuard() {
    if (lane_ == kWholePort)
      locks_.unlock();
    else
      locks_.lane(lane_).unlock();
  }
  LaneGuard(const LaneGuard&) = delete;
  LaneGuard& operator=(const LaneGuard&) = delete;
  // The lane held, kWholePort for the whole port.
  uint16_t lane() const { return lane_; }

 private:
  LaneLocks& locks_;
  uint16_t lane_ = kWholePort;
};

}  // namespace ofi_dpdk::ofi
