// The network model: ideal datacenter links by default (1 GB at 25 GB/s in 40 ms), SimGrid's
// TCP model on request, and flows that share a NIC share its bandwidth.
#include <gtest/gtest.h>

#include "tests/sim/sim_test_support.h"

namespace pipetwin {
namespace {

using simtest::EqualLayers;
using simtest::EvenPlan;
using simtest::MakeScenario;
using simtest::RelativeError;
using simtest::TwoLevelCluster;

// Two stages on two devices of one server (25 GB/s links, no latency), one micro-batch whose
// activation (and its gradient back) is 1 GB: the run is two transfers of 1 GB, plus 3 us of
// compute.
Scenario OneGigabyteTwice(const std::string& network_model) {
  Cluster cluster = TwoLevelCluster(2, 1, 200, 0, 0, 0);
  cluster.network_model = network_model;
  return MakeScenario(EqualLayers(2, 1e-3, 1e-3, 1e9, 4), cluster, EvenPlan(2, 1, 1), "gpipe", 1,
                      1);
}

TEST(SimNetwork, DatacenterMovesOneGigabyteAt25GBpsIn40ms) {
  const Report r = simtest::Simulate(OneGigabyteTwice("datacenter"));
  EXPECT_EQ(r.network_model, "datacenter");
  EXPECT_LT(RelativeError(r.makespan_s, 2 * 0.040 + 4e-6), 1e-3) << r.makespan_s;
}

TEST(SimNetwork, TcpModelKeepsSimGridsLv08Factors) {
  const Report r = simtest::Simulate(OneGigabyteTwice("tcp"));
  // LV08 delivers 0.97 of the bandwidth: about 41.2 ms per gigabyte.
  EXPECT_GT(r.makespan_s, 2 * 0.0410);
  EXPECT_LT(r.makespan_s, 2 * 0.0450);
}

// Two pipelines of two stages, stage 0 on server 0 and stage 1 on server 1: both replicas send
// their 1 GB activation at the same instant through server 0's one 25 GB/s NIC, so each transfer
// takes twice as long as a pipeline alone.
TEST(SimNetwork, TwoFlowsThroughOneNicTakeTwiceAsLong) {
  const Cluster cluster = TwoLevelCluster(2, 2, 8000, 0, 200, 0);
  const Workload w = EqualLayers(2, 1e-3, 1e-3, 1e9, 0);
  const Report alone = simtest::Simulate(
      MakeScenario(w, cluster, EvenPlan(2, 1, 1, {{0}, {2}}), "gpipe", 1, 1));
  const Report shared = simtest::Simulate(
      MakeScenario(w, cluster, EvenPlan(2, 1, 2, {{0, 1}, {2, 3}}), "gpipe", 1, 1));
  const double transfer = 1e9 / 25e9;  // the NIC is the narrowest link of the route
  EXPECT_LT(RelativeError(alone.makespan_s, 2 * transfer + 4e-6), 1e-3) << alone.makespan_s;
  EXPECT_LT(RelativeError(shared.makespan_s, 2 * (2 * transfer) + 4e-6), 1e-3)
      << shared.makespan_s;
  EXPECT_DOUBLE_EQ(shared.communication[1].pipeline_bytes, 4e9);
}

}  // namespace
}  // namespace pipetwin
