# dpdk-fi-engine-dump.py: prints the transport state of a live process's
# endpoints (every port the provider's safety net watches, each endpoint's
# engine, each connection) from gdb, for a rank that seems stuck.
#
#   gdb -batch -ex "set sysroot /proc/PID/root" -ex "file /proc/PID/exe" \
#       -ex "attach PID" -ex "source usertools/dpdk-fi-engine-dump.py"
#
# (The sysroot and file lines let a host gdb read a process of the Debian 13
# leg's chroot.)  The process stops while gdb reads it: its peers see a
# pause.  Needs the provider built with debug information (meson's default
# debugoptimized) and libstdc++'s gdb printers (/usr/share/gcc/python).
# Per connection: transmit half (next_seq, una, pending messages, window,
# RTO deadline, last heard), receive half (next expected, held segments,
# message or request being assembled, deferred requests, ordered
# completions) and the answers it waits for; per endpoint the engine's
# budgets and non-zero counters; per port the device's counters
# (rte_eth_stats_get, called in the process).
import sys

import gdb

sys.path.insert(0, "/usr/share/gcc/python")
try:
    from libstdcxx.v6.printers import register_libstdcxx_printers
    register_libstdcxx_printers(None)
except ImportError as error:
    print("no libstdc++ printers (%s): containers cannot be walked" % error)


def children(value):
    visualizer = gdb.default_visualizer(value)
    return [child for _, child in visualizer.children()] if visualizer else []


def pointee(unique_ptr):
    for child in children(unique_ptr):
        return child
    return unique_ptr["_M_t"]["_M_t"]["_M_head_impl"]


def count(container):
    return len(children(container))


def connection_lines(c):
    fields = ("queue tx_state next_seq una pending_cut peer_window cwnd_x256 rto_ns "
              "rto_deadline_ns last_heard_ns rx_open next_expected rx_stalled rx_buffered "
              "requests_deferred deferred_done responses_pending response_bytes ack_owed "
              "ack_now pulls_out requests_unanswered receiver_waits").split()
    line = "  connection %#x " % int(c["key"]) + " ".join("%s=%s" % (f, c[f]) for f in fields)
    line += " pending=%d deferred=%d owed_notices=%d recv_order=%d awaiting_response=%d " \
            "awaiting_delivery=%d" % (count(c["pending"]), count(c["deferred_requests"]),
                                      count(c["owed_notices"]), count(c["recv_order"]),
                                      count(c["awaiting_response"]), count(c["awaiting_delivery"]))
    lines = [line]
    if int(c["inbound"]) != 0:
        m = c["inbound"].dereference()
        lines.append("    assembling message msg_id=%s length=%s received=%s to_user=%s" %
                     (m["msg_id"], m["length"], m["received"], m["to_user"]))
    if int(c["remote"]) != 0:
        r = c["remote"].dereference()
        lines.append("    assembling %s msg_id=%s length=%s received=%s" %
                     ("response" if r["is_response"] else "request", r["msg_id"], r["length"],
                      r["received"]))
    for o in children(c["recv_order"]):
        lines.append("    ordered completion pull_id=%s ready=%s barrier=%s requests_before=%s" %
                     (o["pull_id"], o["ready"], o["barrier"], o["requests_before"]))
    for message in children(c["pending"])[:8]:
        m = pointee(message).dereference()
        lines.append("    pending msg_id=%s length=%s cut=%s unacked=%s response=%s rendezvous=%s" %
                     (m["msg_id"], m["length"], m["next_offset"], m["segments_unacked"],
                      m["response"], m["rendezvous"]))
    return lines


def dump_engine(e):
    fields = ("queue_ session_ unexpected_bytes_ deferred_requests_ owed_notices_ "
              "response_bytes_ stalled_count_ outstanding_sends_ polls_ clock_ns_").split()
    print(" engine " + " ".join("%s=%s" % (f.rstrip("_"), e[f]) for f in fields) +
          " unexpected=%d posted=%s outbox=%d" % (count(e["unexpected_"]),
                                                  e["posted_"].dereference()["count"],
                                                  count(e["outbox_"])))
    pairs = children(e["connections_"])  # key, value, key, value...
    for value in pairs[1::2]:
        for line in connection_lines(pointee(value).dereference()):
            print(line)
    stats = e["stats_"]
    print("  counters " + " ".join("%s=%s" % (f.name, stats[f.name])
                                   for f in stats.type.fields() if int(stats[f.name]) != 0))


def device_counters(port_id):
    # struct rte_eth_stats begins with eight uint64_t (DPDK 22.11 and 24.11).
    names = "ipackets opackets ibytes obytes imissed ierrors oerrors rx_nombuf".split()
    buffer = gdb.parse_and_eval("(unsigned long *) malloc(1024)")
    status = gdb.parse_and_eval("(int) rte_eth_stats_get(%d, (void *) %d)" % (port_id, int(buffer)))
    return "status=%s " % status + " ".join("%s=%s" % (n, buffer[i]) for i, n in enumerate(names))


net_type = gdb.lookup_type("ofi_dpdk::ofi::(anonymous namespace)::ProgressNet")
net = gdb.parse_and_eval(
    "&'ofi_dpdk::ofi::(anonymous namespace)::ProgressNet::instance()::net'"
).cast(net_type.pointer()).dereference()
for port_pointer in children(net["ports_"]):
    port = port_pointer.dereference()
    print("port rx_not_ours=%s rx_bad_frames=%s rx_no_endpoint=%s no_memory=%s kept_frames=%s" %
          (port["rx_not_ours"], port["rx_bad_frames"], port["rx_no_endpoint"], port["no_memory"],
           port["kept_frames"]))
    try:
        port_id = int(pointee(port["port"]).dereference()["port_id_"])
        print("  device " + device_counters(port_id))
    except gdb.error as error:
        print("  device counters unavailable: %s" % error)
    for queue in range(int(port["endpoint_end"])):
        endpoint = port["endpoints"]["_M_elems"][queue]
        if int(endpoint) == 0:
            continue
        print("endpoint queue %d" % queue)
        dump_engine(pointee(endpoint.dereference()["engine"]).dereference())
