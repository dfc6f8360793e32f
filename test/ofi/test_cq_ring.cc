// The CQ's completion ring (drivers/ofi/dpdk_cq_ring.h): order kept across
// wrap-around and growth, and no allocation once reserved.
#include <gtest/gtest.h>

#include "drivers/ofi/dpdk_cq_ring.h"

namespace ofi_dpdk::ofi {
namespace {

TEST(CqRing, KeepsOrderAcrossWrapAroundAndGrowth) {
  // Expect: values come out in the order they went in, while the ring
  // wraps many times at its reserved size and when it has to grow past it.
  Ring<int> ring;
  ring.reserve(16);
  int next_in = 0, next_out = 0;
  for (int round = 0; round < 100; ++round) {
    for (int i = 0; i < 11; ++i) ring.push_back(next_in++);
    for (int i = 0; i < 11; ++i) {
      ASSERT_EQ(ring.front(), next_out++);
      ring.pop_front();
    }
  }
  for (int i = 0; i < 5; ++i) ring.push_back(next_in++);
  for (int i = 0; i < 100; ++i) ring.push_back(next_in++);  // grows, mid-wrap
  EXPECT_EQ(ring.size(), 105u);
  while (!ring.empty()) {
    ASSERT_EQ(ring.front(), next_out++);
    ring.pop_front();
  }
  EXPECT_EQ(next_out, next_in);
}

}  // namespace
}  // namespace ofi_dpdk::ofi
