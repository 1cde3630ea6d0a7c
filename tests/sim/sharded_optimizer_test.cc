// The distributed optimizer (ZeRO-1, Megatron-LM's --use-distributed-optimizer) in the
// simulator: a replicated stage reduce-scatters its gradients and all-gathers its weights after
// the step, the two halves of its ring (communication.h, GradientSyncBytes), which the planners
// charge as one ring all-reduce of their mean; with --overlap-param-gather the next batch's
// first forward waits for the first bucket of weights only. Every time below is by hand.
#include <gtest/gtest.h>

#include "partition/cost/communication.h"
#include "partition/cost/pipeline_cost_model.h"
#include "tests/sim/sim_test_support.h"

namespace pipetwin {
namespace {

// One stage of `layers` equal layers on two servers of one device each, joined by 100 Gb/s
// (12.5 GB/s) links without latency; bf16 weights (2 bytes) and fp32 gradients (4), 12.5e6
// parameters a layer; forward 5 ms and backward 10 ms a layer, one micro-batch a batch.
Scenario Replicated(int layers, bool sharded, bool overlap, int buckets, int iterations) {
  Workload w = simtest::EqualLayers(layers, 5, 10, 0, 25e6);
  w.parameter_dtype_bytes = 2;
  w.gradient_dtype_bytes = 4;
  for (Layer& l : w.layers) l.parameters = 12.5e6;
  const Cluster cluster = simtest::TwoLevelCluster(1, 2, 100, 0, 100, 0);
  Scenario s = simtest::MakeScenario(w, cluster, simtest::EvenPlan(1, layers, 2), "flush", 1,
                                     iterations);
  s.training.distributed_optimizer = sharded;
  s.training.overlap_param_gather = overlap;
  s.training.allreduce_buckets = buckets;
  return s;
}

// Two layers: forward 10 ms, backward 20 ms; gradients 100 MB, weights 50 MB. A ring of two
// sends half a buffer per step: the all-reduce, 2 steps of 50 MB, takes 8 ms; the sharded
// optimizer's reduce-scatter 1 step of 50 MB (4 ms) and all-gather 1 step of 25 MB (2 ms).
TEST(SimShardedOptimizer, ReduceScattersGradientsAndAllGathersWeights) {
  EXPECT_NEAR(simtest::Simulate(Replicated(2, false, false, 1, 1)).makespan_s * 1e3, 38, 1e-6);
  const Scenario sharded = Replicated(2, true, false, 1, 1);
  const Report r = simtest::Simulate(sharded);
  EXPECT_NEAR(r.makespan_s * 1e3, 36, 1e-6);
  // The planners' charge: one ring all-reduce of (100 + 50) / 2 MB on the same two devices.
  CostSettings settings;
  settings.sharded_optimizer = true;
  const PipelineCostModel model(sharded.workload, sharded.cluster, settings);
  EXPECT_NEAR(model.AllReduceCost({0, 1}).Ms(model.SyncBytes(0, 1)), 6, 1e-9);
  EXPECT_DOUBLE_EQ(GradientSyncBytes(100e6, 50e6, true), 75e6);
  EXPECT_DOUBLE_EQ(GradientSyncBytes(100e6, 50e6, false), 100e6);
  // What crossed the servers' link per device: 50 MB of gradients and 25 MB of weights.
  ASSERT_EQ(r.communication.size(), 2u);
  EXPECT_NEAR(r.communication[1].allreduce_bytes, 2 * 75e6, 1);
}

// Two batches, the gradients in two buckets (layer 1's after half the backward). Batch 1:
// forward 0-10, backward 10-30, reduce-scatters 20-22 and 30-32; the weights' all-gather in two
// buckets of 25 MB (1 ms each) 32-33 and 33-34. With --overlap-param-gather batch 2's forward
// starts at 33 (its first bucket): backward 43-63, reduce-scatters 53-55 and 63-65, gathers
// 65-67. Without, it waits for the whole gather (one of 50 MB, 2 ms: 32-34) and starts at 34:
// ... reduce-scatters 54-56, 64-66, gather 66-68.
// The optimizer step between the gradients' reduction and the weights' gather: 6 ms a layer,
// of which 4 ms (Layer::update_sharded_ms) is per parameter and runs on the replica's half
// only. Not sharded: forward 0-10, backward 10-30, all-reduce 30-38, the whole step 38-50.
// Sharded over the 2 replicas: reduce-scatter 30-34, step 34-42 (2 x (2 + 4 / 2)), gather
// 42-44. A layer that does not say which part shards has all of it shard: step 34-40, gather
// 40-42.
TEST(SimShardedOptimizer, EachReplicaStepsItsShard) {
  auto with_step = [](Scenario s, std::optional<double> sharded_ms) {
    for (Layer& l : s.workload.layers) {
      l.update_ms = 6;
      l.update_sharded_ms = sharded_ms;
    }
    return s;
  };
  EXPECT_NEAR(simtest::Simulate(with_step(Replicated(2, false, false, 1, 1), 4)).makespan_s * 1e3,
              50, 1e-6);
  EXPECT_NEAR(simtest::Simulate(with_step(Replicated(2, true, false, 1, 1), 4)).makespan_s * 1e3,
              44, 1e-6);
  EXPECT_NEAR(
      simtest::Simulate(with_step(Replicated(2, true, false, 1, 1), std::nullopt)).makespan_s * 1e3,
      42, 1e-6);
}

TEST(SimShardedOptimizer, OverlappedWeightGatherLetsTheNextForwardStartOnItsFirstBucket) {
  EXPECT_NEAR(simtest::Simulate(Replicated(2, true, true, 2, 2)).makespan_s * 1e3, 67, 1e-6);
  EXPECT_NEAR(simtest::Simulate(Replicated(2, true, false, 2, 2)).makespan_s * 1e3, 68, 1e-6);
}

}  // namespace
}  // namespace pipetwin
