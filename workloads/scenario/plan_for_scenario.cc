#include "workloads/scenario/plan_for_scenario.h"

#include "partition/planners/baselines.h"
#include "partition/util/error.h"
#include "partition/planners/pipedream/planner.h"
#include "partition/planners/two_bw.h"
#include "partition/cost/pipeline_cost_model.h"
#include "partition/planners/settings.h"

namespace pipetwin {

// The planner settings a scenario implies: its training settings and the workload's own stash.
PlannerSettings PlannerSettingsFor(const Scenario& s) {
  PlannerSettings settings;
  settings.optimizer_bytes_per_parameter = s.training.optimizer_bytes_per_parameter;
  settings.sharded_optimizer = s.training.distributed_optimizer;
  if (s.training.global_batch_size > 0) {
    settings.max_global_batch_size = s.training.global_batch_size;
    settings.global_batch_size = s.training.global_batch_size;
  }
  settings.microbatch_size = s.training.microbatch_size;
  settings.microbatches = s.training.microbatches;
  settings.recompute = s.training.recompute;
  settings.data_loading = s.training.data_loading;
  settings.stash_bytes_per_layer.resize(s.workload.LayerCount());
  for (int i = 0; i < s.workload.LayerCount(); ++i)
    settings.stash_bytes_per_layer[i] = s.workload.StashBytes(i);
  if (s.schedule == ScheduleKind::kGPipe || s.schedule == ScheduleKind::kFlush)
    settings.split_schedule = *s.schedule;
  return settings;
}

namespace {

// PipeDream's partitioner takes the cluster as machines and bandwidth per level (SOSP'19 section
// 3.1) and the workload's times as they are: a minibatch is the workload's reference batch.
Plan PlanWithPipeDream(const Scenario& s, PipeDreamCostModel model) {
  PipeDreamOptions o;
  o.cost_model = model;
  for (const ClusterLevel& level : s.cluster.levels)
    o.levels.push_back({level.count, level.bandwidth_bytes_per_s()});
  o.activation_compression_ratio = 1;  // transfers always cost 2a/B, as in the paper
  o.memory_bytes_per_device = s.cluster.device.memory_bytes;
  o.batch_size = s.workload.reference.batch_size;
  o.data_loading_s = LoadMs(s.workload, o.batch_size) * 1e-3;  // one minibatch, host time
  o.data_loading_serial = s.training.data_loading == DataLoading::kSerial;
  Workload scaled = s.workload;  // the cluster's device may be faster than the profiled one
  const double speed = SpeedOverReference(s.cluster, s.workload.reference.device);
  for (Layer& l : scaled.layers) {
    l.forward_ms /= speed;
    l.backward_ms /= speed;
  }
  // A plan over the device's memory is not one to recommend (issue 23): when the fastest plan
  // is over it, the optimizer plans again under its memory rule (--use_memory_constraint: a
  // stage's activations and weights times the minibatches in flight, SOSP'19 section 3.2) with
  // the device's capacity. When nothing fits under that rule either, the fastest plan is the
  // one returned, for the callers' verdict (`plan` refuses it without --allow-over-capacity,
  // simulate and run warn).
  Plan fastest = PlanPipeDream(scaled, o).plan;
  bool over = false;
  for (const StagePlan& stage : fastest.stages) over = over || stage.memory_bytes > o.memory_bytes_per_device;
  if (!over) return fastest;
  o.use_memory_constraint = true;
  try {
    return PlanPipeDream(scaled, o).plan;
  } catch (const InputError&) {
    return fastest;
  }
}

}  // namespace

Plan PlanForScenario(const Scenario& s) {
  if (s.plan) return *s.plan;
  const PlannerSettings settings = PlannerSettingsFor(s);
  try {
    switch (*s.planner) {
      case PlannerKind::kTwoBW: return Plan2BW(s.workload, s.cluster, settings);
      case PlannerKind::kPipeDream: return PlanWithPipeDream(s, PipeDreamCostModel::kPaper);
      case PlannerKind::kPipeDreamCompat:
        return PlanWithPipeDream(s, PipeDreamCostModel::kCompat);
      default:
        return PlanBaseline(BaselineKindFromName(PlannerKindName(*s.planner)), s.workload,
                            s.cluster, settings);
    }
  } catch (const InputError& e) {
    if (!e.file().empty()) throw;
    throw InputError(s.file, "planner", e.what());
  }
}

}  // namespace pipetwin
