# shellcheck shell=bash
# dgram_by_ip.sh: sourced by the router tests after router_common.sh.
#   dgram_by_ip CLIENT_ADDRESS
# FI_EP_DGRAM across the router, the client naming the server by its IP
# address (SERVER_ADDRESS) alone, in-band ($bin: fabtests' programs):
#   - fi_dgram: passes;
#   - fi_dgram_pingpong, each side given its own address (-s: its
#     out-of-band sync over TCP, always on for DGRAM, listens on the
#     server's, which in IPv6 the wildcard default would not): passes;
#   - fi_dgram_pingpong, the client without -s: fabtests 2.x's passes.
#     Fabtests 1.17's client then asks fi_getinfo for its own address
#     alone (FI_SOURCE) and inserts the answer's dest_addr, which is NULL:
#     fi_av_insert refuses it (-FI_EINVAL), as it must, and says why in the
#     client's log.  (libfabric's own udp provider crashes on that call.)
dgram_by_ip() {
	local own=$1
	pair ft_dgram 60 "$bin/fi_dgram" -p dpdk
	PAIR_SERVER_ARGS=(-s "$SERVER_ADDRESS")
	PAIR_CLIENT_ARGS=(-s "$own")
	pair ft_dgram_pingpong_s 60 "$bin/fi_dgram_pingpong" -p dpdk -S 64 -I 200
	PAIR_CLIENT_ARGS=()
	if [[ "$bin" == */fabtests-1.* ]]; then
		FI_LOG_LEVEL=info FI_LOG_PROV=dpdk FI_LOG_SUBSYS=av pair_client_refused \
			ft_dgram_pingpong 60 "fi_av_insert: addr is NULL" "$bin/fi_dgram_pingpong" -p dpdk \
			-S 64 -I 200
	else
		pair ft_dgram_pingpong 60 "$bin/fi_dgram_pingpong" -p dpdk -S 64 -I 200
	fi
	PAIR_SERVER_ARGS=()
}
