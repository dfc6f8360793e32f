// test_shared_port.cc: a shared port (drivers/net/shared_port.h) in one
// process: the switch's net_ring device and table, net::Port objects
// claiming slots as secondaries would, frames steered by their dst_queue
// (by the sender, and by the switch for TX queues).  The multi-process side (real secondaries, the
// provider, Open MPI) is test/multiproc/test_shared_port.sh and the mpi suite. Own main(): EAL
// starts once per process.
#include <gtest/gtest.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "drivers/net/port.h"
#include "drivers/net/shared_port.h"
#include "drivers/net/shared_switch.h"
#include "lib/proto/wire.h"
#include "test/support/test_eal.h"

namespace ofi_dpdk::net {
namespace {

class SharedPort : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    SharedSwitch::Config config;
    config.name = "ut";
    config.slots = 2;
    std::string error;
    switch_ = SharedSwitch::create(config, &error);
    ASSERT_NE(switch_, nullptr) << error;
  }
  // (Removes its slot lock files.)
  static void TearDownTestSuite() { delete switch_; }
  // Each test starts with no slot given back before another, so that free
  // slots are claimed in order (slot 0, then 1) whatever the tests before
  // it released.
  void SetUp() override {
    auto& table = const_cast<SharedPortTable&>(switch_->table());
    for (auto& stamp : table.released) stamp.store(0);
  }

  int open(std::unique_ptr<Port>* port) {
    PortConfig config;
    config.mbufs = 1023;
    error_.clear();
    return Port::open(switch_->port_id(), config, port, &error_);
  }

  // A frame as our codec lays it out, as far as the switch reads it.
  rte_mbuf* frame(Port& from, uint16_t dst_queue, uint16_t ether_type = 0x88B5) {
    rte_mbuf* m = from.alloc_frame();
    if (m == nullptr) return nullptr;
    const uint16_t length = sizeof(wire::EtherHeader) + sizeof(wire::FrameHeader);
    auto* bytes = reinterpret_cast<uint8_t*>(rte_pktmbuf_append(m, length));
    if (bytes == nullptr) {
      rte_pktmbuf_free(m);
      return nullptr;
    }
    std::memset(bytes, 0, length);
    wire::EtherHeader ether{};
    std::copy_n(switch_->table().mac, 6, ether.dst_mac);
    std::copy_n(from.mac(), 6, ether.src_mac);
    std::memcpy(bytes, &ether, 12);
    const uint16_t type_be = rte_cpu_to_be_16(ether_type);
    std::memcpy(bytes + 12, &type_be, 2);
    const uint16_t queue_be = rte_cpu_to_be_16(dst_queue);
    std::memcpy(bytes + sizeof(wire::EtherHeader) + offsetof(wire::FrameHeader, dst_queue),
                &queue_be, 2);
    return m;
  }

  // Sends one frame from `from` to endpoint queue `dst_queue` and returns
  // how many frames `to` received.
  int deliver(Port& from, Port& to, uint16_t dst_queue, uint16_t ether_type = 0x88B5) {
    rte_mbuf* m = frame(from, dst_queue, ether_type);
    if (m == nullptr || from.tx_burst(0, &m, 1) != 1) return -1;
    rte_mbuf* got[8];
    const uint16_t count = to.rx_burst(0, got, 8);
    for (uint16_t i = 0; i < count; ++i) rte_pktmbuf_free(got[i]);
    return count;
  }

  // Slot 1 held by a process that has exited, and one frame from `from`
  // queued for it.
  void dead_owner_with_a_frame(Port& from) {
    const pid_t child = fork();
    if (child == 0) _exit(0);
    ASSERT_GT(child, 0);
    ASSERT_EQ(waitpid(child, nullptr, 0), child);
    const_cast<SharedPortTable&>(switch_->table()).owner[1].store(child);
    rte_mbuf* m = frame(from, 33);
    ASSERT_NE(m, nullptr);
    ASSERT_EQ(from.tx_burst(0, &m, 1), 1);
  }

  static SharedSwitch* switch_;
  std::string error_;
};

SharedSwitch* SharedPort::switch_ = nullptr;

TEST_F(SharedPort, TheTableIsFoundByThePortName) {
  const SharedPortTable* table = find_shared_table(switch_->port_name());
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table, &switch_->table());
  SharedPortLayout layout;
  std::string why;
  ASSERT_EQ(read_shared_layout(*table, &layout, &why), 0) << why;
  EXPECT_EQ(layout.slots, 2);
  EXPECT_EQ(layout.queues_per_slot, 32);
  EXPECT_EQ(slot_of_queue(layout, 31), 0);
  EXPECT_EQ(slot_of_queue(layout, 32), 1);
  EXPECT_EQ(slot_of_queue(layout, 64), -1);
  EXPECT_EQ(find_shared_table("net_ring_nosuch"), nullptr);
}

TEST_F(SharedPort, EachProcessClaimsASlotAndItsQueueIds) {
  std::unique_ptr<Port> a, b, c;
  ASSERT_EQ(open(&a), 0) << error_;
  ASSERT_EQ(open(&b), 0) << error_;
  EXPECT_TRUE(a->shared());
  EXPECT_EQ(a->shared_slot(), 0);
  EXPECT_EQ(b->shared_slot(), 1);
  EXPECT_EQ(a->endpoint_queue_first(), 0);
  EXPECT_EQ(b->endpoint_queue_first(), 32);
  EXPECT_EQ(b->endpoint_queue_count(), 32);
  EXPECT_EQ(a->queue_pairs(), 1);
  EXPECT_TRUE(a->loops_back());  // frames between its own endpoints go through the switch
  // Both slots held by a live process: a third is refused, and told why.
  EXPECT_EQ(open(&c), -EBUSY);
  EXPECT_NE(error_.find("slots of the shared port are held"), std::string::npos) << error_;
  // Closing gives the slot back.
  b.reset();
  EXPECT_EQ(switch_->table().owner[1].load(), 0);
  ASSERT_EQ(open(&c), 0) << error_;
  EXPECT_EQ(c->shared_slot(), 1);
}

// A slot given back goes to a newcomer only after the slots free longer:
// a peer still failing the old holder's operations, or removing its
// address, must not meet a new process at that address (fabtests'
// fi_rdm_stress: clients come and go while the server finishes with them).
TEST_F(SharedPort, TheSlotFreeLongestIsClaimedFirst) {
  std::unique_ptr<Port> a, b, c, d;
  ASSERT_EQ(open(&a), 0) << error_;
  ASSERT_EQ(open(&b), 0) << error_;
  const int first = a->shared_slot(), second = b->shared_slot();
  a.reset();  // given back before b's
  b.reset();
  ASSERT_EQ(open(&c), 0) << error_;
  EXPECT_EQ(c->shared_slot(), first) << "the slot given back first";
  c.reset();  // now the most recent
  ASSERT_EQ(open(&d), 0) << error_;
  EXPECT_EQ(d->shared_slot(), second);
}

TEST_F(SharedPort, ProcessesSendStraightToTheQueueOwningDstQueue) {
  std::unique_ptr<Port> a, b;
  ASSERT_EQ(open(&a), 0) << error_;
  ASSERT_EQ(open(&b), 0) << error_;
  const uint64_t forwarded = switch_->table().forwarded.load();
  EXPECT_EQ(deliver(*a, *b, 40), 1);  // slot 1's block
  EXPECT_EQ(deliver(*b, *a, 3), 1);   // slot 0's block
  EXPECT_EQ(deliver(*a, *a, 31), 1);  // back to the sender's own slot
  EXPECT_EQ(deliver(*a, *b, 31), 0);  // not b's
  rte_mbuf* stray[8];
  EXPECT_EQ(a->rx_burst(0, stray, 8), 1);  // (it went to a)
  rte_pktmbuf_free(stray[0]);
  EXPECT_EQ(switch_->table().forwarded.load(), forwarded);  // the switch had no part
}

// A program that hands frames to its TX queue itself (rte_eth_tx_burst)
// has them moved by the switch, by the same rule.
TEST_F(SharedPort, TheSwitchSteersWhatArrivesOnTxQueues) {
  std::unique_ptr<Port> a, b;
  ASSERT_EQ(open(&a), 0) << error_;
  ASSERT_EQ(open(&b), 0) << error_;
  const uint64_t forwarded = switch_->table().forwarded.load();
  rte_mbuf* frames[2] = {frame(*a, 33), frame(*a, 2)};
  ASSERT_NE(frames[0], nullptr);
  ASSERT_NE(frames[1], nullptr);
  ASSERT_EQ(rte_eth_tx_burst(switch_->port_id(), 0, frames, 2), 2);
  rte_mbuf* got[8];
  EXPECT_EQ(b->rx_burst(0, got, 8), 0);  // not before the switch moved it
  EXPECT_EQ(switch_->forward(), 2u);
  ASSERT_EQ(b->rx_burst(0, got, 8), 1);
  rte_pktmbuf_free(got[0]);
  ASSERT_EQ(a->rx_burst(0, got, 8), 1);
  rte_pktmbuf_free(got[0]);
  EXPECT_EQ(switch_->table().forwarded.load(), forwarded + 2);
}

TEST_F(SharedPort, FramesForNobodyAreDroppedAndCounted) {
  std::unique_ptr<Port> a, b;
  ASSERT_EQ(open(&a), 0) << error_;
  ASSERT_EQ(open(&b), 0) << error_;
  const SharedPortTable& table = switch_->table();
  const uint64_t no_owner = table.dropped_no_owner.load();
  const uint64_t foreign = table.dropped_foreign.load();
  EXPECT_EQ(deliver(*a, *b, 64), 0);          // beyond every block
  EXPECT_EQ(deliver(*a, *b, 40, 0x0800), 0);  // not our EtherType
  b.reset();
  rte_mbuf* m = frame(*a, 40);
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(a->tx_burst(0, &m, 1), 1);  // taken, and dropped: slot 1 is free now
  EXPECT_EQ(table.dropped_no_owner.load(), no_owner + 2);
  EXPECT_EQ(table.dropped_foreign.load(), foreign + 1);
}

TEST_F(SharedPort, ADeadProcessSlotIsTakenOverAndItsFramesDiscarded) {
  std::unique_ptr<Port> a;
  ASSERT_EQ(open(&a), 0) << error_;
  ASSERT_NO_FATAL_FAILURE(dead_owner_with_a_frame(*a));
  const SharedPortTable& table = switch_->table();
  std::unique_ptr<Port> b;
  ASSERT_EQ(open(&b), 0) << error_;
  EXPECT_EQ(b->shared_slot(), 1);
  EXPECT_EQ(table.owner[1].load(), getpid());
  rte_mbuf* got[8];
  EXPECT_EQ(b->rx_burst(0, got, 8), 0);  // the dead owner's frame is not the new one's
  EXPECT_EQ(deliver(*a, *b, 33), 1);
}

// A process that exits without closing keeps its slot until the switch
// notices: then the slot is free and what was queued for it is freed, so
// senders do not fill a ring nobody empties.
TEST_F(SharedPort, TheSwitchFreesTheSlotOfADeadProcessAndItsFrames) {
  std::unique_ptr<Port> a;
  ASSERT_EQ(open(&a), 0) << error_;
  const SharedPortTable& table = switch_->table();
  ASSERT_NO_FATAL_FAILURE(dead_owner_with_a_frame(*a));  // (queued: not a drop)
  const uint64_t no_owner = table.dropped_no_owner.load();
  EXPECT_EQ(switch_->reap_dead_owners(), 1u);
  EXPECT_EQ(table.owner[1].load(), 0);
  EXPECT_EQ(table.dropped_no_owner.load(), no_owner + 1);  // its frame, freed
  EXPECT_EQ(switch_->reap_dead_owners(), 0u);              // a live owner and a free slot stay
  EXPECT_EQ(table.owner[0].load(), getpid());
}

// A process that holds a slot and never reads it (stopped, debugged,
// hostile) takes from a sender no more than its share of the sender's pool:
// beyond it the sender's frames to that slot are dropped, and the sender
// keeps allocating and reaching everyone else.
TEST_F(SharedPort, AStoppedSlotHoldsAtMostItsShareOfASendersPool) {
  std::unique_ptr<Port> a, b;
  ASSERT_EQ(open(&a), 0) << error_;
  ASSERT_EQ(open(&b), 0) << error_;  // b never reads until the end
  const uint32_t pool = a->pool_size();
  ASSERT_GT(pool, 0u);
  const uint64_t over_share = switch_->table().dropped_share.load();
  for (uint32_t i = 0; i < 2 * pool; ++i) {
    rte_mbuf* m = frame(*a, 40);
    ASSERT_NE(m, nullptr) << "the sender's pool ran dry after " << i << " frames to a slot "
                          << "that never reads (pool of " << pool << ")";
    ASSERT_EQ(a->tx_burst(0, &m, 1), 1);
  }
  EXPECT_EQ(deliver(*a, *a, 3), 1);  // a still reaches its own endpoints
  rte_mbuf* held[64];
  uint32_t in_b = 0;
  for (uint16_t got; (got = b->rx_burst(0, held, 64)) > 0; in_b += got)
    for (uint16_t i = 0; i < got; ++i) rte_pktmbuf_free(held[i]);
  EXPECT_EQ(in_b, ring_share(pool));
  EXPECT_EQ(switch_->table().dropped_share.load(), over_share + 2 * pool - in_b);
  EXPECT_EQ(deliver(*a, *b, 40), 1);  // read, the slot takes frames again
}

// The switch keeps the same share for what it moves from TX queues.
TEST_F(SharedPort, TheSwitchDropsOverAStoppedSlotsShare) {
  std::unique_ptr<Port> a, b;
  ASSERT_EQ(open(&a), 0) << error_;
  ASSERT_EQ(open(&b), 0) << error_;
  const uint32_t pool = a->pool_size();
  const uint64_t over_share = switch_->table().dropped_share.load();
  uint32_t forwarded_to_b = 0;
  for (uint32_t i = 0; i < pool; i += 16) {
    rte_mbuf* frames[16];
    for (auto& m : frames) {
      m = frame(*a, 40);
      ASSERT_NE(m, nullptr) << "the sender's pool ran dry after " << i << " frames";
    }
    const uint64_t before = switch_->table().forwarded.load();
    ASSERT_EQ(rte_eth_tx_burst(switch_->port_id(), 0, frames, 16), 16);
    while (switch_->forward() != 0) {
    }
    forwarded_to_b += static_cast<uint32_t>(switch_->table().forwarded.load() - before);
  }
  EXPECT_EQ(forwarded_to_b, ring_share(pool));
  EXPECT_EQ(switch_->table().dropped_share.load(), over_share + pool - forwarded_to_b);
  rte_mbuf* held[64];
  for (uint16_t got; (got = b->rx_burst(0, held, 64)) > 0;)
    for (uint16_t i = 0; i < got; ++i) rte_pktmbuf_free(held[i]);
}

// An owner word naming a live process that does not hold the slot (the
// holder died and its pid went to another process) does not keep the slot.
TEST_F(SharedPort, ASlotNamingALiveNonHolderIsTakenOverAndFreed) {
  std::unique_ptr<Port> a;
  ASSERT_EQ(open(&a), 0) << error_;
  auto& table = const_cast<SharedPortTable&>(switch_->table());
  table.owner[1].store(getppid());
  std::unique_ptr<Port> b;
  ASSERT_EQ(open(&b), 0) << error_;
  EXPECT_EQ(b->shared_slot(), 1);
  b.reset();
  table.owner[1].store(getppid());
  EXPECT_EQ(switch_->reap_dead_owners(), 1u);
  EXPECT_EQ(table.owner[1].load(), 0);
}

// A live holder whose pid means nothing to the others (it runs in another
// pid namespace; here its owner word names a gone process) keeps its slot:
// no claimer takes it, the switch does not free it, and its frames still
// reach it alone.
TEST_F(SharedPort, ALiveHolderUnderAPidOthersCannotSeeKeepsItsSlot) {
  std::unique_ptr<Port> a, b;
  ASSERT_EQ(open(&a), 0) << error_;
  ASSERT_EQ(open(&b), 0) << error_;
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  ASSERT_GT(gone, 0);
  ASSERT_EQ(waitpid(gone, nullptr, 0), gone);
  auto& table = const_cast<SharedPortTable&>(switch_->table());
  table.owner[1].store(gone);
  std::unique_ptr<Port> c;
  EXPECT_EQ(open(&c), -EBUSY) << "slot " << (c ? c->shared_slot() : -1) << " taken";
  c.reset();
  EXPECT_EQ(switch_->reap_dead_owners(), 0u);
  EXPECT_EQ(table.owner[1].load(), gone);
  EXPECT_EQ(deliver(*a, *b, 40), 1);
  table.owner[1].store(getpid());  // (so that b gives it back)
}

// EAL's runtime files of a process killed without its cleanup stay, named
// for its pid; once that pid is another process's (a pid namespace started
// again), the file is still known for a dead owner's.
TEST(RuntimeFile, BelongsToALiveOwnerOnlyIfItStartedBeforeTheFileWasWritten) {
  char path[] = "/tmp/test_shared_port_runtime_XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  EXPECT_TRUE(file_owner_alive(getpid(), path)) << "written after we started";
  const timespec an_hour_ago[2] = {{time(nullptr) - 3600, 0}, {time(nullptr) - 3600, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, path, an_hour_ago, 0), 0);
  EXPECT_FALSE(file_owner_alive(getpid(), path)) << "written an hour before we started";
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  ASSERT_GT(gone, 0);
  ASSERT_EQ(waitpid(gone, nullptr, 0), gone);
  ASSERT_EQ(utimensat(AT_FDCWD, path, nullptr, 0), 0);
  EXPECT_FALSE(file_owner_alive(gone, path)) << "its owner is gone";
  unlink(path);
}

// A secondary that scribbles over the table's fixed fields (all of them
// share its memory) makes newcomers refuse the port; those attached and the
// switch go on with what they read when they came, and nobody divides by
// zero or indexes past an array.
TEST_F(SharedPort, ADamagedTableIsRefusedAndHarmsNoOneAttached) {
  std::unique_ptr<Port> a, b;
  ASSERT_EQ(open(&a), 0) << error_;
  ASSERT_EQ(open(&b), 0) << error_;
  b.reset();
  auto& table = const_cast<SharedPortTable&>(switch_->table());
  char saved_name[sizeof(table.name)];
  std::memcpy(saved_name, table.name, sizeof(saved_name));
  const uint16_t saved_slots = table.slots;
  const uint16_t saved_queues_per_slot = table.queues_per_slot;
  auto restore = [&] {
    std::memcpy(table.name, saved_name, sizeof(table.name));
    table.slots = saved_slots;
    table.queues_per_slot = saved_queues_per_slot;
  };
  struct Damage {
    uint16_t slots, queues_per_slot;
    const char* name;
  };
  for (const Damage& damage :
       {Damage{2, 0, nullptr}, Damage{200, 32, nullptr}, Damage{200, 0, nullptr},
        Damage{4, 32, nullptr}, Damage{2, 32, "../../tmp/x"}, Damage{0, 32, nullptr}}) {
    SCOPED_TRACE("slots " + std::to_string(damage.slots) + ", queues_per_slot " +
                 std::to_string(damage.queues_per_slot) +
                 (damage.name ? std::string(", name ") + damage.name : std::string()));
    table.slots = damage.slots;
    table.queues_per_slot = damage.queues_per_slot;
    if (damage.name != nullptr) std::snprintf(table.name, sizeof(table.name), "%s", damage.name);
    std::unique_ptr<Port> c;
    EXPECT_EQ(open(&c), -EINVAL);
    EXPECT_NE(error_.find("table is damaged"), std::string::npos) << error_;
    c.reset();
    // a goes on with the table it read when it came.
    EXPECT_EQ(deliver(*a, *a, 3), 1);
    rte_mbuf* m = frame(*a, 40);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(a->tx_burst(0, &m, 1), 1);  // slot 1 is free: dropped
    rte_mbuf* frames[1] = {frame(*a, 5)};
    ASSERT_NE(frames[0], nullptr);
    ASSERT_EQ(rte_eth_tx_burst(switch_->port_id(), 0, frames, 1), 1);
    EXPECT_EQ(switch_->forward(), 1u);
    rte_mbuf* got[8];
    EXPECT_EQ(a->rx_burst(0, got, 8), 1);
    rte_pktmbuf_free(got[0]);
    switch_->reap_dead_owners();
    EXPECT_TRUE(switch_->in_use());
    restore();
  }
  std::unique_ptr<Port> c;
  EXPECT_EQ(open(&c), 0) << error_;  // repaired, it is a port again
}

}  // namespace
}  // namespace ofi_dpdk::net

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (!ofi_dpdk::test::bring_up_test_eal("test_shared_port")) return 1;
  const int result = RUN_ALL_TESTS();
  rte_eal_cleanup();
  return result;
}
