#include "partition/planners/two_bw.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "partition/planners/min_max_partition.h"
#include "partition/planners/stage_plan.h"
#include "partition/util/error.h"
#include "partition/util/format.h"
#include "partition/cost/memory.h"
#include "partition/cost/pipeline_pace.h"
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
  t.allreduce_ms = placement.allreduce_alone[stage].Ms(model.SyncBytes(first, last));
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
    bytes.push_back(model.SyncBytes(stages[s].first_layer, stages[s].last_layer));
    slowest_alone = std::max(slowest_alone, placement.allreduce_alone[s].Ms(bytes.back()));
  }
  return std::max(slowest_alone, model.BusiestLinkMs(placement, bytes));
}

// The time per micro-batch of configuration c, m t = T the update. Stage s starts its ring as
// its last backward of an update ends, tau_s = -sum_{j<s} (backward_j + gradient_j) after stage
// 0's (the last micro-batch's gradient climbing the pipeline), and the ring runs through the
// next update (2BW's one-update delay). Two things can stretch T beyond m t_0, 1F1B's pace
// with every transfer alone:
// - The rings' burst: while they run, a link they cross serves n ring flows besides a transfer
//   (RingBursts), which then takes (n + 1 / (1 - rho)) times its time alone there, rho the other
//   transfers' work per update on that link (SharedRoute::At). In each interval k of the burst
//   the pipeline runs at 1F1B's pace t_k with those shares, and the update holds m micro-batches:
//     T = sum_k d_k + (m - sum_k d_k / t_k) t_0   (or less, when the m end inside the burst).
// - The weights: the first forward of update u + 2 needs the weights that update u's gradients
//   make, and stage s runs it p - s - 1 forwards and backwards before its last backward of
//   update u + 1, so T >= ring_s + (p - s - 1) t_0 for every stage that has a ring.
// And T >= A, every stage's all-reduce at once (AllStagesAllReduceMs). rho falls as T grows, so
// T = T(rho(T)) has one solution, found by regula falsi. shared = false: every transfer and
// ring alone, no burst. pace_alone_ms: t_0. When t is sure to exceed above_ms, a value above it.
double UpdateMsPerMicrobatch(const PipelineCostModel& model, const PipelinePlacement& placement,
                             const TwoBWConfiguration& c, bool shared,
                             double* pace_alone_ms = nullptr, double above_ms = kInfinity) {
  const std::vector<StageRange>& stages = c.stages;
  const Cluster& cluster = model.cluster();
  const int d = c.depth, m = c.microbatches, b = c.microbatch_size;
  shared = shared && cluster.network_model != "contention_free";
  std::vector<double> compute(d), backward(d), bytes(d, 0), gradient_bytes(d);
  for (int s = 0; s < d; ++s) {
    const StageRange& r = stages[s];
    compute[s] = model.ComputeMs(r.first_layer, r.last_layer, b, c.recompute);
    backward[s] = model.BackwardMs(r.first_layer, r.last_layer, b, c.recompute);
    gradient_bytes[s] = model.SyncBytes(r.first_layer, r.last_layer);
    if (s + 1 < d) bytes[s] = model.BoundaryBytes(r.last_layer, b);
  }
  const double allreduce_ms = AllStagesAllReduceMs(model, placement, stages);
  const int links = static_cast<int>(placement.links.size());
  // What the transfers of one update put on their links.
  std::vector<double> transfers(links, 0);
  for (int s = 0; s + 1 < d; ++s)
    for (const auto& [out, back] : placement.transfer_routes[s])
      for (const SharedRoute* route : {&out, &back})
        for (size_t i = 0; i < route->links.size(); ++i)
          transfers[route->links[i]] += m * bytes[s] * route->ms_per_byte[i];
  const double* work = shared ? transfers.data() : nullptr;
  // 1F1B's pace at an update of update_ms, the slowest replica's transfers: with no ring flows
  // (base), and with ring_flows[n] on link n, where only the channels crossing such a link
  // (touched) take longer than in the base.
  std::vector<double> activation(d, 0), gradient(d, 0), base_activation(d, 0), base_gradient(d, 0);
  auto base = [&](double update_ms) {
    for (int s = 0; s + 1 < d; ++s) {
      base_activation[s] = base_gradient[s] = 0;
      for (const auto& [out, back] : placement.transfer_routes[s]) {
        const double own = m * bytes[s];
        base_activation[s] =
            std::max(base_activation[s], out.At(update_ms, work, own).Ms(bytes[s]));
        base_gradient[s] = std::max(base_gradient[s], back.At(update_ms, work, own).Ms(bytes[s]));
      }
    }
    return OneFOneBPaceMs(compute, base_activation, base_gradient);
  };
  auto pace = [&](double update_ms, const int* ring_flows,
                  const std::vector<std::pair<int, int>>& touched) {
    activation = base_activation;
    gradient = base_gradient;
    for (const auto& [s, k] : touched) {
      const auto& [out, back] = placement.transfer_routes[s][k];
      const double own = m * bytes[s];
      activation[s] = std::max(activation[s], out.At(update_ms, work, own, ring_flows).Ms(bytes[s]));
      gradient[s] = std::max(gradient[s], back.At(update_ms, work, own, ring_flows).Ms(bytes[s]));
    }
    return OneFOneBPaceMs(compute, activation, gradient);
  };
  const double huge = 1e300;
  const double alone = base(huge);
  if (pace_alone_ms) *pace_alone_ms = alone;
  // When each ring starts and ends.
  std::vector<double> starts(d, 0);
  for (int s = 1; s < d; ++s) {
    double slowest = 0;
    for (const auto& [out, back] : placement.transfer_routes[s - 1])
      slowest = std::max(slowest, back.At(huge).Ms(bytes[s - 1]));
    starts[s] = starts[s - 1] - backward[s - 1] - slowest;
  }
  std::vector<double> ends = starts;
  // The burst: intervals [cuts[i], cuts[i + 1]) with flows[i][n] ring flows on link n.
  std::vector<double> cuts;
  std::vector<std::vector<int>> flows;
  std::vector<std::vector<std::pair<int, int>>> touched;  // per interval: (boundary, replica)
  if (shared) {
    // A ring's flows move at the pace of its slowest links and take the whole of those, in
    // equal shares with the other rings there; on its faster links they leave the rest to a
    // transfer (max-min fairness), which is counted as the whole link.
    std::vector<std::vector<RingLoad>> rings(d);
    for (int s = 0; s < d; ++s) {
      double slowest = 0;
      for (const RingLoad& load : placement.ring_per_byte[s]) slowest = std::max(slowest, load.ms);
      for (RingLoad load : placement.ring_per_byte[s])
        if (load.ms >= slowest * (1 - 1e-9)) {
          load.ms *= gradient_bytes[s];
          rings[s].push_back(load);
        }
    }
    const RingBurst rb = RingBursts(links, rings, starts);
    ends = rb.ends;
    for (int n = 0; n < links; ++n)
      if (transfers[n] > 0)
        for (const FlowCount& f : rb.flows[n]) cuts.insert(cuts.end(), {f.from_ms, f.until_ms});
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    if (!cuts.empty()) flows.assign(cuts.size() - 1, std::vector<int>(links, 0));
    for (int n = 0; n < links; ++n) {
      if (transfers[n] <= 0) continue;
      for (const FlowCount& f : rb.flows[n]) {
        const size_t first = std::lower_bound(cuts.begin(), cuts.end(), f.from_ms) - cuts.begin();
        const size_t last = std::lower_bound(cuts.begin(), cuts.end(), f.until_ms) - cuts.begin();
        for (size_t i = first; i < last; ++i) flows[i][n] = f.flows;
      }
    }
    // Neighbouring intervals with the same flows are one.
    size_t kept = 0;
    for (size_t i = 0; i < flows.size(); ++i) {
      if (kept > 0 && flows[i] == flows[kept - 1]) {
        cuts[kept] = cuts[i + 1];
        continue;
      }
      if (kept != i) flows[kept] = std::move(flows[i]);
      cuts[kept + 1] = cuts[i + 1];
      ++kept;
    }
    flows.resize(kept);
    cuts.resize(kept + (cuts.empty() ? 0 : 1));
    touched.resize(kept);
    for (size_t i = 0; i < kept; ++i)
      for (int s = 0; s + 1 < d; ++s)
        for (int k = 0; k < c.width; ++k) {
          const auto& [out, back] = placement.transfer_routes[s][k];
          bool any = false;
          for (const SharedRoute* route : {&out, &back})
            for (int n : route->links) any = any || flows[i][n] > 0;
          if (any) touched[i].push_back({s, k});
        }
  } else {
    for (int s = 0; s < d; ++s) ends[s] += placement.allreduce_alone[s].Ms(gradient_bytes[s]);
  }
  double floor_ms = allreduce_ms;
  if (c.width > 1)
    for (int s = 0; s < d; ++s)
      floor_ms = std::max(floor_ms, ends[s] - starts[s] + (d - s - 1) * alone);
  auto update = [&](double update_ms) {
    const double t_0 = base(update_ms);
    double done = 0;  // micro-batches
    for (size_t i = 0; i < flows.size(); ++i) {
      const double t = pace(update_ms, flows[i].data(), touched[i]);
      const double span = cuts[i + 1] - cuts[i];
      if (done + span / t >= m) return std::max(floor_ms, cuts[i] - cuts[0] + (m - done) * t);
      done += span / t;
    }
    const double burst = cuts.empty() ? 0 : cuts.back() - cuts.front();
    return std::max(floor_ms, burst + (m - done) * t_0);
  };
  // update() falls as its argument grows: with lo = update(infinity) <= T, update(lo) >= T
  // brackets the solution; regula falsi (Illinois) on update(x) - x closes in on it.
  double lo = update(huge);
  if (!shared || lo > m * above_ms) return lo / m;
  const double at_lo = update(lo);
  if (at_lo <= lo) return lo / m;
  double hi = at_lo;
  if (!std::isfinite(hi))  // a link over-full at lo: find a finite bracket
    for (hi = 2 * lo; update(hi) > hi;) hi *= 2;
  double f_lo = at_lo - lo, f_hi = update(hi) - hi;
  int side = 0;
  for (int i = 0; i < 100 && hi - lo > 1e-9 * hi; ++i) {
    const double x = std::isfinite(f_lo) && f_lo > f_hi ? hi - f_hi * (hi - lo) / (f_hi - f_lo)
                                                        : (lo + hi) / 2;
    const double f = update(x) - x;
    if (f > 0) {
      lo = x, f_lo = f;
      if (side == 1) f_hi /= 2;
      side = 1;
    } else {
      hi = x, f_hi = f;
      if (side == -1) f_lo /= 2;
      side = -1;
    }
  }
  return hi / m;
}

// The best split of one candidate that could be predicted within `limit_ms` per micro-batch;
// samples_per_s stays 0 when no split fits the memory within the limit.
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
  // The split is chosen by the stages' own times, each transfer counted whole; the prediction
  // (TwoBWMsPerMicrobatch) is at least the slowest stage's compute, which is at most 4 one-way
  // transfers (two per neighbour) below a stage's own time: a split beyond the limit by more
  // than that cannot be predicted within it.
  double largest_cut = 0, transfer_ms = 0;
  for (int l = 0; l + 1 < model.LayerCount(); ++l)
    largest_cut = std::max(largest_cut, model.BoundaryBytes(l, c.microbatch_size));
  for (int s = 0; s + 1 < c.depth; ++s)
    transfer_ms = std::max(transfer_ms, placement.send_next[s].Ms(largest_cut));
  const double t = partitioner.Solve(model.LayerCount(), c.depth, cost, lower,
                                     limit_ms + 4 * transfer_ms, &out.stages);
  if (t == kInfinity) return out;
  out.time_per_microbatch_ms = UpdateMsPerMicrobatch(model, placement, out, true, nullptr, limit_ms);
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
                   {"data_parallel", c.width},
                   {"pipeline_depth", c.depth},
                   {"microbatch_size", c.microbatch_size},
                   {"microbatches", c.microbatches},
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
  return UpdateMsPerMicrobatch(model, placement, c, true);
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
  int bottleneck = 0;  // the most compute
  for (int s = 0; s < d; ++s) {
    const StageRange& r = best.stages[s];
    stages.push_back(model.EstimateStage(placement, s, r.first_layer, r.last_layer, b,
                                         best.recompute, WeightVersions(kSchedule, s, d, m),
                                         StashedMicrobatches(kSchedule, s, d, m)));
    stages.back().times =
        TwoBWTimes(model, placement, s, r.first_layer, r.last_layer, b, best.recompute);
    if (stages.back().times.compute_ms > stages[bottleneck].times.compute_ms) bottleneck = s;
  }
  const double compute_ms = stages[bottleneck].times.compute_ms;
  const double allreduce_ms = AllStagesAllReduceMs(model, placement, best.stages);
  double pace_alone_ms = 0;
  UpdateMsPerMicrobatch(model, placement, best, false, &pace_alone_ms);
  const double slowest_ms = best.time_per_microbatch_ms;  // with the transfers sharing links

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
      {"model", "PipeDream-2BW (Narayanan et al., ICML 2021): per micro-batch, 1F1B's pace t = "
                "max over windows of stages s..e of (their compute + the transfers between "
                "them) / (e - s + 1); per update T = m t, at least A, every stage's all-reduce "
                "at once, with each link's transfers sharing it with the rings while they run "
                "after the update (processor sharing); samples/s = w b m / T"},
      {"data_parallel", w},
      {"pipeline_depth", d},
      {"microbatch_size", b},
      {"microbatches", m},
      {"recompute", best.recompute},
      {"global_batch_size", w * b * m},
      {"time_per_microbatch_ms", slowest_ms},
      {"time_per_update_ms", m * slowest_ms},
      {"bottleneck_stage", bottleneck},
      // Per update: the stage with the most compute, what the transfers add to 1F1B's pace
      // when alone, every stage's all-reduce at once (it overlaps the next m micro-batches;
      // only what they do not hide is exposed), and what sharing the links with the rings and
      // with each other adds. compute + communication + exposed all-reduce + bubble + shared
      // links = time_per_update_ms.
      {"breakdown",
       {{"compute_ms", m * compute_ms},
        {"communication_ms", m * (pace_alone_ms - compute_ms)},
        {"allreduce_ms", allreduce_ms},
        {"exposed_allreduce_ms", std::max(0.0, allreduce_ms - m * pace_alone_ms)},
        {"bubble_ms", 0.0},
        {"shared_links_ms", m * slowest_ms - std::max(allreduce_ms, m * pace_alone_ms)}}},
      {"memory_bytes", best.memory_bytes},
      {"capacity_bytes", model.CapacityBytes()},
      {"stages", StageDetails(stages)},
      {"ranked", RankedTable(search.ranked)},
      {"search", {{"configurations", search.configurations}, {"solved", search.solved}}}};
  if (model.RingsCrossServers(placement) && model.TransfersCrossServers(placement))
    plan.details["caveat"] =
        "stage transfers cross server uplinks that the all-reduce rings share: this prediction "
        "charges each transfer its share of those links while the rings run, counting each "
        "link on its own (a ring held back on one link is taken as running at full share on "
        "the others), which the simulator does not";
  return plan;
}

}  // namespace pipetwin
