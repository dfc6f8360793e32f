// Named AVs (fi_av(3) name, map_addr, FI_READ; FI_SHARED_AV) through stock
// libfabric on one net_ring port: two opens of one name share the indices
// and each gets map_addr pointing at its mapping of the fi_addr array,
// an endpoint bound to a read-only view sends to an index another handle
// inserted and is reported by FI_SOURCE under the index the other handle
// gave it, read-only views refuse changes, an object others may write is
// refused, a writers' lock held for good costs an insert a bounded wait,
// and fi_getinfo offers FI_SHARED_AV and FI_AV_USER_ID.  Two processes:
// test/multiproc.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "lib/av/address.h"
#include "lib/av/shared_table.h"
#include "test/support/messaging.h"

namespace ofi_dpdk::test {
namespace {

std::string unique_name() {
  static int n = 0;
  return "ofi-av-shared-" + std::to_string(getpid()) + "-" + std::to_string(n++);
}

bool object_exists(const std::string& name) {
  const int fd = shm_open(("/fi_dpdk_av." + name).c_str(), O_RDONLY, 0);
  if (fd >= 0) close(fd);
  return fd >= 0;
}

class AvSharedTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(domain_.open(nullptr, FI_MSG | FI_SOURCE), 0); }
  void TearDown() override {
    for (auto it = avs_.rbegin(); it != avs_.rend(); ++it) EXPECT_EQ(fi_close(&(*it)->fid), 0);
    domain_.close();
  }

  // Opens `name` (closed in TearDown); returns fi_av_open's result.
  int open_named(const std::string& name, uint64_t flags, fid_av** out, size_t count = 0,
                 void** map_addr = nullptr) {
    fi_av_attr attr{};
    attr.type = FI_AV_TABLE;
    attr.name = name.c_str();
    attr.flags = flags;
    attr.count = count;
    if (map_addr != nullptr) attr.map_addr = *map_addr;
    const int ret = fi_av_open(domain_.domain, &attr, out, nullptr);
    if (ret == 0) avs_.push_back(*out);
    if (ret == 0 && map_addr != nullptr) *map_addr = attr.map_addr;
    return ret;
  }

  std::optional<av::Address> lookup(fid_av* av, fi_addr_t fi_addr) {
    uint8_t bytes[av::kNativeAddressSize];
    size_t length = sizeof(bytes);
    if (fi_av_lookup(av, fi_addr, bytes, &length) != 0) return std::nullopt;
    return av::from_native(bytes, length);
  }

  // An endpoint bound to `av`, which need not take inserts (FI_READ).
  int open_endpoint(TestEndpoint& e, fid_av* av) {
    fi_cq_attr attr{};
    attr.format = FI_CQ_FORMAT_DATA;
    int ret;
    if ((ret = fi_cq_open(domain_.domain, &attr, &e.tx_cq, nullptr))) return ret;
    if ((ret = fi_cq_open(domain_.domain, &attr, &e.rx_cq, nullptr))) return ret;
    if ((ret = fi_endpoint(domain_.domain, domain_.info, &e.ep, nullptr))) return ret;
    if ((ret = fi_ep_bind(e.ep, &av->fid, 0))) return ret;
    if ((ret = fi_ep_bind(e.ep, &e.tx_cq->fid, FI_TRANSMIT))) return ret;
    if ((ret = fi_ep_bind(e.ep, &e.rx_cq->fid, FI_RECV))) return ret;
    if ((ret = fi_enable(e.ep))) return ret;
    e.name_len = sizeof(e.name);
    return fi_getname(&e.ep->fid, e.name, &e.name_len);
  }

  TestDomain domain_;
  std::vector<fid_av*> avs_;
};

TEST_F(AvSharedTest, TwoOpensOfOneNameShareIndicesAndMapAddr) {
  const std::string name = unique_name();
  fid_av *first = nullptr, *second = nullptr;
  void* first_map = nullptr;
  ASSERT_EQ(open_named(name, 0, &first, 0, &first_map), 0);
  EXPECT_NE(first_map, nullptr) << "fi_av(3): map_addr 0 comes back as the one used";
  const av::Address a = *av::from_string("fi_dpdk://02:00:00:00:00:0a/1");
  const av::Address b = *av::from_string("fi_dpdk://02:00:00:00:00:0b/2");
  uint8_t two[2][av::kNativeAddressSize];
  av::to_native(a, two[0]);
  av::to_native(b, two[1]);
  fi_addr_t fi_addrs[2];
  ASSERT_EQ(fi_av_insert(first, two, 2, fi_addrs, 0, nullptr), 2);
  EXPECT_EQ(fi_addrs[0], 0u);
  EXPECT_EQ(fi_addrs[1], 1u);

  void* second_map = nullptr;
  ASSERT_EQ(open_named(name, 0, &second, 0, &second_map), 0);
  // map_addr comes back as where each opener maps the table's fi_addr
  // array: element i is i while index i is in use, in every opener.
  ASSERT_NE(second_map, nullptr);
  const auto* first_array = static_cast<const fi_addr_t*>(first_map);
  const auto* second_array = static_cast<const fi_addr_t*>(second_map);
  EXPECT_EQ(first_array[0], 0u);
  EXPECT_EQ(second_array[1], 1u);
  EXPECT_EQ(second_array[2], FI_ADDR_NOTAVAIL);
  EXPECT_EQ(lookup(second, 0), a);
  EXPECT_EQ(lookup(second, 1), b);
  // The next index is the same whichever handle inserts, and a removal
  // through one is seen by the other.
  fi_addr_t next = 99;
  ASSERT_EQ(fi_av_insertsvc(second, "02:00:00:00:00:0c", "3", &next, 0, nullptr), 1);
  EXPECT_EQ(next, 2u);
  EXPECT_EQ(lookup(first, 2), *av::from_string("fi_dpdk://02:00:00:00:00:0c/3"));
  EXPECT_EQ(first_array[2], 2u);
  ASSERT_EQ(fi_av_remove(first, &fi_addrs[0], 1, 0), 0);
  EXPECT_EQ(lookup(second, 0), std::nullopt);
  EXPECT_EQ(second_array[0], FI_ADDR_NOTAVAIL);
  ASSERT_EQ(fi_av_insert(second, two[1], 1, &next, 0, nullptr), 1);
  EXPECT_EQ(next, 0u) << "the lowest unused index, freed by the other handle";
  // A map_addr an opener gives is accepted; the indices are the same.
  fid_av* third = nullptr;
  void* given = reinterpret_cast<void*>(0x1000);
  ASSERT_EQ(open_named(name, FI_READ, &third, 0, &given), 0);
  EXPECT_EQ(given, reinterpret_cast<void*>(0x1000)) << "a map_addr given is left as it is";
  EXPECT_EQ(lookup(third, 0), b);
}

// The case the issue names: one handle inserts, an endpoint bound to a
// FI_READ view of the same name sends to that index, and the receiver's
// FI_SOURCE names the sender by the index the writable handle gave it.
TEST_F(AvSharedTest, AReadOnlyViewSendsToIndicesAnotherHandleInserted) {
  const std::string name = unique_name();
  fid_av *writer = nullptr, *reader = nullptr;
  ASSERT_EQ(open_named(name, 0, &writer), 0);
  ASSERT_EQ(open_named(name, FI_READ, &reader), 0);
  TestEndpoint receiver, sender;
  ASSERT_EQ(open_endpoint(receiver, writer), 0);
  ASSERT_EQ(open_endpoint(sender, reader), 0);
  // Indices 0..2 are other peers, so the indices tested are not trivially 0.
  fi_addr_t filler[3];
  ASSERT_EQ(fi_av_insertsym(writer, "02:00:00:00:01:00", 3, "1", 1, filler, 0, nullptr), 3);
  ASSERT_EQ(fi_av_insert(writer, receiver.name, 1, &receiver.addr, 0, nullptr), 1);
  ASSERT_EQ(fi_av_insert(writer, sender.name, 1, &sender.addr, 0, nullptr), 1);
  EXPECT_EQ(receiver.addr, 3u);
  EXPECT_EQ(sender.addr, 4u);
  // Inserted after the reader opened: the reader's endpoint resolves it.
  char buffer[16] = {};
  ASSERT_EQ(fi_recv(receiver.ep, buffer, sizeof(buffer), nullptr, FI_ADDR_UNSPEC, nullptr), 0);
  ASSERT_EQ(fi_send(sender.ep, "shared", 6, nullptr, receiver.addr, nullptr), 0);
  fi_cq_data_entry sent, got;
  fi_addr_t source = 12345;
  ssize_t tx = -FI_EAGAIN, rx = -FI_EAGAIN;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while ((tx == -FI_EAGAIN || rx == -FI_EAGAIN) && std::chrono::steady_clock::now() < deadline) {
    if (tx == -FI_EAGAIN) tx = fi_cq_read(sender.tx_cq, &sent, 1);
    if (rx == -FI_EAGAIN) rx = fi_cq_readfrom(receiver.rx_cq, &got, 1, &source);
  }
  ASSERT_EQ(tx, 1);
  ASSERT_EQ(rx, 1);
  EXPECT_EQ(std::string(buffer, got.len), "shared");
  EXPECT_EQ(source, sender.addr);
  // Removed through the writer: the reader's endpoint may no longer use it.
  ASSERT_EQ(fi_av_remove(writer, &receiver.addr, 1, 0), 0);
  EXPECT_EQ(fi_send(sender.ep, "gone", 4, nullptr, receiver.addr, nullptr), -FI_EINVAL);
  sender.close();
  receiver.close();
}

TEST_F(AvSharedTest, ReadOnlyViewsRefuseChanges) {
  const std::string name = unique_name();
  fid_av* reader = nullptr;
  EXPECT_EQ(open_named(name, FI_READ, &reader), -FI_ENOENT)
      << "fi_av(3): a read-only AV must exist";
  fid_av* writer = nullptr;
  ASSERT_EQ(open_named(name, 0, &writer), 0);
  ASSERT_EQ(open_named(name, FI_READ, &reader), 0);
  uint8_t native[av::kNativeAddressSize];
  av::to_native(*av::from_string("fi_dpdk://02:00:00:00:00:01/1"), native);
  fi_addr_t fi_addr = 99;
  EXPECT_EQ(fi_av_insert(reader, native, 1, &fi_addr, 0, nullptr), -FI_EACCES);
  EXPECT_EQ(fi_addr, 99u) << "nothing written";
  EXPECT_EQ(fi_av_insertsvc(reader, "02:00:00:00:00:01", "1", &fi_addr, 0, nullptr), -FI_EACCES);
  EXPECT_EQ(fi_av_insertsym(reader, "02:00:00:00:00:01", 1, "1", 1, &fi_addr, 0, nullptr),
            -FI_EACCES);
  ASSERT_EQ(fi_av_insert(writer, native, 1, &fi_addr, 0, nullptr), 1);
  EXPECT_EQ(fi_av_remove(reader, &fi_addr, 1, 0), -FI_EACCES);
  EXPECT_TRUE(lookup(reader, fi_addr)) << "still there";
  char text[64];
  size_t length = sizeof(text);
  EXPECT_EQ(fi_av_straddr(reader, native, text, &length), text);
}

TEST_F(AvSharedTest, BadNamesAndSizesAreRefused) {
  fid_av* av = nullptr;
  EXPECT_EQ(open_named("a/b", 0, &av), -FI_EINVAL);
  EXPECT_EQ(open_named("", 0, &av), -FI_EINVAL);
  EXPECT_EQ(open_named(unique_name(), 0, &av, size_t{1} << 40), -FI_EINVAL)
      << "a shared AV is sized by count: beyond the limit is an error, not a "
         "hint";
  const std::string name = unique_name();
  ASSERT_EQ(open_named(name, 0, &av, 8), 0);
  fid_av* bigger = nullptr;
  EXPECT_EQ(open_named(name, 0, &bigger, 9), -FI_EINVAL) << "holds 8 entries";
  EXPECT_EQ(open_named(name, FI_READ, &bigger, 8), 0);
  // Full at 8: the ninth address fails like any failed address.
  uint8_t native[av::kNativeAddressSize];
  av::to_native(*av::from_string("fi_dpdk://02:00:00:00:00:01/1"), native);
  for (int i = 0; i < 8; ++i) ASSERT_EQ(fi_av_insert(av, native, 1, nullptr, 0, nullptr), 1);
  int status = -1;
  fi_addr_t fi_addr = 0;
  EXPECT_EQ(fi_av_insert(av, native, 1, &fi_addr, FI_SYNC_ERR, &status), 0);
  EXPECT_EQ(status, FI_ENOSPC);
  EXPECT_EQ(fi_addr, FI_ADDR_NOTAVAIL);
}

// Who removes the object: the last handle to close, in any process.
TEST_F(AvSharedTest, TheLastCloseRemovesTheName) {
  const std::string name = unique_name();
  fid_av *a = nullptr, *b = nullptr;
  ASSERT_EQ(open_named(name, 0, &a), 0);
  ASSERT_EQ(open_named(name, FI_READ, &b), 0);
  EXPECT_TRUE(object_exists(name));
  ASSERT_EQ(fi_close(&a->fid), 0);
  avs_.erase(avs_.begin());
  EXPECT_TRUE(object_exists(name));
  ASSERT_EQ(fi_close(&b->fid), 0);
  avs_.clear();
  EXPECT_FALSE(object_exists(name));
  fid_av* c = nullptr;
  EXPECT_EQ(open_named(name, FI_READ, &c), -FI_ENOENT);
}

// An object of ours that others may write (here: made so after it was
// created) is refused to the next opener with -FI_EACCES.
TEST_F(AvSharedTest, AnObjectOthersMayWriteIsRefused) {
  const std::string name = unique_name();
  fid_av *first = nullptr, *second = nullptr;
  ASSERT_EQ(open_named(name, 0, &first), 0);
  const int fd = shm_open(("/fi_dpdk_av." + name).c_str(), O_RDONLY, 0);
  ASSERT_GE(fd, 0);
  struct stat st {};
  ASSERT_EQ(fstat(fd, &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "created for its owner only";
  ASSERT_EQ(fchmod(fd, 0666), 0);
  close(fd);
  EXPECT_EQ(open_named(name, 0, &second), -FI_EACCES);
  EXPECT_EQ(open_named(name, FI_READ, &second), -FI_EACCES);
}

// A thread that holds the table's writers' lock and does not let go (as a
// stopped process would): the first address of an insert call waits a
// bounded time and fails with FI_EAGAIN, the rest of the call is aborted
// (FI_ECANCELED, fi_av(3)) without waiting again, and fi_av_remove fails
// with -FI_EAGAIN, removing nothing.  The holder lets go after 10 s by
// itself, so that the test ends without the bound too.
TEST_F(AvSharedTest, ALockHeldForGoodFailsInsertsWithEAgain) {
  const std::string name = unique_name();
  fid_av* av = nullptr;
  ASSERT_EQ(open_named(name, 0, &av), 0);
  uint8_t natives[3][av::kNativeAddressSize];
  for (int i = 0; i < 3; ++i)
    av::to_native(*av::from_string("fi_dpdk://02:00:00:00:00:0" + std::to_string(i + 1) + "/1"),
                  natives[i]);
  fi_addr_t first = FI_ADDR_NOTAVAIL;
  ASSERT_EQ(fi_av_insert(av, natives[0], 1, &first, 0, nullptr), 1);

  const int fd = shm_open(("/fi_dpdk_av." + name).c_str(), O_RDWR, 0);
  ASSERT_GE(fd, 0);
  void* map = mmap(nullptr, sizeof(av::SharedHeader), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  ASSERT_NE(map, MAP_FAILED);
  auto* header = static_cast<av::SharedHeader*>(map);
  std::atomic<bool> held{false}, release{false};
  std::thread holder([&] {
    if (pthread_mutex_lock(&header->lock) != 0) return;
    held = true;
    const auto limit = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!release && std::chrono::steady_clock::now() < limit)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    pthread_mutex_unlock(&header->lock);
  });
  while (!held) std::this_thread::sleep_for(std::chrono::milliseconds(1));

  fi_addr_t fi_addrs[3] = {0, 0, 0};
  int status[3] = {-1, -1, -1};
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(fi_av_insert(av, natives, 3, fi_addrs, FI_SYNC_ERR, status), 0);
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(status[0], FI_EAGAIN);
  EXPECT_EQ(status[1], FI_ECANCELED) << "aborted: no second wait";
  EXPECT_EQ(status[2], FI_ECANCELED);
  for (fi_addr_t a : fi_addrs) EXPECT_EQ(a, FI_ADDR_NOTAVAIL);
  EXPECT_LT(took, 5.0) << "bounded";
  EXPECT_EQ(fi_av_remove(av, &first, 1, 0), -FI_EAGAIN);
  EXPECT_TRUE(lookup(av, first)) << "nothing removed";
  release = true;
  holder.join();
  munmap(map, sizeof(av::SharedHeader));
  EXPECT_EQ(fi_av_insert(av, natives[1], 1, fi_addrs, 0, nullptr), 1) << "let go: inserts work";
  EXPECT_EQ(fi_av_remove(av, &first, 1, 0), 0);
}

// fi_getinfo(3): FI_SHARED_AV (secondary, domain cap) and FI_AV_USER_ID are
// offered; asked for, they are granted.
TEST(AvSharedCaps, GetinfoOffersSharedAvAndUserId) {
  fi_info* info = get_dpdk_info(nullptr, FI_MSG | FI_SHARED_AV | FI_AV_USER_ID);
  ASSERT_NE(info, nullptr);
  EXPECT_TRUE(info->caps & FI_SHARED_AV);
  EXPECT_TRUE(info->caps & FI_AV_USER_ID);
  EXPECT_TRUE(info->domain_attr->caps & FI_SHARED_AV);
  fi_freeinfo(info);
  fi_info* hints = dpdk_hints();
  hints->caps = FI_MSG;
  hints->domain_attr->caps = FI_SHARED_AV;
  ASSERT_EQ(fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info), 0);
  EXPECT_FALSE(info->caps & FI_AV_USER_ID) << "primary: only when asked for";
  fi_freeinfo(info);
  fi_freeinfo(hints);
}

}  // namespace
}  // namespace ofi_dpdk::test
