// Link and collective costs (partition/cost/communication.h) against costs worked out by hand
// from Hockney's model and the ring all-reduce's 2 (r-1)/r S/B (Patarasuk and Yuan, JPDC 2009),
// and the ring plans the simulator runs; processor sharing on a link (RingBursts,
// SharedRoute::At) against schedules of shares worked out by hand.
#include <cmath>
#include <map>

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

TEST(CommunicationCost, AMessagePaysEveryLevelUpToTheOneThatJoinsItsDevices) {
  const Cluster c = TwoServers();
  EXPECT_DOUBLE_EQ(TransferCost(c, 2, 2).Ms(1e6), 0);
  // Inside a server: (1 + 2) us, then 1e6 B / 12.5e9 B/s = 0.08 ms.
  EXPECT_NEAR(TransferCost(c, 0, 3).Ms(1e6), 0.003 + 0.08, 1e-12);
  // Across servers: both device links and both NICs, (1 + 5 + 2) us, then 1e6 B / 1.25e9 B/s.
  EXPECT_NEAR(TransferCost(c, 3, 4).Ms(1e6), 0.008 + 0.8, 1e-12);
  EXPECT_DOUBLE_EQ(TransferCost(c, 0, 3).Ms(0), 0);
  // The route: device 3's link up, server 0's NIC up, server 1's NIC down, device 4's link down.
  const auto route = Route(c, 3, 4);
  ASSERT_EQ(route.size(), 4u);
  EXPECT_EQ(route[1].level, 1);
  EXPECT_EQ(route[1].owner, 0);
  EXPECT_TRUE(route[1].up);
  EXPECT_EQ(route[2].owner, 1);
  EXPECT_FALSE(route[2].up);
  EXPECT_EQ(route[3].owner, 4);
}

TEST(CommunicationCost, TheRingAllReduceIsHierarchicalAcrossLevels) {
  const Cluster c = TwoServers();
  const double bytes = 1e8;
  // One server's four: 2 x 3/4 x 1e8 / 12.5e9 s = 12 ms, 6 steps of 3 us.
  EXPECT_NEAR(RingAllReduceCost(c, {0, 1, 2, 3}).Ms(bytes), 12 + 6 * 0.003, 1e-9);
  // One device per server: one ring over the network, 2 x 1/2 x 1e8 / 1.25e9 s = 80 ms, 2 steps
  // of 8 us.
  EXPECT_NEAR(RingAllReduceCost(c, {0, 4}).Ms(bytes), 80 + 2 * 0.008, 1e-9);
  // All eight: the ring of four in each server (12 ms), then the quarter shards of the four
  // members cross the one NIC of each server: 2 x 1/2 x 4 x 2.5e7 B / 1.25e9 B/s = 80 ms.
  EXPECT_NEAR(RingAllReduceCost(c, {0, 1, 2, 3, 4, 5, 6, 7}).Ms(bytes),
              12 + 80 + 6 * 0.003 + 2 * 0.008, 1e-9);
  // Alone: nothing to reduce.
  EXPECT_DOUBLE_EQ(RingAllReduceCost(c, {5}).Ms(bytes), 0);
}

TEST(CommunicationCost, AnUnevenSpreadIsOneFlatRingThatCrossesEachNicOnce) {
  const Cluster c = TwoServers();
  // Two members in server 0, one in server 1: the ring 0 -> 1 -> 4 -> 0, 2 x 2 steps of 1/3 of
  // the bytes, each step as slow as its NIC hop: 4 x 1e8 / 3 / 1.25e9 s = 106.67 ms, 4 x 8 us.
  EXPECT_NEAR(RingAllReduceCost(c, {0, 1, 4}).Ms(1e8), 4 * 1e8 / 3 / 1.25e9 * 1e3 + 4 * 0.008,
              1e-9);
}

TEST(CommunicationCost, ConcurrentRingsShareTheNicsTheyCross) {
  Cluster c = TwoServers();
  // Two rings across the servers share both NICs: each runs at half the bandwidth, 160 ms; a
  // ring inside server 0 crosses no NIC and keeps 2 x 1/2 x 1e8 / 12.5e9 s = 8 ms.
  std::vector<LinearCost> costs = ConcurrentRingAllReduceCosts(c, {{0, 4}, {1, 5}, {2, 3}});
  ASSERT_EQ(costs.size(), 3u);
  EXPECT_NEAR(costs[0].Ms(1e8), 160 + 2 * 0.008, 1e-9);
  EXPECT_NEAR(costs[1].Ms(1e8), 160 + 2 * 0.008, 1e-9);
  EXPECT_NEAR(costs[2].Ms(1e8), 8 + 2 * 0.003, 1e-9);
  // Links that give every flow their whole bandwidth share nothing.
  c.network_model = "contention_free";
  costs = ConcurrentRingAllReduceCosts(c, {{0, 4}, {1, 5}});
  EXPECT_NEAR(costs[0].Ms(1e8), 80 + 2 * 0.008, 1e-9);
}

// Eight devices per server, four servers.
Cluster FourServersOfEight() {
  Cluster c;
  c.levels = {{"server", 8, 2400, 1, "nvlink", {}}, {"cluster", 4, 200, 5, "ethernet", {}}};
  return c;
}

TEST(RingPlan, HierarchicalRingsLevelByLevel) {
  const RingPlan plan = PlanAllReduce(FourServersOfEight(), {0, 1, 8, 9});
  ASSERT_EQ(plan.phases.size(), 4u);  // in servers, across, across, in servers
  EXPECT_TRUE(plan.hierarchical);
  EXPECT_EQ(plan.phases[0].level, 0);
  EXPECT_EQ(plan.phases[1].level, 1);
  EXPECT_EQ(plan.phases[0].next, (std::vector<int>{1, 0, 3, 2}));  // 0<->1, 8<->9
  EXPECT_EQ(plan.phases[1].next, (std::vector<int>{2, 3, 0, 1}));  // 0<->8, 1<->9
  EXPECT_DOUBLE_EQ(plan.phases[1].fraction, 0.25);
  // 2 (g-1)/g per level on its shard: 2 x 1/2 + 2 x 1/4.
  EXPECT_DOUBLE_EQ(plan.BytesPerMember(), 1.5);
}

TEST(RingPlan, OneReplicaPerServerIsOneRingAndUnevenIsFlat) {
  const Cluster c = FourServersOfEight();
  RingPlan plan = PlanAllReduce(c, {3, 11, 19, 27});
  ASSERT_EQ(plan.phases.size(), 2u);
  EXPECT_EQ(plan.phases[0].steps, 3);
  EXPECT_DOUBLE_EQ(plan.phases[0].fraction, 0.25);
  plan = PlanAllReduce(c, {0, 1, 8});
  EXPECT_FALSE(plan.hierarchical);
  ASSERT_EQ(plan.phases.size(), 2u);
  EXPECT_EQ(plan.phases[0].level, 1);
  EXPECT_EQ(plan.phases[0].steps, 2);
  EXPECT_TRUE(PlanAllReduce(c, {5}).phases.empty());
}

// Processor sharing on one link by hand. Rings of 2 and 4 ms of work starting together: both
// run at half speed until the first ends at 4 ms, the second alone until 6 ms. Ring 1 of 1 ms
// arriving at 2 ms beside ring 0 of 4 ms: ring 0 runs alone to 2 ms (2 ms done), both at half
// until ring 1 ends at 4 ms (ring 0 has 1 ms left), ring 0 alone until 5 ms. Two flows of one
// ring split its work; a link nobody crosses has no steps.
TEST(RingBursts, EqualSharesOnEachLinkFromEachStart) {
  RingBurst b = RingBursts(2, {{{0, 2, 1}}, {{0, 4, 1}}}, {0, 0});
  ASSERT_EQ(b.flows[0].size(), 2u);
  EXPECT_DOUBLE_EQ(b.flows[0][0].until_ms, 4);
  EXPECT_EQ(b.flows[0][0].flows, 2);
  EXPECT_DOUBLE_EQ(b.flows[0][1].from_ms, 4);
  EXPECT_DOUBLE_EQ(b.flows[0][1].until_ms, 6);
  EXPECT_EQ(b.flows[0][1].flows, 1);
  EXPECT_EQ(b.ends, (std::vector<double>{4, 6}));
  EXPECT_TRUE(b.flows[1].empty());

  b = RingBursts(1, {{{0, 4, 1}}, {{0, 1, 1}}}, {0, 2});
  ASSERT_EQ(b.flows[0].size(), 3u);
  EXPECT_EQ(b.flows[0][0].flows, 1);
  EXPECT_DOUBLE_EQ(b.flows[0][0].until_ms, 2);
  EXPECT_EQ(b.flows[0][1].flows, 2);
  EXPECT_DOUBLE_EQ(b.flows[0][1].until_ms, 4);
  EXPECT_EQ(b.flows[0][2].flows, 1);
  EXPECT_EQ(b.ends, (std::vector<double>{5, 4}));

  // One ring of 4 ms in two flows beside a ring of 1 ms: three flows of 2, 2 and 1 ms, the
  // small one ends at 3 ms, the two others at 5 ms; a ring starting at 10 finds the link idle.
  b = RingBursts(1, {{{0, 4, 2}}, {{0, 1, 1}}, {{0, 1, 1}}}, {0, 0, 10});
  EXPECT_EQ(b.ends, (std::vector<double>{5, 3, 11}));
  EXPECT_EQ(b.flows[0].back().flows, 1);
  EXPECT_DOUBLE_EQ(b.flows[0].back().from_ms, 10);
}

// A message of 1e6 bytes across two servers (10 Gbps: 0.8 ms per 1e6 bytes at the NIC, 0.08 on
// the 100 Gbps device links) whose NIC carries 50 ms of other messages per 100 ms (rho = 1/2)
// and 3 steady ring flows: (3 + 1 / (1 - 1/2)) x 0.8 = 4 ms; its own channel's 20 ms of the
// work do not count; 100 ms of others per 100 ms is more than the link can give.
TEST(SharedRoute, ProcessorSharingWithSteadyFlows) {
  std::map<LinkDirection, int> number;
  const SharedRoute r = NumberedRoute(TwoServers(), 0, 4, &number);
  ASSERT_EQ(r.links.size(), 4u);  // device 0 up, server 0 up, server 1 down, device 4 down
  std::vector<double> work(number.size(), 0);
  std::vector<int> steady(number.size(), 0);
  const int nic = r.links[1];
  work[nic] = 70;
  steady[nic] = 3;
  const double own_bytes = 20 / 0.8e-6;  // 20 ms of the NIC's work
  EXPECT_NEAR(r.At(100, work.data(), own_bytes, steady.data()).Ms(1e6) - r.fixed_ms, 4, 1e-12);
  EXPECT_NEAR(r.At(100).Ms(1e6) - r.fixed_ms, 0.8, 1e-12);
  work[nic] = 120;
  EXPECT_TRUE(std::isinf(r.At(100, work.data(), own_bytes).ms_per_byte));
}

}  // namespace
}  // namespace pipetwin
