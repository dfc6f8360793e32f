// dpdk_prov.h: the provider's objects and what the files of drivers/ofi share.
// One file per fabric object, libfabric style: dpdk_fabric.cc, dpdk_domain.cc,
// dpdk_ep.cc, dpdk_msg.cc, dpdk_cq.cc, dpdk_av.cc, dpdk_eq.cc, dpdk_mr.cc;
// dpdk_progress.cc moves frames between the port and the endpoints.
//
// Every object struct starts with its libfabric fid struct, so a fid pointer
// from the application converts back with from_fid<T>().
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include "ofi_dpdk_config.h"  // which libfabric features the headers have

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <bitset>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "drivers/net/port.h"
#include "lib/ip/ipv6_peers.h"
#include "lib/ip/neighbour_table.h"
#include "lib/ip/too_big.h"
#include "lib/ip/udp4.h"
#include "lib/ip/udp6.h"
#include "lib/proto/frame_codec.h"
#include "lib/proto/frame_tag.h"
#include "drivers/ofi/dpdk_cq_ring.h"
#include "drivers/ofi/dpdk_ipv6_holds.h"
#include "drivers/ofi/dpdk_kernel_ports.h"
#include "drivers/ofi/dpdk_params.h"
#include "drivers/ofi/dpdk_port_lock.h"
#include "drivers/ofi/dpdk_wait.h"
#include "lib/av/address.h"
#include "lib/av/auth_key_table.h"
#include "lib/av/av_table.h"
#include "lib/av/shared_table.h"
#include "lib/proto/transport.h"
#include "lib/remote/target.h"

namespace ofi_dpdk::ofi {

extern fi_provider g_provider;

#define DPDK_WARN(subsys, ...) FI_WARN(&::ofi_dpdk::ofi::g_provider, subsys, __VA_ARGS__)
#define DPDK_INFO(subsys, ...) FI_INFO(&::ofi_dpdk::ofi::g_provider, subsys, __VA_ARGS__)
#define DPDK_DBG(subsys, ...) FI_DBG(&::ofi_dpdk::ofi::g_provider, subsys, __VA_ARGS__)

inline constexpr const char* kProviderName = "dpdk";
inline constexpr const char* kFabricName = "dpdk";
inline constexpr uint32_t kProviderVersion = FI_VERSION(0, 1);
inline constexpr uint16_t kMaxEndpointsPerPort = 64;
static_assert(KernelPorts::kQueues >= kMaxEndpointsPerPort);
// Transmit, and receive, contexts of one scalable endpoint (domain_attr
// max_ep_tx_ctx, max_ep_rx_ctx): any mix of the two fits a free port.
inline constexpr uint16_t kMaxEpContexts = kMaxEndpointsPerPort / 2;
inline constexpr uint16_t kAnyQueue = 0xFFFF;
inline constexpr size_t kIovLimit = 8;
// Peer groups (2.x): any 32-bit id but all ones, which with an all-ones
// index would be FI_ADDR_UNSPEC.
inline constexpr uint32_t kMaxGroupId = 0xFFFF'FFFEu;
inline constexpr size_t kQueueDepth = 1024;  // tx_attr->size and rx_attr->size
// fi_av(3) 2.x: a receive's source is an authorization key fi_addr.
#ifdef FI_AUTH_KEY
inline constexpr uint64_t kAuthKeyFlag = FI_AUTH_KEY;
#else
inline constexpr uint64_t kAuthKeyFlag = 0;
#endif
inline constexpr size_t kMaxMsgSize = size_t{1} << 30;  // ep_attr->max_msg_size
inline constexpr size_t kInjectSize = 4096;             // copied at the call
// FI_OPT_MIN_MULTI_RECV until the application sets it.
inline constexpr size_t kDefaultMinMultiRecv = 64;
// A CQ opened with attr.size 0: room for every operation of 64 endpoints
// at the advertised tx_attr/rx_attr size (1024).
inline constexpr size_t kDefaultCqSize = 65536;

template <typename T, typename F>
T* from_fid(F* fid) {
  return reinterpret_cast<T*>(fid);
}

// Fills a libfabric ops slot the provider does not support, keeping every
// slot non-NULL: the call returns -FI_ENOSYS.
template <typename F>
struct NotSupported;
template <typename R, typename... Args>
struct NotSupported<R (*)(Args...)> {
  static R call(Args...) { return static_cast<R>(-FI_ENOSYS); }
};
#define DPDK_ENOSYS(table, member) \
  ::ofi_dpdk::ofi::NotSupported<decltype(table::member)>::call

// Fills a data-path slot that this kind of object does not offer (a
// receive context's sends): the call returns -FI_EOPNOTSUPP.
template <typename F>
struct NotThisDirection;
template <typename R, typename... Args>
struct NotThisDirection<R (*)(Args...)> {
  static R call(Args...) { return static_cast<R>(-FI_EOPNOTSUPP); }
};
#define DPDK_EOPNOTSUPP(table, member) \
  ::ofi_dpdk::ofi::NotThisDirection<decltype(table::member)>::call

struct Endpoint;
struct Cq;
}  // namespace ofi_dpdk::ofi
struct rte_mbuf;
namespace ofi_dpdk::ofi {
struct Av;
struct Eq;
struct Cntr;

// Nanoseconds of a monotonic clock: the transport's timers run on it.
uint64_t now_ns();

// An operation posted with FI_TRIGGER that waits for its counter
// (fi_trigger(3)); `post` posts it, lock held.
struct TriggeredOp {
  Endpoint* ep;
  void* context;  // the fi_triggered_context
  Cntr* counter;
  uint64_t threshold;
  std::function<ssize_t(Endpoint&)> post;
};
// What a triggered operation keeps of its iov: the entries, and with
// FI_INJECT (the buffer is the caller's again at once) the bytes too.
struct KeptIov {
  std::vector<iovec> parts;
  std::shared_ptr<std::vector<uint8_t>> bytes;
};
KeptIov keep_iov(const iovec* iov, size_t count, uint64_t flags);

// The process's IPv6 peer ids (lib/ip/ipv6_peers.h, dpdk_ipv6.cc): one
// table for every port, behind its own lock, as an AV entry's id must name
// its peer on whichever port sends.  `pinned` for addresses the program
// names (AV inserts, connects): one named use taken, which its taker gives
// back with release_ipv6_peer (fi_av_remove, the endpoint's close); the
// receive path's strangers take none.
bool ipv6_peer_id(const ip::Ipv6& address, bool pinned, uint8_t id[6]);
// One more use of the peer `id` names (Ipv6Peers::hold), and giving one
// back.  Connection uses are the endpoints' (dpdk_ipv6_holds.h).
bool hold_ipv6_peer(const uint8_t id[6], ip::Ipv6Peers::Use use);
void release_ipv6_peer(const uint8_t id[6], ip::Ipv6Peers::Use use);
struct Ipv6PeerCounts {
  size_t named, connected, strangers;
  uint64_t evictions;
};
Ipv6PeerCounts ipv6_peer_counts();  // for the logs
// The id of an address the table holds, making none.
bool find_ipv6_peer_id(const ip::Ipv6& address, uint8_t id[6]);
std::optional<ip::Ipv6> ipv6_of_peer_id(const uint8_t id[6]);

// One open ethdev port and what shares it: the port lock serialises the
// data path of every endpoint on the port, and the endpoint table is the
// software demultiplexer's map from queue id to endpoint.
struct PortContext final : proto::FrameKeeper {
  std::unique_ptr<net::Port> port;
  PortLock lock;
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
  uint64_t rx_not_ours = 0;
  uint64_t rx_bad_frames = 0;
  uint64_t rx_unsealed = 0;  // frames without a checksum while we want one
  void warn_unsealed();      // counts one, and says why at the first
  bool checksums = true;     // FI_DPDK_CHECKSUM, or off on a memory port (acquire_port)
  // The job key's tag keys (FI_DPDK_AUTH_KEY): every frame sent carries a
  // keyed tag, every frame taken must (lib/proto/frame_tag.h).
  std::optional<proto::FrameKey> frame_key;
  proto::FrameCheck frame_check() const {
    return {checksums, frame_key ? &*frame_key : nullptr};
  }
  // Frames refused for their keyed tag: wrong (forged, changed, another
  // key), or keyed where we have no key, or not keyed where we have one.
  uint64_t rx_bad_tags = 0;
  uint64_t rx_key_mismatch = 0;
  // Counts a frame the decoder refused for its tag or key, and says why at
  // the first of each kind; false when `result` is not one of those.
  bool refused_for_key(proto::DecodeResult result);
  uint64_t rx_no_endpoint = 0;
  // The device queue progress() is reading (kNoPolledQueue for frames that
  // never left this process): deliver() tells, per endpoint, whether its
  // frames came on its own queue, which is what rte_flow steering promises.
  static constexpr uint16_t kNoPolledQueue = 0xFFFF;
  uint16_t polled_queue = kNoPolledQueue;
  // Engine calls that ran out of memory for a record (std::bad_alloc,
  // caught in progress: it never reaches the application or the progress
  // loop); the frame is lost like a dropped one.
  uint64_t no_memory = 0;
  // Domains on this port opened with FI_PROGRESS_AUTO: while non-zero the
  // progress loop drives the port and fi_* calls need not.
  std::atomic<uint32_t> auto_progress_users{0};
  // When progress() last ran (now_ns()): the manual-progress safety net
  // (dpdk_auto_progress.cc) steps in on ports left alone too long.
  std::atomic<uint64_t> last_progress_ns{0};
  // The stamp the safety net's own last pass left: while it is still the
  // last one, the application has not come back.  The net's thread alone
  // reads and writes it.
  uint64_t safety_net_pass_ns = 0;

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
  uint32_t progress(uint64_t now);
  uint32_t progress() { return progress(now_ns()); }
  // Triggered operations of this port's endpoints, in the order they go:
  // by threshold, then as posted (dpdk_trigger.cc).  Lock held.
  std::vector<TriggeredOp> triggered;
  // Posts those whose counter reached their threshold.  Lock held.
  void run_due_triggers();
  // Forgets `ep`'s (it closes: they never ran).  Lock held.
  void drop_triggers(const Endpoint* ep);
  // Checks one received frame and hands it to its endpoint; frees it.
  void receive(rte_mbuf* frame, uint64_t now);
  // Runs an engine call of the progress pass, counting (never passing on)
  // a std::bad_alloc.
  template <typename Call>
  void contain(Call&& call);
  // Mid-pass: each endpoint answers the frames it took (Engine::answer)
  // and sends its outbox.
  void answer(uint64_t now);
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
    return auto_progress_users.load(std::memory_order_relaxed) != 0 ||
           params().progress_net_ms != 0;
  }
  // Progress for calls that wait on the application's behalf (fi_cq_read,
  // posting when full): skipped while the progress loop owns the port.
  uint32_t progress_if_manual() {
    return auto_progress_users.load(std::memory_order_relaxed) == 0 ? progress() : 0;
  }
  uint32_t progress_if_manual(uint64_t now) {
    return auto_progress_users.load(std::memory_order_relaxed) == 0 ? progress(now) : 0;
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
  bool idle_poll(bool found_work, uint64_t now);
  uint64_t idle_since_ns = 0;  // 0: the last poll found work
  uint64_t idle_yields = 0;
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
  uint64_t rx_strangers_not_named = 0;  // UDP/IPv6 from a sender the peer table had no room for
  // An IPv6 frame received (receive() hands it over): a solicitation for
  // our address is answered, an advertisement we asked for learned, UDP
  // to an endpoint's port decoded and delivered, an echo request answered
  // (within echo_allowed's pace); the rest is counted as not ours.  Lock
  // held; the frame stays the caller's.
  void receive_ipv6(rte_mbuf* frame, uint64_t now);
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
    return udp6 ? static_cast<uint32_t>(ip::kUdp6Overhead)
                : udp ? static_cast<uint32_t>(ip::kUdp4Overhead) : 0;
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
  size_t reaching_ports(const uint8_t* link, uint16_t peer_queue, uint16_t queue,
                        uint16_t hw_queue, std::span<uint16_t> out) const;
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
  // IPv4-mapped).  Lock held.
  Route route_udp(uint8_t* frame, const uint8_t peer[6], uint16_t source_port,
                  uint16_t dst_queue, size_t udp_payload, uint64_t now, ip::Ipv6* next_hop);
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
  // Whether a question for that next hop is open: an answer to a sender
  // we know nothing of may wait for it (we asked it back).  Lock held.
  bool asking_for(const ip::Ipv6& next_hop, uint64_t now) const;
  // A neighbour solicitation for `target`, unless kMaxExpected others are
  // being asked for (dpdk_ipv6.cc).  Lock held.
  void solicit_neighbour(const ip::Ipv6& target, uint64_t now);
  // route_udp for a peer named by IPv6 address (dpdk_ipv6.cc).
  Route route_udp6(uint8_t* frame, const uint8_t peer[6], uint16_t source_port,
                   uint16_t dst_queue, size_t udp_payload, uint64_t now, ip::Ipv6* next_hop);
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
  uint64_t neighbour_refreshes = 0;  // entries in use asked for again
  // An IPv4 frame (receive() hands it over): UDP to an endpoint's port is
  // decoded and delivered like ours, an echo request answered (ping), the
  // rest counted.  Lock held; the frame stays the caller's.
  void receive_ipv4(rte_mbuf* frame, uint64_t now);
  // A UDP datagram of either family to one of the endpoints' ports: its
  // payload decoded as our header and payload (dst_mac ours, src_mac the
  // caller's to set), and checked to name the queue of the port it came to.
  // False (counted) when it is not to be delivered.  Lock held.
  bool take_datagram(const ip::UdpDatagram& datagram, proto::DecodedFrame* decoded);
  uint64_t rx_udp = 0;
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
  void deliver(const proto::DecodedFrame& decoded, rte_mbuf* frame, uint64_t now);
};

template <typename Call>
void PortContext::contain(Call&& call) {
  // The engine answers a failed buffer allocation itself; a record's or a
  // queue node's throws, and stops here, in the receive path, never in the
  // progress loop or the application.
  try {
    call();
  } catch (const std::bad_alloc&) {
    if (no_memory++ == 0)
      DPDK_WARN(FI_LOG_EP_DATA, "%s: out of memory in the transport; frames are being lost\n",
                port->name().c_str());
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

struct Fabric {
  fid_fabric fid;
  std::atomic<int> refs{0};
};

struct Domain {
  fid_domain fid;
  Fabric* fabric;
  std::shared_ptr<PortContext> port;
  fi_info* info;  // a copy of what the domain was opened with
  uint32_t api_version;
  std::atomic<int> refs{0};
  std::mutex mr_lock;
  std::unordered_map<uint64_t, struct Mr*> mr_keys;  // registered keys: unique per domain
  bool auto_progress = false;  // FI_PROGRESS_AUTO: the port is in the progress loop
  // domain_attr->auth_key (4 bytes, API 1.5 and later): the network key of
  // endpoints that name none; 0 when none.
  uint32_t default_auth_key = 0;
  // domain_attr->auth_key_size == FI_AV_AUTH_KEY (libfabric 2.x): endpoints
  // take their keys from the AV (fi_av_insert_auth_key).
  bool av_auth_keys = false;
  // domain_attr->max_group_id (2.x): peer groups are on when non-zero, and
  // the top 32 bits of an fi_addr then name the group (dpdk_ep_addr.cc).
  uint32_t max_group_id = 0;
};

// A completion as the provider keeps it until the application reads it.
struct Completion {
  void* op_context;
  uint64_t flags;
  size_t len;
  void* buf;
  uint64_t data;
  uint64_t tag;
  fi_addr_t source;
};

struct Cq {
  fid_cq fid;
  Domain* domain;
  fi_cq_attr attr;
  Ring<Completion> entries;  // reserved for attr.size at fi_cq_open
  std::deque<fi_cq_err_entry> errors;
  std::deque<fi_addr_t> error_sources;
  // Per error entry, its err_data (FI_SOURCE_ERR: the sender's address);
  // err_data_out holds the last one fi_cq_readerr lent the application.
  std::deque<std::vector<uint8_t>> error_data;
  std::vector<uint8_t> err_data_out;
  std::atomic<int> refs{0};
  // fi_cq(3) attr.size (kDefaultCqSize for 0), a minimum: completions of
  // operations that were posted are never refused nor lost, past it too
  // (they are bounded by the endpoints' queue depths, tx_attr and
  // rx_attr->size); refusing posts while the CQ held its size of them
  // deadlocked Open MPI's OFI MTL, whose CQ holds 100 while it posts
  // receives for answers to requests it has not sent yet.  What no posted
  // operation stands for, remote CQ data, is refused past it (full()).
  // Port lock held.
  size_t capacity = kDefaultCqSize;
  bool full() const { return entries.size() + errors.size() >= capacity; }
  WaitFd wait_fd;                     // FI_WAIT_FD: readable while not empty
  std::atomic<bool> signaled{false};  // fi_cq_signal: the next sread returns

  bool empty() const { return entries.empty() && errors.empty(); }
  void push(const Completion& completion) {
    if (empty()) wait_fd.signal();
    entries.push_back(completion);
  }
  void push_error(const fi_cq_err_entry& error, fi_addr_t source,
                  std::vector<uint8_t> err_data = {}) {
    if (empty()) wait_fd.signal();
    errors.push_back(error);
    error_sources.push_back(source);
    error_data.push_back(std::move(err_data));
  }
};

struct Cntr {
  fid_cntr fid;
  Domain* domain;
  fi_cntr_attr attr;
  std::atomic<uint64_t> value{0};
  std::atomic<uint64_t> errors{0};
  WaitFd wait_fd;  // FI_WAIT_FD: signalled on every change
  std::atomic<int> refs{0};
  uint64_t total_read = 0;  // value + errors at the last read; port lock

  void add(uint64_t n) {
    value.fetch_add(n);
    wait_fd.signal();
  }
  void add_error(uint64_t n) {
    errors.fetch_add(n);
    wait_fd.signal();
  }
};

// fi_av (dpdk_av.cc).  The table and every field below are guarded by the
// port lock, which the send path holds too.
struct Av {
  fid_av fid;
  Domain* domain;
  fi_av_attr attr;
  int addr_format;  // the domain's: native, FI_ADDR_STR or FI_SOCKADDR(_IN)
  av::AddressTable table;  // fi_addr -> 16-byte entry; (MAC, queue) -> fi_addr
  // A named AV: the node's table, which `table` mirrors (refresh()).
  std::unique_ptr<av::SharedTable> shared;
  std::string name;  // fi_av_attr::name, for logs
  // fi_rx_addr puts a receive context in the top rx_ctx_bits of an fi_addr:
  // the index is what this mask keeps.
  uint64_t index_mask = ~uint64_t{0};
  bool user_ids = false;  // opened with FI_AV_USER_ID: ids come from fi_av_set_user_id
  // fi_av_insert_auth_key (FI_AV_AUTH_KEY domains); process-local.
  av::AuthKeyTable auth_key_table;
  Eq* eq = nullptr;                  // fi_av_bind; FI_EVENT reports here
  std::vector<Endpoint*> endpoints;  // bound: fi_av_remove drops their peers
  std::atomic<int> refs{0};

  // Named AVs: takes in what other processes changed, when the shared
  // generation moved (one load when it did not).
  void refresh() {
    if (shared != nullptr && shared->stale()) shared->sync(table);
  }
  // The address fi_addr names for a transfer: receive context i of an
  // entry (fi_rx_addr) is its queue + i, which scalable endpoints give
  // their receive contexts (dpdk_sep.cc).  nullptr when the index is unused
  // or the queue lies beyond the ids a port gives endpoints.  Valid until
  // the next call (port lock).
  const av::Address* resolve(fi_addr_t fi_addr) {
    refresh();
    const av::Entry* entry = table.find(fi_addr & index_mask);
    if (entry == nullptr) return nullptr;
    const uint64_t context = attr.rx_ctx_bits > 0 ? fi_addr >> (64 - attr.rx_ctx_bits) : 0;
    if (context == 0) return &entry->address;
    if (entry->address.queue + context >= kMaxEndpointsPerPort) return nullptr;
    context_address = entry->address;
    context_address.queue = static_cast<uint16_t>(context_address.queue + context);
    return &context_address;
  }
  av::Address context_address;  // resolve()'s answer for receive context > 0
  // An entry inserted before its neighbour answered ARP (av::Entry::
  // unresolved): completed with its MAC when the port has learned it since,
  // else asked for again; false while unknown.  Port lock held.
  bool complete(uint64_t index, PortContext& port);
  // FI_SOURCE: the sender's fi_addr (its FI_AV_USER_ID if it has one), or
  // FI_ADDR_NOTAVAIL for an unknown sender (key: proto::peer_key).
  fi_addr_t lookup_source(uint64_t key);
  // Whether a sender (proto::peer_key) is in the AV, whatever its user id.
  bool knows_sender(uint64_t key) {
    refresh();
    return table.find_endpoint(key) != av::AddressTable::kNone;
  }

  // Authorization keys (dpdk_av.cc), for the endpoints.  A key is a nonzero
  // network key (av::kAuthKeySize bytes); a handle is what
  // fi_av_insert_auth_key returned (av::kAuthKeyHandleBase and up).
  // The key `addr` (an fi_addr resolve() takes; receive-context bits are
  // ignored) was inserted with; 0 when none or unknown.
  uint32_t network_key_of(fi_addr_t addr);
  bool auth_key_handle_valid(fi_addr_t handle);
  // 0 when handle names no key.
  uint32_t network_key_of_handle(fi_addr_t handle);
  // (handle, key) of every key in the table now, lowest handle first.
  // Throws std::bad_alloc.
  std::vector<std::pair<fi_addr_t, uint32_t>> auth_keys();
  // FI_ADDR_NOTAVAIL when key is not in the table.
  fi_addr_t auth_key_handle_of(uint32_t key);
  // Endpoint enable (+1) and close (-1) for each key it enabled with: while
  // any endpoint uses a key, fi_av_remove(FI_AUTH_KEY) of it is -FI_EBUSY.
  void auth_key_use(fi_addr_t handle, int delta);
  // FI_SOURCE_ERR's src_addr for a frame carrying `key`: the key's handle,
  // or its user id in an AV opened with FI_AV_USER_ID (FI_ADDR_NOTAVAIL
  // until fi_av_set_user_id); FI_ADDR_NOTAVAIL for a key not in the table.
  fi_addr_t lookup_source_key(uint32_t key);
};

struct Eq {
  fid_eq fid;
  Fabric* fabric;
  fi_eq_attr attr;
  std::mutex lock;
  struct Event {
    uint32_t type;
    std::vector<uint8_t> data;
  };
  std::deque<Event> events;
  std::deque<fi_eq_err_entry> errors;
  // Per error entry, its err_data (a refused connection's data);
  // err_data_out holds the last one fi_eq_readerr lent the application.
  std::deque<std::vector<uint8_t>> error_data;
  std::vector<uint8_t> err_data_out;
  // The ports of the FI_EP_MSG endpoints and passive endpoints bound to
  // it: reading the EQ progresses them (connection events arrive there),
  // one entry per binding.  Under `lock`.
  std::vector<std::shared_ptr<PortContext>> watched;
  void watch(std::shared_ptr<PortContext> port);
  void unwatch(const PortContext* port);
  // Runs a progress pass on each watched port (manual progress); takes
  // each port's lock, never the EQ's while holding one.
  void progress_watched();
  std::atomic<int> refs{0};
  // FI_WAIT_FD: readable while an event or error is queued; whoever writes
  // an entry (an fi_* call, or a progress pass with a connection event)
  // signals it.
  WaitFd wait_fd;

  // Provider-made entries (dpdk_eq.cc); each takes the EQ lock.  Return
  // -FI_ENOMEM when the entry could not be queued.
  int push_event(uint32_t type, const void* data, size_t len);
  int push_error(const fi_eq_err_entry& error, std::vector<uint8_t> err_data = {});
};

struct Mr {
  fid_mr fid;
  Domain* domain;
  const void* addr;
  size_t len;
  uint64_t access;
  uint64_t offset;  // fi_mr_reg's offset: the remote address of addr without FI_MR_VIRT_ADDR
  // fi_mr_bind(FI_REMOTE_WRITE): counts remote writes and atomics that modify
  // the region (through endpoints with FI_RMA_EVENT).  Under the domain's
  // mr_lock; holds a reference.
  Cntr* remote_write_cntr = nullptr;
};

struct ScalableEp;
struct SharedRx;
struct SharedTx;
struct PassiveEp;
struct ConnRequest;

// FI_EP_MSG (dpdk_cm.cc): where an endpoint's connection stands.
enum class CmState : uint8_t {
  kIdle,        // not connected (or not FI_EP_MSG)
  kConnecting,  // fi_connect sent CONNECT; waiting for ACCEPT or REJECT
  kAccepting,   // fi_accept sent ACCEPT; connected once the peer has it
  kConnected,   // FI_CONNECTED reported
  kShutdown,    // fi_shutdown, the peer's SHUTDOWN, or a refusal
};

struct Endpoint {
  // A plain endpoint, or a context of a scalable endpoint (dpdk_sep.cc):
  // a context is an endpoint that only sends or only receives, answers to
  // its scalable endpoint's address and uses its AV.
  enum class Role : uint8_t { kEndpoint, kTxContext, kRxContext };

  fid_ep fid;
  Domain* domain;
  fi_info* info;
  Role role = Role::kEndpoint;
  ScalableEp* parent = nullptr;  // contexts only
  int index = 0;                 // contexts: fi_tx_context / fi_rx_context index
  Av* av = nullptr;
  SharedRx* srx = nullptr;  // fi_srx_context bound: receives are its
  SharedTx* stx = nullptr;  // fi_stx_context bound
  Cq* tx_cq = nullptr;
  Cq* rx_cq = nullptr;
  Eq* eq = nullptr;
  // Counters by the fi_ep_bind flag that chose them; the FI_REMOTE_* ones
  // count what peers do to this endpoint's memory (FI_RMA_EVENT).
  Cntr* send_cntr = nullptr;
  Cntr* recv_cntr = nullptr;
  Cntr* read_cntr = nullptr;
  Cntr* write_cntr = nullptr;
  Cntr* remote_read_cntr = nullptr;
  Cntr* remote_write_cntr = nullptr;
  bool tx_selective = false;
  bool rx_selective = false;
  bool enabled = false;
  uint16_t queue = kAnyQueue;     // endpoint queue id at the port
  uint16_t hw_queue = 0;          // the port's queue pair serving it
  // Frames for it read from the device on hw_queue, and on another queue
  // (fi_dpdk.h's ep_steering).
  uint64_t frames_on_own_queue = 0;
  uint64_t frames_on_other_queue = 0;
  uint32_t session = 0;           // this incarnation, random, never 0
  uint64_t tx_op_flags = 0;
  uint64_t rx_op_flags = 0;
  size_t min_multi_recv = kDefaultMinMultiRecv;  // FI_OPT_MIN_MULTI_RECV
  std::unique_ptr<proto::Engine> engine;  // the reliable transport
  // RMA and atomics at this endpoint as a target (lib/remote): its regions,
  // counters and CQ as the target sees them (dpdk_rma.cc), and the target
  // serving the engine's requests.  Declared after the engine: gone first.
  std::unique_ptr<remote::Host> target_host;
  std::unique_ptr<remote::Target> target;
  // Network keys (dpdk_ep_addr.cc): ep_attr->auth_key (0: none); the keys
  // fi_enable took frames with; the one sends carry to an address inserted
  // without a key; the AV key handles held until fi_close.
  uint32_t endpoint_auth_key = 0;
  std::vector<uint32_t> auth_keys;
  uint32_t transmit_key = 0;
  std::vector<fi_addr_t> auth_key_handles;
  uint64_t frames_not_sent = 0;   // mbuf pool empty or TX ring full
  uint64_t timeouts_logged = 0;   // engine stats().timeouts already logged (log_timeouts)
  // FI_EP_MSG (dpdk_cm.cc): the connection and the peer it is with (its
  // address; a connecting endpoint's `peer` is the passive endpoint's
  // until the ACCEPT names the new one); the request fi_accept answers;
  // the passive endpoint a listener serves.  Lock held.
  CmState cm_state = CmState::kIdle;
  av::Address peer{};
  // The connection's names, as sockets have them: an accepted endpoint is
  // named by its passive endpoint's address, and a connecting one names
  // its peer by the address it connected to (fi_getname, fi_getpeer).
  // Frames still go between the two endpoints' own queues (`peer`).
  std::optional<av::Address> connection_name;
  std::optional<av::Address> connected_to;
  uint32_t connect_nonce = 0;      // what the answer to our CONNECT echoes
  bool connected_reported = false;  // FI_CONNECTED is on the EQ
  bool shutdown_reported = false;   // FI_SHUTDOWN is on the EQ
  size_t control_in_flight = 0;     // control messages not acknowledged yet
  std::unique_ptr<ConnRequest> conn_request;
  PassiveEp* listener_of = nullptr;
  // The IPv6 peers this endpoint's connections, fi_connect and fi_accept
  // hold in the process's table, given back as they go.  Lock held.
  Ipv6Holds ipv6_holds;
  // A listener's refusals owed (address, nonce), sent at the end of its
  // next flush: the control handler runs inside the engine, which a send
  // from there would re-enter.
  std::vector<std::pair<av::Address, uint32_t>> rejects_due;
  bool is_msg() const { return info->ep_attr->type == FI_EP_MSG; }
  bool is_datagram() const { return info->ep_attr->type == FI_EP_DGRAM; }
  // FI_EP_DGRAM: when the last datagram went out (fi_close gives the peer
  // time to read it before the port may go).
  uint64_t last_datagram_ns = 0;
  // A control message from the peer `source_key` (proto::ControlHandler).
  void on_control(uint64_t source_key, uint32_t session, const uint8_t* body, size_t length);
  // A control message of ours completed (acknowledged, or failed).
  void on_control_sent(const proto::Completion& done);
  // Sends a control message of `kind` with `nonce` and `data` (cut to
  // wire::kMaxConnectionData) to `to`.  Lock held.
  int send_control(const av::Address& to, uint8_t kind, uint32_t nonce, const void* data,
                   size_t length);
  // Sends the refusals owed (rejects_due).  Lock held.
  void send_due_rejects();
  // Whether messages and requests from `source_key` are taken: on a
  // connected endpoint only its peer's (proto::SenderFilter).
  bool accepts_sender(uint64_t source_key) const;

  PortContext& port() { return *domain->port; }
  const PortContext& port() const { return *domain->port; }
  // Where this endpoint's frames come from: its port's MAC, its queue and
  // session (no IPv4 address: write_name adds the port's).
  av::Address own_address() const {
    av::Address self;
    std::memcpy(self.mac, port().port->mac(), 6);
    self.queue = queue;
    self.session = session;
    return self;
  }
  // dpdk_ep_addr.cc.  Lock held.  Where a transfer to `dest` goes: its
  // peer, the network key and (fi_group_addr) the peer group.  Returns 0 or
  // -FI_EINVAL (unknown address, bad group, a key not enabled here).
  int destination(fi_addr_t dest, proto::PeerAddress* out, uint32_t* group);
  // What a receive posted for `source` takes: a sender (FI_DIRECTED_RECV),
  // an authorization key (FI_AUTH_KEY in flags), a peer group.  Returns 0 or
  // -FI_EINVAL.
  int receive_filter(fi_addr_t source, uint64_t flags, proto::RecvRequest* request);
  // fi_enable: fixes the keys frames are taken with; fi_close releases them.
  int enable_auth_keys();
  void release_auth_keys();
  bool accepts_key(uint32_t key) const;
  bool peer_groups() const;
  // Send path: one message to `dest`.  Lock held.  Returns 0, -FI_EAGAIN
  // when tx_attr->size sends are in progress, -FI_EMSGSIZE, -FI_EINVAL.
  ssize_t send(const iovec* iov, size_t iov_count, fi_addr_t dest, void* context,
               uint64_t flags, uint64_t data, bool tagged, uint64_t tag);
  // Posts a receive; a message that came first completes it at once.
  ssize_t post_recv(const iovec* iov, size_t iov_count, fi_addr_t source, void* context,
                    uint64_t flags, bool tagged, uint64_t tag, uint64_t ignore);
  // fi_read / fi_write and their variants (dpdk_rma.cc).  Lock held.
  ssize_t remote(const fi_msg_rma& msg, uint64_t flags, bool write);
  // fi_atomic and its fetch and compare variants (dpdk_atomic.cc); op_class
  // is an atomic::Class.  Lock held.
  ssize_t atomic_op(const fi_msg_atomic& msg, const fi_ioc* compare, size_t compare_count,
                    fi_ioc* result, size_t result_count, uint64_t flags, int op_class);
  // The transport's frames go to the port, its completions to the CQs.
  // Lock held.
  void flush();
  // After a send: flush(), unless the engine holds the outbox for company
  // and a progress pass will come without the application.  Lock held.
  void flush_unless_held();
  // FI_SOURCE_ERR's err_data: the sender's address in the info's format.
  std::vector<uint8_t> sender_address(uint64_t source_key) const;
  bool has_cap(uint64_t cap) const { return (info->caps & cap) != 0; }
  // An operation posted with FI_TRIGGER (dpdk_trigger.cc): `post` posts it
  // (lock held, without FI_TRIGGER) once the counter of the
  // fi_triggered_context `context` reaches its threshold, now if it has.
  // 0, -FI_EAGAIN with tx_attr->size of them waiting, -FI_EINVAL,
  // -FI_EOPNOTSUPP (no FI_TRIGGER, or not a threshold trigger).  Lock held.
  ssize_t trigger(void* context, std::function<ssize_t(Endpoint&)> post);
  size_t triggered_waiting = 0;  // this endpoint's in PortContext::triggered
  int aliases = 0;               // fi_ep_alias fids open on it (port lock)
};

// fi_ep_alias (dpdk_ep_alias.cc): another fid_ep for an endpoint, which
// differs from it only by its default op flags (fi_endpoint(3)).  The data
// path takes either through caller_of.
struct EndpointAlias {
  fid_ep fid;
  Endpoint* ep;
  uint64_t tx_op_flags;
  uint64_t rx_op_flags;
};
extern fi_ops g_alias_fid_ops;
int open_alias(Endpoint* ep, struct fi_alias* alias);
// FI_GETOPSFLAG / FI_SETOPSFLAG on an endpoint's or an alias's flags.
int op_flags_control(uint64_t* tx_op_flags, uint64_t* rx_op_flags, int command, void* arg);

// The endpoint a data-path call names and the op flags that apply when the
// call gives none: the endpoint's own, or its alias's.
struct Caller {
  Endpoint* ep;
  uint64_t tx_op_flags;
  uint64_t rx_op_flags;
};
inline Caller caller_of(fid_ep* fid) {
  if (fid->fid.ops == &g_alias_fid_ops) {
    const auto* alias = reinterpret_cast<EndpointAlias*>(fid);
    return {alias->ep, alias->tx_op_flags, alias->rx_op_flags};
  }
  Endpoint* ep = from_fid<Endpoint>(fid);
  return {ep, ep->tx_op_flags, ep->rx_op_flags};
}
inline Endpoint* endpoint_of(fid_ep* fid) { return caller_of(fid).ep; }

// fi_scalable_ep (dpdk_sep.cc).  It holds rx_count + tx_count queue ids
// from base at its port: receive context i is queue base + i, transmit
// context j queue base + rx_count + j.  Its address is (MAC, base).
struct ScalableEp {
  fid_ep fid;
  Domain* domain;
  fi_info* info;
  Av* av = nullptr;  // fi_scalable_ep_bind: every context uses it
  uint16_t base = 0;
  uint16_t rx_count = 0;
  uint16_t tx_count = 0;
  bool enabled = false;
  // The open contexts by index (nullptr: not open).  Port lock.
  std::vector<Endpoint*> rx;
  std::vector<Endpoint*> tx;
};

// FI_EP_MSG (dpdk_cm.cc).  A passive endpoint listens on a queue of its
// port through an endpoint of its own (the listener, on a domain of its
// own), whose control handler turns CONNECTs into FI_CONNREQ events.
struct PassiveEp {
  fid_pep fid;
  Fabric* fabric;
  fi_info* info;
  Eq* eq = nullptr;
  fid_domain* domain = nullptr;
  Endpoint* listener = nullptr;
  bool listening = false;
  // Requests handed out, and those accepted or refused by an endpoint that
  // still holds them (port lock).  At most kMaxPendingConnRequests are
  // unanswered, kMaxPendingPerSource of them from one source; fi_close
  // ends the unclaimed ones.
  std::unordered_set<ConnRequest*> requests;
  uint64_t refused_full = 0, refused_per_source = 0;  // CONNECTs refused so
};
// The handle of an FI_CONNREQ event (info->handle): who asked.  fi_endpoint
// of that info moves it into the new endpoint; fi_reject ends it.
// Requests are shared by a passive endpoint and the endpoint that takes
// one, which may be on another port: they have a lock of their own
// (conn_request_lock()), taken after any port lock.
struct ConnRequest {
  ::fid fid;
  PassiveEp* pep;        // null once the passive endpoint closed
  av::Address client;
  av::Address listener;  // the passive endpoint's address, which it asked
  uint32_t nonce = 0;    // the CONNECT's, which the answer echoes
  bool claimed = false;  // an endpoint holds it (one fi_endpoint per request)
  bool answered = false; // accepted or rejected
};
std::mutex& conn_request_lock();
// The most connection requests a passive endpoint holds unanswered, and
// from one source (a client's link address, MAC or IP: its queues are its
// to choose); more are refused (a stranger's flood costs no more, and
// leaves room for the others).
inline constexpr size_t kMaxPendingConnRequests = 1024;
inline constexpr size_t kMaxPendingPerSource = 16;
// Shared contexts (dpdk_shared_ctx.cc).  A shared receive context holds
// the receives posted to it; the engines of the endpoints bound to it match
// their messages against those (proto::Engine::share_receives), so a
// message to any of them takes the first receive that fits, and completes
// on that endpoint's CQ.  A shared transmit context is a binding only: each
// endpoint still sends from its own queue, which keeps its address, order
// and completions what they would be, the sharing being of resources.
struct SharedRx {
  fid_ep fid;
  Domain* domain;
  uint64_t op_flags = 0;           // rx_attr->op_flags
  proto::PostedReceives posted;    // port lock
  std::vector<Endpoint*> endpoints;  // bound (port lock)
  // A receive for all the bound endpoints (Endpoint::post_recv routes
  // there): an early message of one of them takes it, else it waits for
  // the first.  Port lock held.  0, -EAGAIN, -FI_EOPBADSTATE when no bound
  // endpoint is enabled.
  int post(const proto::RecvRequest& request);
};
struct SharedTx {
  fid_stx fid;
  Domain* domain;
  std::atomic<int> refs{0};  // endpoints bound
};
int stx_open(fid_domain* domain, fi_tx_attr* attr, fid_stx** stx, void* context);
int srx_open(fid_domain* domain, fi_rx_attr* attr, fid_ep** rx_ep, void* context);
// The transfer tables of an object that does no RMA or atomics (every call
// -FI_EOPNOTSUPP): scalable endpoints, shared receive contexts.
void set_no_rma_atomic_ops(fid_ep* fid);
fi_ops_cm* msg_cm_ops();  // an FI_EP_MSG endpoint's fid_ep::cm
int passive_ep_open(fid_fabric* fabric, fi_info* info, fid_pep** pep, void* context);
// Forgets a request its passive endpoint counted (accepted, or its endpoint
// closed).
void release_conn_request(std::unique_ptr<ConnRequest> request);
// fi_endpoint of an FI_CONNREQ info: claims the request the endpoint
// answers (*request; null when info->handle is no live request) or returns
// -FI_EINVAL when another endpoint claimed it.
int claim_conn_request(const fi_info* info, ConnRequest** request);
// fi_endpoint(3): an active endpoint opened with info->handle a passive
// endpoint acquires its address.  When info->handle is one: frees the
// passive endpoint's queue on `domain`'s port (it is bound to nothing
// after) and returns it, for the new endpoint to claim; -FI_EINVAL when it
// listens, gave its address away already, or is on another port; its
// session (the address's incarnation) in *session.  Returns kAnyQueue + 1
// when info->handle is no passive endpoint.  No locks held.
int take_passive_address(Domain* domain, const fi_info* info, uint32_t* session);

// Opens an endpoint whose queue id `claim` picks and records under the port
// lock (it returns the queue id or a negative fabric errno); shared by
// fi_endpoint and the contexts of a scalable endpoint.  Takes a domain
// reference.  Returns 0 or the error.
int open_endpoint(Domain* domain, const fi_info* info, void* context,
                  const std::function<int(PortContext&, Endpoint*)>& claim, Endpoint** out);
// A context's fi_close tells its scalable endpoint.  Port lock held.
void forget_context(Endpoint* context);
// fi_ep_bind of an AV, for endpoints and contexts alike.  Port lock held.
int bind_av(Endpoint* ep, Av* av);
// Warns of the engine's last peer timeout and marks the count logged
// (dpdk_progress.cc); called when stats().timeouts != timeouts_logged.
// Lock held.
void log_timeouts(Endpoint* ep);
// The queue id info->src_addr asks for: kAnyQueue without one, -FI_EINVAL
// for a malformed one.
int requested_queue(const fi_info* info);
// fi_getname, fi_getpeer: `address` (of port's endpoint, or with the port
// lock held of a peer) in the info's address format, truncated to
// *addrlen (-FI_ETOOSMALL then); *addrlen gets the full size.
// -FI_EADDRNOTAVAIL when the format cannot carry it.
int write_name(const fi_info* info, const PortContext& port, av::Address address, void* addr,
               size_t* addrlen);

// Object constructors, one per file.
int fabric_open(fi_fabric_attr* attr, fid_fabric** fabric, void* context);
int domain_open(fid_fabric* fabric, fi_info* info, fid_domain** domain, void* context);
int eq_open(fid_fabric* fabric, fi_eq_attr* attr, fid_eq** eq, void* context);
int cq_open(fid_domain* domain, fi_cq_attr* attr, fid_cq** cq, void* context);
int cntr_open(fid_domain* domain, fi_cntr_attr* attr, fid_cntr** cntr, void* context);
int poll_open(fid_domain* domain, fi_poll_attr* attr, fid_poll** pollset);
int av_open(fid_domain* domain, fi_av_attr* attr, fid_av** av, void* context);
int endpoint_open(fid_domain* domain, fi_info* info, fid_ep** ep, void* context);
int scalable_ep_open(fid_domain* domain, fi_info* info, fid_ep** sep, void* context);
int mr_reg(fid* fid, const void* buf, size_t len, uint64_t access, uint64_t offset,
           uint64_t requested_key, uint64_t flags, fid_mr** mr, void* context);
int mr_regv(fid* fid, const iovec* iov, size_t count, uint64_t access, uint64_t offset,
            uint64_t requested_key, uint64_t flags, fid_mr** mr, void* context);
int mr_regattr(fid* fid, const fi_mr_attr* attr, uint64_t flags, fid_mr** mr);

extern fi_ops_msg g_msg_ops;
extern fi_ops_rma g_rma_ops;
extern fi_ops_atomic g_atomic_ops;
int query_atomic(fid_domain* domain, fi_datatype datatype, fi_op op, fi_atomic_attr* attr,
                 uint64_t flags);
extern fi_ops_tagged g_tagged_ops;  // dpdk_tagged.cc

// Private bits in an operation's flags (above every FI_* op flag):
// fi_inject and friends make no completion at all, and an operation a
// counter counts may still want no CQ entry.
inline constexpr uint64_t kNoCompletion = 1ull << 63;
inline constexpr uint64_t kNoCqEntry = 1ull << 62;
// A connection-management message of an FI_EP_MSG endpoint (dpdk_cm.cc):
// its completion goes to the endpoint's connection state, not to a CQ.
inline constexpr uint64_t kControlSend = 1ull << 61;
inline constexpr uint64_t kPrivateOpFlags = kNoCompletion | kNoCqEntry | kControlSend;
inline bool wants_completion(bool selective, uint64_t flags) {
  return !(flags & kNoCompletion) && (!selective || (flags & FI_COMPLETION));
}

// What lib/proto's calls return (0 or a negative errno: -EAGAIN when the
// send or receive queue is full, -EMSGSIZE above the message size, -ENOENT
// for nothing to cancel or claim, -EINVAL for a bad iov) as an fi_errno.
// Runs an engine call from an fi_* entry point.  The engine answers a
// failed allocation of a buffer itself (-ENOMEM, an error response); one
// of a record or a queue node throws std::bad_alloc, which stops here: no
// exception crosses into the application's C code.
template <typename Call>
int engine_call(Call&& call) {
  try {
    return call();
  } catch (const std::bad_alloc&) {
    return -ENOMEM;
  }
}

inline ssize_t engine_errno(int ret) {
  switch (ret) {
    case 0: return 0;
    case -EAGAIN: return -FI_EAGAIN;
    case -ENOMEM: return -FI_ENOMEM;
    case -EMSGSIZE: return -FI_EMSGSIZE;
    case -ENOENT: return -FI_ENOENT;
    default: return -FI_EINVAL;
  }
}

// The endpoint as lib/remote's target sees it (dpdk_rma.cc): its caps,
// its domain's regions, its remote counters and its receive CQ.  Called
// with the port lock held.
std::unique_ptr<remote::Host> make_target_host(Endpoint* ep);

// Getinfo: see dpdk_getinfo.cc.
int getinfo(uint32_t version, const char* node, const char* service, uint64_t flags,
            const fi_info* hints, fi_info** info);

// Makes sure EAL is up (FI_DPDK_EAL_ARGS on first use).  Returns 0 or
// -FI_ENODATA after logging why.
int ensure_eal();

}  // namespace ofi_dpdk::ofi
