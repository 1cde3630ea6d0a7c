#include "partition/planners/pipedream/planner.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "partition/util/error.h"
#include "partition/planners/pipedream/layout.h"

namespace pipetwin {

namespace {

std::vector<PipeDreamLevelTable> SolveAllLevels(const AntichainLinearization& states,
                                                const PipeDreamOptions& options) {
  std::vector<PipeDreamLevelTable> tables;
  tables.reserve(options.levels.size());
  for (size_t l = 0; l < options.levels.size(); ++l)
    tables.push_back(SolvePipeDreamLevel(states, options, static_cast<int>(l),
                                         l == 0 ? nullptr : &tables.back()));
  return tables;
}

double TopTime(const std::vector<PipeDreamLevelTable>& tables, int state_count) {
  return tables.back().Best(0, state_count - 1);
}

std::string Bytes(double v) {
  std::ostringstream out;
  out.precision(15);
  out << v;
  return out.str();
}

// The layers a span adds: its last state's down-set less its first state's predecessor's.
std::string DescribeSpan(const AntichainLinearization& states, const Workload& w,
                         const PipeDreamSpan& span, int level) {
  std::vector<int> layers = states.DownSet(span.last_state).Members();
  if (span.first_state > 0) {
    const DenseBitset& before = states.DownSet(span.first_state - 1);
    layers.erase(std::remove_if(layers.begin(), layers.end(),
                                [&](int v) { return before.Test(v); }),
                 layers.end());
  }
  std::string names = layers.empty() ? "(none)"
                                     : w.layers[layers.front()].id + ".." + w.layers[layers.back()].id;
  return "layers " + names + " (states " + std::to_string(span.first_state) + ".." +
         std::to_string(span.last_state) + ", level " + std::to_string(level) + ", " +
         std::to_string(span.replicas) + (span.replicas == 1 ? " replica)" : " replicas)");
}

// No configuration fits the memory rule: find the smallest memory per device for which one does
// (feasibility only grows with memory), and name the stage of that configuration that needs the
// most, i.e. the smallest shortfall.
[[noreturn]] void ThrowNoFit(const Workload& w, const AntichainLinearization& states,
                             const PipeDreamOptions& options) {
  const std::string who = PipeDreamPlannerName(options.cost_model) + ": ";
  const int n = states.StateCount();
  PipeDreamOptions relaxed = options;
  relaxed.use_memory_constraint = false;
  if (TopTime(SolveAllLevels(states, relaxed), n) == PipeDreamLevelTable::kNone) {
    std::string level_text;
    for (size_t l = 0; l < options.levels.size(); ++l)
      if (options.levels[l].machines > n)
        level_text = " (level " + std::to_string(l) + " has " +
                     std::to_string(options.levels[l].machines) + " machines but the model has " +
                     std::to_string(n) + " states)";
    throw InputError(who + "no configuration uses every machine: a straight pipeline needs one "
                     "stage per machine" + level_text +
                     ": use fewer machines, or let some stay idle (use_fewer_machines)");
  }
  double low = options.memory_bytes_per_device, high = low;
  auto fits = [&](double memory) {
    relaxed = options;
    relaxed.memory_bytes_per_device = memory;
    return TopTime(SolveAllLevels(states, relaxed), n) != PipeDreamLevelTable::kNone;
  };
  while (!fits(high)) low = high, high *= 2;
  for (int i = 0; i < 64 && high > low * (1 + 1e-15); ++i) {
    const double mid = low + (high - low) / 2;
    (fits(mid) ? high : low) = mid;
  }
  relaxed.memory_bytes_per_device = high;
  std::vector<PipeDreamLevelTable> tables = SolveAllLevels(states, relaxed);
  const std::vector<std::vector<PipeDreamSpan>> levels =
      WalkPipeDreamLayout(tables, relaxed, n).levels_highest_first;
  double worst = -1;
  std::string worst_text;
  for (size_t h = 0; h < levels.size(); ++h) {
    const int level = static_cast<int>(levels.size() - 1 - h);
    for (const PipeDreamSpan& span : levels[h]) {
      const double need =
          PipeDreamStashFactor(options.cost_model, options.levels[level].machines,
                               span.machines_through, span.replicas) *
          (states.RangeActivation(span.first_state, span.last_state) +
           states.RangeParameters(span.first_state, span.last_state));
      if (need > worst) worst = need, worst_text = DescribeSpan(states, w, span, level);
    }
  }
  throw InputError(who + "no configuration fits the memory constraint; the closest still has a "
                   "stage of " + worst_text + " that needs " + Bytes(worst) +
                   " bytes per device, and the device has " +
                   Bytes(options.memory_bytes_per_device));
}

// The data-parallel baseline over every level (see PipeDreamResult).
double DataParallelTime(const AntichainLinearization& states, const PipeDreamOptions& options) {
  const AntichainState& all = states.State(states.StateCount() - 1);
  double t = all.compute_s;
  int within = 1;
  for (const PipeDreamLevel& level : options.levels) {
    const int m = level.machines;
    const double sync =
        (4.0 * (m - 1) * all.parameter_bytes) / (level.bandwidth_bytes_per_s * m);
    t = options.cost_model == PipeDreamCostModel::kCompat ? (t + sync / within) / m
                                                          : std::max(t, sync) / m;
    within = m;
  }
  return t;
}

// Parameter bytes of the layers under every span of the layout (spans_params[l][index]), summed
// from the stages' own layers: on a DAG the code's range sums of a lower-level span need not be
// a set of layers, so the breakdown counts real layers.
using SpanParameters = std::vector<std::vector<double>>;

// The weight synchronisation the model charges on a stage's path through the levels (level l's
// sync of the span holding it, divided by the replicas at l and above, as (inner + sync) / r
// nests), plus the transfer into the stage at the level that cuts in front of it.
double CommunicationSeconds(const AntichainLinearization& states, const PipeDreamOptions& options,
                            const PipeDreamLeafStage& leaf, const SpanParameters& parameters) {
  const bool compat = options.cost_model == PipeDreamCostModel::kCompat;
  double total = 0, replicas_here_and_above = 1;
  int cut_level = -1;
  for (int l = static_cast<int>(leaf.path.size()) - 1; l >= 0; --l) {
    const PipeDreamSpan& span = leaf.path[l];
    const int r = span.replicas;
    replicas_here_and_above *= r;
    double sync = (4.0 * (r - 1) * parameters[l][leaf.span_index[l]]) /
                  (options.levels[l].bandwidth_bytes_per_s * r);
    if (compat && leaf.first_in_range[l] && l > 0) sync /= options.levels[l - 1].machines;
    total += sync / replicas_here_and_above;
    // The cut in front of the stage belongs to the highest level whose span starts with it.
    if (cut_level < 0 && span.first_state == leaf.path[0].first_state && !leaf.first_in_range[l])
      cut_level = l;
  }
  if (cut_level < 0) return total;
  const double bytes = states.State(leaf.path[0].first_state - 1).output_activation_bytes;
  const double bandwidth = options.levels[cut_level].bandwidth_bytes_per_s;
  const double ratio = options.activation_compression_ratio.value_or(1.0);
  if (!compat) return total + 2.0 * bytes / bandwidth / ratio;
  if (!options.activation_compression_ratio) return total;
  return total + (2.0 * bytes) / (bandwidth * leaf.path[cut_level].replicas) / ratio;
}

// Which layers each stage holds, in which order the plan counts them, and the plan's stages.
// In the code's model a lower level may split a range at a state that does not follow the
// range's start (its range sums on a DAG), which can leave a stage with no layer of its own: the
// optimizer's output graph then simply has no node with that stage id. Such a stage is left out
// of the plan and its devices idle; details.empty_stages lists it.
void AssignLayers(const Workload& w, const AntichainLinearization& states,
                  PipeDreamLayout& layout, PipeDreamResult& result) {
  std::vector<int> ends;
  for (const PipeDreamLeafStage& leaf : layout.stages) ends.push_back(leaf.path[0].last_state);
  std::vector<int> stage_of = AssignLayersToStages(states, w, ends);
  std::vector<int> layers_in(ends.size(), 0), renumber(ends.size(), -1);
  for (int q : stage_of) ++layers_in[q];
  nlohmann::json empty = nlohmann::json::array();
  std::vector<PipeDreamLeafStage> kept;
  for (size_t q = 0; q < ends.size(); ++q) {
    const PipeDreamSpan& span = layout.stages[q].path[0];
    if (layers_in[q] == 0) {
      empty.push_back({{"first_state", span.first_state},
                       {"last_state", span.last_state},
                       {"devices", layout.stages[q].devices}});
      continue;
    }
    renumber[q] = static_cast<int>(kept.size());
    kept.push_back(std::move(layout.stages[q]));
  }
  layout.stages = std::move(kept);
  for (int& q : stage_of) q = renumber[q];
  if (!empty.empty()) result.plan.details["empty_stages"] = empty;

  result.layer_order = StageContiguousOrder(stage_of);
  for (int p = 0; p < w.LayerCount(); ++p) result.reordered |= result.layer_order[p] != p;
  std::vector<StagePlan>& stages = result.plan.stages;
  stages.assign(layout.stages.size(), StagePlan{});
  for (size_t q = 0; q < stages.size(); ++q) {
    stages[q].first_layer = -1;
    stages[q].replicas = layout.stages[q].Replicas();
    stages[q].devices = layout.stages[q].devices;
  }
  for (int p = 0; p < w.LayerCount(); ++p) {
    StagePlan& stage = stages[stage_of[result.layer_order[p]]];
    if (stage.first_layer < 0) stage.first_layer = p;
    stage.last_layer = p;
  }
}

// Per stage: compute = its layers' forward + backward time over its replicas; communication as
// CommunicationSeconds; memory = in-flight minibatches x (activations + weights of its layers),
// with ceil(workers from this stage on / its replicas) in flight under 1F1B (SOSP'19 section
// 3.2; weight stashing keeps one weight version per minibatch in flight).
void FillStageCosts(const Workload& w, const AntichainLinearization& states,
                    const PipeDreamOptions& options, const PipeDreamLayout& layout,
                    PipeDreamResult& result) {
  std::vector<StagePlan>& stages = result.plan.stages;
  const int level_count = static_cast<int>(options.levels.size());
  SpanParameters parameters(level_count);
  for (int l = 0; l < level_count; ++l)
    parameters[l].assign(layout.levels_highest_first[level_count - 1 - l].size(), 0.0);
  std::vector<double> compute_ms(stages.size(), 0.0), bytes(stages.size(), 0.0);
  for (size_t q = 0; q < stages.size(); ++q) {
    for (int p = stages[q].first_layer; p <= stages[q].last_layer; ++p) {
      const Layer& layer = w.layers[result.layer_order[p]];
      if (states.Role(result.layer_order[p]) != PipeDreamLayerRole::kModel) continue;
      compute_ms[q] += layer.forward_ms + layer.backward_ms;
      bytes[q] += layer.activation_bytes + layer.parameter_bytes;
      for (int l = 0; l < level_count; ++l)
        parameters[l][layout.stages[q].span_index[l]] += layer.parameter_bytes;
    }
  }
  result.plan.memory_bytes_per_device.assign(layout.device_count, 0.0);
  int workers_after = 0;
  for (int q = static_cast<int>(stages.size()) - 1; q >= 0; --q) {
    StagePlan& s = stages[q];
    s.compute_ms = compute_ms[q] / s.replicas;
    s.communication_ms = 1000.0 * CommunicationSeconds(states, options, layout.stages[q], parameters);
    workers_after += s.replicas;
    const int in_flight = (workers_after + s.replicas - 1) / s.replicas;
    s.memory_bytes = in_flight * bytes[q];
    for (int d : s.devices) result.plan.memory_bytes_per_device[d] = s.memory_bytes;
  }
  result.noam = (result.plan.WorkerCount() + stages[0].replicas - 1) / stages[0].replicas;
}

nlohmann::json LevelsJson(const std::vector<std::vector<PipeDreamSpan>>& levels) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& level : levels) {
    nlohmann::json spans = nlohmann::json::array();
    for (const PipeDreamSpan& s : level)
      spans.push_back({s.first_state, s.last_state + 1, s.replicas});
    out.push_back(spans);
  }
  return out;
}

}  // namespace

namespace {

std::string Rounded(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", v);
  return text;
}

// Refuses a solve beyond kMaxPipeDreamSteps / kMaxPipeDreamBytes (planner.h).
void CheckWork(const std::string& who, const std::string& what, double steps, double bytes,
               const PipeDreamOptions& options) {
  if (steps <= kMaxPipeDreamSteps && bytes <= kMaxPipeDreamBytes) return;
  std::string levels;
  for (const PipeDreamLevel& l : options.levels)
    levels += (levels.empty() ? "" : " x ") + std::to_string(l.machines);
  throw InputError(who + what + " on levels of " + levels + " machines would take about " +
                   Rounded(steps) + " steps and " + Rounded(bytes / 1e9) +
                   " GB, more than pipetwin's limits of " + Rounded(kMaxPipeDreamSteps) +
                   " steps and " + Rounded(kMaxPipeDreamBytes / 1e9) +
                   " GB for the partitioner: merge layers into a coarser profile, or plan "
                   "fewer machines per level");
}

}  // namespace

PipeDreamResult PlanPipeDream(const Workload& workload, const PipeDreamOptions& options) {
  ValidatePipeDreamOptions(options);  // before the states: bad settings fail first
  // Before linearising: at most one state per layer.
  const double layers = workload.LayerCount();
  const PipeDreamWork work = EstimatePipeDreamWork(workload.LayerCount(), options);
  CheckWork(PipeDreamPlannerName(options.cost_model) + ": ",
            "up to " + std::to_string(workload.LayerCount()) + " states (one per layer)",
            work.steps, std::max(work.table_bytes, 2.5 * layers * layers), options);
  return PlanPipeDream(workload, LinearizeLikePipeDream(workload), options);
}

PipeDreamResult PlanPipeDream(const Workload& workload, const AntichainLinearization& states,
                              const PipeDreamOptions& options) {
  ValidatePipeDreamOptions(options);
  const int n = states.StateCount();
  const PipeDreamWork work = EstimatePipeDreamWork(n, options);
  CheckWork(PipeDreamPlannerName(options.cost_model) + ": ", std::to_string(n) + " states",
            work.steps, work.table_bytes, options);
  const std::vector<PipeDreamLevelTable> tables = SolveAllLevels(states, options);
  PipeDreamResult result;
  result.time_per_stage_s = TopTime(tables, n);
  if (result.time_per_stage_s == PipeDreamLevelTable::kNone) ThrowNoFit(workload, states, options);
  result.state_count = n;
  result.single_stage_time_s = states.State(n - 1).compute_s;
  result.data_parallel_time_s = DataParallelTime(states, options);
  PipeDreamLayout layout = WalkPipeDreamLayout(tables, options, n);
  result.levels = layout.levels_highest_first;

  Plan& plan = result.plan;
  plan.planner = PipeDreamPlannerName(options.cost_model);
  plan.schedule = ScheduleKind::kPipeDream;
  plan.microbatch_size = options.batch_size;
  plan.microbatches_per_update = 1;
  AssignLayers(workload, states, layout, result);
  FillStageCosts(workload, states, options, layout, result);
  // Samples = minibatches x the profile's batch size (graph.txt does not record it).
  plan.predicted_time_per_sample_s = result.time_per_stage_s / options.batch_size;
  plan.predicted_samples_per_s = options.batch_size / result.time_per_stage_s;

  nlohmann::json& d = plan.details;
  d["cost_model"] = plan.planner;
  d["noam"] = result.noam;
  d["states"] = n;
  d["time_per_stage_s"] = result.time_per_stage_s;
  d["single_stage_time_s"] = result.single_stage_time_s;
  d["data_parallel_time_s"] = result.data_parallel_time_s;
  d["levels"] = LevelsJson(result.levels);
  // The search: exact over the optimizer's antichains, or over the prefixes of the topological
  // order (antichain.h), with a bound on how far from the optimum that can be: no plan beats
  // the whole model's compute split evenly over every machine.
  int machines = 1;
  for (const PipeDreamLevel& level : options.levels) machines *= level.machines;
  result.lower_bound_s = result.single_stage_time_s / machines;
  d["search"] = states.exact() ? "exact (every antichain)"
                               : "prefixes of the topological order (more than " +
                                     std::to_string(kMaxExactStates) + " antichains)";
  d["lower_bound_s"] = result.lower_bound_s;
  // What the plan table prints under the prediction when it leaves an effect to the simulator:
  // stage transfers that cross a server's uplink which a replicated stage's rings also cross
  // (the paper's model gives every transfer and every weight sync its link to itself).
  if (options.levels.size() >= 2) {
    const int server = options.levels[0].machines;
    auto spans_servers = [server](const std::vector<int>& devices) {
      for (int d : devices)
        if (d / server != devices.front() / server) return true;
      return false;
    };
    bool rings = false, transfers = false;
    for (size_t q = 0; q < plan.stages.size(); ++q) {
      rings = rings || spans_servers(plan.stages[q].devices);
      if (q + 1 == plan.stages.size()) continue;
      std::vector<int> both = plan.stages[q].devices;
      both.insert(both.end(), plan.stages[q + 1].devices.begin(), plan.stages[q + 1].devices.end());
      transfers = transfers || (!both.empty() && spans_servers(both));
    }
    if (rings && transfers)
      d["caveat"] = "stage transfers cross server uplinks that the weight-sync rings share: this "
                    "prediction gives each its link to itself, the simulator shares it (expect "
                    "it slower)";
  }
  // The paper's maximum of compute and weight sync assumes they overlap; the op lists run a
  // replicated stage's all-reduce from its backward's last gradients to its next forward.
  bool replicated = false;
  for (const StagePlan& stage : plan.stages) replicated = replicated || stage.replicas > 1;
  if (replicated && options.cost_model == PipeDreamCostModel::kPaper) {
    const std::string sync =
        "the paper's model overlaps a replicated stage's weight synchronisation with its compute "
        "(section 3.1, a maximum); the op lists start the all-reduce with the backward's last "
        "gradients (after the backward with one bucket, the default) and finish it before the "
        "stage's next forward, so the simulator adds what does not overlap (expect it slower)";
    d["caveat"] = d.contains("caveat") ? d["caveat"].get<std::string>() + "; " + sync : sync;
  }
  if (options.cost_model == PipeDreamCostModel::kCompat)
    d["caveat"] = "the public optimizer's model, quirks included (no cut cost without a "
                  "compression ratio, weight sync added to compute): a reference for checking "
                  "against it, not a prediction of this cluster; pipetwin simulate predicts it";
  // Which data-loading rule the prediction used (cost/data_loading.h).
  if (options.data_loading_s > 0)
    d["data_loading"] = options.cost_model == PipeDreamCostModel::kCompat
                            ? "left out (PipeDream's optimizer drops its Input nodes)"
                            : options.data_loading_serial ? "serial" : "overlapped";
  if (result.reordered) plan.layer_order = result.layer_order;
  return result;
}

}  // namespace pipetwin
