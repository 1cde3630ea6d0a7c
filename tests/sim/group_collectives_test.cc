// A tensor-parallel group's collectives as flows on the server's NVLink links (sim/actors.cc,
// StartGroupCollectives): exact on idle links, sharing a link with a pipeline message inside the
// server, and never sharing it with what leaves the server (a DGX reaches its NICs over PCIe).
// Every time below is worked out by hand from the cases' numbers.
#include <gtest/gtest.h>

#include "tests/sim/sim_test_support.h"

namespace pipetwin {
namespace {

constexpr double kGbps = 100;          // 12.5 GB/s on every link
constexpr double kMessageBytes = 12.5e6;  // 1 ms on such a link

// Two stages of one layer each, on the two tensor-parallel groups of one server (or of two
// servers): layer 0 forward 10 ms, backward 15 ms; layer 1 forward 4 ms with 2 ms of its
// group's collectives beside its kernels, backward 10 ms. Flush, 2 micro-batches of 1 sample.
Scenario TwoStages(int servers, const std::string& link, const std::string& network) {
  Workload w = simtest::EqualLayers(2, 10, 10, kMessageBytes, 0);
  w.tensor_parallel = 2;
  w.layers[0].backward_ms = 15;
  w.layers[1].forward_ms = 4;
  GroupCollectives c;
  c.forward_overlapped_ms = 2;
  c.forward_bytes = 1e6;
  c.backward_bytes = 0;
  w.layers[1].collectives = c;
  Cluster cluster = simtest::TwoLevelCluster(servers == 1 ? 2 : 1, servers, kGbps, 0, kGbps, 0);
  cluster.levels[0].link = link;
  cluster.network_model = network;
  return simtest::MakeScenario(w, cluster, simtest::EvenPlan(2, 1, 1), "flush", 2, 1);
}

// Stage 0: F0 0-10, F1 10-20; its activations arrive 11 and 21. Stage 1: F0 11-15, B0 15-25
// (gradient 0 sent at 25), F1 25-29 (its collectives 25-27 alone), B1 29-39, gradient 1 arrives
// at 40. Alone on the links gradient 0 arrives at 26: stage 0's B0 26-41, B1 41-56.
constexpr double kAloneMs = 56;
// Sharing stage 1's link upwards with F1's collectives from 25, gradient 0 and the collectives'
// upward flow get half the link each: gradient 0's 12.5 MB take 2 ms (arriving at 27), the flow
// has sent 12.5 of its 25 MB by then and ends at 28, inside F1: B0 27-42, B1 42-57.
constexpr double kSharedMs = 57;

TEST(SimGroupCollectives, ShareTheServersLinkWithAPipelineMessage) {
  const Report shared = simtest::Simulate(TwoStages(1, "nvlink", "datacenter"));
  EXPECT_NEAR(shared.makespan_s * 1e3, kSharedMs, 1e-6);
  // Each flow alone (every link a fat pipe): the times the planners charge.
  const Report alone = simtest::Simulate(TwoStages(1, "nvlink", "contention_free"));
  EXPECT_NEAR(alone.makespan_s * 1e3, kAloneMs, 1e-6);
  // The bytes the represented rank sent for its collectives: F1 of each micro-batch, 1 MB.
  ASSERT_FALSE(shared.communication.empty());
  EXPECT_DOUBLE_EQ(shared.communication[0].tensor_parallel_bytes, 2e6);
}

// Across servers the gradient leaves through the NIC: on NVLink servers it never crosses the
// NVLink link the collectives use, so they do not slow it; on a PCIe server, whose NIC hangs off
// the same PCIe link, they do.
TEST(SimGroupCollectives, WhatLeavesAnNvlinkServerDoesNotShareItsNvlinkLink) {
  EXPECT_NEAR(simtest::Simulate(TwoStages(2, "nvlink", "datacenter")).makespan_s * 1e3, kAloneMs,
              1e-6);
  EXPECT_NEAR(simtest::Simulate(TwoStages(2, "pcie", "datacenter")).makespan_s * 1e3, kSharedMs,
              1e-6);
}

// Collectives that run alone follow the op's compute and last their time on an idle link: one
// stage whose forward of 10 ms has 3 ms of them, backward 10 ms with 1 ms beside its kernels and
// 2 ms alone; 3 micro-batches take 3 x 20 ms.
TEST(SimGroupCollectives, OnIdleLinksAnOpLastsWhatThePlannersCharge) {
  Workload w = simtest::EqualLayers(1, 10, 10, 0, 0);
  w.tensor_parallel = 4;
  GroupCollectives c;
  c.forward_exposed_ms = 3;
  c.backward_overlapped_ms = 1;
  c.backward_exposed_ms = 2;
  c.forward_bytes = c.backward_bytes = 5e6;
  w.layers[0].collectives = c;
  Cluster cluster = simtest::TwoLevelCluster(2, 1, kGbps, 1, kGbps, 0);
  const Scenario s = simtest::MakeScenario(w, cluster, simtest::EvenPlan(1, 1, 1), "flush", 3, 1);
  const Report r = simtest::Simulate(s);
  EXPECT_NEAR(r.makespan_s * 1e3, 60, 1e-6);
  EXPECT_DOUBLE_EQ(r.communication[0].tensor_parallel_bytes, 3 * 10e6);
}

}  // namespace
}  // namespace pipetwin
