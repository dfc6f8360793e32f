#!/usr/bin/env python3
"""Tests of usertools/dpdk-fi-pcap.py, the capture reader: frames written
the way the provider lays them out (doc/wire-protocol.md, "The frame"), in
pcap files the way tcpdump writes them.

Run: python3 test/tools/test_pcap.py
"""

import importlib.util
import io
import struct
import tempfile
import unittest
from contextlib import redirect_stdout
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TOOL = REPO / "usertools" / "dpdk-fi-pcap.py"

MAC_A = bytes.fromhex("02000000000a")
MAC_B = bytes.fromhex("02000000000b")
MSG, ACK, HELLO = 1, 3, 7


def load_tool():
    spec = importlib.util.spec_from_file_location("dpdk_fi_pcap", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def our_header(opcode, source_queue, destination_queue, seq=0, ack=0, conn=1, ack_conn=0,
               msg_id=0, msg_len=0, offset=0, payload_len=0, window=0, flags=0):
    """Our 104-byte header at the offsets the wire protocol gives."""
    header = bytearray(104)
    struct.pack_into(">BBHHH", header, 0, 10, opcode, flags, destination_queue, source_queue)
    struct.pack_into(">IIIII", header, 16, seq, ack, msg_id, msg_len, offset)
    struct.pack_into(">HH", header, 36, payload_len, window)
    struct.pack_into(">HH", header, 80, conn, ack_conn)
    return bytes(header)


def on_ethertype(source, destination, header, ether_type=0x88B5):
    return destination + source + struct.pack(">H", ether_type) + header


def in_udp(source_ip, destination_ip, destination_port, header):
    ip = bytearray(20)
    ip[0] = 0x45
    ip[9] = 17
    struct.pack_into(">H", ip, 2, 20 + 8 + len(header))
    ip[12:16] = bytes(source_ip)
    ip[16:20] = bytes(destination_ip)
    udp = struct.pack(">HHHH", 50000, destination_port, 8 + len(header), 0)
    return MAC_B + MAC_A + b"\x08\x00" + bytes(ip) + udp + header


def write_pcap(path, records, nanoseconds=False):
    with open(path, "wb") as f:
        magic = 0xA1B23C4D if nanoseconds else 0xA1B2C3D4
        f.write(struct.pack("<IHHiIII", magic, 2, 4, 0, 0, 65535, 1))
        for time, data in records:
            seconds = int(time)
            fraction = round((time - seconds) * (1e9 if nanoseconds else 1e6))
            f.write(struct.pack("<IIII", seconds, fraction, len(data), len(data)) + data)


class PcapTest(unittest.TestCase):
    def setUp(self):
        self.tool = load_tool()
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def run_tool(self, *args):
        out = io.StringIO()
        with redirect_stdout(out):
            status = self.tool.main([str(a) for a in args])
        return status, out.getvalue().splitlines()

    def test_prints_our_frames_in_time_order_across_captures(self):
        first = Path(self.dir.name) / "a.pcap"
        second = Path(self.dir.name) / "b.pcap"
        data = our_header(MSG, 3, 5, seq=7, msg_id=2, msg_len=3000, offset=1412,
                          payload_len=1412, flags=0x2)
        ack = our_header(ACK, 5, 3, seq=9, ack=8, conn=4, ack_conn=1, window=256, flags=0x4)
        write_pcap(first, [(10.5, on_ethertype(MAC_A, MAC_B, data)),
                           (10.7, on_ethertype(MAC_A, MAC_B, b"\x00" * 90, ether_type=0x0806))])
        write_pcap(second, [(10.6, on_ethertype(MAC_B, MAC_A, ack))], nanoseconds=True)
        status, lines = self.run_tool(first, second)
        self.assertEqual(status, 0)
        self.assertEqual(len(lines), 2, lines)  # the ARP frame is not ours
        self.assertEqual(
            lines[0], "10.500000 02:00:00:00:00:0a/3 > 02:00:00:00:00:0b/5 MSG flags=0x0002 "
            "conn=1 seq=7 ack=0/0 msg=2 len=3000 off=1412 payload=1412 window=0")
        self.assertEqual(
            lines[1], "10.600000 02:00:00:00:00:0b/5 > 02:00:00:00:00:0a/3 ACK flags=0x0004 "
            "conn=4 seq=9 ack=8/1 msg=0 len=0 off=0 payload=0 window=256")

    def test_reads_frames_in_udp_to_the_endpoint_ports(self):
        capture = Path(self.dir.name) / "udp.pcap"
        hello = our_header(HELLO, 0, 2, msg_len=16, payload_len=16)
        write_pcap(capture, [
            (1.0, in_udp([10, 0, 0, 1], [10, 0, 0, 2], 9228 + 2, hello)),
            (1.1, in_udp([10, 0, 0, 1], [10, 0, 0, 2], 9228 + 64, hello)),  # no endpoint's port
            (1.2, in_udp([10, 0, 0, 1], [10, 0, 0, 2], 53, hello)),
        ])
        status, lines = self.run_tool(capture)
        self.assertEqual(status, 0)
        self.assertEqual(len(lines), 1, lines)
        self.assertIn("10.0.0.1:0 > 10.0.0.2:2 HELLO", lines[0])
        status, lines = self.run_tool("--port-base", 9000, capture)
        self.assertEqual(lines, [])

    def test_finds_a_one_sided_silence_and_where_the_frames_went(self):
        # A sends segment 1 to B and hears the ack; then segment 2 goes
        # unanswered for 2 s: sent 10 times, seen on A's bridge port each
        # time, and on B's port only the first 4 times.  B answers at last.
        port_a = Path(self.dir.name) / "porta.pcap"
        port_b = Path(self.dir.name) / "portb.pcap"
        segment = lambda seq: on_ethertype(MAC_A, MAC_B, our_header(MSG, 0, 1, seq=seq))
        ack = lambda n: on_ethertype(MAC_B, MAC_A, our_header(ACK, 1, 0, ack=n, flags=0x4))
        at_a = [(0.0, segment(1)), (0.001, ack(2))]
        at_b = [(0.0, segment(1)), (0.001, ack(2))]
        for i in range(10):
            at_a.append((0.2 + 0.2 * i, segment(2)))
            if i < 4:
                at_b.append((0.2 + 0.2 * i, segment(2)))
        at_a.append((2.2, ack(3)))
        at_b.append((2.2, ack(3)))
        write_pcap(port_a, at_a)
        write_pcap(port_b, at_b)
        status, lines = self.run_tool("--silences", 1.5, port_a, port_b)
        self.assertEqual(status, 0)
        self.assertEqual(len(lines), 1, lines)
        self.assertIn("02:00:00:00:00:0a/0 > 02:00:00:00:00:0b/1: nothing back for 2.20 s", lines[0])
        self.assertIn("10 transmissions of 1 frames, 4 of them seen in a second capture",
                      lines[0])
        self.assertIn("first MSG seq=2", lines[0])
        # Shorter than the silence asked for: nothing.
        status, lines = self.run_tool("--silences", 3, port_a, port_b)
        self.assertEqual(lines, [])

    def test_a_silence_from_the_first_frame_counts_every_transmission(self):
        # The capture starts with A sending segment 1, resent twice, and B
        # says nothing until the end: three transmissions, the first at the
        # very first instant of the capture.
        capture = Path(self.dir.name) / "start.pcap"
        segment = on_ethertype(MAC_A, MAC_B, our_header(MSG, 0, 1, seq=1))
        ack = on_ethertype(MAC_B, MAC_A, our_header(ACK, 1, 0, ack=2, flags=0x4))
        write_pcap(capture, [(5.0, segment), (5.5, segment), (6.0, segment), (7.0, ack)])
        status, lines = self.run_tool("--silences", 1, capture)
        self.assertEqual(status, 0)
        self.assertEqual(len(lines), 1, lines)
        self.assertIn("nothing back for 2.00 s", lines[0])
        self.assertIn("3 transmissions of 1 frames, 0 of them seen in a second capture", lines[0])

    def test_takes_the_ethertype_in_hex_or_decimal(self):
        capture = Path(self.dir.name) / "type.pcap"
        write_pcap(capture, [(1.0, on_ethertype(MAC_A, MAC_B, our_header(HELLO, 0, 1),
                                                ether_type=0x88B6))])
        for value in ("0x88B6", "34998"):
            status, lines = self.run_tool("--ethertype", value, capture)
            self.assertEqual(status, 0)
            self.assertEqual(len(lines), 1, (value, lines))
        status, lines = self.run_tool(capture)  # the default, 0x88B5: not ours
        self.assertEqual(lines, [])

    def test_refuses_what_is_not_a_pcap_file(self):
        capture = Path(self.dir.name) / "not.pcap"
        capture.write_bytes(b"\x0a\x0d\x0d\x0a" + b"\x00" * 40)  # pcapng
        with redirect_stdout(io.StringIO()):
            self.assertEqual(self.tool.main([str(capture)]), 1)


if __name__ == "__main__":
    unittest.main()
