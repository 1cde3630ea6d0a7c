// Link and collective costs (partition/cost/communication.h) against costs worked out by hand
// from Hockney's model and the ring all-reduce's 2 (r-1)/r S/B (Patarasuk and Yuan, JPDC 2009).
#include <gtest/gtest.h>

#include "partition/cost/communication.h"

namespace pipetwin {
namespace {

// Two servers of four: 100 Gbps (12.5e9 B/s, 1 us) inside, 10 Gbps (1.25e9 B/s, 5 us) between,
// 2 us of per-message overhead.
Cluster TwoServers() {
  Cluster c;
  c.levels = {{"server", 4, 100, 1, "nvlink", {}}, {"cluster", 2, 10, 5, "ethernet", {}}};
  c.communication_overhead_us = 2;
  return c;
}

TEST(CommunicationCost, AMessageTakesTheInnermostLevelThatHoldsBothDevices) {
  const Cluster c = TwoServers();
  EXPECT_DOUBLE_EQ(TransferCost(c, 2, 2).Ms(1e6), 0);
  // Inside a server: (1 + 2) us, then 1e6 B / 12.5e9 B/s = 0.08 ms.
  EXPECT_NEAR(TransferCost(c, 0, 3).Ms(1e6), 0.003 + 0.08, 1e-12);
  // Across servers: (5 + 2) us, then 1e6 B / 1.25e9 B/s = 0.8 ms.
  EXPECT_NEAR(TransferCost(c, 3, 4).Ms(1e6), 0.007 + 0.8, 1e-12);
  EXPECT_DOUBLE_EQ(TransferCost(c, 0, 3).Ms(0), 0);
}

TEST(CommunicationCost, TheRingAllReduceIsHierarchicalAcrossLevels) {
  const Cluster c = TwoServers();
  const double bytes = 1e8;
  // One server's four: 2 x 3/4 x 1e8 / 12.5e9 s = 12 ms, 6 steps of 3 us.
  EXPECT_NEAR(RingAllReduceCost(c, {0, 1, 2, 3}).Ms(bytes), 12 + 6 * 0.003, 1e-9);
  // One device per server: one ring over the network, 2 x 1/2 x 1e8 / 1.25e9 s = 80 ms, 2 steps
  // of 7 us.
  EXPECT_NEAR(RingAllReduceCost(c, {0, 4}).Ms(bytes), 80 + 2 * 0.007, 1e-9);
  // All eight: the ring of four in each server (12 ms), then the quarter shards of the four
  // members cross the one NIC of each server: 2 x 1/2 x 4 x 2.5e7 B / 1.25e9 B/s = 80 ms.
  EXPECT_NEAR(RingAllReduceCost(c, {0, 1, 2, 3, 4, 5, 6, 7}).Ms(bytes),
              12 + 80 + 6 * 0.003 + 2 * 0.007, 1e-9);
  // Alone: nothing to reduce.
  EXPECT_DOUBLE_EQ(RingAllReduceCost(c, {5}).Ms(bytes), 0);
}

}  // namespace
}  // namespace pipetwin
