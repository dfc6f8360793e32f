#!/usr/bin/env python3
"""Reads our frames out of packet captures (tcpdump -w, pcap format).

Usage: usertools/dpdk-fi-pcap.py [--ethertype 0x88B5] [--port-base 9228]
                                 [--silences SECONDS] CAPTURE.pcap...

tcpdump knows neither our EtherType nor our header, so a capture on a
bridge port, a veth or a router's link shows only bytes. This prints one
line per frame of ours, on our EtherType or in UDP/IPv4 to port_base + 0..63
(doc/wire-protocol.md, "The frame"), ordered by time across all files:

  TIME SOURCE > DESTINATION OPCODE flags=.. conn=.. seq=.. ack=../ack_conn
  msg=.. len=.. off=.. payload=.. window=..

where an endpoint is MAC/queue (our EtherType) or address:queue (UDP).

--silences S: instead, for each pair of endpoints, the stretches of at
least S seconds in which one side kept sending (three frames or more, say
retransmissions) and the other sent nothing back. Each is printed with the
transmissions in it and how many of them a second capture saw too: with a
capture on the sender's bridge port and one on the receiver's, those are
the ones the bridge carried; the rest were lost between.

Capture every port of a bridge while a job runs, e.g.
  for p in $(ip -o link show master BRIDGE | awk -F': ' '{print $2}' | sed 's/@.*//'); do
    tcpdump -Z root -i "$p" -s 160 -B 16384 -w "/var/tmp/$p.pcap" & done
(a snap length of 192 keeps our whole 104-byte header, in UDP/IPv6 too). Capture
the far end of a veth, not the one a process runs net_af_packet on: the
PMD bypasses the qdisc, so taps on its own interface never see what it
sends.
"""

import argparse
import bisect
import collections
import struct
import sys

OPCODES = {1: "MSG", 2: "TAGGED", 3: "ACK", 4: "RESET", 5: "REQUEST", 6: "RESPONSE",
           7: "HELLO", 8: "HELLO_ACK", 9: "BUNDLE", 10: "DATAGRAM"}
HEADER_BYTES_READ = 84    # of wire::FrameHeader's 104: every field printed lies in them
ENDPOINTS_PER_PORT = 64   # kMaxEndpointsPerPort: UDP ports port_base + 0..63


class Frame:
    __slots__ = ("time", "source", "destination", "opcode", "flags", "conn", "seq", "ack",
                 "ack_conn", "msg_id", "msg_len", "offset", "payload_len", "window", "capture")

    def key(self):
        """What makes two captures of one frame the same frame."""
        return (self.source, self.destination, self.opcode, self.flags, self.conn, self.seq,
                self.ack, self.msg_id, self.offset)

    def __str__(self):
        return (f"{self.time:.6f} {self.source} > {self.destination} "
                f"{OPCODES.get(self.opcode, self.opcode)} flags={self.flags:#06x} "
                f"conn={self.conn} seq={self.seq} ack={self.ack}/{self.ack_conn} "
                f"msg={self.msg_id} len={self.msg_len} off={self.offset} "
                f"payload={self.payload_len} window={self.window}")


def records(path):
    """(time, bytes) of each record of a pcap file (either byte order, us or ns)."""
    with open(path, "rb") as f:
        head = f.read(24)
        if len(head) < 24:
            return
        magic = head[:4]
        if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
            order = "<"
        elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
            order = ">"
        else:
            raise ValueError(f"{path}: not a pcap file (pcapng? write with tcpdump -w)")
        scale = 1e-9 if magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d") else 1e-6
        link_type = struct.unpack(order + "I", head[20:24])[0]
        if link_type != 1:
            raise ValueError(f"{path}: link type {link_type}, not Ethernet")
        while True:
            record = f.read(16)
            if len(record) < 16:
                return
            seconds, fraction, captured, _ = struct.unpack(order + "IIII", record)
            data = f.read(captured)
            if len(data) < captured:
                return
            yield seconds + fraction * scale, data


def mac_text(raw):
    return ":".join(f"{b:02x}" for b in raw)


def decode(time, data, ether_type, port_base, capture):
    """A Frame, or None when the bytes are not one of ours."""
    if len(data) < 14:
        return None
    kind = struct.unpack(">H", data[12:14])[0]
    if kind == ether_type:
        header = data[14:]
        where = lambda address, queue: f"{mac_text(address)}/{queue}"
        source_address, destination_address = data[6:12], data[0:6]
    elif kind == 0x0800 and len(data) >= 34 and data[23] == 17:
        ihl = (data[14] & 0x0F) * 4
        udp = 14 + ihl
        if len(data) < udp + 8:
            return None
        destination_port = struct.unpack(">H", data[udp + 2:udp + 4])[0]
        if not port_base <= destination_port < port_base + ENDPOINTS_PER_PORT:
            return None
        header = data[udp + 8:]
        where = lambda address, queue: f"{'.'.join(str(b) for b in address)}:{queue}"
        source_address, destination_address = data[26:30], data[30:34]
    else:
        return None
    if len(header) < HEADER_BYTES_READ:
        return None
    frame = Frame()
    frame.time = time
    frame.capture = capture
    (_, frame.opcode, frame.flags, destination_queue, source_queue) = struct.unpack(
        ">BBHHH", header[0:8])
    (frame.seq, frame.ack, frame.msg_id, frame.msg_len, frame.offset) = struct.unpack(
        ">IIIII", header[16:36])
    frame.payload_len, frame.window = struct.unpack(">HH", header[36:40])
    frame.conn, frame.ack_conn = struct.unpack(">HH", header[80:84])
    frame.source = where(source_address, source_queue)
    frame.destination = where(destination_address, destination_queue)
    return frame


def read_all(paths, ether_type, port_base):
    frames = []
    for path in paths:
        for time, data in records(path):
            frame = decode(time, data, ether_type, port_base, path)
            if frame is not None:
                frames.append(frame)
    frames.sort(key=lambda f: f.time)
    return frames


def silences(frames, minimum):
    """Lines describing each one-sided silence of at least `minimum` seconds."""
    if not frames:
        return []
    by_direction = collections.defaultdict(list)
    for frame in frames:
        by_direction[(frame.source, frame.destination)].append(frame)
    first, last = frames[0].time, frames[-1].time
    lines = []
    for (source, destination), sent in sorted(by_direction.items()):
        times = [f.time for f in sent]
        edges = [first] + [f.time for f in by_direction.get((destination, source), [])] + [last]
        for start, end in zip(edges, edges[1:]):
            if end - start < minimum:
                continue
            # (A frame at the very first instant belongs to the first stretch.)
            begin = (bisect.bisect_left if start == first else bisect.bisect_right)(times, start)
            inside = sent[begin:bisect.bisect_left(times, end)]
            # One transmission shows once in each capture it passed; a
            # retransmission is the same frame again in the same capture.
            per_capture = collections.defaultdict(collections.Counter)
            for f in inside:
                per_capture[f.key()][f.capture] += 1
            transmissions = sum(max(c.values()) for c in per_capture.values())
            if transmissions < 3:
                continue
            # Seen in a second capture (the receiver's port): carried that far.
            carried = sum(min(c.values()) for c in per_capture.values() if len(c) > 1)
            lines.append(f"{source} > {destination}: nothing back for {end - start:.2f} s "
                         f"({start:.6f} .. {end:.6f}); {transmissions} transmissions of "
                         f"{len(per_capture)} frames, {carried} of them seen in a second "
                         f"capture; first {OPCODES.get(inside[0].opcode, inside[0].opcode)} "
                         f"seq={inside[0].seq} conn={inside[0].conn}")
    return lines


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ethertype", default="0x88B5", type=lambda v: int(v, 0),
                        help="as FI_DPDK_ETHERTYPE: 0x88B5 or decimal")
    parser.add_argument("--port-base", default=9228, type=int)
    parser.add_argument("--silences", type=float, metavar="SECONDS")
    parser.add_argument("captures", nargs="+")
    args = parser.parse_args(argv)
    try:
        frames = read_all(args.captures, args.ethertype, args.port_base)
    except (OSError, ValueError) as e:
        print(f"dpdk-fi-pcap.py: {e}", file=sys.stderr)
        return 1
    try:
        if args.silences is not None:
            for line in silences(frames, args.silences):
                print(line)
        else:
            for frame in frames:
                print(frame)
    except BrokenPipeError:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
