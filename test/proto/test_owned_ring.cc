// The ring of a connection's unacknowledged messages (lib/proto/owned_ring.h):
// order kept across wrapping and growth, insertion in the middle, and what
// it owns released.
#include "lib/proto/owned_ring.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace ofi_dpdk::proto {
namespace {

using Ring = OwnedRing<int>;

std::vector<int> contents(Ring& ring) {
  std::vector<int> out;
  for (auto& item : ring) out.push_back(*item);
  return out;
}

TEST(OwnedRing, KeepsOrderThroughWrappingAndGrowth) {
  Ring ring;
  EXPECT_TRUE(ring.empty());
  int next = 0, expected_front = 0;
  // Pushing three and popping two at a time wraps the ring's start around
  // its end many times, and it grows while wrapped.
  for (int round = 0; round < 200; ++round) {
    for (int i = 0; i < 3; ++i) ring.push_back(std::make_unique<int>(next++));
    for (int i = 0; i < 2; ++i) {
      ASSERT_EQ(*ring.front(), expected_front++);
      ring.pop_front();
    }
    ASSERT_EQ(ring.size(), static_cast<size_t>(next - expected_front));
    ASSERT_EQ(*ring.back(), next - 1);
    for (size_t i = 0; i < ring.size(); ++i)
      ASSERT_EQ(*ring[i], expected_front + static_cast<int>(i));
  }
  EXPECT_EQ(contents(ring).size(), 200u);
  ring.clear();
  EXPECT_TRUE(ring.empty());
  ring.push_back(std::make_unique<int>(7));
  EXPECT_EQ(*ring.front(), 7);
  EXPECT_EQ(*ring.back(), 7);
}

TEST(OwnedRing, InsertsAnywhereWhileWrapped) {
  Ring ring;
  for (int i = 0; i < 6; ++i) ring.push_back(std::make_unique<int>(i));
  for (int i = 0; i < 5; ++i) ring.pop_front();  // start near the end
  for (int i = 6; i < 10; ++i) ring.push_back(std::make_unique<int>(i));
  ring.insert(2, std::make_unique<int>(100));
  EXPECT_EQ(contents(ring), (std::vector<int>{5, 6, 100, 7, 8, 9}));
  ring.insert(0, std::make_unique<int>(200));
  ring.insert(ring.size(), std::make_unique<int>(300));
  EXPECT_EQ(contents(ring), (std::vector<int>{200, 5, 6, 100, 7, 8, 9, 300}));
  // Full (8): the next insertion grows it.
  ring.insert(4, std::make_unique<int>(400));
  EXPECT_EQ(contents(ring), (std::vector<int>{200, 5, 6, 100, 400, 7, 8, 9, 300}));
}

TEST(OwnedRing, ReleasesWhatItOwns) {
  auto shared = std::make_shared<int>(1);
  struct Holder {
    std::shared_ptr<int> held;
  };
  OwnedRing<Holder> ring;
  for (int i = 0; i < 20; ++i) ring.push_back(std::make_unique<Holder>(Holder{shared}));
  EXPECT_EQ(shared.use_count(), 21);
  ring.pop_front();
  EXPECT_EQ(shared.use_count(), 20);
  auto taken = std::move(ring.front());  // moved out, then popped: as on_ack does
  ring.pop_front();
  EXPECT_EQ(shared.use_count(), 20);
  taken.reset();
  ring.clear();
  EXPECT_EQ(shared.use_count(), 1);
}

}  // namespace
}  // namespace ofi_dpdk::proto
