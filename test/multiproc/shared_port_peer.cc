// shared_port_peer.cc: a DPDK secondary of dpdk-fi-switch that uses the
// shared port through net::Port, well or badly, for
// test_shared_port_hostile.sh.  Roles:
//   hold      claims a slot and never reads it (a stopped or hostile
//             process); writes its slot to --ready, runs until killed
//   exchange  claims a slot, writes it to --ready, waits for --start, then
//             sends a frame to slot --peer-slot on every pass (and, with
//             --flood-slot, 32 frames to that slot), reads its own, and
//             stops once it has received --count frames and --peer-done
//             exists, or at --seconds; touches --done when it has them
//   claim     claims a slot, prints it, gives it back
//   poke      writes --pid into slot --slot's owner word, as a process
//             with that pid would have claimed it
//   freed     waits up to --seconds for slot --slot's owner word to read
//             free (the switch has reaped a gone holder)
//   corrupt   writes out-of-range values into the table's fixed fields
//             (slots 200, queues_per_slot 0)
// Exit status: 0 when the role did what it should, 1 otherwise, 2 on bad
// arguments.
//
//   shared_port_peer [EAL options] -- --name NAME --role ROLE [options]
#include <rte_eal.h>
#include <rte_mbuf.h>

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "drivers/net/mbuf_handoff.h"
#include "drivers/net/port.h"
#include "drivers/net/shared_port.h"
#include "lib/proto/wire.h"

namespace {

using ofi_dpdk::net::Port;
using ofi_dpdk::net::SharedPortTable;

struct Options {
  std::string name;
  std::string role;
  std::string ready, start, done, peer_done;
  int peer_slot = -1;
  int flood_slot = -1;
  int slot = -1;
  long pid = 0;
  long count = 2000;
  long seconds = 60;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "shared_port_peer: %s\n", why.c_str());
  std::exit(2);
}

long number(const char* text) {
  long value = 0;
  const std::string_view s(text);
  const auto [end, err] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (err != std::errc() || end != s.data() + s.size()) usage(std::string("not a number: ") + text);
  return value;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 0; i < argc; i += 2) {
    const std::string_view arg = argv[i];
    if (i + 1 >= argc) usage(std::string(arg) + " needs a value");
    const char* value = argv[i + 1];
    if (arg == "--name")
      o.name = value;
    else if (arg == "--role")
      o.role = value;
    else if (arg == "--ready")
      o.ready = value;
    else if (arg == "--start")
      o.start = value;
    else if (arg == "--done")
      o.done = value;
    else if (arg == "--peer-done")
      o.peer_done = value;
    else if (arg == "--peer-slot")
      o.peer_slot = static_cast<int>(number(value));
    else if (arg == "--flood-slot")
      o.flood_slot = static_cast<int>(number(value));
    else if (arg == "--slot")
      o.slot = static_cast<int>(number(value));
    else if (arg == "--pid")
      o.pid = number(value);
    else if (arg == "--count")
      o.count = number(value);
    else if (arg == "--seconds")
      o.seconds = number(value);
    else
      usage("unknown option " + std::string(arg));
  }
  if (o.name.empty() || o.role.empty()) usage("--name and --role are needed");
  return o;
}

std::string port_name(const Options& o) {
  return "net_ring_" + o.name;
}

// Whole or not at all: the test reads the slot from it.
void publish(const std::string& path, const std::string& text) {
  if (path.empty()) return;
  {
    std::ofstream out(path + ".part");
    out << text << "\n";
  }
  std::filesystem::rename(path + ".part", path);
}

int open_port(const Options& o, std::unique_ptr<Port>* port) {
  const auto id = ofi_dpdk::net::find_port(port_name(o));
  if (!id) {
    std::fprintf(stderr, "shared_port_peer: no port %s\n", port_name(o).c_str());
    return 1;
  }
  ofi_dpdk::net::PortConfig config;
  std::string error;
  if (const int ret = Port::open(*id, config, port, &error); ret != 0) {
    std::fprintf(stderr, "shared_port_peer: Port::open: %s (%d)\n", error.c_str(), ret);
    return 1;
  }
  return 0;
}

// A frame for endpoint queue `dst_queue`, as far as the sender reads it.
rte_mbuf* make_frame(Port& port, uint16_t dst_queue) {
  rte_mbuf* m = port.alloc_frame();
  if (m == nullptr) return nullptr;
  constexpr uint16_t kLength =
      sizeof(ofi_dpdk::wire::EtherHeader) + sizeof(ofi_dpdk::wire::FrameHeader);
  auto* bytes = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, kLength));
  if (bytes == nullptr) {
    ofi_dpdk::net::free_frame(m);
    return nullptr;
  }
  std::memset(bytes, 0, kLength);
  std::memcpy(bytes, port.mac(), 6);
  std::memcpy(bytes + 6, port.mac(), 6);
  const uint16_t type_be = rte_cpu_to_be_16(port.ether_type());
  std::memcpy(bytes + 12, &type_be, 2);
  const uint16_t queue_be = rte_cpu_to_be_16(dst_queue);
  std::memcpy(bytes + sizeof(ofi_dpdk::wire::EtherHeader) +
                  offsetof(ofi_dpdk::wire::FrameHeader, dst_queue),
              &queue_be, 2);
  return m;
}

int hold(const Options& o) {
  std::unique_ptr<Port> port;
  if (open_port(o, &port) != 0) return 1;
  publish(o.ready, std::to_string(port->shared_slot()));
  // Never reads: whatever is sent to us stays in our ring.
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(o.seconds);
  while (std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return 0;
}

int exchange(const Options& o) {
  std::unique_ptr<Port> port;
  if (open_port(o, &port) != 0) return 1;
  if (o.peer_slot < 0) usage("exchange needs --peer-slot");
  publish(o.ready, std::to_string(port->shared_slot()));
  const uint16_t per_slot = port->endpoint_queue_count();
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(o.seconds);
  while (!o.start.empty() && !std::filesystem::exists(o.start))
    if (std::chrono::steady_clock::now() >= end) {
      std::fprintf(stderr, "shared_port_peer: no %s within --seconds\n", o.start.c_str());
      return 1;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  long received = 0, sent = 0, alloc_failures = 0;
  bool done = false;
  while (std::chrono::steady_clock::now() < end) {
    if (o.flood_slot >= 0) {
      rte_mbuf* flood[32];
      uint16_t made = 0;
      while (made < 32) {
        rte_mbuf* m = make_frame(*port, static_cast<uint16_t>(o.flood_slot * per_slot));
        if (m == nullptr) break;
        flood[made++] = m;
      }
      alloc_failures += 32 - made;
      port->tx_burst(0, flood, made);
    }
    if (rte_mbuf* ping = make_frame(*port, static_cast<uint16_t>(o.peer_slot * per_slot))) {
      sent += port->tx_burst(0, &ping, 1);
    } else {
      ++alloc_failures;
    }
    rte_mbuf* got[32];
    const uint16_t n = port->rx_burst(0, got, 32);
    for (uint16_t i = 0; i < n; ++i) ofi_dpdk::net::free_frame(got[i]);
    received += n;
    if (received >= o.count && !done) {
      done = true;
      publish(o.done, "done");
    }
    if (done && (o.peer_done.empty() || std::filesystem::exists(o.peer_done))) break;
    // (Two cores, several pollers: let the others run.)
    std::this_thread::yield();
  }
  const SharedPortTable* table = ofi_dpdk::net::find_shared_table(port_name(o));
  std::printf(
      "slot %d: received %ld, sent %ld, alloc failures %ld; table: dropped over a "
      "share %lu, full %lu, no owner %lu\n",
      port->shared_slot(), received, sent, alloc_failures,
      table ? static_cast<unsigned long>(table->dropped_share.load()) : 0ul,
      table ? static_cast<unsigned long>(table->dropped_full.load()) : 0ul,
      table ? static_cast<unsigned long>(table->dropped_no_owner.load()) : 0ul);
  if (received < o.count) {
    std::fprintf(stderr,
                 "shared_port_peer: slot %d received %ld of %ld frames in %ld s "
                 "(%ld alloc failures)\n",
                 port->shared_slot(), received, o.count, o.seconds, alloc_failures);
    return 1;
  }
  return 0;
}

int claim(const Options& o) {
  std::unique_ptr<Port> port;
  if (open_port(o, &port) != 0) return 1;
  std::printf("claimed slot %d\n", port->shared_slot());
  return 0;
}

SharedPortTable* table_of(const Options& o) {
  SharedPortTable* table = ofi_dpdk::net::find_shared_table(port_name(o));
  if (table == nullptr)
    std::fprintf(stderr, "shared_port_peer: no table for %s\n", port_name(o).c_str());
  return table;
}

int poke(const Options& o) {
  SharedPortTable* table = table_of(o);
  if (table == nullptr) return 1;
  if (o.slot < 0 || o.slot >= static_cast<int>(ofi_dpdk::net::kMaxSharedProcesses))
    usage("poke needs --slot 0 to 15");
  table->owner[o.slot].store(static_cast<int32_t>(o.pid));
  std::printf("slot %d: owner word set to %ld\n", o.slot, o.pid);
  return 0;
}

int freed(const Options& o) {
  SharedPortTable* table = table_of(o);
  if (table == nullptr) return 1;
  if (o.slot < 0 || o.slot >= static_cast<int>(ofi_dpdk::net::kMaxSharedProcesses))
    usage("freed needs --slot 0 to 15");
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(o.seconds);
  while (table->owner[o.slot].load() != 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "shared_port_peer: slot %d still reads %d after %ld s\n", o.slot,
                   table->owner[o.slot].load(), o.seconds);
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::printf("slot %d is free\n", o.slot);
  return 0;
}

int corrupt(const Options& o) {
  SharedPortTable* table = table_of(o);
  if (table == nullptr) return 1;
  table->slots = 200;
  table->queues_per_slot = 0;
  std::printf("table of %s: slots 200, queues_per_slot 0\n", port_name(o).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const int eal_args = rte_eal_init(argc, argv);
  if (eal_args < 0) {
    std::fprintf(stderr, "shared_port_peer: rte_eal_init failed\n");
    return 1;
  }
  // rte_eal_init consumed its options and the "--", and put the program's
  // name where ours start.
  const Options o = parse(argc - eal_args - 1, argv + eal_args + 1);
  int rc;
  if (o.role == "hold")
    rc = hold(o);
  else if (o.role == "exchange")
    rc = exchange(o);
  else if (o.role == "claim")
    rc = claim(o);
  else if (o.role == "poke")
    rc = poke(o);
  else if (o.role == "freed")
    rc = freed(o);
  else if (o.role == "corrupt")
    rc = corrupt(o);
  else
    usage("unknown role " + o.role);
  std::fflush(nullptr);
  rte_eal_cleanup();
  return rc;
}
