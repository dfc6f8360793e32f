/*
 * fi_dpdk.h: the public C API of the dpdk libfabric provider (libdpdk-fi.so).
 *
 * Most programs need none of this: they set FI_PROVIDER=dpdk and pass EAL
 * arguments in FI_DPDK_EAL_ARGS.  A program that wants to hand its own
 * command line to DPDK, testpmd style, links libdpdk-fi.so and calls
 * fi_dpdk_eal_init() before its first fi_getinfo().
 */
#ifndef FI_DPDK_H
#define FI_DPDK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FI_DPDK_API __attribute__((visibility("default")))

/*
 * Initialises DPDK's EAL from a program's argv, DPDK style: EAL arguments
 * first, then "--", then the program's own.  argv[0] is the program name.
 *
 * Returns the number of arguments consumed (the program's own then start at
 * argv[ret]; argv itself is left untouched, unlike rte_eal_init), or a
 * negative fi_errno: -FI_EALREADY when EAL is already up (in this process,
 * by anyone), -FI_EINVAL for arguments EAL refused.  EAL can be initialised
 * once per process only, so a failure here is final.
 */
FI_DPDK_API int fi_dpdk_eal_init(int argc, char **argv);

/* Returns 1 when EAL is initialised in this process (by us or by the host
 * program), 0 otherwise. */
FI_DPDK_API int fi_dpdk_eal_ready(void);

/*
 * Provider-specific operations, reached without extra exported symbols:
 *   struct fi_dpdk_ops_stats *ops;
 *   fi_open_ops(&domain->fid, FI_DPDK_STATS_OPS_NAME, 0, (void **)&ops, NULL);
 */
#define FI_DPDK_STATS_OPS_NAME "dpdk_stats_v1"

struct fi_dpdk_ep_stats {
	uint64_t frames_sent;
	uint64_t frames_received;
	uint64_t messages_sent;
	uint64_t messages_received;
	uint64_t retransmitted;      /* frames sent again by the transport */
	uint64_t dropped_bad_frame;  /* rejected by the receive path's checks */
	uint64_t dropped_no_buffer;  /* unexpected-message buffer was full */
};

struct fi_dpdk_port_stats {
	uint64_t rx_frames;
	uint64_t tx_frames;
	uint64_t fault_dropped;      /* by the fault injector */
	uint64_t fault_duplicated;
	uint64_t fault_reordered;
	uint64_t fault_corrupted;
	uint64_t fault_delayed;
	uint64_t rx_not_ours;        /* wrong EtherType or unknown queue */
	uint32_t steering;           /* 0: software demultiplexer, 1: rte_flow, 2: RSS,
	                                3: by sender (a net_ring whose TX queue loops back
	                                to its RX queue: a lane per queue pair) */
	uint32_t queues;             /* hardware queue pairs in use */
};

/* Timer events of an endpoint's transport: each is a wait an operation sat
 * behind.  A loss-free link with a peer that keeps answering needs none. */
struct fi_dpdk_ep_waits {
	uint64_t retransmit_timeouts; /* RTOs with the peer's window open */
	uint64_t tail_loss_probes;    /* oldest segment resent after two quiet RTTs */
	uint64_t window_probes;       /* a peer's closed window probed */
	uint64_t delayed_acks;        /* acks sent when the ack delay ran out */
	uint64_t delivery_probes;     /* liveness probes while sends await a receive */
};

/* How the threads reading a port's CQs and counters waited
 * (FI_DPDK_IDLE_YIELD_US). */
struct fi_dpdk_port_polls {
	uint64_t idle_yields; /* empty reads that gave up the CPU (sched_yield) */
	uint64_t cq_passes;   /* progress passes fi_cq_read and readfrom ran */
	/* Reads of an empty CQ that took the pass another CQ's read had just
	 * run as their own, instead of running one (one per such pass). */
	uint64_t cq_shared_passes;
	uint64_t reserved[1]; /* 0; room for more without a new call */
};

/* Where an endpoint's frames arrive.  With rte_flow steering (port_stats'
 * steering 1) the port installed for the endpoint a rule of each kind in
 * `rules`, sending its frames to hardware queue `hw_queue`; frames of a
 * kind with no rule (all of them when `rules` is 0: software steering, a
 * queue beyond the device's, or rules the device refused) land where the
 * device puts them and are found in software. */
#define FI_DPDK_RULE_ETHERTYPE (1u << 0) /* our EtherType, by dst_queue */
#define FI_DPDK_RULE_UDP4      (1u << 1) /* UDP/IPv4 to port_base + queue */
#define FI_DPDK_RULE_UDP6      (1u << 2) /* UDP/IPv6 to port_base + queue */
struct fi_dpdk_ep_steering {
	uint32_t queue;                 /* the endpoint's queue id at the port */
	uint32_t hw_queue;              /* the device queue pair serving it */
	uint32_t rules;                 /* FI_DPDK_RULE_* the port installs */
	uint32_t lane;                  /* the lane whose lock its calls take (the
	                                 * first queue pair of the lane), 0xffff:
	                                 * the whole port's (one lane) */
	uint64_t frames_on_own_queue;   /* its frames read from hw_queue */
	uint64_t frames_on_other_queue; /* its frames read from another queue */
	uint32_t progress_loop;         /* FI_PROGRESS_AUTO: the loop (1, 2, ...;
	                                 * FI_DPDK_PROGRESS_LCORES) whose own pass
	                                 * last went over its lane; 0: none yet */
	uint32_t reserved0;
	uint64_t reserved[1];
};

/* How a port checks the frames it takes (doc/wire-protocol.md,
 * "Integrity"), and what the checks refused. */
#define FI_DPDK_CHECK_CRC   1u /* frames carry a CRC-32C, checked here */
#define FI_DPDK_CHECK_KEYED 2u /* frames carry the job key's tag (FI_DPDK_AUTH_KEY) */
struct fi_dpdk_port_checks {
	uint32_t checks;        /* FI_DPDK_CHECK_*; 0: taken unchecked (a memory port) */
	uint32_t reserved0;
	uint64_t rx_bad_frames; /* malformed, or a wrong CRC */
	uint64_t rx_unsealed;   /* without a CRC while we check one */
	uint64_t rx_bad_tags;   /* a wrong keyed tag */
	uint64_t rx_key_mismatch; /* keyed where we have no key, or not where we have */
	uint64_t reserved[3];
};

/* The round trips an endpoint's transport measured: one sample per
 * acknowledgement of a segment sent once, from its sending to the ack
 * (so the peer's ack delay counts in).  Percentiles are told within an
 * eighth of themselves; 0 with no samples. */
struct fi_dpdk_ep_rtt {
	uint64_t samples;
	uint64_t p50_ns;
	uint64_t p90_ns;
	uint64_t p99_ns;
	uint64_t max_ns;
	uint64_t reserved[3];
};

struct fi_dpdk_ops_stats {
	size_t size; /* sizeof(struct fi_dpdk_ops_stats) of the provider */
	/* ep is a struct fid_ep *; returns 0 or -FI_EINVAL */
	int (*ep_stats)(void *ep, struct fi_dpdk_ep_stats *out);
	/* domain is a struct fid_domain *; returns 0 or -FI_EINVAL */
	int (*port_stats)(void *domain, struct fi_dpdk_port_stats *out);
	/* Present when size reaches past it (older providers end before);
	 * ep as for ep_stats. */
	int (*ep_waits)(void *ep, struct fi_dpdk_ep_waits *out);
	/* Present when size reaches past it; domain as for port_stats. */
	int (*port_polls)(void *domain, struct fi_dpdk_port_polls *out);
	/* Present when size reaches past it; ep as for ep_stats. */
	int (*ep_steering)(void *ep, struct fi_dpdk_ep_steering *out);
	/* Present when size reaches past it; domain as for port_stats. */
	int (*port_checks)(void *domain, struct fi_dpdk_port_checks *out);
	/* Present when size reaches past it; ep as for ep_stats. */
	int (*ep_rtt)(void *ep, struct fi_dpdk_ep_rtt *out);
};

#ifdef __cplusplus
}
#endif

#endif /* FI_DPDK_H */
