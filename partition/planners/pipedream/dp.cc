#include "partition/planners/pipedream/dp.h"

#include "partition/cost/data_loading.h"

#include <algorithm>
#include <cmath>

namespace pipetwin {

PipeDreamLevelTable::PipeDreamLevelTable(int rows, int states, int machines,
                                         bool fewer_is_minimum)
    : rows_(rows), states_(states), machines_(machines), fewer_is_minimum_(fewer_is_minimum) {
  const size_t ranges = static_cast<size_t>(rows) * states -
                        static_cast<size_t>(rows) * (rows - 1) / 2;
  cells_.resize(ranges * machines);
}

int PipeDreamLevelTable::BestMachines(int first, int last) const {
  if (!fewer_is_minimum_) return machines_;
  int best = machines_;
  double best_time = kNone;
  for (int m = 1; m <= machines_; ++m) {
    const double t = CellAt(first, last, m).time_s;
    if (t < best_time) best_time = t, best = m;
  }
  return best;
}

std::vector<PipeDreamSpan> PipeDreamLevelTable::Layout(int first, int last) const {
  // optimizer_graph_hierarchical.py, analyze_partitioning: follow the split pointers back.
  std::vector<PipeDreamSpan> spans;
  const Cell* cell = &CellAt(first, last, BestMachines(first, last));
  int end = last;
  while (cell->split_state >= 0) {
    spans.push_back({cell->split_state + 1, end, cell->replicas,
                     cell->prefix_machines + cell->replicas});
    end = cell->split_state;
    cell = &CellAt(first, end, cell->prefix_machines);
  }
  spans.push_back({first, end, cell->replicas, cell->replicas});
  std::reverse(spans.begin(), spans.end());
  return spans;
}

double PipeDreamStashFactor(PipeDreamCostModel model, int level_machines, int machines_through,
                            int replicas) {
  const double after =
      std::ceil(static_cast<double>(level_machines - machines_through) / replicas);
  return model == PipeDreamCostModel::kCompat ? after : after + 1;
}

namespace {

using Cell = PipeDreamLevelTable::Cell;
constexpr double kNone = PipeDreamLevelTable::kNone;

// What one level's recurrence needs, gathered once.
struct Level {
  const AntichainLinearization& states;
  const PipeDreamLevelTable* lower;
  bool compat;
  int machines;          // M
  double bandwidth;      // B, bytes/s
  int within;            // the optimizer's num_machines_within_machine: 1, then M of the level below
  bool memory_rule;
  double memory_bytes;
  std::optional<double> ratio;
  bool straight;
  bool fewer;
  int state_count;
  double load_s = 0;
  bool serial_load = false;

  // The compute time of a range at this level: the profile's at the lowest level, else the
  // level below's best time with all its machines.
  // At the lowest level a range from the first state is an input stage: the paper's model adds
  // its data loading (cost/data_loading.h's rule, in seconds per minibatch); levels above see
  // it in the level below's best times.
  double ComputeOf(int first, int last) const {
    if (lower) return lower->Best(first, last);
    const double compute = states.RangeCompute(first, last);
    if (compat || first != 0 || load_s <= 0) return compute;
    return InputStageMs(compute, load_s,
                        serial_load ? DataLoading::kSerial : DataLoading::kOverlapped);
  }
  bool ExceedsMemory(double stage_bytes, int machines_through, int replicas) const {
    if (!memory_rule) return false;
    const double factor = PipeDreamStashFactor(
        compat ? PipeDreamCostModel::kCompat : PipeDreamCostModel::kPaper, machines,
        machines_through, replicas);
    return factor * stage_bytes > memory_bytes;
  }
};

// One stage of states first..last with r replicas and nothing before it on this level.
// Compat: (C + 4 (r-1) P / (B r) / within) / r. Paper: max(C, 4 (r-1) P / (B r)) / r, the
// weight synchronisation W^m of section 3.1 overlapping the compute.
void FillSingleStages(const Level& level, int first, PipeDreamLevelTable& table) {
  const int max_replicas = level.straight ? 1 : level.machines;
  for (int last = first; last < level.state_count; ++last) {
    const double compute = level.ComputeOf(first, last);
    const double parameters = level.states.RangeParameters(first, last);
    const double stage_bytes = level.states.RangeActivation(first, last) + parameters;
    for (int r = 1; r <= max_replicas; ++r) {
      if (level.ExceedsMemory(stage_bytes, r, r) || compute == kNone) continue;
      double sync = (4.0 * (r - 1) * parameters) / (level.bandwidth * r);
      double time;
      if (level.compat) {
        sync /= level.within;
        time = (compute + sync) / r;
      } else {
        time = std::max(compute, sync) / r;
      }
      table.CellAt(first, last, r) = {time, -1, 0, static_cast<int16_t>(r)};
    }
  }
}

// The candidate last stages k+1..last of one range end, k over every ancestor of `last`
// (ascending), each with its cost for every replica count and the cut's cost folded in (max is
// exact, so folding changes no value). A last stage's cost does not depend on where the range
// starts, so a level prices each (k, last) once and every row reuses it.
struct LastStages {
  int max_replicas = 0;
  std::vector<int> split_state;       // k
  std::vector<double> stage_bytes;    // activations + parameters of k+1..last
  std::vector<double> time;           // [candidate * max_replicas + r - 1]; kNone: no stage

  int Count() const { return static_cast<int>(split_state.size()); }
  double Time(int candidate, int r) const { return time[candidate * max_replicas + r - 1]; }
};

void AddLastStage(const Level& level, int k, int last, LastStages& out) {
  const AntichainLinearization& s = level.states;
  const double compute = level.ComputeOf(k + 1, last);
  const double parameters = s.RangeParameters(k + 1, last);
  out.split_state.push_back(k);
  out.stage_bytes.push_back(s.RangeActivation(k + 1, last) + parameters);
  const double in_bytes = s.State(k).output_activation_bytes;
  const double out_bytes = s.State(last).output_activation_bytes;
  const bool has_output_cut = last < s.StateCount() - 1;
  for (int r = 1; r <= out.max_replicas; ++r) {
    if (compute == kNone) {  // the level below found no configuration for k+1..last
      out.time.push_back(kNone);
      continue;
    }
    const double sync = (4.0 * (r - 1) * parameters) / (level.bandwidth * r);
    double time;
    if (level.compat) {
      // No division by `within` here, unlike the single stage (a quirk kept on purpose). The
      // cut costs only when a compression ratio is given, split over the replicas, both ways.
      time = (compute + sync) / r;
      if (level.ratio) {
        time = std::max(time, (2.0 * in_bytes) / (level.bandwidth * r) / *level.ratio);
        if (has_output_cut)
          time = std::max(time, (2.0 * out_bytes) / (level.bandwidth * r) / *level.ratio);
      }
    } else {
      // Section 3.1: max(A(i..k), 2 C_k, T(k+1..j)), C_k = a_k / B the cut's transfer time.
      const double cut = 2.0 * in_bytes / level.bandwidth / level.ratio.value_or(1.0);
      time = std::max(std::max(compute, sync) / r, cut);
    }
    out.time.push_back(time);
  }
}

// The ancestors k of `last` that may end the pipeline before a last stage k+1..last when the
// range starts at `first`. The code skips the ancestors of first-1 and any k < first (an empty
// prefix, None in its table). The paper's model keeps only descendants of first-1, the k for
// which first..k is a real part of the graph (the same k on a chain).
bool IsSplitCandidate(const Level& level, int first, int k) {
  if (first == 0) return true;
  return level.compat ? !level.states.IsAncestor(k, first - 1)
                      : level.states.IsAncestor(first - 1, k);
}

// Every (k, last) pair of the level, priced once.
std::vector<LastStages> PriceLastStages(const Level& level) {
  std::vector<LastStages> all(level.state_count);
  for (int last = 1; last < level.state_count; ++last) {
    all[last].max_replicas = level.straight ? 1 : level.machines - 1;
    for (int k : level.states.Ancestors(last)) AddLastStage(level, k, last, all[last]);
  }
  return all;
}

// The recurrence for ranges first..last, last > first, with 2..M machines. Candidates are
// tried in a fixed order (the optimizer's "keep when strictly smaller", k ascending, then the
// last stage's replicas ascending), so the first minimum wins and ties are deterministic.
void FillSplits(const Level& level, int first, const std::vector<LastStages>& last_stages,
                PipeDreamLevelTable& table) {
  std::vector<int> usable;  // candidates that may end the prefix of this row
  for (int last = first + 1; last < level.state_count; ++last) {
    const LastStages& candidates = last_stages[last];
    usable.clear();
    for (int c = static_cast<int>(std::lower_bound(candidates.split_state.begin(),
                                                   candidates.split_state.end(), first) -
                                  candidates.split_state.begin());
         c < candidates.Count(); ++c)
      if (IsSplitCandidate(level, first, candidates.split_state[c])) usable.push_back(c);
    for (int m = 2; m <= level.machines; ++m) {
      Cell best = table.CellAt(first, last, m);
      if (level.compat && level.fewer) {
        // The code copies the entry for m-1 machines when it is strictly better. Where it would
        // compare None with a number (memory rule and fewer machines: a TypeError in Python 3),
        // None counts as no better.
        const Cell& fewer = table.CellAt(first, last, m - 1);
        if (fewer.time_s < best.time_s) best = fewer;
      }
      const int replica_limit = std::min(m - 1, candidates.max_replicas);
      for (int c : usable) {
        const int k = candidates.split_state[c];
        const Cell* before = &table.CellAt(first, k, m - 1);  // m - r machines at r = 1
        const double* last_stage = &candidates.time[c * candidates.max_replicas];
        for (int r = 1; r <= replica_limit; ++r, --before) {
          // kNone is +infinity: a missing prefix or last stage never beats `best`.
          if (level.memory_rule && level.ExceedsMemory(candidates.stage_bytes[c], m, r)) continue;
          const double time = std::max(before->time_s, last_stage[r - 1]);
          if (time < best.time_s)
            best = {time, k, static_cast<int16_t>(m - r), static_cast<int16_t>(r)};
        }
      }
      table.CellAt(first, last, m) = best;
    }
  }
}

}  // namespace

PipeDreamWork EstimatePipeDreamWork(int states, const PipeDreamOptions& options) {
  PipeDreamWork work;
  const double n = states;
  for (size_t l = 0; l < options.levels.size(); ++l) {
    const double m = options.levels[l].machines;
    const bool top = l + 1 == options.levels.size();
    const double cells = top ? n * m : n * (n + 1) / 2 * m;
    work.table_bytes += cells * sizeof(PipeDreamLevelTable::Cell);
    work.steps += (top ? n * n / 2 : n * n * n / 6) * m * m;
  }
  return work;
}

PipeDreamLevelTable SolvePipeDreamLevel(const AntichainLinearization& states,
                                        const PipeDreamOptions& options, int level_index,
                                        const PipeDreamLevelTable* lower) {
  const PipeDreamLevel& settings = options.levels[level_index];
  const bool compat = options.cost_model == PipeDreamCostModel::kCompat;
  const bool top = level_index + 1 == static_cast<int>(options.levels.size());
  Level level{states,
              lower,
              compat,
              settings.machines,
              settings.bandwidth_bytes_per_s,
              level_index == 0 ? 1 : options.levels[level_index - 1].machines,
              options.use_memory_constraint,
              options.memory_bytes_per_device,
              options.activation_compression_ratio,
              options.straight_pipeline,
              options.use_fewer_machines,
              states.StateCount(),
              options.data_loading_s,
              options.data_loading_serial};
  const int rows = top ? 1 : states.StateCount();
  PipeDreamLevelTable table(rows, states.StateCount(), settings.machines,
                            !compat && options.use_fewer_machines);
  const std::vector<LastStages> last_stages = PriceLastStages(level);
  for (int first = 0; first < rows; ++first) {
    FillSingleStages(level, first, table);
    FillSplits(level, first, last_stages, table);
  }
  return table;
}

}  // namespace pipetwin
