#include "partition/planners/two_bw.h"

#include <algorithm>
#include <tuple>

#include "partition/planners/min_max_partition.h"
#include "partition/planners/stage_plan.h"
#include "partition/util/error.h"
#include "partition/util/format.h"
#include "partition/cost/memory.h"
#include "partition/planners/settings.h"
#include "partition/planners/splits.h"

namespace pipetwin {

namespace {

constexpr ScheduleKind kSchedule = ScheduleKind::kTwoBW;

// One point of the space before its split is solved.
struct Candidate {
  int width, depth, microbatch_size, microbatches;
  bool recompute;
  double best_possible_samples_per_s;  // an upper bound, to order and prune the search
};

// The ranking order: more samples/s, then less memory, then smaller d, w, b, recomputation off.
bool Better(const TwoBWConfiguration& a, const TwoBWConfiguration& b) {
  if (a.samples_per_s != b.samples_per_s) return a.samples_per_s > b.samples_per_s;
  if (a.memory_bytes != b.memory_bytes) return a.memory_bytes < b.memory_bytes;
  return std::make_tuple(a.depth, a.width, a.microbatch_size, a.recompute) <
         std::make_tuple(b.depth, b.width, b.microbatch_size, b.recompute);
}

void CheckSettings(const PlannerSettings& s) {
  auto fail = [](const std::string& rule) { throw InputError("2bw planner: " + rule); };
  if (s.microbatch_candidates.empty()) fail("microbatch_candidates is empty");
  for (int b : s.microbatch_candidates)
    if (b < 1) fail("microbatch candidates must be >= 1, got " + std::to_string(b));
  if (s.max_global_batch_size < 1)
    fail("max_global_batch_size must be >= 1, got " + std::to_string(s.max_global_batch_size));
  if (s.ranked_count < 1) fail("ranked_count must be >= 1, got " + std::to_string(s.ranked_count));
  const int smallest = *std::min_element(s.microbatch_candidates.begin(),
                                         s.microbatch_candidates.end());
  if (s.max_global_batch_size < smallest)
    fail("max_global_batch_size " + std::to_string(s.max_global_batch_size) +
         " is below the smallest micro-batch candidate " + std::to_string(smallest));
}

std::vector<int> SortedCandidates(const std::vector<int>& values) {
  std::vector<int> out = values;
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Everything in the space that satisfies the batch rule (m >= d), with an upper bound on its
// throughput: no stage can be faster than the whole model's compute over d, nor than its
// slowest single layer. Points whose weights, gradients and optimizer state alone exceed d
// devices are left out (the fullest stage holds at least the average).
std::vector<Candidate> Enumerate(const PipelineCostModel& model, const PlannerSettings& s,
                                 int* configurations) {
  const int layers = model.LayerCount(), workers = model.WorkerCount();
  const double static_bytes = model.Memory(0, layers - 1, 1, 2, 0, false).Total();
  std::vector<Candidate> out;
  *configurations = 0;
  for (int b : SortedCandidates(s.microbatch_candidates)) {
    for (int r = 0; r <= (s.search_recompute ? 1 : 0); ++r) {
      double slowest_layer_ms = 0;
      for (int l = 0; l < layers; ++l)
        slowest_layer_ms = std::max(slowest_layer_ms, model.ComputeMs(l, l, b, r));
      const double total_ms = model.ComputeMs(0, layers - 1, b, r);
      for (int d = 1; d <= std::min(layers, workers); ++d) {
        const double fastest_ms = std::max(total_ms / d, slowest_layer_ms);
        for (int w = 1; w * d <= workers; ++w) {
          const int m = s.max_global_batch_size / (w * b);
          if (m < d) break;  // m only shrinks as w grows
          ++*configurations;
          if (static_bytes / d > model.CapacityBytes()) continue;
          out.push_back({w, d, b, m, r == 1, w * b * 1e3 / fastest_ms});
        }
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const Candidate& x, const Candidate& y) {
    if (x.best_possible_samples_per_s != y.best_possible_samples_per_s)
      return x.best_possible_samples_per_s > y.best_possible_samples_per_s;
    return std::make_tuple(x.depth, x.width, x.microbatch_size, x.recompute) <
           std::make_tuple(y.depth, y.width, y.microbatch_size, y.recompute);
  });
  return out;
}

// The best split of one candidate whose slowest stage takes at most `limit_ms`; samples_per_s
// stays 0 when no split fits the memory within the limit.
TwoBWConfiguration Solve(const PipelineCostModel& model, const PipelinePlacement& placement,
                         const Candidate& c, double limit_ms, MinMaxPartitioner& partitioner) {
  const double capacity = model.CapacityBytes();
  auto cost = [&](int s, int i, int j) {
    const int stashed = StashedMicrobatches(kSchedule, s, c.depth, c.microbatches);
    if (model.Memory(i, j, c.microbatch_size, 2, stashed, c.recompute).Total() > capacity)
      return kInfinity;
    return TwoBWStageMs(model.Times(placement, s, i, j, c.microbatch_size, c.recompute),
                        c.microbatches);
  };
  auto lower = [&](int i, int j) { return model.ComputeMs(i, j, c.microbatch_size, c.recompute); };
  TwoBWConfiguration out;
  out.width = c.width;
  out.depth = c.depth;
  out.microbatch_size = c.microbatch_size;
  out.microbatches = c.microbatches;
  out.recompute = c.recompute;
  const double t = partitioner.Solve(model.LayerCount(), c.depth, cost, lower, limit_ms,
                                     &out.stages);
  if (t == kInfinity) return out;
  out.time_per_microbatch_ms = t;
  out.samples_per_s = c.width * c.microbatch_size * 1e3 / t;
  for (int s = 0; s < c.depth; ++s) {
    const StageRange& r = out.stages[s];
    const int stashed = StashedMicrobatches(kSchedule, s, c.depth, c.microbatches);
    out.memory_bytes = std::max(
        out.memory_bytes,
        model.Memory(r.first_layer, r.last_layer, c.microbatch_size, 2, stashed, c.recompute)
            .Total());
  }
  return out;
}

// Nothing fits: the configuration that comes closest, by the split that minimises the fullest
// worker. Memory does not depend on w, so w = 1 (the loosest batch rule) stands for all.
[[noreturn]] void ThrowSmallestShortfall(const PipelineCostModel& model,
                                         const PlannerSettings& s) {
  const int layers = model.LayerCount();
  const double capacity = model.CapacityBytes();
  MinMaxPartitioner partitioner;
  double best_need = kInfinity;
  int best_depth = 0, best_b = 0, best_stage = 0;
  bool best_recompute = false;
  StageRange best_range;
  for (int b : SortedCandidates(s.microbatch_candidates)) {
    for (int r = 0; r <= (s.search_recompute ? 1 : 0); ++r) {
      for (int d = 1; d <= std::min(layers, model.WorkerCount()); ++d) {
        if (s.max_global_batch_size / b < d) break;
        auto need = [&](int stage, int i, int j) {
          return model.Memory(i, j, b, 2, StashedMicrobatches(kSchedule, stage, d, d), r == 1)
              .Total();
        };
        auto no_bound = [](int, int) { return -kInfinity; };
        std::vector<StageRange> ranges;
        const double worst = partitioner.Solve(layers, d, need, no_bound, kInfinity, &ranges);
        if (worst >= best_need) continue;
        best_need = worst;
        best_depth = d;
        best_b = b;
        best_recompute = r == 1;
        for (int stage = 0; stage < d; ++stage)
          if (need(stage, ranges[stage].first_layer, ranges[stage].last_layer) == worst) {
            best_stage = stage;
            best_range = ranges[stage];
            break;
          }
      }
    }
  }
  throw InputError(
      "2bw planner: the model fits no configuration; the smallest shortfall is stage " +
      std::to_string(best_stage) + " of " + std::to_string(best_depth) + " (layers " +
      std::to_string(best_range.first_layer) + ".." + std::to_string(best_range.last_layer) +
      ", micro-batch " + std::to_string(best_b) + ", recomputation " +
      (best_recompute ? "on" : "off") + "), which needs " + DescribeBytes(best_need) +
      " but the device has " + DescribeBytes(capacity));
}

nlohmann::json RankedTable(const std::vector<TwoBWConfiguration>& ranked) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < ranked.size(); ++i) {
    const TwoBWConfiguration& c = ranked[i];
    nlohmann::json split = nlohmann::json::array();
    for (const StageRange& r : c.stages) split.push_back({r.first_layer, r.last_layer});
    out.push_back({{"rank", i + 1},
                   {"w", c.width},
                   {"d", c.depth},
                   {"b", c.microbatch_size},
                   {"m", c.microbatches},
                   {"recompute", c.recompute},
                   {"samples_per_s", c.samples_per_s},
                   {"time_per_microbatch_ms", c.time_per_microbatch_ms},
                   {"memory_bytes", c.memory_bytes},
                   {"stages", split}});
  }
  return out;
}

}  // namespace

double TwoBWStageMs(const StageTimes& t, int microbatches) {
  return std::max(t.compute_ms + t.transfer_ms, t.allreduce_ms / microbatches);
}

TwoBWSearch Search2BW(const PipelineCostModel& model, const PlannerSettings& settings) {
  CheckSettings(settings);
  TwoBWSearch search;
  const std::vector<Candidate> candidates = Enumerate(model, settings, &search.configurations);
  const size_t keep = static_cast<size_t>(settings.ranked_count);
  // Placements depend on (d, w) only; built when first needed.
  std::vector<std::vector<PipelinePlacement>> placements(model.WorkerCount() + 1);
  MinMaxPartitioner partitioner;
  // Branch and bound: candidates come best bound first; once the table is full, a candidate
  // whose bound is below its last row cannot enter, nor can any after it. Slack of 1e-12 keeps
  // exact ties in.
  for (const Candidate& c : candidates) {
    const bool full = search.ranked.size() == keep;
    const double threshold = full ? search.ranked.back().samples_per_s : 0;
    if (full && c.best_possible_samples_per_s < threshold * (1 - 1e-12)) break;
    const double limit_ms =
        full ? c.width * c.microbatch_size * 1e3 / threshold * (1 + 1e-12) : kInfinity;
    auto& by_width = placements[c.depth];
    if (by_width.empty()) by_width.resize(model.WorkerCount() / c.depth + 1);
    if (by_width[c.width].devices.empty()) by_width[c.width] = model.Place(c.depth, c.width);
    ++search.solved;
    TwoBWConfiguration found = Solve(model, by_width[c.width], c, limit_ms, partitioner);
    if (found.samples_per_s <= 0) continue;
    if (full && !Better(found, search.ranked.back())) continue;
    if (full) search.ranked.pop_back();
    search.ranked.insert(
        std::upper_bound(search.ranked.begin(), search.ranked.end(), found, Better), found);
  }
  if (search.ranked.empty()) ThrowSmallestShortfall(model, settings);
  return search;
}

Plan Plan2BW(const Workload& workload, const Cluster& cluster, const PlannerSettings& settings) {
  const PipelineCostModel model(workload, cluster, settings);
  const TwoBWSearch search = Search2BW(model, settings);
  const TwoBWConfiguration& best = search.ranked.front();
  const int d = best.depth, w = best.width, b = best.microbatch_size, m = best.microbatches;
  const PipelinePlacement placement = model.Place(d, w);

  std::vector<StageEstimate> stages;
  int bottleneck = 0;
  double slowest_ms = -1;
  for (int s = 0; s < d; ++s) {
    const StageRange& r = best.stages[s];
    stages.push_back(model.EstimateStage(placement, s, r.first_layer, r.last_layer, b,
                                         best.recompute, WeightVersions(kSchedule, s, d, m),
                                         StashedMicrobatches(kSchedule, s, d, m)));
    const double t = TwoBWStageMs(stages.back().times, m);
    if (t > slowest_ms) slowest_ms = t, bottleneck = s;
  }
  const StageTimes& slow = stages[bottleneck].times;

  Plan plan;
  plan.planner = "2bw";
  plan.schedule = kSchedule;
  for (const StageEstimate& e : stages) plan.stages.push_back(MakeStagePlan(e));
  plan.microbatch_size = b;
  plan.microbatches_per_update = m;
  plan.recompute = best.recompute;
  plan.predicted_samples_per_s = w * b * 1e3 / slowest_ms;
  plan.predicted_time_per_sample_s = 1 / plan.predicted_samples_per_s;
  plan.memory_bytes_per_device = DeviceMemory(stages, model.DeviceCount());
  plan.details = {
      {"model", "PipeDream-2BW (Narayanan et al., ICML 2021, appendix A.1.1): t = max over "
                "stages of max(compute + transfer, allreduce / m) per micro-batch; samples/s = "
                "w b / t"},
      {"w", w},
      {"d", d},
      {"b", b},
      {"m", m},
      {"recompute", best.recompute},
      {"global_batch_size", w * b * m},
      {"time_per_microbatch_ms", slowest_ms},
      {"time_per_update_ms", m * slowest_ms},
      {"bottleneck_stage", bottleneck},
      // Per update, at the bottleneck stage. The all-reduce overlaps the next m micro-batches;
      // only what they do not hide is exposed. compute + communication + exposed all-reduce +
      // bubble = time_per_update_ms.
      {"breakdown",
       {{"compute_ms", m * slow.compute_ms},
        {"communication_ms", m * slow.transfer_ms},
        {"allreduce_ms", slow.allreduce_ms},
        {"exposed_allreduce_ms",
         std::max(0.0, slow.allreduce_ms - m * (slow.compute_ms + slow.transfer_ms))},
        {"bubble_ms", 0.0}}},
      {"memory_bytes", best.memory_bytes},
      {"capacity_bytes", model.CapacityBytes()},
      {"stages", StageDetails(stages)},
      {"ranked", RankedTable(search.ranked)},
      {"search", {{"configurations", search.configurations}, {"solved", search.solved}}}};
  if (model.RingsCrossServers(placement) && model.TransfersCrossServers(placement))
    plan.details["caveat"] =
        "stage transfers cross server uplinks that the all-reduce rings share: this prediction "
        "gives the transfers the link to themselves, the simulator shares it (expect it slower)";
  return plan;
}

}  // namespace pipetwin
