/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Reproducer for the net/memif disconnect race (see README.md beside this
 * file): EAL's interrupt thread unmaps a connection's rings while a
 * worker lcore is inside a burst on them.
 *
 * One process, PAIRS server/client pairs of memif vdevs, each pair on a
 * socket of its own. For each pair: the server fills the client's
 * receive ring, a worker lcore drains the client with rte_eth_rx_burst
 * and rte_eth_tx_burst, and the main lcore stops the server, which makes
 * the client's interrupt thread tear the connection down.
 *
 * Build: cc -O2 memif_disconnect_race.c $(pkg-config --cflags --libs libdpdk)
 * Run:   ./a.out -l 0-1 --no-huge -m 512 --no-pci
 *        (the program adds its vdevs; with shared DPDK libraries add
 *        -d librte_net_memif.so if the driver is not loaded by default)
 * Exit:  0 when no burst faulted, 1 when one did (SIGSEGV or SIGBUS on
 *        the worker, inside a burst), 2 when the set-up failed.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>

#define PAIRS 12
#define RING_LOG2 12
#define FRAME_BYTES 2000
#define BURST 32

static struct rte_mempool *pool;
static uint16_t servers[PAIRS], clients[PAIRS];
/* The client the worker drains; RTE_MAX_ETHPORTS: none; UINT16_MAX: stop. */
static volatile uint16_t polled = RTE_MAX_ETHPORTS;
static volatile uint64_t bursts;
static volatile sig_atomic_t in_burst;

static void
fault(int sig)
{
	static const char said[] = "a worker faulted inside a memif burst\n";

	if (in_burst) {
		ssize_t written = write(STDERR_FILENO, said, sizeof(said) - 1);

		RTE_SET_USED(written);
		_exit(1);
	}
	signal(sig, SIG_DFL);
}

static int
drain(void *arg __rte_unused)
{
	struct rte_mbuf *frames[BURST];
	uint16_t port, n, made, i;

	while ((port = polled) != UINT16_MAX) {
		if (port == RTE_MAX_ETHPORTS)
			continue;
		in_burst = 1;
		n = rte_eth_rx_burst(port, 0, frames, BURST);
		in_burst = 0;
		rte_pktmbuf_free_bulk(frames, n);
		for (made = 0; made < 8; made++) {
			frames[made] = rte_pktmbuf_alloc(pool);
			if (frames[made] == NULL)
				break;
			rte_pktmbuf_append(frames[made], 1024);
		}
		in_burst = 1;
		n = rte_eth_tx_burst(port, 0, frames, made);
		in_burst = 0;
		for (i = n; i < made; i++)
			rte_pktmbuf_free(frames[i]);
		bursts += 2;
	}
	return 0;
}

static int
link_is(uint16_t port, int up)
{
	struct rte_eth_link link;
	uint64_t end = rte_get_timer_cycles() + 10 * rte_get_timer_hz();

	do {
		if (rte_eth_link_get_nowait(port, &link) == 0 && link.link_status == up)
			return 1;
		rte_delay_ms(1);
	} while (rte_get_timer_cycles() < end);
	return 0;
}

static int
setup(uint16_t port)
{
	struct rte_eth_conf conf;

	memset(&conf, 0, sizeof(conf));
	return rte_eth_dev_configure(port, 1, 1, &conf) != 0 ||
		rte_eth_rx_queue_setup(port, 0, 1024, 0, NULL, pool) != 0 ||
		rte_eth_tx_queue_setup(port, 0, 1024, 0, NULL) != 0 ||
		rte_eth_dev_start(port) != 0;
}

int
main(int argc, char **argv)
{
	char *args[64], vdevs[2 * PAIRS][160], name[32];
	struct rte_mbuf *frames[BURST];
	unsigned int worker;
	int nargs = 0, i, pair, full;
	uint16_t made, sent;
	uint64_t seen;

	for (i = 0; i < argc && nargs < 64 - 2 * PAIRS; i++)
		args[nargs++] = argv[i];
	for (pair = 0; pair < PAIRS; pair++)
		for (i = 0; i < 2; i++) {
			snprintf(vdevs[2 * pair + i], sizeof(vdevs[0]),
				"--vdev=net_memif%d,role=%s,id=0,rsize=%d,"
				"socket=/tmp/memif-race-%d-%d.sock",
				2 * pair + i, i == 0 ? "server" : "client",
				RING_LOG2, (int)getpid(), pair);
			args[nargs++] = vdevs[2 * pair + i];
		}
	if (rte_eal_init(nargs, args) < 0) {
		fprintf(stderr, "rte_eal_init failed\n");
		return 2;
	}
	worker = rte_get_next_lcore(-1, 1, 0);
	if (worker >= RTE_MAX_LCORE) {
		fprintf(stderr, "needs a worker lcore (-l 0-1)\n");
		return 2;
	}
	pool = rte_pktmbuf_pool_create("race", 8 * 4096, 256, 0, 2176,
				       rte_socket_id());
	if (pool == NULL)
		return 2;
	for (pair = 0; pair < PAIRS; pair++) {
		snprintf(name, sizeof(name), "net_memif%d", 2 * pair);
		if (rte_eth_dev_get_port_by_name(name, &servers[pair]) != 0 ||
		    setup(servers[pair]) != 0)
			return 2;
		snprintf(name, sizeof(name), "net_memif%d", 2 * pair + 1);
		if (rte_eth_dev_get_port_by_name(name, &clients[pair]) != 0 ||
		    setup(clients[pair]) != 0)
			return 2;
	}
	signal(SIGSEGV, fault);
	signal(SIGBUS, fault);
	rte_eal_remote_launch(drain, NULL, worker);
	for (pair = 0; pair < PAIRS; pair++) {
		if (!link_is(clients[pair], RTE_ETH_LINK_UP))
			return 2;
		/* Fill the client's receive ring with large frames. */
		for (full = 0; !full;) {
			for (made = 0; made < BURST; made++) {
				frames[made] = rte_pktmbuf_alloc(pool);
				if (frames[made] == NULL)
					break;
				rte_pktmbuf_append(frames[made], FRAME_BYTES);
			}
			sent = rte_eth_tx_burst(servers[pair], 0, frames, made);
			rte_pktmbuf_free_bulk(frames + sent, made - sent);
			full = made == 0 || sent < made;
		}
		seen = bursts;
		polled = clients[pair];
		while (bursts < seen + 4)
			;
		/* The server goes: the client's interrupt thread disconnects. */
		rte_eth_dev_stop(servers[pair]);
		if (!link_is(clients[pair], RTE_ETH_LINK_DOWN))
			return 2;
		seen = bursts;
		while (bursts < seen + 200)
			;
		polled = RTE_MAX_ETHPORTS;
	}
	polled = UINT16_MAX;
	rte_eal_mp_wait_lcore();
	for (pair = 0; pair < PAIRS; pair++) {
		snprintf(name, sizeof(name), "/tmp/memif-race-%d-%d.sock",
			 (int)getpid(), pair);
		unlink(name);
	}
	printf("no fault in %d disconnections\n", PAIRS);
	return 0;
}
