// PipeDream-2BW's planner: a hand-worked case, agreement with an exhaustive enumeration of its
// space on small random workloads (every w, d, b, recomputation, m and every contiguous split),
// the smallest-shortfall error, one-line errors for bad input, the plan's shape, and the search
// time for GPT 3.8B on 64 V100s (the bound: 50 ms).
#include "workloads/analytic/analytic.h"
#include "partition/planners/two_bw.h"

#include <algorithm>
#include <cstdio>
#include <random>

#include <gtest/gtest.h>

#include "partition/util/error.h"
#include "tests/test_support.h"
#include "workloads/networks/network.h"
#include "partition/planners/settings.h"
#include "partition/util/format.h"

namespace pipetwin {
namespace {

// A chain of `layers` layers with random times, sizes and parameters; with `skips`, every third
// layer also feeds the layer two ahead (a DAG pipelined in topological order).
Workload RandomWorkload(unsigned seed, int layers, bool skips) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> ms(0.5, 4), bytes(1e5, 4e6), params(1e5, 3e6);
  Workload w;
  w.name = "random" + std::to_string(seed);
  w.reference.batch_size = 2;
  for (int i = 0; i < layers; ++i) {
    w.layers.push_back(testing::ChainLayer(i, ms(rng), 2 * ms(rng), bytes(rng), params(rng)));
    if (skips && i >= 2 && i % 3 == 2) w.layers[i].inputs.push_back(i - 2);
  }
  return w;
}

// Two servers of four devices: 100 Gbps inside, 10 Gbps between.
Cluster SmallCluster() {
  Cluster c;
  c.device.memory_bytes = 1e9;
  c.levels = {{"server", 4, 100, 1, "nvlink", {}}, {"cluster", 2, 10, 5, "ethernet", {}}};
  return c;
}

// One (w, d, b, recompute) of the space, with the planner's m (the most the global batch allows)
// and its split: the one whose slowest stage is fastest with its transfers and ring alone.
// Several splits can tie on that; they may differ in what the rest of the pipeline and the
// shared links add, so `low` and `high` bound the charged throughput over the tied splits.
struct Found {
  int w, d, b;
  bool recompute;
  double low, high;
};

bool Same(const Found& f, const TwoBWConfiguration& c) {
  return f.w == c.width && f.d == c.depth && f.b == c.microbatch_size &&
         f.recompute == c.recompute;
}

// Exhaustive search of the 2BW space with the shared cost primitives (Times, Memory): every
// (w, d, b, recompute) and every split into d contiguous stages. Returns each (w, d, b,
// recompute) that fits, best `high` first.
std::vector<Found> BruteForce(const PipelineCostModel& model, const PlannerSettings& s) {
  const int layers = model.LayerCount(), workers = model.WorkerCount();
  std::vector<Found> out;
  for (int d = 1; d <= std::min(layers, workers); ++d) {
    for (int w = 1; w * d <= workers; ++w) {
      const PipelinePlacement placement = model.Place(d, w);
      for (int b : s.microbatch_candidates) {
        const int m = s.max_global_batch_size / (w * b);
        if (m < d) continue;
        for (bool recompute : {false, true}) {
          double fastest = kInfinity;
          std::vector<std::vector<StageRange>> tied;
          // Cuts: bit c set = a stage ends after layer c.
          for (int cuts = 0; cuts < (1 << (layers - 1)); ++cuts) {
            if (__builtin_popcount(cuts) != d - 1) continue;
            double slowest = 0;
            bool fits = true;
            std::vector<StageRange> split;
            for (int stage = 0, first = 0; stage < d; ++stage) {
              int last = first;
              while (last < layers - 1 && !(cuts & (1 << last))) ++last;
              // 2BW: two weight versions, d - stage micro-batches in flight.
              fits = fits && model.Memory(first, last, b, 2, d - stage, recompute).Total() <=
                                 model.CapacityBytes();
              const StageTimes t = model.Times(placement, stage, first, last, b, recompute);
              const double ring =
                  placement.allreduce_alone[stage].Ms(model.GradientBytes(first, last));
              // Appendix A.1.1: the all-reduce overlaps the next m micro-batches.
              slowest = std::max({slowest, t.compute_ms + t.transfer_ms, ring / m});
              split.push_back({first, last});
              first = last + 1;
            }
            if (!fits || slowest > fastest) continue;
            if (slowest < fastest) tied.clear();
            fastest = slowest;
            tied.push_back(split);
          }
          if (tied.empty()) continue;
          Found f{w, d, b, recompute, kInfinity, 0};
          for (const auto& split : tied) {
            const TwoBWConfiguration c{w, d, b, m, recompute, 0, 0, 0, split};
            const double samples = w * b * 1e3 / TwoBWMsPerMicrobatch(model, placement, c);
            f.low = std::min(f.low, samples);
            f.high = std::max(f.high, samples);
          }
          out.push_back(f);
        }
      }
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Found& x, const Found& y) { return x.high > y.high; });
  return out;
}

// Two layers (forward 1 ms, backward 2 ms per sample; 1e6 parameters in fp32; 1e6-byte outputs)
// on two devices joined at 80 Gbps (1e10 B/s), no latency, b = 1, global batch 2:
//   w=2 d=1 m=1: t = max(6 ms, all-reduce 2 (1/2) 8e6 B / 1e10 B/s = 0.8 ms) = 6 ms  -> 333.3/s
//   w=1 d=2 m=2: 1F1B's loop over both stages, forward 0, its activation (0.1 ms), stage 1's
//                forward and backward, the gradient (0.1 ms), stage 0's backward, in two
//                micro-batches: t = (3 + 3 + 0.1 + 0.1) / 2 = 3.1 ms                  -> 322.6/s
//   w=1 d=1 m=2: t = 6 ms                                                           -> 166.7/s
// Memory of the best: weights 2 x 8e6, gradients 8e6, Adam 16e6, one micro-batch's stash 2e6.
// At 10 Gbps (1.25e9 B/s) the all-reduce takes 6.4 ms and 0.4 ms of it is exposed: w=2 d=1
// gives 6.4 ms (312.5/s), still ahead of d=2 ((3 + 3 + 0.8 + 0.8) / 2 = 3.8 ms, 263.2/s).
TEST(Planner2BWTest, HandWorkedTwoLayerPlan) {
  Workload w;
  w.layers = {testing::ChainLayer(0, 1, 2, 1e6, 1e6), testing::ChainLayer(1, 1, 2, 1e6, 1e6)};
  Cluster c;
  c.levels = {{"server", 2, 80, 0, "nvlink", {}}};
  PlannerSettings s;
  s.microbatch_candidates = {1};
  s.max_global_batch_size = 2;
  s.search_recompute = false;
  const Plan p = Plan2BW(w, c, s);
  EXPECT_EQ(p.planner, "2bw");
  EXPECT_EQ(ScheduleKindName(p.schedule), "2bw");
  ASSERT_EQ(p.StageCount(), 1);
  EXPECT_EQ(p.stages[0].devices, (std::vector<int>{0, 1}));
  EXPECT_NEAR(p.predicted_samples_per_s, 2e3 / 6, 1e-9);
  EXPECT_EQ(p.microbatches_per_update, 1);
  EXPECT_EQ(p.memory_bytes_per_device, (std::vector<double>{42e6, 42e6}));
  EXPECT_EQ(p.details["breakdown"]["exposed_allreduce_ms"].get<double>(), 0);
  const auto& ranked = p.details["ranked"];
  ASSERT_EQ(ranked.size(), 3u);
  EXPECT_NEAR(ranked[1]["samples_per_s"].get<double>(), 1e3 / 3.1, 1e-9);
  EXPECT_EQ(ranked[1]["pipeline_depth"].get<int>(), 2);
  EXPECT_NEAR(ranked[2]["samples_per_s"].get<double>(), 1e3 / 6, 1e-9);

  c.levels[0].bandwidth_gbps = 10;
  const Plan slow = Plan2BW(w, c, s);
  EXPECT_EQ(slow.StageCount(), 1);
  EXPECT_NEAR(slow.predicted_samples_per_s, 2e3 / 6.4, 1e-9);
  EXPECT_NEAR(slow.details["breakdown"]["exposed_allreduce_ms"].get<double>(), 0.4, 1e-9);
  EXPECT_NEAR(slow.details["ranked"][1]["samples_per_s"].get<double>(), 1e3 / 3.8, 1e-9);
}

// The search equals the exhaustive enumeration, on chains and DAGs, with capacities that reject
// part of the space: each row is a configuration of the space charged for one of its tied
// splits, the best row is at least every configuration's worst tied split, and branch and bound
// leaves out no configuration that beats the table's last row whichever split it gets. Odd
// seeds stash 8x each layer's output, so that recomputation pays off under the tighter limits.
TEST(Planner2BWTest, AgreesWithExhaustiveSearch) {
  int cases = 0, recomputed = 0, ambiguous = 0;
  for (unsigned seed = 1; seed <= 12; ++seed) {
    const Workload w = RandomWorkload(seed, 7, seed % 3 == 0);
    const bool heavy_stash = seed % 2 == 1;
    for (double capacity : heavy_stash ? std::vector<double>{2e9, 2e8, 1e8, 8e7}
                                       : std::vector<double>{2e9, 1.2e8, 8e7, 5e7}) {
      PlannerSettings s;
      s.memory_bytes_per_device = capacity;
      s.microbatch_candidates = {1, 2, 4};
      s.max_global_batch_size = 32;
      if (heavy_stash)
        for (const Layer& l : w.layers) s.stash_bytes_per_layer.push_back(8 * l.activation_bytes);
      const PipelineCostModel model(w, SmallCluster(), s);
      const std::vector<Found> expected = BruteForce(model, s);
      if (expected.empty()) {
        EXPECT_THROW(Search2BW(model, s), InputError);
        continue;
      }
      ++cases;
      const std::string where =
          "seed " + std::to_string(seed) + " capacity " + std::to_string(capacity);
      const TwoBWSearch search = Search2BW(model, s);
      const size_t rows = std::min<size_t>(expected.size(), 10);
      ASSERT_EQ(search.ranked.size(), rows) << where;
      double best_low = 0;
      for (const Found& f : expected) {
        best_low = std::max(best_low, f.low);
        ambiguous += f.high > f.low * (1 + 1e-9) ? 1 : 0;
      }
      for (size_t i = 0; i < rows; ++i) {
        const TwoBWConfiguration& row = search.ranked[i];
        const auto match = std::find_if(expected.begin(), expected.end(),
                                        [&](const Found& f) { return Same(f, row); });
        ASSERT_NE(match, expected.end()) << where << " row " << i;
        EXPECT_GE(row.samples_per_s, match->low * (1 - 1e-9)) << where << " row " << i;
        EXPECT_LE(row.samples_per_s, match->high * (1 + 1e-9)) << where << " row " << i;
        EXPECT_NEAR(row.samples_per_s,
                    row.width * row.microbatch_size * 1e3 /
                        TwoBWMsPerMicrobatch(model, model.Place(row.depth, row.width), row),
                    1e-9 * row.samples_per_s);
        if (i > 0) EXPECT_LE(row.samples_per_s, search.ranked[i - 1].samples_per_s);
      }
      EXPECT_GE(search.ranked.front().samples_per_s, best_low * (1 - 1e-9)) << where;
      const double last = search.ranked.back().samples_per_s;
      for (const Found& f : expected) {
        if (f.low <= last * (1 + 1e-9)) continue;
        EXPECT_TRUE(std::any_of(search.ranked.begin(), search.ranked.end(),
                                [&](const TwoBWConfiguration& c) { return Same(f, c); }))
            << where << ": w " << f.w << " d " << f.d << " b " << f.b << " left out";
      }
      EXPECT_LE(search.ranked.front().memory_bytes, capacity);
      recomputed += search.ranked.front().recompute ? 1 : 0;
    }
  }
  EXPECT_GT(cases, 36);     // most cases have a feasible configuration
  EXPECT_GT(recomputed, 2);  // and some are won by recomputation
  EXPECT_GT(ambiguous, 0);   // ties on the slowest stage happen, and are allowed for
}

TEST(Planner2BWTest, NothingFitsNamesTheSmallestShortfall) {
  const Workload w = RandomWorkload(5, 7, false);
  PlannerSettings s;
  s.memory_bytes_per_device = 1e6;
  s.microbatch_candidates = {1, 2};
  s.max_global_batch_size = 32;
  const PipelineCostModel model(w, SmallCluster(), s);
  // The smallest fullest-worker memory over the space, by enumeration.
  double smallest = kInfinity;
  const int layers = w.LayerCount();
  for (int d = 1; d <= 7; ++d)
    for (int b : {1, 2})
      for (bool r : {false, true})
        for (int cuts = 0; cuts < (1 << (layers - 1)); ++cuts) {
          if (__builtin_popcount(cuts) != d - 1) continue;
          double fullest = 0;
          for (int stage = 0, first = 0; stage < d; ++stage) {
            int last = first;
            while (last < layers - 1 && !(cuts & (1 << last))) ++last;
            fullest = std::max(fullest, model.Memory(first, last, b, 2, d - stage, r).Total());
            first = last + 1;
          }
          smallest = std::min(smallest, fullest);
        }
  try {
    Search2BW(model, s);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("fits no configuration"), std::string::npos) << message;
    EXPECT_NE(message.find("stage "), std::string::npos) << message;
    EXPECT_NE(message.find("needs " + DescribeBytes(smallest)), std::string::npos) << message;
    EXPECT_NE(message.find("device has " + DescribeBytes(1e6)), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
}

// Each rule gives one line that names it.
TEST(Planner2BWTest, BadInputIsOneLineNamingTheRule) {
  const Workload w = RandomWorkload(1, 4, false);
  auto expect_rule = [&](const Cluster& c, const PlannerSettings& s, const std::string& rule) {
    try {
      Plan2BW(w, c, s);
      ADD_FAILURE() << "expected InputError naming " << rule;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(rule), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
  };
  Cluster no_workers = SmallCluster();
  no_workers.levels[0].count = 0;
  expect_rule(no_workers, {}, "zero workers");
  Cluster no_bandwidth = SmallCluster();
  no_bandwidth.levels[1].bandwidth_gbps = 0;
  expect_rule(no_bandwidth, {}, "bandwidth 0 Gbps: needs > 0");
  PlannerSettings too_many;
  too_many.workers = 9;
  expect_rule(SmallCluster(), too_many, "9 workers requested but the cluster (4 x 2) holds 8");
  PlannerSettings no_candidates;
  no_candidates.microbatch_candidates = {};
  expect_rule(SmallCluster(), no_candidates, "microbatch_candidates is empty");
  PlannerSettings tiny_batch;
  tiny_batch.microbatch_candidates = {4};
  tiny_batch.max_global_batch_size = 2;
  expect_rule(SmallCluster(), tiny_batch, "below the smallest micro-batch candidate 4");
}

// The plan covers every layer once, places stage s of replica k on device k*d + s, and its
// details explain its prediction.
TEST(Planner2BWTest, PlanShapeAndDetailsAreConsistent) {
  const Workload w = RandomWorkload(7, 7, true);
  PlannerSettings s;
  s.memory_bytes_per_device = 8e7;
  s.max_global_batch_size = 64;
  const Plan p = Plan2BW(w, SmallCluster(), s);
  const int d = p.details["pipeline_depth"], width = p.details["data_parallel"],
            m = p.details["microbatches"];
  ASSERT_EQ(p.StageCount(), d);
  for (int st = 0, next = 0; st < d; ++st) {
    EXPECT_EQ(p.stages[st].first_layer, next);
    next = p.stages[st].last_layer + 1;
    if (st == d - 1) {
      EXPECT_EQ(p.stages[st].last_layer, w.LayerCount() - 1);
    }
    EXPECT_EQ(p.stages[st].replicas, width);
    for (int k = 0; k < width; ++k) EXPECT_EQ(p.stages[st].devices[k], k * d + st);
  }
  EXPECT_NO_THROW(ValidatePlan(p, w, 8, "plan.json"));
  const Plan reread = PlanFromJson(PlanToJson(p), "plan.json");
  EXPECT_EQ(ScheduleKindName(reread.schedule), "2bw");
  EXPECT_EQ(reread.WorkerCount(), d * width);
  EXPECT_EQ(m, p.microbatches_per_update);
  EXPECT_GE(m, d);
  EXPECT_LE(width * p.microbatch_size * m, 64);
  EXPECT_EQ(p.memory_bytes_per_device.size(), 8u);
  for (double bytes : p.memory_bytes_per_device) EXPECT_LE(bytes, 8e7);
  const auto& b = p.details["breakdown"];
  const double per_update = b["compute_ms"].get<double>() + b["communication_ms"].get<double>() +
                            b["exposed_allreduce_ms"].get<double>() + b["bubble_ms"].get<double>() +
                            b["shared_links_ms"].get<double>();
  EXPECT_NEAR(per_update, p.details["time_per_update_ms"].get<double>(), 1e-9 * per_update);
  EXPECT_NEAR(p.predicted_samples_per_s, width * p.microbatch_size * m * 1e3 / per_update,
              1e-9 * p.predicted_samples_per_s);
  EXPECT_DOUBLE_EQ(p.predicted_time_per_sample_s, 1 / p.predicted_samples_per_s);
  const auto& ranked = p.details["ranked"];
  EXPECT_EQ(ranked[0]["samples_per_s"].get<double>(), p.predicted_samples_per_s);
  for (size_t i = 1; i < ranked.size(); ++i)
    EXPECT_GE(ranked[i - 1]["samples_per_s"].get<double>(), ranked[i]["samples_per_s"].get<double>());
}

// GPT 3.8B (32 blocks, h 3072, 32 heads, s 512, V 51200), the blocks' stash from Korthikanti et
// al. (TransformerBlockStashBytes), global batch up to 512.
Workload Gpt38B(PlannerSettings* settings) {
  TransformerConfig config;
  config.layers = 32;
  config.hidden = 3072;
  config.heads = 32;
  config.sequence = 512;
  config.vocabulary = 51200;
  const Workload w = GenerateTransformer(config, DeviceSpec{});
  settings->max_global_batch_size = 512;
  settings->stash_bytes_per_layer.clear();
  for (const Layer& l : w.layers)
    settings->stash_bytes_per_layer.push_back(
        l.id.rfind("block", 0) == 0 ? TransformerBlockStashBytes(config) : l.activation_bytes);
  return w;
}

// GPT 3.8B on 8 x p3.16xlarge (64 V100-16GB): the full search in under 50 ms (best of five runs,
// so a busy machine does not fail it).
// The search's speed is a benchmark (pipetwin plan --bench); here only what it finds.
TEST(Planner2BWTest, Gpt38BOn64GpusFindsAFeasiblePipeline) {
  PlannerSettings s;
  const Workload w = Gpt38B(&s);
  const Cluster cluster = ClusterPreset("p3.16xlarge", 8);
  const Plan plan = Plan2BW(w, cluster, s);
  EXPECT_GT(plan.StageCount(), 1);  // 3.8e9 x (2 x 2 + 2 + 8) bytes is far over 16 GiB
  EXPECT_LE(plan.details["memory_bytes"].get<double>(), cluster.device.memory_bytes);
  EXPECT_LE(plan.WorkerCount(), 64);
  EXPECT_GE(plan.microbatches_per_update, plan.StageCount());  // 2BW needs m >= d
}

// Where the prediction approximates how links are shared, the plan says so: at batch 512 the
// plan runs pipelines across servers whose uplinks the all-reduce rings share; at 2,048 (each
// pipeline inside one server: depth 4 on 16 GiB V100s) no transfer leaves a server and there is
// nothing to say.
TEST(Planner2BWTest, APlanNamesTheContentionItChargesOnlyOnAverage) {
  PlannerSettings s;
  const Workload w = Gpt38B(&s);
  const Cluster cluster = ClusterPreset("p3.16xlarge", 8);
  const Plan shared = Plan2BW(w, cluster, s);
  ASSERT_TRUE(shared.details.contains("caveat")) << shared.details["pipeline_depth"];
  EXPECT_NE(shared.details["caveat"].get<std::string>().find("uplinks"), std::string::npos);
  s.max_global_batch_size = 2048;
  const Plan apart = Plan2BW(w, cluster, s);
  const int depth = apart.details["pipeline_depth"].get<int>();
  EXPECT_EQ(8 % depth, 0) << depth;  // p3.16xlarge: 8 GPUs per server
  EXPECT_GT(depth, 1);
  EXPECT_FALSE(apart.details.contains("caveat"));
}

// Bounding prunes most of the GPT search yet keeps the top ten of solving every configuration.
TEST(Planner2BWTest, BranchAndBoundKeepsTheTopTenOfTheFullSearch) {
  PlannerSettings s;
  const Workload w = Gpt38B(&s);
  const Cluster cluster = ClusterPreset("p3.16xlarge", 8);
  const TwoBWSearch bounded = Search2BW(PipelineCostModel(w, cluster, s), s);
  s.ranked_count = 1 << 20;  // never full: every configuration is solved
  const TwoBWSearch full = Search2BW(PipelineCostModel(w, cluster, s), s);
  EXPECT_LT(bounded.solved, full.solved / 2);
  ASSERT_EQ(bounded.ranked.size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(bounded.ranked[i].samples_per_s, full.ranked[i].samples_per_s) << i;
    EXPECT_EQ(bounded.ranked[i].depth, full.ranked[i].depth) << i;
    EXPECT_EQ(bounded.ranked[i].width, full.ranked[i].width) << i;
    EXPECT_EQ(bounded.ranked[i].microbatch_size, full.ranked[i].microbatch_size) << i;
    EXPECT_EQ(bounded.ranked[i].recompute, full.ranked[i].recompute) << i;
  }
}

}  // namespace
}  // namespace pipetwin
