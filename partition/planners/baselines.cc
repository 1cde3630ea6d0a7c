#include "partition/planners/baselines.h"

#include <algorithm>

#include "partition/planners/stage_plan.h"
#include "partition/util/error.h"
#include "partition/util/format.h"
#include "partition/cost/memory.h"
#include "partition/cost/pipeline_pace.h"
#include "partition/planners/settings.h"
#include "partition/planners/splits.h"

namespace pipetwin {

namespace {

const std::vector<std::pair<BaselineKind, std::string>>& Names() {
  static const std::vector<std::pair<BaselineKind, std::string>> names = {
      {BaselineKind::kDataParallel, "data-parallel"},
      {BaselineKind::kGPipe, "gpipe"},
      {BaselineKind::kFlush, "flush"},
      {BaselineKind::kUniform, "uniform"},
      {BaselineKind::kBalanced, "balanced"}};
  return names;
}

void CheckSettings(const std::string& who, const PlannerSettings& s, int max_depth) {
  auto fail = [&](const std::string& rule) { throw InputError(who + ": " + rule); };
  if (s.microbatch_size < 1)
    fail("microbatch_size must be >= 1, got " + std::to_string(s.microbatch_size));
  if (s.microbatches < 1) fail("microbatches must be >= 1, got " + std::to_string(s.microbatches));
  if (s.depth < 0) fail("depth must be >= 0 (0: the smallest that fits), got " +
                        std::to_string(s.depth));
  if (s.depth > max_depth)
    fail("depth " + std::to_string(s.depth) + " exceeds min(layers, workers) = " +
         std::to_string(max_depth));
  if (s.split_schedule != ScheduleKind::kFlush && s.split_schedule != ScheduleKind::kGPipe)
    fail("split_schedule must be flush or gpipe, got " + ScheduleKindName(s.split_schedule));
}

// The fullest worker of a prediction, for the shortfall message.
int FullestStage(const PipelinePrediction& p) {
  int fullest = 0;
  for (int s = 1; s < p.depth; ++s)
    if (p.stages[s].memory.Total() > p.stages[fullest].memory.Total()) fullest = s;
  return fullest;
}

[[noreturn]] void ThrowShortfall(const std::string& who, const std::string& what,
                                 const PipelinePrediction& p, double capacity) {
  const int s = FullestStage(p);
  const StageEstimate& e = p.stages[s];
  throw InputError(who + ": " + what + "; the smallest shortfall is stage " + std::to_string(s) +
                   " of " + std::to_string(p.depth) + " (layers " +
                   std::to_string(e.first_layer) + ".." + std::to_string(e.last_layer) +
                   ", micro-batch " + std::to_string(p.microbatch_size) + ", recomputation " +
                   (p.recompute ? "on" : "off") + "), which needs " +
                   DescribeBytes(e.memory.Total()) + " but the device has " +
                   DescribeBytes(capacity));
}

PipelinePrediction PredictAtDepth(BaselineKind kind, const PipelineCostModel& model,
                                  const PlannerSettings& s, int depth) {
  const int b = s.microbatch_size;
  const int width = kind == BaselineKind::kDataParallel ? model.WorkerCount()
                                                         : model.WorkerCount() / depth;
  const int m = s.global_batch_size > 0
                    ? std::max(1, (s.global_batch_size + width * b - 1) / (width * b))
                    : s.microbatches;
  if (kind == BaselineKind::kDataParallel)
    return PredictFlushedPipeline(model, ScheduleKind::kFlush, {{0, model.LayerCount() - 1}},
                                  width, b, m, s.recompute);
  const std::vector<StageRange> splits = kind == BaselineKind::kUniform
                                             ? UniformSplit(model.LayerCount(), depth)
                                             : BalancedSplit(model, depth, b, s.recompute);
  const ScheduleKind schedule = kind == BaselineKind::kGPipe   ? ScheduleKind::kGPipe
                                : kind == BaselineKind::kFlush ? ScheduleKind::kFlush
                                                               : s.split_schedule;
  return PredictFlushedPipeline(model, schedule, splits, width, b, m, s.recompute);
}

std::string Formula(ScheduleKind schedule, int depth) {
  if (depth == 1)
    return "data parallel: m x compute + hierarchical ring all-reduce (not overlapped)";
  return schedule == ScheduleKind::kGPipe
             ? "GPipe (Huang et al., NeurIPS 2019, section 2.3): (m - 1) x max stage "
               "(compute or transfer) + sum of stage compute + 2 x sum of hops + the all-reduces "
               "past the flush (each stage's from its last backward, sharing the uplinks)"
             : "PipeDream-Flush (Narayanan et al., ICML 2021; SC'21 section 2.2.1): (m - 1) x "
               "max stage (compute or transfer) + sum of stage compute + 2 x sum of hops + the "
               "all-reduces past the flush (each stage's from its last backward, sharing the "
               "uplinks)";
}

}  // namespace

std::string BaselineName(BaselineKind kind) {
  for (const auto& [k, name] : Names())
    if (k == kind) return name;
  return "unknown";
}


BaselineKind BaselineKindFromName(const std::string& name) {
  std::string all;
  for (const auto& [kind, known] : Names()) {
    if (known == name) return kind;
    all += (all.empty() ? "" : ", ") + known;
  }
  throw InputError("unknown baseline planner \"" + name + "\" (expected one of " + all + ")");
}

namespace {

// The all-reduces after a flush, past its end. Stage s starts its own once its last backward
// is done, which the drain reaches stage by stage from the last: stage s ends sum over j < s of
// (backward_j + hop_j) before stage 0. Rings that leave their servers share the uplinks (as the
// simulator's links share them); the uplinks then do all their work, each ring's at its own
// rate alone, from when it starts, so the last ends at max over k of (start_k + the work of
// every ring starting no earlier): the busy period of a work-conserving link. Rings that stay
// inside their servers run alone.
double ExposedAllReduceMs(const PipelineCostModel& model, const PipelinePlacement& placement,
                          const std::vector<StageRange>& splits, int b, bool recompute) {
  const int depth = static_cast<int>(splits.size());
  if (placement.width < 2) return 0;
  std::vector<std::pair<double, double>> rings;  // (start before the flush's end <= 0, work)
  double before_end = 0;
  for (int s = 0; s < depth; ++s) {
    const StageRange& r = splits[s];
    const double work =
        model.AllReduceCost(placement.devices[s]).Ms(model.SyncBytes(r.first_layer, r.last_layer));
    rings.push_back({-before_end, work});
    before_end += model.BackwardMs(r.first_layer, r.last_layer, b, recompute);
    if (s + 1 < depth)
      before_end += placement.send_next[s].Ms(model.BoundaryBytes(r.last_layer, b));
  }
  double end = 0;
  if (!model.RingsCrossServers(placement)) {
    for (const auto& [start, work] : rings) end = std::max(end, start + work);
    return end;
  }
  std::sort(rings.begin(), rings.end());
  double later = 0;  // work of the rings starting at or after rings[k]
  for (size_t k = rings.size(); k-- > 0;) {
    later += rings[k].second;
    end = std::max(end, rings[k].first + later);
  }
  return end;
}

}  // namespace

PipelinePrediction PredictFlushedPipeline(const PipelineCostModel& model, ScheduleKind schedule,
                                          const std::vector<StageRange>& splits, int width,
                                          int microbatch_size, int microbatches, bool recompute) {
  PipelinePrediction p;
  p.schedule = schedule;
  p.width = width;
  p.depth = static_cast<int>(splits.size());
  p.microbatch_size = microbatch_size;
  p.microbatches = microbatches;
  p.recompute = recompute;
  const PipelinePlacement placement = model.Place(p.depth, width);
  // The pace of the steady state: the slowest stage's compute, or a boundary's transfer one way
  // when that is longer (the lists post sends without waiting, so a transfer overlaps the
  // sender's next op: partition/schedule/op.h).
  double pace_ms = -1, compute_sum_ms = 0, hops_ms = 0;
  std::vector<double> compute, hops;
  for (int s = 0; s < p.depth; ++s) {
    const StageRange& r = splits[s];
    p.stages.push_back(model.EstimateStage(
        placement, s, r.first_layer, r.last_layer, microbatch_size, recompute,
        WeightVersions(schedule, s, p.depth, microbatches),
        StashedMicrobatches(schedule, s, p.depth, microbatches)));
    const StageTimes& t = p.stages.back().times;
    const double hop_ms = s + 1 < p.depth
                              ? placement.send_next[s].Ms(model.BoundaryBytes(r.last_layer,
                                                                              microbatch_size))
                              : 0;
    if (std::max(t.compute_ms, hop_ms) > pace_ms) {
      pace_ms = std::max(t.compute_ms, hop_ms);
      p.bottleneck_stage = s;
    }
    compute.push_back(t.compute_ms);
    if (s + 1 < p.depth) hops.push_back(hop_ms);
    compute_sum_ms += t.compute_ms;
    hops_ms += 2 * hop_ms;  // the activation forward and its gradient back
    p.allreduce_ms = std::max(p.allreduce_ms, t.allreduce_ms);
    p.memory_bytes = std::max(p.memory_bytes, p.stages.back().memory.Total());
  }
  // A flushed pipeline with per-stage times C_s: the first micro-batch crosses every stage and
  // every boundary forward and back (sum C_s + 2 x sum of hops), and the other m - 1 follow at
  // the pace of the slowest (GPipe section 2.3 and SC'21 section 2.2.1's (m + d - 1) slots, for
  // stages that need not be equal; exact for GPipe when each stage's backward is a fixed multiple
  // of its forward). The all-reduce follows the flush.
  // 1F1B-flush's steady state is 1F1B's (cost/pipeline_pace.h); GPipe's runs the forwards,
  // then the backwards, each stage at its own compute or a transfer's time.
  if (schedule == ScheduleKind::kFlush) pace_ms = OneFOneBPaceMs(compute, hops, hops);
  const double slow_compute_ms = p.stages[p.bottleneck_stage].times.compute_ms;
  p.compute_ms = microbatches * slow_compute_ms;
  p.communication_ms = hops_ms + (microbatches - 1) * (pace_ms - slow_compute_ms);
  p.bubble_ms = compute_sum_ms - slow_compute_ms;
  p.allreduce_ms = ExposedAllReduceMs(model, placement, splits, microbatch_size, recompute);
  p.time_per_update_ms = p.compute_ms + p.communication_ms + p.bubble_ms + p.allreduce_ms;
  p.samples_per_s = static_cast<double>(width) * microbatch_size * microbatches * 1e3 /
                    p.time_per_update_ms;
  return p;
}

Plan PlanBaseline(BaselineKind kind, const Workload& workload, const Cluster& cluster,
                  const PlannerSettings& settings) {
  const std::string who = BaselineName(kind) + " baseline";
  const PipelineCostModel model(workload, cluster, settings);
  const int max_depth = std::min(model.LayerCount(), model.WorkerCount());
  CheckSettings(who, settings, max_depth);
  const double capacity = model.CapacityBytes();

  // Data parallelism has depth 1; a fixed depth is tried alone; depth 0 tries 1, 2, ... and
  // takes the first that fits, else the one that comes closest.
  std::vector<int> depths;
  if (kind == BaselineKind::kDataParallel) {
    depths = {1};
  } else if (settings.depth > 0) {
    depths = {settings.depth};
  } else {
    for (int d = 1; d <= max_depth; ++d) depths.push_back(d);
  }
  PipelinePrediction chosen;
  bool found = false;
  PipelinePrediction closest;
  for (int d : depths) {
    PipelinePrediction p = PredictAtDepth(kind, model, settings, d);
    if (p.memory_bytes <= capacity) {
      chosen = std::move(p);
      found = true;
      break;
    }
    if (closest.stages.empty() || p.memory_bytes < closest.memory_bytes) closest = std::move(p);
  }
  if (!found) {
    const std::string what = depths.size() == 1 ? "depth " + std::to_string(depths[0]) +
                                                      " does not fit the device"
                                                : "no depth fits the device";
    if (!settings.allow_over_capacity) ThrowShortfall(who, what, closest, capacity);
    chosen = std::move(closest);
  }

  const PipelinePrediction& p = chosen;
  Plan plan;
  plan.planner = BaselineName(kind);
  plan.schedule = p.schedule;
  for (const StageEstimate& e : p.stages) plan.stages.push_back(MakeStagePlan(e));
  plan.microbatch_size = p.microbatch_size;
  plan.microbatches_per_update = p.microbatches;
  plan.recompute = p.recompute;
  plan.predicted_samples_per_s = p.samples_per_s;
  plan.predicted_time_per_sample_s = 1 / p.samples_per_s;
  plan.memory_bytes_per_device = DeviceMemory(p.stages, model.DeviceCount());
  plan.details = {{"model", Formula(p.schedule, p.depth)},
                  {"data_parallel", p.width},
                  {"pipeline_depth", p.depth},
                  {"microbatch_size", p.microbatch_size},
                  {"microbatches", p.microbatches},
                  {"recompute", p.recompute},
                  {"global_batch_size", p.width * p.microbatch_size * p.microbatches},
                  {"time_per_update_ms", p.time_per_update_ms},
                  {"bottleneck_stage", p.bottleneck_stage},
                  {"breakdown",
                   {{"compute_ms", p.compute_ms},
                    {"communication_ms", p.communication_ms},
                    {"allreduce_ms", p.allreduce_ms},
                    {"exposed_allreduce_ms", p.allreduce_ms},
                    {"bubble_ms", p.bubble_ms}}},
                  {"memory_bytes", p.memory_bytes},
                  {"capacity_bytes", capacity},
                  {"fits", found},
                  {"stages", StageDetails(p.stages)}};
  // No caveat for transfers crossing the NICs the rings cross: after the flush the rings
  // overlap only the drain's last gradients, which the staggered busy period already charges.
  return plan;
}

}  // namespace pipetwin
