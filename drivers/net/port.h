// port.h: one DPDK ethdev port as the provider uses it: configuration,
// queues, the mbuf pool, burst I/O, steering of frames to endpoint queues,
// and the fault injector.  The only place besides fault_injector.cc that
// calls rte_ethdev.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "drivers/net/checksum_offloads.h"
#include "drivers/net/fault_injector.h"
#include "drivers/net/fault_plan.h"
#include "drivers/net/mbuf_handoff.h"
#include "drivers/net/shared_port.h"
#include "drivers/net/steering_rule.h"
#include "drivers/net/unmap_guard_policy.h"
#include "lib/ip/rss.h"

struct rte_mbuf;
struct rte_mempool;
struct rte_eth_dev_info;
struct rte_ring;

namespace ofi_dpdk::net {

class FaultInjector;
class KernelCarrier;

// How frames reach an endpoint's queue.
enum class Steering : uint8_t {
  kSoftware,  // all endpoints share queue pair 0; the stack demultiplexes
  kFlow,      // rte_flow rules per endpoint send its frames to its own queue
  kRss,       // the device spreads UDP over its queues by its RSS hash (rss())
  kSender,    // TX queue q arrives on RX queue q (a net_ring of its own): the
              // sender writes into its destination's queue
};
const char* steering_name(Steering steering);

// kRss is asked for alone (FI_DPDK_STEERING=rss), never chosen by kAuto: a
// device with both rules and RSS is better steered by rules.
enum class SteeringRequest : uint8_t { kAuto, kSoftware, kFlow, kRss };

struct PortConfig {
  uint16_t queues_wanted = 4;  // queue pairs to try for rte_flow steering
  uint16_t rx_descriptors = 512;
  uint16_t tx_descriptors = 512;
  uint32_t mbufs = 8191;  // pool size in default-sized mbufs; sized by the caller
  // The MTU frames should get (FI_DPDK_MTU): set on the device where it can
  // be, within its limits; 0 keeps the device's.
  uint16_t mtu = 9000;
  // How long a port that needs its peer to start (a net_memif client)
  // waits for it (FI_DPDK_CONNECT_TIMEOUT_MS).
  uint32_t connect_timeout_ms = 30000;
  uint16_t ether_type = 0x88B5;
  SteeringRequest steering = SteeringRequest::kAuto;
  // Whether the port's peers reach it in UDP/IPv4 or UDP/IPv6, to
  // `udp_port_base` + the endpoint's queue: steering rules of those kinds
  // are tried beside the EtherType's (steering_rule.h).
  bool udp4 = false;
  bool udp6 = false;
  uint16_t udp_port_base = 0;
  FaultConfig faults;
  // Whether a net_memif port's bursts hold back the driver's unmaps
  // (FI_DPDK_MEMIF_UNMAP_GUARD; unmap_guard_policy.h).
  UnmapGuardRequest memif_unmap_guard = UnmapGuardRequest::kAuto;
  // Whether the device computes and checks the IPv4 header and UDP
  // checksums where it offers to (FI_DPDK_OFFLOADS; ChecksumOffloads).
  bool checksum_offloads = true;
};

// What can be learned of a port without configuring it.
struct PortDescription {
  uint16_t port_id;
  std::string name;
  uint8_t mac[6];
  // The kernel interface the port shares with the kernel's own stack
  // (net_af_packet, net_af_xdp: the one it attaches to); "" for others.
  std::string kernel_interface;
  // net_af_xdp: the kernel may take the frames its XDP program passes.
  bool xdp = false;
  // A port a dpdk-fi-switch shares between processes (shared_port.h): its
  // switch passes our EtherType alone.
  bool shared = false;
};

// Every port EAL probed, in id order.
std::vector<uint16_t> available_ports();
// A port by decimal id or device name; nullopt when there is none.
std::optional<uint16_t> find_port(std::string_view id_or_name);
// Returns false when the port does not exist or has no MAC address.
bool describe_port(uint16_t port_id, PortDescription* out);

class Port {
 public:
  // Opens `port_id`: configures and starts it, unless the host program has
  // started it already, in which case its set-up is kept and queue pair 0 is
  // shared.  Returns 0, or a negative errno with the reason in *error.
  static int open(uint16_t port_id, const PortConfig& config, std::unique_ptr<Port>* out,
                  std::string* error);
  ~Port();
  Port(const Port&) = delete;
  Port& operator=(const Port&) = delete;

  uint16_t id() const { return port_id_; }
  const std::string& name() const { return name_; }
  const uint8_t* mac() const { return mac_; }
  uint16_t ether_type() const { return ether_type_; }
  Steering steering() const { return steering_; }
  // kRss: the device's key and redirection table, read after it started
  // (RSS over IPv4 and IPv6 UDP; usable()).
  const ip::RssConfig& rss() const { return rss_; }
  // The rule kinds (rule_bit) the device installs, in kFlow mode; 0 else.
  uint32_t rule_kinds() const { return rule_kinds_; }
  // Those installed for endpoint queue `endpoint_queue` (0: its frames
  // land wherever the device puts them).
  uint32_t endpoint_rule_kinds(uint16_t endpoint_queue) const;
  uint16_t queue_pairs() const { return queue_pairs_; }
  // Bytes of frame payload after our headers that one frame can carry.
  uint32_t max_frame_payload() const { return max_frame_payload_; }
  // Bytes after the Ethernet header one frame may have.
  uint16_t mtu() const { return mtu_; }
  // Frames per rx_burst and tx_burst call the provider aims at: few on
  // memory and NIC links, so the peer works on the first frames while the
  // rest are made (and acks leave between bursts); the most a pass takes
  // (32) where every burst costs a system call (kernel-backed devices).
  uint16_t burst_frames() const { return burst_frames_; }
  // Whether the device hands a frame for its own MAC back to its receive
  // queues: a net_ring vdev (--vdev=net_ring0), whose rings are its own.
  // Other devices, NICs and memif alike, do not.
  bool loops_back() const { return loops_back_; }
  // Whether a frame crosses only this process's memory or memory shared
  // with a peer process on this host (net_ring, net_memif; not a shared
  // port, whose switch may bring frames in from a wire): nothing between
  // the sender's write and our read can flip a bit, so the frame checksum
  // guards nothing there (doc/wire-protocol.md, "Integrity").
  bool memory_only() const { return memory_only_; }
  // Whether a frame may chain memory lent only for its transmit burst
  // (device_kind.h, copies_at_transmit, and the device took
  // RTE_ETH_TX_OFFLOAD_MULTI_SEGS; never on a shared port, whose switch
  // reads the frame later, in another process, nor on one a host program
  // set up).
  bool lends_at_transmit() const { return lends_at_transmit_; }
  // What the set-up decided, for the log.
  const std::string& description() const { return description_; }
  // For a net_memif port, whether its bursts hold back the driver's unmaps
  // (unmap_guard.h), and why or why not, for the log; empty for others.
  // A warning when the choice leaves the driver's race open.
  bool unmap_guarded() const { return guard_bursts_; }
  const std::string& unmap_guard_note() const { return unmap_guard_note_; }
  bool unmap_guard_note_warns() const { return unmap_guard_note_warns_; }
  // The endpoint queue ids this process may use on the port: all of them,
  // or on a shared port (shared_port.h) its slot's block.
  uint16_t endpoint_queue_first() const { return endpoint_queue_first_; }
  uint16_t endpoint_queue_count() const { return endpoint_queue_count_; }
  // Whether this is a shared port's slot (queue pair `shared_slot()`).
  bool shared() const { return shared_table_ != nullptr; }
  int shared_slot() const { return shared_slot_; }

  // The hardware queue pair that serves endpoint queue id `endpoint_queue`,
  // installing its rte_flow rules in kFlow mode.  A rule the device refuses
  // (or an endpoint queue beyond the device's queues) leaves those frames
  // to the software demultiplexer: every queue is polled.  What was refused
  // and why goes to *refused ("" when nothing was).
  uint16_t bind_endpoint_queue(uint16_t endpoint_queue, std::string* refused);
  void unbind_endpoint_queue(uint16_t endpoint_queue);

  // Lets multicast frames in (IPv6's neighbour solicitations go to a
  // group): a NIC filters them out otherwise.  Returns 0 or the device's
  // negative errno (a virtual device that passes everything may have no
  // such switch: -ENOTSUP).  Not on a shared port's slot.
  int accept_multicast();

  // Burst I/O: return how many frames were handled.  The caller serialises
  // calls per queue.
  uint16_t rx_burst(uint16_t queue, rte_mbuf** frames, uint16_t count);
  uint16_t tx_burst(uint16_t queue, rte_mbuf** frames, uint16_t count);
  // Returns nullptr when the pool is empty (the caller answers -FI_EAGAIN).
  rte_mbuf* alloc_frame();
  // The same, and a free, by whoever owns queue pair `queue` now: on a port
  // steered by sender each queue pair has a mempool cache of its own, so
  // threads on different queue pairs do not meet on the pool's ring for
  // every frame (threads the application made have no lcore cache).  Other
  // ports, and kNoQueue, use the pool as alloc_frame and free_frame do.
  static constexpr uint16_t kNoQueue = 0xFFFF;
  [[gnu::always_inline]] rte_mbuf* alloc_frame(uint16_t queue) {
    return queue < queue_caches_.size() ? net::alloc_frame(pool_, queue_caches_[queue])
                                        : alloc_frame();
  }
  void free_frame(rte_mbuf* frame, uint16_t queue) {
    if (queue < queue_caches_.size())
      net::free_frame(frame, pool_, queue_caches_[queue]);
    else
      net::free_frame(frame);
  }
  // Mbufs in the port's pool, and whether a received mbuf is one of them
  // (a shared port or net_ring hands over mbufs of the sender's pool).
  uint32_t pool_size() const;
  bool owns(const rte_mbuf* frame) const;
  // Whether the link is up, as the device last said (and, for a port on a
  // kernel interface, the kernel: kernel_carrier.h): pollers check it
  // before each burst, so it is a cached answer, read from the device again
  // once per kLinkRefreshMicros by whichever poller finds it due (a driver
  // call; a register read on a NIC; an ioctl).  A link that goes down or
  // comes back is seen within about that time.
  static constexpr uint32_t kLinkRefreshMicros = 1000;
  bool link_up() const;
  // The same for a poller that has just read its own clock (nanoseconds,
  // one clock shared by every caller of this form): a poll then reads the
  // clock once, not twice (a clock read costs 10-40 ns in a guest).
  bool link_up(uint64_t now_ns) const;
  // The cached answer alone, reading no clock: for a transmit between
  // polls, which keep it fresh.  It says down until the first read, so a
  // caller that may come before any poll asks link_up() when it says down
  // (PortContext::transmit does).
  bool link_up_cached() const { return link_up_.load(std::memory_order_relaxed); }
  // Asks the device now, and caches the answer.
  bool read_link() const;
  // How many times the cached answer changed (down, then up, ...): the
  // provider compares it with what it last saw.
  uint32_t link_changes() const { return link_changes_.load(std::memory_order_relaxed); }
  const ChecksumOffloads& checksum_offloads() const { return checksum_offloads_; }
  // Whether the link is a kernel interface's too (kernel_carrier.h).
  bool on_kernel_link() const { return carrier_ != nullptr; }
  // How many times the device was asked.
  uint64_t link_reads() const { return link_reads_.load(std::memory_order_relaxed); }
  // Pages of net_memif's shared memory this port wrote to when its link came
  // up (memif_warm.h); 0 on other devices.
  uint64_t memif_pages_warmed() const {
    return memif_pages_warmed_.load(std::memory_order_relaxed);
  }

  struct Counters {
    uint64_t rx_frames = 0;
    uint64_t tx_frames = 0;
  };
  // Summed over the queue pairs, each counted by whoever polls or writes
  // it (a lane of the provider, under its locks).
  Counters counters() const;
  FaultStats fault_stats() const;

 private:
  Port() = default;
  struct QueueRule;
  // Configures the device and its queues; start() starts it.  Both stopped
  // and unstarted devices may be configured again.
  int configure(uint16_t queue_pairs, std::string* error, bool rss = false);
  // kRss after start: reads the key and table into rss_, or says why not.
  bool read_rss(std::string* error);
  int start(std::string* error);
  // The rule kinds this port's frames come in (config_).
  uint32_t wanted_rule_kinds() const;
  // Of `kinds`, those whose rule for endpoint queue 1 validates (or, with
  // `create`, is created and removed again); the refusals and their
  // reasons are added to *refused.
  uint32_t rule_kinds_taken(uint32_t kinds, bool create, std::string* refused);
  // Port::open for a shared port: claims a slot instead of configuring.
  static int open_shared(std::unique_ptr<Port> port, SharedPortTable* table,
                         const rte_eth_dev_info& info, const PortConfig& config,
                         std::unique_ptr<Port>* out, std::string* error);
  SteeringRule::Match rule_match(RuleKind kind, uint16_t endpoint_queue) const;

  uint16_t port_id_ = 0;
  std::string name_;
  uint8_t mac_[6] = {};
  uint16_t ether_type_ = 0;
  PortConfig config_;
  Steering steering_ = Steering::kSoftware;
  uint16_t queue_pairs_ = 1;
  uint32_t max_frame_payload_ = 0;
  uint16_t mtu_ = 0;
  uint16_t aimed_mtu_ = 0;
  // net_af_packet's: its interface's within its ring's frames (0: another
  // driver), what configure() settles on.
  uint16_t ring_mtu_ = 0;
  bool loops_back_ = false;
  bool memory_only_ = false;        // what configure() sets the device to (0: leave it)
  bool may_lend_ = false;           // the driver copies at transmit (device_kind.h)
  bool lends_at_transmit_ = false;  // and configure() asked it for chained frames
  uint16_t burst_frames_ = 8;
  bool started_by_us_ = false;
  // net_af_xdp: left set up when we let it go, for the process's next
  // domain (KeptXdpDevice in port.cc).
  bool keep_on_release_ = false;
  // Bursts are counted for unmap_guard.h (net_memif, when its imports could
  // be redirected).
  bool guard_bursts_ = false;
  // A net_memif port warms its peer's shared memory at each link-up; only
  // when its bursts are guarded, since the driver may unmap it meanwhile.
  bool warm_on_link_up_ = false;
  mutable std::atomic<uint64_t> memif_pages_warmed_{0};
  std::string unmap_guard_note_;
  bool unmap_guard_note_warns_ = false;
  std::string description_;
  rte_mempool* pool_ = nullptr;
  std::vector<rte_mempool_cache*> queue_caches_;  // steered by sender only
  std::unique_ptr<FaultInjector> faults_;
  uint32_t rule_kinds_ = 0;
  ip::RssConfig rss_;
  rte_flow* endpoint_rules_[64][kRuleKinds] = {};  // kFlow: endpoint queue i's rules
  // Device queue of our queue pair 0 (a shared port's slot; else 0).
  uint16_t queue_base_ = 0;
  uint16_t endpoint_queue_first_ = 0;
  uint16_t endpoint_queue_count_ = 0xFFFF;
  SharedPortTable* shared_table_ = nullptr;
  SharedPortLayout shared_layout_;  // the table's fixed fields as checked at open
  int shared_slot_ = -1;
  SlotLock shared_lock_;
  rte_ring* shared_rx_[kMaxSharedProcesses] = {};  // every slot's RX ring: we send into them
  uint32_t share_frames_ = 0;  // what a slot's RX ring may hold before we drop (ring_share)
  uint16_t send_shared(rte_mbuf** frames, uint16_t count);
  // A cache line per queue pair: two threads on two queues share none.
  struct alignas(64) QueueCounters {
    uint64_t rx_frames = 0;
    uint64_t tx_frames = 0;
  };
  std::vector<QueueCounters> counters_ = std::vector<QueueCounters>(1);
  // link_up()'s cache; several pollers may read and refresh it at once.
  mutable std::atomic<bool> link_up_{false};
  mutable std::atomic<uint64_t> link_read_due_{0};     // rte_get_timer_cycles()
  mutable std::atomic<uint64_t> link_read_due_ns_{0};  // link_up(now_ns)'s clock
  mutable std::atomic<uint64_t> link_reads_{0};
  mutable std::atomic<uint32_t> link_changes_{0};
  uint64_t link_refresh_cycles_ = 0;
  std::unique_ptr<KernelCarrier> carrier_;  // net_af_packet, net_af_xdp
  ChecksumOffloads checksum_offloads_;
};

}  // namespace ofi_dpdk::net
