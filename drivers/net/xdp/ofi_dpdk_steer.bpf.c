// ofi_dpdk_steer.bpf.c: the XDP program an af_xdp port loads (net_af_xdp's
// xdp_prog=) so that the kernel keeps its own traffic on the interface.
//
// net_af_xdp's default program hands every frame of the queue to the AF_XDP
// socket: the kernel then sees no TCP, no ssh and no ARP on that interface.
// This one hands the socket only what the provider reads (frames of its
// EtherType, and UDP over IPv4 or IPv6 to its ports: FI_DPDK_PORT_BASE and
// the 64 after it) and passes everything else to the kernel, ARP and
// neighbour discovery included; the provider reads copies of those from an
// AF_PACKET socket (drivers/ofi/dpdk_neighbours.cc).
//
// The EtherType and the ports come from the map ofi_dpdk_config, which the
// provider fills when the port opens; until then (and for any 0), the
// defaults.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

// The provider's EtherType and default UDP ports (lib/proto/wire.h,
// drivers/ofi/dpdk_params.h).
#define OFI_DPDK_ETHER_TYPE 0x88B5
#define OFI_DPDK_PORT_BASE 9228
#define OFI_DPDK_PORT_COUNT 64

struct {
  __uint(type, BPF_MAP_TYPE_XSKMAP);
  __uint(max_entries, 64);
  __type(key, __u32);
  __type(value, __u32);
} xsks_map SEC(".maps");

// (The provider's struct XdpSteerConfig, drivers/net/xdp_steer.h.)
struct config {
  __u16 ether_type;  // host order; 0: OFI_DPDK_ETHER_TYPE
  __u16 port_base;   // 0: OFI_DPDK_PORT_BASE
  __u16 port_count;  // 0: OFI_DPDK_PORT_COUNT
  __u16 unused;
};

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct config);
} ofi_dpdk_config SEC(".maps");

// The queues of the range whose UDP another process of this host reads,
// over af_packet on the same interface: it sets its queues' entries while
// it holds them (xdp_steer.h, pass_to_kernel), and their frames go to the
// kernel, where its socket sees them.  Each queue is one process's at a
// time (their kernel sockets see to it): no entry has two writers.
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, OFI_DPDK_PORT_COUNT);
  __type(key, __u32);
  __type(value, __u32);
} ofi_dpdk_passed SEC(".maps");

static __always_inline int ours(const struct config* config, __u16 port_be) {
  __u16 base = config && config->port_base ? config->port_base : OFI_DPDK_PORT_BASE;
  __u16 count = config && config->port_count ? config->port_count : OFI_DPDK_PORT_COUNT;
  __u16 port = bpf_ntohs(port_be);
  if (port < base || port - base >= count) return 0;
  __u32 queue = port - base;
  const __u32* passed = bpf_map_lookup_elem(&ofi_dpdk_passed, &queue);
  return !(passed && *passed);
}

SEC("xdp")
int ofi_dpdk_steer(struct xdp_md* ctx) {
  void* data = (void*)(long)ctx->data;
  void* end = (void*)(long)ctx->data_end;
  struct ethhdr* eth = data;
  if ((void*)(eth + 1) > end) return XDP_PASS;
  __u32 key = 0;
  const struct config* config = bpf_map_lookup_elem(&ofi_dpdk_config, &key);
  __u16 ether_type = config && config->ether_type ? config->ether_type : OFI_DPDK_ETHER_TYPE;
  int to_socket = 0;
  if (eth->h_proto == bpf_htons(ether_type)) {
    to_socket = 1;
  } else if (eth->h_proto == bpf_htons(ETH_P_IP)) {
    struct iphdr* ip = (void*)(eth + 1);
    if ((void*)(ip + 1) > end || ip->protocol != IPPROTO_UDP || ip->ihl < 5) return XDP_PASS;
    // A fragment past the first has no UDP header: the kernel's.
    if (ip->frag_off & bpf_htons(0x1FFF)) return XDP_PASS;
    struct udphdr* udp = (void*)ip + ip->ihl * 4;
    if ((void*)(udp + 1) > end) return XDP_PASS;
    to_socket = ours(config, udp->dest);
  } else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
    struct ipv6hdr* ip6 = (void*)(eth + 1);
    if ((void*)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_UDP) return XDP_PASS;
    struct udphdr* udp = (void*)(ip6 + 1);
    if ((void*)(udp + 1) > end) return XDP_PASS;
    to_socket = ours(config, udp->dest);
  }
  if (!to_socket) return XDP_PASS;
  return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
