#include "sim/setup.h"

#include <algorithm>
#include <numeric>

#include "partition/util/error.h"
#include "partition/cost/pipeline_cost_model.h"
#include "partition/planners/settings.h"
#include "partition/schedule/build.h"
#include "partition/schedule/spec.h"

namespace pipetwin::sim {

namespace {



// Device of each worker: the plan's device lists, else depth-within-width placement
// (planner_common.h: stage s of replica k on device k * depth + s) when every stage has the same
// replica count, else devices in worker order.
std::vector<int> PlaceWorkers(const PipelineSchedule& s, const Plan& plan, int device_count,
                              const std::string& file, const std::string& path) {
  const bool uniform = std::adjacent_find(s.replicas.begin(), s.replicas.end(),
                                          std::not_equal_to<int>()) == s.replicas.end();
  std::vector<int> device(s.WorkerCount());
  std::vector<int> owner(device_count, -1);
  for (const WorkerProgram& w : s.workers) {
    const PlanSlot slot = PlanSlotOf(s.kind, s.stages, s.replicas[w.stage], w.stage, w.replica);
    const StagePlan& stage = plan.stages[slot.stage];
    int d = uniform ? slot.replica * PlanStagesWithWorkers(s.kind, s.stages) + slot.stage
                    : w.worker;
    if (!stage.devices.empty()) d = stage.devices[slot.replica];
    const std::string at = (path.empty() ? "" : path + ".") + "stages[" +
                           std::to_string(slot.stage) + "].devices";
    if (d >= device_count)
      throw InputError(file, at, "worker " + std::to_string(w.worker) + " would sit on device " +
                                     std::to_string(d) + " but the cluster has " +
                                     std::to_string(device_count) + " devices");
    if (owner[d] >= 0)
      throw InputError(file, at, "device " + std::to_string(d) + " would host workers " +
                                     std::to_string(owner[d]) + " and " +
                                     std::to_string(w.worker) +
                                     " (list every stage's devices, or none)");
    owner[d] = w.worker;
    device[w.worker] = d;
  }
  return device;
}

}  // namespace


SimulationSetup PrepareSimulation(const Scenario& scenario, const Plan& plan,
                                  const SimOptions& options, const std::string& plan_file) {
  const std::string file = plan_file.empty() ? scenario.file : plan_file;
  const std::string path = plan_file.empty() && scenario.plan ? "plan" : "";
  const Workload& workload = scenario.workload;
  const Cluster& cluster = scenario.cluster;
  ValidatePlan(plan, workload, cluster.DeviceCount(), file, path,
               PlanChunksPerWorker(ScheduleFor(scenario, plan), scenario.training));
  PlannerSettings settings;
  settings.optimizer_bytes_per_parameter = scenario.training.optimizer_bytes_per_parameter;
  const PipelineCostModel validated(workload, cluster, settings);  // checks workload, cluster
  (void)validated;

  SimulationSetup setup;
  setup.warnings = PlanWarnings(scenario, plan, plan_file);
  setup.scenario_name = scenario.name;
  setup.model_flops_per_sample = scenario.workload.model_flops_per_sample;
  setup.gpus_per_worker = scenario.workload.tensor_parallel;
  setup.planner = scenario.planner ? PlannerKindName(*scenario.planner) : plan.planner;
  setup.cluster = cluster;
  setup.plan = plan;
  setup.options = options;
  setup.iterations = scenario.training.iterations;
  setup.allreduce_buckets = scenario.training.allreduce_buckets;
  setup.sharded_optimizer = scenario.training.distributed_optimizer;
  setup.overlap_param_gather = scenario.training.overlap_param_gather;
  setup.launch_overhead_s = cluster.launch_overhead_us * 1e-6;
  setup.communication_overhead_s = cluster.communication_overhead_us * 1e-6;
  if (cluster.shared_cores > 0) setup.own_core = workload.own_core;
  const MicrobatchSettings micro = MicrobatchSettingsFor(scenario, plan);
  setup.microbatch_size = micro.microbatch_size;
  setup.load_s = LoadMs(workload, setup.microbatch_size) * 1e-3;
  setup.data_loading = scenario.training.data_loading;

  // The same spec the executor builds its lists from (workloads/scenario_schedule.h).
  const ScheduleSpec spec = ScheduleSpecFor(scenario, plan, setup.iterations, file, path);
  setup.microbatches_per_iteration = MicrobatchesPerIteration(scenario, plan);
  setup.model_stages =
      PlanStageCosts(workload, plan, setup.microbatch_size,
                     SpeedOverReference(cluster, workload.reference.device),
                     scenario.training.optimizer_bytes_per_parameter);

  PipelineSchedule schedule = ScheduleForScenario(scenario, plan, setup.iterations, file, path);
  setup.worker_device = PlaceWorkers(schedule, plan, cluster.DeviceCount(), file, path);
  for (const WorkerProgram& program : schedule.workers) {
    setup.gradient_adds.push_back(GradientSumAdds(program));
    setup.update_copies.push_back(UpdatesCopyingWeights(program));
  }
  setup.schedule = std::move(schedule);
  return setup;
}

double SimulationSetup::ComputeSeconds(const Op& op) const {
  const StageCost& c = model_stages[op.stage];
  double seconds = 0;
  switch (op.kind) {
    case OpKind::kForward: seconds = c.forward_ms * 1e-3; break;
    case OpKind::kRecompute: seconds = c.recompute.recompute_ms * 1e-3; break;
    case OpKind::kBackward: seconds = c.backward_ms * 1e-3; break;
    case OpKind::kBackwardInput:
      if (c.backward_input_ms == 0) return 0;  // nothing to compute, nothing launched
      seconds = c.backward_input_ms * 1e-3;
      break;
    case OpKind::kBackwardWeight: seconds = c.backward_weight_ms * 1e-3; break;
    default: return 0;
  }
  return seconds + launch_overhead_s;
}

double SimulationSetup::ComputeSeconds(int worker, size_t i) const {
  const Op& op = schedule.workers[worker].ops[i];
  const double seconds = ComputeSeconds(op);
  const bool weight_gradients = op.kind == OpKind::kBackward || op.kind == OpKind::kBackwardWeight;
  if (!weight_gradients || gradient_adds[worker][i]) return seconds;
  return seconds - model_stages[op.stage].gradient_add_ms * 1e-3;
}

double SimulationSetup::UpdateSeconds(int worker, size_t i, int shards) const {
  double ms = 0;
  for (int g : schedule.workers[worker].model_stages) {
    ms += UpdateMs(model_stages[g], shards);
    if (!update_copies[worker][i]) ms -= model_stages[g].update_copy_ms;
  }
  return std::max(0.0, ms) * 1e-3;
}

SimulationSetup::GroupCollectiveWork SimulationSetup::GroupCollectivesOf(const Op& op) const {
  const GroupCollectives& c = model_stages[op.stage].collectives;
  switch (op.kind) {
    case OpKind::kForward:
      return {c.forward_exposed_ms * 1e-3, c.forward_overlapped_ms * 1e-3, c.forward_bytes};
    case OpKind::kRecompute: {
      const GroupCollectives& r = model_stages[op.stage].recompute_collectives;
      return {r.forward_exposed_ms * 1e-3, r.forward_overlapped_ms * 1e-3, r.forward_bytes};
    }
    case OpKind::kBackward:
      return {c.backward_exposed_ms * 1e-3, c.backward_overlapped_ms * 1e-3, c.backward_bytes};
    case OpKind::kBackwardInput:
      return {c.input_exposed_ms * 1e-3, c.input_overlapped_ms * 1e-3, c.input_bytes};
    case OpKind::kBackwardWeight:
      return {c.weight_exposed_ms * 1e-3, c.weight_overlapped_ms * 1e-3, c.weight_bytes};
    default: return {};
  }
}

double SimulationSetup::MessageBytes(const MessageKey& message) const {
  return model_stages[message.UpstreamStage()].output_bytes;
}

double SimulationSetup::WorkerGradientBytes(int worker) const {
  double bytes = 0;
  for (int g : schedule.workers[worker].model_stages) bytes += model_stages[g].gradient_bytes;
  return bytes;
}

}  // namespace pipetwin::sim
