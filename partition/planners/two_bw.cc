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

// A stage's times with its all-reduce as if its ring had the links to itself: what the other
// stages' rings take of the shared links is charged for all of them at once below.
StageTimes TwoBWTimes(const PipelineCostModel& model, const PipelinePlacement& placement,
                      int stage, int first, int last, int b, bool recompute) {
  StageTimes t = model.Times(placement, stage, first, last, b, recompute);
  t.allreduce_ms = placement.allreduce_alone[stage].Ms(model.GradientBytes(first, last));
  return t;
}

// Every stage's all-reduce of one update, all at once: they overlap the next update's
// micro-batches together, so the update lasts at least as long as the busiest link takes to
// carry all their rings' bytes (fair sharing is work-conserving), and as long as the slowest
// ring alone.
double AllStagesAllReduceMs(const PipelineCostModel& model, const PipelinePlacement& placement,
                            const std::vector<StageRange>& stages) {
  std::vector<double> bytes;
  double slowest_alone = 0;
  for (size_t s = 0; s < stages.size(); ++s) {
    bytes.push_back(model.GradientBytes(stages[s].first_layer, stages[s].last_layer));
    slowest_alone = std::max(slowest_alone, placement.allreduce_alone[s].Ms(bytes.back()));
  }
  return std::max(slowest_alone, model.BusiestLinkMs(placement, bytes));
}

// The time per micro-batch once the stage transfers share their links with the all-reduce rings
// and with each other. Over an update of T = m t ms every link carries the rings' bytes and m
// of each transfer crossing it (busy a fraction rho = work / T); a transfer then takes its time
// alone / (1 - rho) of its busiest link (communication.h, ShareOfRoute), and
// t = max(max_s compute_s + transfers_s(T), allreduce_ms), the all-reduces' A / m. t shrinks as T
// grows, so T = m t(T) has one solution, found by bisection. Without sharing (links carry
// nothing else, or "contention_free") it is `alone_ms`, the time with every transfer alone.
double SharedLinksMsPerMicrobatch(const PipelineCostModel& model,
                                  const PipelinePlacement& placement, const TwoBWConfiguration& c,
                                  double allreduce_ms, double alone_ms) {
  const std::vector<StageRange>& stages = c.stages;
  const Cluster& cluster = model.cluster();
  const int d = c.depth, m = c.microbatches, b = c.microbatch_size;
  std::vector<double> gradient_bytes;
  for (const StageRange& r : stages)
    gradient_bytes.push_back(model.GradientBytes(r.first_layer, r.last_layer));
  LinkWork work = model.RingWork(placement, gradient_bytes);
  bool shared = false;  // some transfer crosses a link that carries other traffic
  for (int s = 0; s + 1 < d; ++s)
    for (int k = 0; k < c.width; ++k) {
      const int from = placement.devices[s][k], to = placement.devices[s + 1][k];
      for (const LinkDirection& link : Route(cluster, from, to)) shared |= work.count(link) > 0;
      for (const LinkDirection& link : Route(cluster, to, from)) shared |= work.count(link) > 0;
    }
  for (int s = 0; s + 1 < d; ++s) {
    const double bytes = model.BoundaryBytes(stages[s].last_layer, b);
    for (int k = 0; k < c.width; ++k) {
      AddMessageWork(cluster, placement.devices[s][k], placement.devices[s + 1][k], m * bytes,
                     &work);
      AddMessageWork(cluster, placement.devices[s + 1][k], placement.devices[s][k], m * bytes,
                     &work);
    }
  }
  if (!shared || cluster.network_model == "contention_free" || d < 2) return alone_ms;
  // Per boundary and replica: the activation's route out and the gradient's back.
  std::vector<std::vector<std::pair<SharedRoute, SharedRoute>>> routes(d);
  for (int s = 0; s + 1 < d; ++s) {
    const double bytes = model.BoundaryBytes(stages[s].last_layer, b);
    for (int k = 0; k < c.width; ++k) {
      const int from = placement.devices[s][k], to = placement.devices[s + 1][k];
      routes[s].push_back({ShareOfRoute(cluster, from, to, work, m * bytes),
                           ShareOfRoute(cluster, to, from, work, m * bytes)});
    }
  }
  auto per_microbatch = [&](double update_ms) {
    std::vector<double> boundary(d, 0);  // activation out and gradient back, slowest replica
    for (int s = 0; s + 1 < d; ++s) {
      const double bytes = model.BoundaryBytes(stages[s].last_layer, b);
      for (const auto& [out, back] : routes[s])
        boundary[s] = std::max(boundary[s], out.At(update_ms).Ms(bytes) +
                                                back.At(update_ms).Ms(bytes));
    }
    double t = allreduce_ms;
    for (int s = 0; s < d; ++s)
      t = std::max(t, model.ComputeMs(stages[s].first_layer, stages[s].last_layer, b,
                                      c.recompute) +
                          (s > 0 ? boundary[s - 1] : 0) + boundary[s]);
    return t;
  };
  double lo = m * alone_ms, hi = 2 * lo;
  while (hi < m * per_microbatch(hi)) hi *= 2;
  for (int i = 0; i < 60 && hi - lo > 1e-9 * hi; ++i) {
    const double mid = (lo + hi) / 2;
    (mid < m * per_microbatch(mid) ? lo : hi) = mid;
  }
  return hi / m;
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
    return TwoBWStageMs(TwoBWTimes(model, placement, s, i, j, c.microbatch_size, c.recompute),
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
  out.time_per_microbatch_ms = TwoBWMsPerMicrobatch(model, placement, out);
  out.samples_per_s = c.width * c.microbatch_size * 1e3 / out.time_per_microbatch_ms;
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

double TwoBWMsPerMicrobatch(const PipelineCostModel& model, const PipelinePlacement& placement,
                            const TwoBWConfiguration& c) {
  const double allreduce_ms = AllStagesAllReduceMs(model, placement, c.stages) / c.microbatches;
  double alone_ms = allreduce_ms;
  for (int s = 0; s < c.depth; ++s)
    alone_ms = std::max(alone_ms, TwoBWStageMs(TwoBWTimes(model, placement, s,
                                                          c.stages[s].first_layer,
                                                          c.stages[s].last_layer,
                                                          c.microbatch_size, c.recompute),
                                               c.microbatches));
  return SharedLinksMsPerMicrobatch(model, placement, c, allreduce_ms, alone_ms);
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
    stages.back().times =
        TwoBWTimes(model, placement, s, r.first_layer, r.last_layer, b, best.recompute);
    const double t = stages.back().times.compute_ms + stages.back().times.transfer_ms;
    if (t > slowest_ms) slowest_ms = t, bottleneck = s;
  }
  const StageTimes& slow = stages[bottleneck].times;
  const double allreduce_ms = AllStagesAllReduceMs(model, placement, best.stages);
  const double alone_ms = std::max(slowest_ms, allreduce_ms / m);
  slowest_ms = best.time_per_microbatch_ms;  // with the transfers sharing their links

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
      {"model", "PipeDream-2BW (Narayanan et al., ICML 2021, appendix A.1.1): t = max(max over "
                "stages of compute + transfer, A / m) per micro-batch, A = every stage's "
                "all-reduce at once (the busiest link's bytes over its bandwidth, at least the "
                "slowest ring alone); samples/s = w b / t"},
      {"w", w},
      {"d", d},
      {"b", b},
      {"m", m},
      {"recompute", best.recompute},
      {"global_batch_size", w * b * m},
      {"time_per_microbatch_ms", slowest_ms},
      {"time_per_update_ms", m * slowest_ms},
      {"bottleneck_stage", bottleneck},
      // Per update: the bottleneck stage's compute and communication, and every stage's
      // all-reduce at once, which overlaps the next m micro-batches; only what they do not
      // hide is exposed. compute + communication + exposed all-reduce +
      // bubble = time_per_update_ms.
      {"breakdown",
       {{"compute_ms", m * slow.compute_ms},
        {"communication_ms", m * slow.transfer_ms},
        {"allreduce_ms", allreduce_ms},
        {"exposed_allreduce_ms",
         std::max(0.0, allreduce_ms - m * (slow.compute_ms + slow.transfer_ms))},
        {"bubble_ms", 0.0},
        // What the transfers' share of the links they cross with the rings adds.
        {"shared_links_ms", m * (slowest_ms - alone_ms)}}},
      {"memory_bytes", best.memory_bytes},
      {"capacity_bytes", model.CapacityBytes()},
      {"stages", StageDetails(stages)},
      {"ranked", RankedTable(search.ranked)},
      {"search", {{"configurations", search.configurations}, {"solved", search.solved}}}};
  if (model.RingsCrossServers(placement) && model.TransfersCrossServers(placement))
    plan.details["caveat"] =
        "stage transfers cross server uplinks that the all-reduce rings share: this prediction "
        "charges them their mean share of those links (processor sharing); the rings come in "
        "bursts after each update, so the simulator can be slower still";
  return plan;
}

}  // namespace pipetwin
