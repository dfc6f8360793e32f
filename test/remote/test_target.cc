// The target side of RMA and atomics (lib/remote/target.h) without a
// fabric: requests encoded as the provider's initiator encodes them,
// served by a Target over a Host whose regions are plain memory; then the
// same through two transport engines on the in-memory lossy link, so a
// fetch-add whose answers are lost still runs once, and a read answered from
// its region keeps its bytes when the region is written or closed before
// the answer is through.  Each test says what it
// expects in `// Expect:` comments.
#include <gtest/gtest.h>

#include <rdma/fi_errno.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "lib/remote/target.h"
#include "test/proto/lossy_link.h"

namespace ofi_dpdk::remote {
namespace {

constexpr uint8_t kMacA[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x3A};
constexpr uint8_t kMacB[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x3B};
constexpr uint8_t kMacC[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x3C};

// Regions by key in a Regions table (virtual addressing), counters as
// numbers.
class MemoryHost : public Host {
 public:
  struct Region {
    std::vector<uint8_t> bytes;
    uint64_t access;
    uint64_t events = 0;  // the region's own counter (FI_RMA_EVENT)
  };

  // Read by a Target when it is made.
  uint64_t capabilities = FI_RMA | FI_ATOMIC | FI_REMOTE_READ | FI_REMOTE_WRITE;
  bool lend = true;  // may_lend_reads
  std::map<uint64_t, Region> regions;
  uint64_t remote_writes = 0, remote_reads = 0;
  std::vector<std::pair<uint64_t, uint64_t>> cq_data;  // (peer, data)
  std::vector<uint64_t> cq_data_lengths;
  size_t cq_room = 1024;  // entries its CQ takes (remote_cq_room)
  // What Target reads: the regions above and those over memory the test
  // mapped itself (add_external).
  Regions table{true};

  uint8_t* add(uint64_t key, size_t size, uint64_t access) {
    Region& r = regions[key];
    r.bytes.assign(size, 0);
    r.access = access;
    table.remove(key);
    table.add(key, {r.bytes.data(), size, access, 0, &r});
    return r.bytes.data();
  }
  void set_access(uint64_t key, uint64_t access) {
    Region& r = regions[key];
    r.access = access;
    table.remove(key);
    table.add(key, {r.bytes.data(), r.bytes.size(), access, 0, &r});
  }
  // A region over [base, base + size), any access, no counter.
  void add_external(uint64_t key, uint64_t base, size_t size) {
    table.add(key, {reinterpret_cast<uint8_t*>(base), size, FI_REMOTE_READ | FI_REMOTE_WRITE, 0,
                    nullptr});
  }
  uint64_t address(uint64_t key, size_t offset = 0) {
    return reinterpret_cast<uint64_t>(regions[key].bytes.data()) + offset;
  }

  uint64_t caps() const override { return capabilities; }
  void count_remote(bool as_write, void* region, bool modified) override {
    ++(as_write ? remote_writes : remote_reads);
    if (modified && region != nullptr) ++static_cast<Region*>(region)->events;
  }
  void remote_cq_data(uint64_t peer_key, uint64_t data, uint64_t length) override {
    cq_data.emplace_back(peer_key, data);
    cq_data_lengths.push_back(length);
  }
  bool remote_cq_room() const override { return cq_data.size() < cq_room; }
  bool may_lend_reads() const override { return lend; }
};

std::vector<uint8_t> request(const RemoteOp& op, const void* data = nullptr, size_t length = 0) {
  std::vector<uint8_t> bytes(kRemoteOpSize + length);
  encode(op, bytes.data());
  if (length != 0) std::memcpy(bytes.data() + kRemoteOpSize, data, length);
  return bytes;
}

// Limits this process's address space to what it maps now plus `extra`
// bytes (RLIMIT_AS): allocations beyond fail.
bool limit_address_space(size_t extra) {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmSize:", 0) != 0) continue;
    const rlim_t now = std::stoull(line.substr(7)) * 1024;
    const rlimit limit{now + extra, now + extra};
    return setrlimit(RLIMIT_AS, &limit) == 0;
  }
  return false;
}

RemoteOp rma(RemoteKind kind, uint64_t key, uint64_t addr, uint64_t length) {
  RemoteOp op{};
  op.kind = kind;
  op.key = key;
  op.addr = addr;
  op.length = length;
  return op;
}

RemoteOp atomic_op(RemoteKind kind, fi_datatype datatype, fi_op fop, uint64_t key, uint64_t addr,
                   uint64_t count) {
  RemoteOp op = rma(kind, key, addr, count);
  op.datatype = static_cast<uint16_t>(datatype);
  op.op = static_cast<uint16_t>(fop);
  return op;
}

// One engine for Target's response buffers; it sends nothing here.
class TargetTest : public ::testing::Test {
 protected:
  TargetTest()
      : engine(proto::TransportConfig{}, kMacB, 0, 0xB0B0B0B0), target(host, host.table, engine) {}

  proto::Response serve(const std::vector<uint8_t>& bytes, uint64_t peer = 7) {
    return target.serve(peer, bytes.data(), bytes.size(), 0);
  }

  MemoryHost host;
  proto::Engine engine;
  Target target;
};

TEST(Regions, ResolveChecksKeyAccessAndRangeInBothAddressings) {
  // Expect: a key no region has is FI_EKEYREJECTED, missing access
  // FI_EACCES, a range past either end FI_EFAULT; with virtual addressing
  // the address is the byte's, without it the offset from the region's
  // start plus the offset it was registered with; a region with no memory
  // takes no bytes; the region's counter comes back with its bytes, and a
  // removed key is rejected again (and its removal hands the region back,
  // once).
  uint8_t memory[64] = {};
  int counter = 0;
  Regions by_address(true), by_offset(false);
  const Region region{memory, sizeof(memory), FI_REMOTE_READ, 1000, &counter};
  ASSERT_TRUE(by_address.add(5, region));
  ASSERT_TRUE(by_offset.add(5, region));
  EXPECT_FALSE(by_offset.add(5, region));  // the key is taken
  uint8_t* out = nullptr;
  void* named = nullptr;
  const auto base = reinterpret_cast<uint64_t>(memory);
  EXPECT_EQ(by_address.resolve(6, base, 8, FI_REMOTE_READ, &out, &named), FI_EKEYREJECTED);
  EXPECT_EQ(by_address.resolve(5, base, 8, FI_REMOTE_WRITE, &out, &named), FI_EACCES);
  EXPECT_EQ(by_address.resolve(5, base + 60, 8, FI_REMOTE_READ, &out, &named), FI_EFAULT);
  EXPECT_EQ(by_address.resolve(5, base - 1, 8, FI_REMOTE_READ, &out, &named), FI_EFAULT);
  ASSERT_EQ(by_address.resolve(5, base + 56, 8, FI_REMOTE_READ, &out, &named), 0);
  EXPECT_EQ(out, memory + 56);
  EXPECT_EQ(named, &counter);
  ASSERT_EQ(by_offset.resolve(5, 1000 + 16, 8, FI_REMOTE_READ, &out, &named), 0);
  EXPECT_EQ(out, memory + 16);
  EXPECT_EQ(by_offset.resolve(5, 999, 1, FI_REMOTE_READ, &out, &named), FI_EFAULT);
  EXPECT_EQ(by_offset.resolve(5, 1000 + 60, 8, FI_REMOTE_READ, &out, &named), FI_EFAULT);
  EXPECT_TRUE(by_offset.set_counter(5, nullptr));
  ASSERT_EQ(by_offset.resolve(5, 1000, 0, FI_REMOTE_READ, &out, &named), 0);
  EXPECT_EQ(named, nullptr);
  EXPECT_FALSE(by_offset.set_counter(6, nullptr));
  ASSERT_TRUE(by_address.add(7, {nullptr, 64, FI_REMOTE_READ, 0, nullptr}));
  EXPECT_EQ(by_address.resolve(7, 0, 8, FI_REMOTE_READ, &out, &named), FI_EFAULT);
  EXPECT_EQ(by_address.resolve(7, 0, 0, FI_REMOTE_READ, &out, &named), 0);
  const std::optional<Region> removed = by_address.remove(5);
  ASSERT_TRUE(removed.has_value());
  EXPECT_EQ(removed->base, memory);
  EXPECT_EQ(removed->length, sizeof(memory));
  EXPECT_FALSE(by_address.remove(5).has_value());
  EXPECT_EQ(by_address.resolve(5, base, 8, FI_REMOTE_READ, &out, &named), FI_EKEYREJECTED);
}

TEST(RemoteOpHeader, EncodesBigEndianAtItsWireOffsets) {
  // Expect: the header is the 40 bytes wire.h lays out, big-endian, and
  // decodes to what was encoded; fewer than 40 bytes do not decode.
  RemoteOp op = atomic_op(RemoteKind::kCompareAtomic, FI_UINT32, FI_CSWAP, 0x0102030405060708,
                          0x1112131415161718, 3);
  op.flags = wire::kRemoteHasData;
  op.cq_data = 0xC0DA;
  uint8_t bytes[kRemoteOpSize];
  encode(op, bytes);
  EXPECT_EQ(bytes[0], static_cast<uint8_t>(RemoteKind::kCompareAtomic));
  EXPECT_EQ(bytes[1], wire::kRemoteHasData);
  EXPECT_EQ(bytes[2] << 8 | bytes[3], FI_UINT32);
  EXPECT_EQ(bytes[4] << 8 | bytes[5], FI_CSWAP);
  EXPECT_EQ(bytes[6] | bytes[7], 0);
  EXPECT_EQ(bytes[8], 0x01);
  EXPECT_EQ(bytes[15], 0x08);
  EXPECT_EQ(bytes[16], 0x11);
  EXPECT_EQ(bytes[31], 3);
  EXPECT_EQ(bytes[39], 0xDA);
  RemoteOp back{};
  ASSERT_TRUE(decode(bytes, sizeof(bytes), &back));
  EXPECT_EQ(back.kind, op.kind);
  EXPECT_EQ(back.datatype, op.datatype);
  EXPECT_EQ(back.op, op.op);
  EXPECT_EQ(back.key, op.key);
  EXPECT_EQ(back.addr, op.addr);
  EXPECT_EQ(back.length, op.length);
  EXPECT_EQ(back.cq_data, op.cq_data);
  EXPECT_FALSE(decode(bytes, kRemoteOpSize - 1, &back));
}

TEST_F(TargetTest, AWriteLandsInItsRegionAndIsCountedOnce) {
  // Expect: the data is in the region at the address, nothing around it
  // changes, status 0, no data back; one remote write, one region event, and
  // the CQ data reported with the writer's key and the write's length.
  uint8_t* region = host.add(1, 64, FI_REMOTE_WRITE);
  const char data[] = "written";
  RemoteOp op = rma(RemoteKind::kWrite, 1, host.address(1, 8), sizeof(data));
  op.flags = wire::kRemoteHasData;
  op.cq_data = 0xDA7A;
  const proto::Response r = serve(request(op, data, sizeof(data)), 42);
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(r.data.empty());
  EXPECT_EQ(std::memcmp(region + 8, data, sizeof(data)), 0);
  EXPECT_EQ(region[7], 0);
  EXPECT_EQ(region[8 + sizeof(data)], 0);
  EXPECT_EQ(host.remote_writes, 1u);
  EXPECT_EQ(host.regions[1].events, 1u);
  ASSERT_EQ(host.cq_data.size(), 1u);
  EXPECT_EQ(host.cq_data[0], std::make_pair(uint64_t{42}, uint64_t{0xDA7A}));
  EXPECT_EQ(host.cq_data_lengths[0], sizeof(data)) << "the bytes the write placed";
}

TEST_F(TargetTest, AReadReturnsTheRegionsBytesFromTheRegionItself) {
  // Expect: the response lends the region's own 10 bytes at the address (no
  // copy of them); a remote read counted, no region event (nothing was
  // modified).
  uint8_t* region = host.add(2, 32, FI_REMOTE_READ);
  for (int i = 0; i < 32; ++i) region[i] = static_cast<uint8_t>(i * 3);
  const proto::Response r = serve(request(rma(RemoteKind::kRead, 2, host.address(2, 4), 10)));
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(r.data.empty());
  EXPECT_EQ(r.lent_bytes, region + 4);
  EXPECT_EQ(r.lent_length, 10u);
  EXPECT_EQ(host.remote_reads, 1u);
  EXPECT_EQ(host.regions[2].events, 0u);
}

TEST_F(TargetTest, AReadIsCopiedAtOnceWhenTheHostMayNotLend) {
  // Expect: with may_lend_reads false (the application watches reads being
  // counted), the response holds its own copy of the bytes, so changing the
  // region afterwards does not change it.
  host.lend = false;
  uint8_t* region = host.add(3, 32, FI_REMOTE_READ);
  for (int i = 0; i < 32; ++i) region[i] = static_cast<uint8_t>(i + 1);
  const proto::Response r = serve(request(rma(RemoteKind::kRead, 3, host.address(3, 2), 8)));
  std::memset(region, 0, 32);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.lent_bytes, nullptr);
  ASSERT_EQ(r.data.size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(r.data.data()[i], i + 3);
  EXPECT_EQ(host.remote_reads, 1u);
}

TEST_F(TargetTest, KeyAccessRangeAndCapabilitiesAreCheckedBeforeAnyByteMoves) {
  // Expect: each bad request is answered with its FI_E* status and leaves
  // the region untouched and uncounted.
  uint8_t* region = host.add(3, 16, FI_REMOTE_READ);
  const uint8_t data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(serve(request(rma(RemoteKind::kWrite, 99, host.address(3), 8), data, 8)).status,
            FI_EKEYREJECTED);
  EXPECT_EQ(serve(request(rma(RemoteKind::kWrite, 3, host.address(3), 8), data, 8)).status,
            FI_EACCES);
  EXPECT_EQ(serve(request(rma(RemoteKind::kRead, 3, host.address(3, 12), 8))).status, FI_EFAULT);
  EXPECT_EQ(serve(request(rma(RemoteKind::kRead, 3, host.address(3) - 1, 4))).status, FI_EFAULT);
  // A write whose header names more bytes than it carries.
  host.set_access(3, host.regions[3].access | FI_REMOTE_WRITE);
  EXPECT_EQ(serve(request(rma(RemoteKind::kWrite, 3, host.address(3), 9), data, 8)).status,
            FI_EINVAL);
  // An unknown kind, and a header cut short.
  EXPECT_EQ(serve(request(rma(static_cast<RemoteKind>(9), 3, host.address(3), 0))).status,
            FI_EINVAL);
  std::vector<uint8_t> short_header = request(rma(RemoteKind::kRead, 3, host.address(3), 4));
  short_header.resize(kRemoteOpSize - 1);
  EXPECT_EQ(serve(short_header).status, FI_EINVAL);
  // An endpoint without remote write access takes no writes (its
  // capabilities are read when its Target is made).
  host.capabilities = FI_RMA | FI_REMOTE_READ;
  // (An engine of its own: a Target takes over its engine's requests.)
  proto::Engine other(proto::TransportConfig{}, kMacC, 0, 0xC0C0C0C0);
  Target read_only(host, host.table, other);
  const std::vector<uint8_t> write =
      request(rma(RemoteKind::kWrite, 3, host.address(3), 8), data, 8);
  EXPECT_EQ(read_only.serve(7, write.data(), write.size(), 0).status, FI_EOPNOTSUPP);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(region[i], 0) << i;
  EXPECT_EQ(host.remote_writes + host.remote_reads, 0u);
}

TEST_F(TargetTest, AWriteIsPlacedWhereItsHeaderSaysAndOnlyThere) {
  // Expect: place() names the region address for a write to a writable
  // region and keeps the header; serve() then with the placed bytes counts
  // it without copying; a read or a bad key is not placed.
  uint8_t* region = host.add(4, 100, FI_REMOTE_WRITE);
  const std::vector<uint8_t> head = request(rma(RemoteKind::kWrite, 4, host.address(4, 20), 50));
  const proto::Placement p = target.place(head.data(), head.size(), head.size() + 50);
  EXPECT_EQ(p.header, kRemoteOpSize);
  EXPECT_EQ(p.target, region + 20);
  std::memset(region + 20, 0xAB, 50);  // what the engine would have placed
  const proto::Response r = target.serve(1, head.data(), head.size(), 50);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(region[20], 0xAB);
  EXPECT_EQ(host.remote_writes, 1u);
  const std::vector<uint8_t> bad = request(rma(RemoteKind::kWrite, 5, host.address(4), 50));
  EXPECT_EQ(target.place(bad.data(), bad.size(), bad.size() + 50).target, nullptr);
  const std::vector<uint8_t> read = request(rma(RemoteKind::kRead, 4, host.address(4), 50));
  EXPECT_EQ(target.place(read.data(), read.size(), read.size()).target, nullptr);
}

TEST_F(TargetTest, AWriteWithRemoteDataIsRefusedWhileTheCqHasNoRoom) {
  // Expect: the host's CQ takes 2 entries.  Two writes with remote CQ data
  // land and report their data; the third is refused with FI_ENOSPC before
  // a byte of it lands, and its data is not reported (the CQ never grows
  // past its size).  Such a write is not placed either (it would land
  // before it is refused).  A write without remote data still lands.
  host.cq_room = 2;
  uint8_t* region = host.add(6, 64, FI_REMOTE_WRITE);
  const uint8_t data[4] = {1, 2, 3, 4};
  for (int i = 0; i < 3; ++i) {
    RemoteOp op = rma(RemoteKind::kWrite, 6, host.address(6, 8 * i), sizeof(data));
    op.flags = wire::kRemoteHasData;
    op.cq_data = 100 + i;
    EXPECT_EQ(serve(request(op, data, sizeof(data))).status, i < 2 ? 0 : FI_ENOSPC) << i;
  }
  ASSERT_EQ(host.cq_data.size(), 2u);
  EXPECT_EQ(region[16], 0) << "the refused write landed";
  EXPECT_EQ(host.remote_writes, 2u);
  RemoteOp with_data = rma(RemoteKind::kWrite, 6, host.address(6, 32), 16);
  with_data.flags = wire::kRemoteHasData;
  const std::vector<uint8_t> head = request(with_data);
  EXPECT_EQ(target.place(head.data(), head.size(), head.size() + 16).target, nullptr);
  EXPECT_EQ(serve(request(rma(RemoteKind::kWrite, 6, host.address(6, 24), 4), data, 4)).status, 0);
  EXPECT_EQ(region[24], 1);
}

TEST(Target, AReadNoMessageCanCarryIsRefusedBeforeItsBytesAreCopied) {
  // Expect: with reads copied at once (the host may not lend) and messages
  // of at most 1 MiB, a 4 MiB read is answered FI_EMSGSIZE by the target
  // itself, with no buffer of its bytes made; a 1 MiB read is served.
  proto::TransportConfig config;
  config.max_msg_size = 1 << 20;
  proto::Engine engine(config, kMacB, 0, 0xB0B0B0B1);
  MemoryHost host;
  Target target(host, host.table, engine);
  host.lend = false;
  host.add(8, 4 << 20, FI_REMOTE_READ);
  const std::vector<uint8_t> big = request(rma(RemoteKind::kRead, 8, host.address(8), 4 << 20));
  const proto::Response refused = target.serve(1, big.data(), big.size(), 0);
  EXPECT_EQ(refused.status, FI_EMSGSIZE);
  EXPECT_EQ(refused.data.capacity(), 0u);
  EXPECT_EQ(host.remote_reads, 0u);
  const std::vector<uint8_t> fits = request(rma(RemoteKind::kRead, 8, host.address(8), 1 << 20));
  const proto::Response served = target.serve(1, fits.data(), fits.size(), 0);
  EXPECT_EQ(served.status, 0);
  EXPECT_EQ(served.data.size(), size_t{1} << 20);
}

TEST(Target, AReadWithNoMemoryForItsCopyIsAnsweredNotThrown) {
  // Expect: in a process whose address space is nearly used up (RLIMIT_AS),
  // a 512 MiB read that must be copied (the host may not lend) is answered
  // FI_ENOMEM; nothing throws, and the process goes on.  (Run in a child
  // process: the limit is for it alone.  Skipped under sanitizers, whose
  // allocators abort instead of failing.)
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "sanitizer allocators abort on a failed allocation";
#endif
  const auto child = [] {
    constexpr size_t kRead = size_t{512} << 20;
    MemoryHost host;
    host.lend = false;
    void* mapped = mmap(nullptr, kRead, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mapped == MAP_FAILED) std::_Exit(3);
    const uint64_t base = reinterpret_cast<uint64_t>(mapped);
    host.add_external(9, base, kRead);
    proto::Engine engine(proto::TransportConfig{}, kMacB, 0, 0xB0B0B0B2);
    Target target(host, host.table, engine);
    const std::vector<uint8_t> read = request(rma(RemoteKind::kRead, 9, base, kRead));
    if (!limit_address_space(64 << 20)) std::_Exit(4);
    const proto::Response r = target.serve(1, read.data(), read.size(), 0);
    std::_Exit(r.status == FI_ENOMEM ? 0 : 5);
  };
  EXPECT_EXIT(child(), ::testing::ExitedWithCode(0), "");
}

TEST_F(TargetTest, AtomicsApplyAndReturnTheOldValues) {
  // Expect: a fetch-add returns the old values and adds; a compare-swap
  // swaps where equal only; a base atomic returns nothing and counts as a
  // remote write, the fetching ones as remote reads; each modifying one is
  // a region event.
  auto* words = reinterpret_cast<uint64_t*>(
      host.add(5, 4 * sizeof(uint64_t), FI_REMOTE_READ | FI_REMOTE_WRITE));
  words[0] = 10;
  words[1] = 20;
  const uint64_t add[2] = {1, 2};
  proto::Response r =
      serve(request(atomic_op(RemoteKind::kFetchAtomic, FI_UINT64, FI_SUM, 5, host.address(5), 2),
                    add, sizeof(add)));
  ASSERT_EQ(r.status, 0);
  ASSERT_EQ(r.data.size(), 2 * sizeof(uint64_t));
  uint64_t old[2];
  std::memcpy(old, r.data.data(), sizeof(old));
  EXPECT_EQ(old[0], 10u);
  EXPECT_EQ(old[1], 20u);
  EXPECT_EQ(words[0], 11u);
  EXPECT_EQ(words[1], 22u);

  const uint64_t swap[4] = {100, 200, /*compare*/ 11, 99};
  r = serve(
      request(atomic_op(RemoteKind::kCompareAtomic, FI_UINT64, FI_CSWAP, 5, host.address(5), 2),
              swap, sizeof(swap)));
  ASSERT_EQ(r.status, 0);
  EXPECT_EQ(words[0], 100u) << "equal to its compare value: swapped";
  EXPECT_EQ(words[1], 22u) << "not equal: kept";

  const uint64_t maximum = 500;
  r = serve(request(atomic_op(RemoteKind::kAtomic, FI_UINT64, FI_MAX, 5, host.address(5, 16), 1),
                    &maximum, sizeof(maximum)));
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(r.data.empty());
  EXPECT_EQ(words[2], 500u);
  EXPECT_EQ(host.remote_writes, 1u);
  EXPECT_EQ(host.remote_reads, 2u);
  EXPECT_EQ(host.regions[5].events, 3u);
}

TEST_F(TargetTest, BadAtomicsAreRefusedWithTheirReason) {
  // Expect: count 0 is FI_EINVAL, more than fi_atomicvalid's count
  // FI_EMSGSIZE, an op the datatype does not have FI_EOPNOTSUPP, operands
  // of the wrong size FI_EINVAL, an endpoint without FI_ATOMIC FI_EOPNOTSUPP,
  // an unaligned target refused; nothing changes.
  auto* words =
      reinterpret_cast<uint64_t*>(host.add(6, 64 << 10, FI_REMOTE_READ | FI_REMOTE_WRITE));
  const uint64_t one = 1;
  EXPECT_EQ(serve(request(atomic_op(RemoteKind::kAtomic, FI_UINT64, FI_SUM, 6, host.address(6), 0),
                          &one, 0))
                .status,
            FI_EINVAL);
  size_t size = 0, max_count = 0;
  ASSERT_EQ(atomic_limits(FI_UINT64, FI_SUM, atomic::Class::kBase, &size, &max_count), 0);
  std::vector<uint64_t> many(max_count + 1, 1);
  EXPECT_EQ(serve(request(atomic_op(RemoteKind::kAtomic, FI_UINT64, FI_SUM, 6, host.address(6),
                                    max_count + 1),
                          many.data(), many.size() * sizeof(uint64_t)))
                .status,
            FI_EMSGSIZE);
  const double half = 0.5;
  EXPECT_EQ(serve(request(atomic_op(RemoteKind::kAtomic, FI_DOUBLE, FI_BAND, 6, host.address(6), 1),
                          &half, sizeof(half)))
                .status,
            FI_EOPNOTSUPP);
  EXPECT_EQ(serve(request(atomic_op(RemoteKind::kAtomic, FI_UINT64, FI_SUM, 6, host.address(6), 1),
                          &one, 4))
                .status,
            FI_EINVAL);
  EXPECT_NE(
      serve(request(atomic_op(RemoteKind::kAtomic, FI_UINT64, FI_SUM, 6, host.address(6, 1), 1),
                    &one, sizeof(one)))
          .status,
      0);
  host.capabilities = FI_RMA | FI_REMOTE_READ | FI_REMOTE_WRITE;
  proto::Engine other(proto::TransportConfig{}, kMacC, 0, 0xC0C0C0C0);
  Target no_atomics(host, host.table, other);
  const std::vector<uint8_t> sum = request(
      atomic_op(RemoteKind::kAtomic, FI_UINT64, FI_SUM, 6, host.address(6), 1), &one, sizeof(one));
  EXPECT_EQ(no_atomics.serve(7, sum.data(), sum.size(), 0).status, FI_EOPNOTSUPP);
  EXPECT_EQ(words[0], 0u);
  EXPECT_EQ(host.remote_writes + host.remote_reads, 0u);
}

TEST(TargetOverTheTransport, FetchAddsRunOnceWhenTheirAnswersAreLost) {
  // Expect: 500 fetch-adds of 1 from engine A to a Target at engine B, over a
  // link that drops 20 % and duplicates 5 % of the frames (answers
  // included): every request completes without error, the old values
  // fetched are 0..499 each once, and the word ends at 500.
  proto::sim::LossyLink link(21);
  link.faults().drop = 0.20;
  link.faults().duplicate = 0.05;
  const size_t a = link.add(proto::TransportConfig{}, kMacA, 0, 0xA1A1A1A1);
  const size_t b = link.add(proto::TransportConfig{}, kMacB, 0, 0xB1B1B1B1);
  MemoryHost host;
  auto* word = reinterpret_cast<uint64_t*>(host.add(7, 8, FI_REMOTE_READ | FI_REMOTE_WRITE));
  Target target(host, host.table, link.engine(b));

  constexpr size_t kOps = 500;
  const uint64_t one = 1;
  const std::vector<uint8_t> header =
      request(atomic_op(RemoteKind::kFetchAtomic, FI_UINT64, FI_SUM, 7, host.address(7), 1), &one,
              sizeof(one));
  std::vector<uint64_t> fetched(kOps, ~uint64_t{0});
  size_t sent = 0, done = 0;
  while (done < kOps && link.now() < 60'000'000'000ull) {
    while (sent < kOps && sent - done < 16) {
      iovec iov{const_cast<uint8_t*>(header.data()), header.size()};
      proto::SendRequest s;
      s.iov = &iov;
      s.iov_count = 1;
      s.copy = true;
      s.request = true;
      s.context = reinterpret_cast<void*>(sent);
      s.response_iov[0] = {&fetched[sent], sizeof(uint64_t)};
      s.response_iov_count = 1;
      ASSERT_EQ(link.engine(a).send(link.address(b), s, link.now()), 0);
      ++sent;
    }
    link.step();
    for (const proto::Completion& c : link.engine(a).completions()) {
      EXPECT_EQ(c.error, 0) << "request " << reinterpret_cast<uintptr_t>(c.context);
      ++done;
    }
    link.engine(a).completions().clear();
    link.engine(b).completions().clear();
  }
  ASSERT_EQ(done, kOps);
  EXPECT_EQ(*word, kOps);
  std::vector<bool> seen(kOps, false);
  for (uint64_t value : fetched) {
    ASSERT_LT(value, kOps);
    EXPECT_FALSE(seen[value]) << value << " fetched twice";
    seen[value] = true;
  }
  EXPECT_GT(link.counters().dropped, 0u);
}

// Engine A on the in-memory link sends requests to a Target at engine B
// over plain memory; while `lose_responses` is on, every RESPONSE frame B
// sends is lost (so B's answers are resent later).
class LentReadLink {
 public:
  static constexpr size_t kLength = 64 << 10;

  explicit LentReadLink(uint64_t seed, const proto::TransportConfig& config = {}) : link(seed) {
    a = link.add(config, kMacA, 0, static_cast<uint32_t>(0xA0000000 + seed));
    b = link.add(config, kMacB, 0, static_cast<uint32_t>(0xB0000000 + seed));
    link.keep = [this](size_t from, const wire::FrameHeader& h) {
      return !(lose_responses && from == b &&
               h.opcode == static_cast<uint8_t>(wire::Opcode::kResponse));
    };
    target = std::make_unique<Target>(host, host.table, link.engine(b));
  }
  // Region `key` of kLength bytes holding a pattern, also kept in `held`.
  uint8_t* region(uint64_t key, uint64_t access) {
    uint8_t* bytes = host.add(key, kLength, access);
    held.resize(kLength);
    for (size_t i = 0; i < kLength; ++i) held[i] = static_cast<uint8_t>(i * 7 + i / 251 + key);
    std::memcpy(bytes, held.data(), kLength);
    return bytes;
  }
  // A request from A to B (or `from` to `to`), its answer into `answer`.
  void send(const std::vector<uint8_t>& bytes, std::vector<uint8_t>* answer = nullptr) {
    send_from(a, b, bytes, answer != nullptr ? answer->data() : nullptr,
              answer != nullptr ? answer->size() : 0, answer);
  }
  void send_from(size_t from, size_t to, const std::vector<uint8_t>& bytes, void* answer,
                 size_t length, void* context = nullptr) {
    iovec iov{const_cast<uint8_t*>(bytes.data()), bytes.size()};
    proto::SendRequest s;
    s.iov = &iov;
    s.iov_count = 1;
    s.copy = true;
    s.request = true;
    s.context = context;
    s.response_iov[0] = {answer, length};
    s.response_iov_count = answer != nullptr;
    ASSERT_EQ(link.engine(from).send(link.address(to), s, link.now()), 0);
  }
  // A message from A to B, and a receive at B into `bytes`.
  void receive_into(uint8_t* bytes) {
    proto::RecvRequest into;
    into.iov[0] = {bytes, kLength};
    into.iov_count = 1;
    ASSERT_EQ(link.engine(b).post_recv(into, link.now()), 0);
  }
  void send_message(const std::vector<uint8_t>& message) {
    iovec iov{const_cast<uint8_t*>(message.data()), message.size()};
    proto::SendRequest m;
    m.iov = &iov;
    m.iov_count = 1;
    ASSERT_EQ(link.engine(a).send(link.address(b), m, link.now()), 0);
  }
  // Steps until A (or `who`) has `count` completions (60 s simulated at most).
  std::vector<proto::Completion> finish(size_t count, std::optional<size_t> who = {}) {
    std::vector<proto::Completion> done, &out = link.engine(who.value_or(a)).completions();
    for (; done.size() < count && link.now() < 60'000'000'000ull; out.clear()) {
      link.step();
      done.insert(done.end(), out.begin(), out.end());
    }
    return done;
  }

  proto::sim::LossyLink link;
  size_t a = 0, b = 0;
  bool lose_responses = true;
  MemoryHost host;
  std::unique_ptr<Target> target;
  std::vector<uint8_t> held;
};

TEST(TargetOverTheTransport, AReadRecalledFromAClosingRegionStillReturnsWhatTheRegionHeld) {
  // A 64 KiB read is answered from the region itself; its response frames
  // are all lost, so they are resent later.  Before that the region is
  // "closed": recall_lent takes a copy of what it lends, and the memory is
  // then overwritten, as an application may reuse it once fi_close returns.
  // Expect: recall_lent finds the one response; the read completes without
  // error with the bytes the region held, not the ones written after.
  LentReadLink t(33);
  uint8_t* region = t.region(9, FI_REMOTE_READ);
  std::vector<uint8_t> got(LentReadLink::kLength, 0);
  t.send(request(rma(RemoteKind::kRead, 9, t.host.address(9), LentReadLink::kLength)), &got);
  for (int step = 0; step < 2000 && t.host.remote_reads == 0; ++step) t.link.step();
  ASSERT_EQ(t.host.remote_reads, 1u);
  for (int step = 0; step < 20; ++step) t.link.step();  // its frames go, and are lost
  ASSERT_GT(t.link.counters().dropped, 0u);
  ASSERT_TRUE(t.link.engine(t.a).completions().empty());

  EXPECT_EQ(t.link.engine(t.b).recall_lent(region, LentReadLink::kLength), 1u);
  std::memset(region, 0xEE, LentReadLink::kLength);
  t.lose_responses = false;
  const std::vector<proto::Completion> done = t.finish(1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].error, 0);
  EXPECT_TRUE(got == t.held) << "the read returned bytes written after its region was closed";
  // Nothing else lent: a second recall finds nothing.
  EXPECT_EQ(t.link.engine(t.b).recall_lent(region, LentReadLink::kLength), 0u);
}

TEST(TargetOverTheTransport, AWriteAfterAReadLeavesTheReadItsBytes) {
  // A 64 KiB read, then a 64 KiB write of the same bytes, from one
  // initiator.  The read's answer (sent from the region) is lost until the
  // write has landed, so its segments are resent after the region changed.
  // Expect: the requests keep their order: the read returns what the region
  // held before the write, and the region ends up holding the write.
  LentReadLink t(34);
  uint8_t* region = t.region(10, FI_REMOTE_READ | FI_REMOTE_WRITE);
  const std::vector<uint8_t> written(LentReadLink::kLength, 0xEE);
  std::vector<uint8_t> got(LentReadLink::kLength, 0);
  t.send(request(rma(RemoteKind::kRead, 10, t.host.address(10), LentReadLink::kLength)), &got);
  t.send(request(rma(RemoteKind::kWrite, 10, t.host.address(10), LentReadLink::kLength),
                 written.data(), LentReadLink::kLength));
  for (int step = 0; step < 4000 && t.host.remote_writes == 0; ++step) t.link.step();
  ASSERT_EQ(t.host.remote_writes, 1u);
  ASSERT_TRUE(t.link.engine(t.a).completions().empty());
  t.lose_responses = false;
  const std::vector<proto::Completion> done = t.finish(2);
  ASSERT_EQ(done.size(), 2u);
  for (const proto::Completion& c : done) EXPECT_EQ(c.error, 0);
  EXPECT_TRUE(got == t.held) << "the read returned bytes of the write posted after it";
  EXPECT_EQ(std::memcmp(region, written.data(), LentReadLink::kLength), 0);
}

TEST(TargetOverTheTransport, AMessageReceivedIntoAReadsBytesLeavesTheReadItsBytes) {
  // A 64 KiB read, then a 64 KiB message from the same initiator, which the
  // target receives into the very bytes being read.  The read's answer (sent
  // from the region) is lost until the message has landed.
  // Expect: the read returns what the region held before the message; the
  // receive holds the message.
  LentReadLink t(35);
  uint8_t* region = t.region(11, FI_REMOTE_READ);
  t.receive_into(region);
  std::vector<uint8_t> got(LentReadLink::kLength, 0);
  t.send(request(rma(RemoteKind::kRead, 11, t.host.address(11), LentReadLink::kLength)), &got);
  std::vector<uint8_t> message(LentReadLink::kLength, 0x5A);
  t.send_message(message);
  bool received = false;
  for (int step = 0; step < 4000 && !received; ++step) {
    t.link.step();
    for (const proto::Completion& c : t.link.engine(t.b).completions())
      received = received || c.kind == proto::Completion::Kind::kRecv;
    t.link.engine(t.b).completions().clear();
  }
  ASSERT_TRUE(received);
  ASSERT_EQ(t.host.remote_reads, 1u);
  t.lose_responses = false;
  const std::vector<proto::Completion> done = t.finish(2);  // the message's send, the read
  ASSERT_EQ(done.size(), 2u);
  for (const proto::Completion& c : done) EXPECT_EQ(c.error, 0);
  EXPECT_TRUE(got == t.held) << "the read returned bytes of the message sent after it";
  EXPECT_EQ(std::memcmp(region, message.data(), LentReadLink::kLength), 0);
}

TEST(TargetOverTheTransport, AMessagePulledIntoBytesLentToAReadRecallsThem) {
  // C reads B's region (its answer lent, and lost); then A sends a message
  // pulled (rendezvous) into those bytes: the answer to B's pull recalls
  // the read as an eager message does.
  // Expect: the message lands; C's read returns what the region held.
  proto::TransportConfig config;
  config.rendezvous_bytes = 16 << 10;
  LentReadLink t(37, config);
  const size_t c = t.link.add(config, kMacC, 0, 0xC0000025);
  uint8_t* region = t.region(13, FI_REMOTE_READ);
  t.receive_into(region);
  std::vector<uint8_t> got(LentReadLink::kLength, 0);
  t.send_from(c, t.b, request(rma(RemoteKind::kRead, 13, t.host.address(13), got.size())),
              got.data(), got.size());
  for (int step = 0; step < 2000 && t.host.remote_reads == 0; ++step) t.link.step();
  const std::vector<uint8_t> message(LentReadLink::kLength, 0x5A);
  t.send_message(message);
  for (int step = 0; step < 4000 && region[got.size() - 1] != 0x5A; ++step) t.link.step();
  ASSERT_EQ(region[got.size() - 1], 0x5A) << "the message never landed";
  t.lose_responses = false;
  ASSERT_EQ(t.finish(1, c).size(), 1u);
  EXPECT_TRUE(got == t.held) << "the read returned bytes of the message received after it";
}

TEST(TargetOverTheTransport, AnAnswerToOurOwnReadLeavesAPeersLentReadAlone) {
  // C reads B's region (its answer lent, and lost); then B reads A's region
  // into those bytes: two initiators' operations, which nothing orders
  // (fi_rma(3)), so B's answer takes no copy of the read it lends.
  // Expect: B's read completes with A's bytes; B still lends C's read (a
  // recall finds it); C's read completes once its answer gets through.
  LentReadLink t(38);
  const size_t c = t.link.add(proto::TransportConfig{}, kMacC, 0, 0xC0000026);
  uint8_t* region = t.region(14, FI_REMOTE_READ);
  std::vector<uint8_t> got(LentReadLink::kLength, 0);
  t.send_from(c, t.b, request(rma(RemoteKind::kRead, 14, t.host.address(14), got.size())),
              got.data(), got.size());
  for (int step = 0; step < 2000 && t.host.remote_reads == 0; ++step) t.link.step();
  ASSERT_EQ(t.host.remote_reads, 1u);
  MemoryHost a_host;
  Target a_target(a_host, a_host.table, t.link.engine(t.a));
  std::memset(a_host.add(15, got.size(), FI_REMOTE_READ), 0x3C, got.size());
  t.send_from(t.b, t.a, request(rma(RemoteKind::kRead, 15, a_host.address(15), got.size())), region,
              got.size());
  const std::vector<proto::Completion> answered = t.finish(1, t.b);
  ASSERT_EQ(answered.size(), 1u);
  EXPECT_EQ(answered[0].error, 0);
  EXPECT_EQ(region[0], 0x3C);
  EXPECT_EQ(region[got.size() - 1], 0x3C);
  EXPECT_EQ(t.link.engine(t.b).recall_lent(region, got.size()), 1u)
      << "the answer took a copy of the read B lends";
  t.lose_responses = false;
  const std::vector<proto::Completion> done = t.finish(1, c);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].error, 0);
}

TEST(TargetOverTheTransport, AWriteWhoseRegionClosesMidwayPlacesNothingMoreAndFails) {
  // A 64 KiB write placed into its region as it arrives, through a
  // bottleneck, so it is half in when the region "closes": forget_placements,
  // then the memory is reused (filled with 0x11), as an application may once
  // fi_close returned.
  // Expect: forget_placements finds the one write; no byte of it lands after
  // that; the write fails at its initiator with FI_EKEYREJECTED, and the
  // target's handler never ran for it (no remote write counted).
  LentReadLink t(36);
  t.lose_responses = false;
  t.link.set_bottleneck(t.b, 1, 1024);
  uint8_t* region = t.host.add(12, LentReadLink::kLength, FI_REMOTE_WRITE);
  const std::vector<uint8_t> data(LentReadLink::kLength, 0x5A);
  t.send(request(rma(RemoteKind::kWrite, 12, t.host.address(12), LentReadLink::kLength),
                 data.data(), LentReadLink::kLength));
  for (int step = 0; step < 4000 && region[0] != 0x5A; ++step) t.link.step();
  ASSERT_EQ(region[0], 0x5A) << "the write's first bytes never arrived";
  ASSERT_EQ(region[LentReadLink::kLength - 1], 0) << "the write arrived whole before the close";

  EXPECT_EQ(t.link.engine(t.b).forget_placements(region, LentReadLink::kLength), 1u);
  std::memset(region, 0x11, LentReadLink::kLength);
  const std::vector<proto::Completion> done = t.finish(1);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].error, FI_EKEYREJECTED);
  EXPECT_EQ(t.host.remote_writes, 0u);
  size_t written_after = 0;
  for (size_t i = 0; i < LentReadLink::kLength; ++i) written_after += region[i] != 0x11;
  EXPECT_EQ(written_after, 0u) << "bytes of the write landed after its region closed";
}

TEST(TargetOverTheTransport, AReadServedWhileAWriteIsPlacedKeepsWhatItRead) {
  // A 64 KiB write from A is placed into its region as it arrives; its
  // segments past the first 16 KiB are lost for a while.  Meanwhile C reads
  // the whole region: served from the region itself (lent), its answer
  // lost until the write is through, so resent after the write's later
  // segments landed on the bytes it lends.
  // Expect: C's read returns the region as it was when the read was
  // served (the write's first part, then the old bytes), not the write's
  // later segments: each placed segment recalls what is lent from its bytes.
  LentReadLink t(37);
  const uint8_t mac_c[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x3C};
  const size_t c = t.link.add(proto::TransportConfig{}, mac_c, 0, 0xC0000037);
  bool hold_write = true;
  t.link.keep = [&](size_t from, const wire::FrameHeader& h) {
    if (from == t.a && hold_write && h.opcode == static_cast<uint8_t>(wire::Opcode::kRequest) &&
        h.offset >= (16 << 10))
      return false;
    return !(t.lose_responses && from == t.b &&
             h.opcode == static_cast<uint8_t>(wire::Opcode::kResponse));
  };
  uint8_t* region = t.region(13, FI_REMOTE_READ | FI_REMOTE_WRITE);
  const std::vector<uint8_t> data(LentReadLink::kLength, 0x5A);
  t.send(request(rma(RemoteKind::kWrite, 13, t.host.address(13), LentReadLink::kLength),
                 data.data(), LentReadLink::kLength));
  for (int step = 0; step < 4000 && region[0] != 0x5A; ++step) t.link.step();
  ASSERT_EQ(region[0], 0x5A) << "the write's first bytes never arrived";
  ASSERT_NE(region[LentReadLink::kLength - 1], 0x5A) << "the write arrived whole before the read";

  std::vector<uint8_t> got(LentReadLink::kLength, 0);
  const std::vector<uint8_t> read =
      request(rma(RemoteKind::kRead, 13, t.host.address(13), LentReadLink::kLength));
  iovec iov{const_cast<uint8_t*>(read.data()), read.size()};
  proto::SendRequest s;
  s.iov = &iov;
  s.iov_count = 1;
  s.copy = true;
  s.request = true;
  s.response_iov[0] = {got.data(), got.size()};
  s.response_iov_count = 1;
  ASSERT_EQ(t.link.engine(c).send(t.link.address(t.b), s, t.link.now()), 0);
  std::vector<uint8_t> when_read;
  for (int step = 0; step < 4000 && t.host.remote_reads == 0; ++step) t.link.step();
  ASSERT_EQ(t.host.remote_reads, 1u);
  when_read.assign(region, region + LentReadLink::kLength);
  ASSERT_NE(when_read.back(), 0x5A) << "the write was whole when the read was served";
  hold_write = false;
  for (const uint64_t end = t.link.now() + 10'000'000'000ull;
       t.link.now() < end && t.host.remote_writes == 0;)
    t.link.step();
  ASSERT_EQ(t.host.remote_writes, 1u);
  t.lose_responses = false;
  bool read_done = false;
  for (const uint64_t end = t.link.now() + 10'000'000'000ull; t.link.now() < end && !read_done;) {
    t.link.step();
    for (const proto::Completion& done : t.link.engine(c).completions()) {
      EXPECT_EQ(done.error, 0);
      read_done = true;
    }
    t.link.engine(c).completions().clear();
  }
  ASSERT_TRUE(read_done);
  EXPECT_TRUE(got == when_read) << "the read returned bytes the write placed after it was served";
}

}  // namespace
}  // namespace ofi_dpdk::remote
