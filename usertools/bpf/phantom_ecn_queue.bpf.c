// phantom_ecn_queue.bpf.c: the marking queue of dpdk-fi-bottleneck.py's
// --queue phantom-ecn, for kernels without a qdisc that marks ECN (no
// sch_red, sch_fq_codel, sch_pie here).
//
// A tc program on the egress of the router's link toward the receiver,
// ahead of the token bucket that shapes it.  It keeps a phantom queue
// beside the real one (as HULL's, Alizadeh et al., NSDI 2012): a byte
// counter drained at PHANTOM_BYTES_PER_SECOND (a little below the link's
// rate), to which every packet adds its length.  An ECN-capable packet
// that finds more than MARK_AT_BYTES on it leaves marked CE, as a switch
// port that marks at a threshold marks it (DCTCP's step).  Marked packets
// count too: while the arrivals outrun the phantom link, its queue grows
// and every packet is marked, whatever the real queue holds.
//
// The script compiles it with the two numbers (-D) and attaches it with tc
// (clsact, egress, direct action).  It never drops: the token bucket's
// buffer does.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#ifndef PHANTOM_BYTES_PER_SECOND
#error "compile with -DPHANTOM_BYTES_PER_SECOND=N"
#endif
#ifndef MARK_AT_BYTES
#error "compile with -DMARK_AT_BYTES=N"
#endif

// A silence longer than this drains the phantom queue whatever its size
// (and keeps the product below in 64 bits).
#define LONGEST_DRAIN_NS 1000000000ULL
// The phantom queue never holds more than this: a burst after a long
// overload is marked for as long as the real queue could take it, not
// longer.
#define LARGEST_BACKLOG (64 * MARK_AT_BYTES)

struct phantom_queue {
  struct bpf_spin_lock lock;
  __u64 backlog_bytes;
  __u64 drained_at_ns;
};

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct phantom_queue);
} phantom SEC(".maps");

// Whether the packet finds the phantom queue past the threshold; it joins
// the queue either way.
static __always_inline int finds_queue(__u64 length) {
  __u32 key = 0;
  struct phantom_queue* queue = bpf_map_lookup_elem(&phantom, &key);
  if (!queue) return 0;
  const __u64 now = bpf_ktime_get_ns();
  bpf_spin_lock(&queue->lock);
  __u64 elapsed = now - queue->drained_at_ns;
  if (elapsed > LONGEST_DRAIN_NS) elapsed = LONGEST_DRAIN_NS;
  const __u64 drained = elapsed * PHANTOM_BYTES_PER_SECOND / 1000000000ULL;
  queue->backlog_bytes = queue->backlog_bytes > drained ? queue->backlog_bytes - drained : 0;
  queue->drained_at_ns = now;
  const int over = queue->backlog_bytes > MARK_AT_BYTES;
  queue->backlog_bytes += length;
  if (queue->backlog_bytes > LARGEST_BACKLOG) queue->backlog_bytes = LARGEST_BACKLOG;
  bpf_spin_unlock(&queue->lock);
  return over;
}

SEC("tc")
int phantom_ecn_queue(struct __sk_buff* skb) {
  const int over = finds_queue(skb->len);
  if (!over) return TC_ACT_OK;
  if (skb->protocol == bpf_htons(ETH_P_IP)) {
    // The ECN field is the low two bits of the TOS byte; the header's
    // checksum covers it with the version byte, as one 16-bit word.
    __u8 first[2];
    if (bpf_skb_load_bytes(skb, ETH_HLEN, first, 2) < 0) return TC_ACT_OK;
    const __u8 ecn = first[1] & 3;
    if (ecn == 0 || ecn == 3) return TC_ACT_OK;  // not ECN-capable, or marked already
    __u8 marked[2] = {first[0], (__u8)(first[1] | 3)};
    __u16 before, after;
    __builtin_memcpy(&before, first, 2);
    __builtin_memcpy(&after, marked, 2);
    bpf_l3_csum_replace(skb, ETH_HLEN + 10, before, after, 2);
    bpf_skb_store_bytes(skb, ETH_HLEN + 1, &marked[1], 1, 0);
  } else if (skb->protocol == bpf_htons(ETH_P_IPV6)) {
    // The traffic class spans the first two bytes; its low two bits (the
    // ECN field) are bits 5 and 4 of the second.  No header checksum.
    __u8 second;
    if (bpf_skb_load_bytes(skb, ETH_HLEN + 1, &second, 1) < 0) return TC_ACT_OK;
    const __u8 ecn = (second >> 4) & 3;
    if (ecn == 0 || ecn == 3) return TC_ACT_OK;
    second |= 0x30;
    bpf_skb_store_bytes(skb, ETH_HLEN + 1, &second, 1, 0);
  }
  return TC_ACT_OK;
}

char LICENSE[] SEC("license") = "GPL";
