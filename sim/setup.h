// What the simulator runs, worked out from a scenario and a plan before SimGrid starts: the
// schedule's op lists (expanded over the iterations), the device of every worker, and the cost
// of every operation. Nothing here needs SimGrid, so bad input fails fast with one line.
//
//   Scenario scenario = LoadScenarioFile("scenarios/sim-flush-8.json");
//   SimulationSetup setup = PrepareSimulation(scenario, PlanForScenario(scenario), {});
//   setup.schedule.workers[3].ops;          // what worker 3 runs, in order
//   setup.model_stages[2].forward_s;        // one micro-batch through model stage 2
//
// Cost model (stated once):
//  - Compute: a model stage's forward (backward) time for a micro-batch of b samples is the sum
//    of its layers' forward_ms (backward_ms) x b / reference.batch_size, divided by the device's
//    relative_speed unless the workload was timed on this very device (reference.device equal
//    to the cluster's device name, as the analytic generators do). Times, not FLOPs: every
//    workload has times and the analytic ones already derive them from FLOPs and the roofline.
//    Split backwards (zero bubble) take half each; recomputation repeats the forward. Each
//    compute op also pays the cluster's launch_overhead_us.
//  - Pipeline messages: the bytes crossing the cut after the sending stage's last layer for b
//    samples, in the plan's layer order (outputs of earlier layers still needed later included,
//    as PipelineCostModel::BoundaryBytes counts them); gradients going back carry as many.
//  - All-reduce: the stage's parameters x gradient dtype bytes, as a ring (sim/collective.h).
//  - Memory per micro-batch: the stage input (the cut before the stage) plus each layer's stash
//    (Workload::StashBytes), scaled to b; weights, gradients and optimizer state from the
//    stage's parameters (planner_common.h's WorkerMemory, applied event by event).
#pragma once

#include <string>
#include <vector>

#include "workloads/scenario/schedule_for_scenario.h"
#include "partition/model/cluster.h"
#include "partition/model/plan.h"
#include "partition/schedule/op.h"
#include "partition/model/workload.h"
#include "workloads/scenario/scenario.h"

namespace pipetwin::sim {

// Knobs of the simulation that are not part of the scenario.
struct SimOptions {
  // Keep per-device memory timelines (the JSON report's `timeline`).
  bool record_memory_timeline = true;
};

// One model stage (a contiguous range of layers; interleaved workers hold several).
struct StageCost {
  int first_layer = 0;
  int last_layer = 0;
  double forward_s = 0;   // one micro-batch, without launch overhead
  double backward_s = 0;
  double update_s = 0;    // the optimizer step, once per weight update (Layer::update_ms)
  double parameters = 0;
  double weight_bytes = 0;      // one version: parameters x parameter dtype bytes
  double gradient_bytes = 0;    // parameters x gradient dtype bytes
  double optimizer_bytes = 0;   // parameters x optimizer bytes per parameter
  double input_bytes = 0;       // the stage input of one micro-batch (kept under recomputation)
  double stash_bytes = 0;       // every layer's stash for one micro-batch
  double output_bytes = 0;      // one micro-batch's activation sent to the next stage
  // Per layer, last layer first (the order a backward produces gradients in): backward seconds
  // and gradient bytes, for bucketing the all-reduce.
  std::vector<double> layer_backward_s;
  std::vector<double> layer_gradient_bytes;
};

struct SimulationSetup {
  std::string scenario_name;
  std::string planner;
  Cluster cluster;
  Plan plan;
  SimOptions options;
  PipelineSchedule schedule;            // expanded over all iterations
  std::vector<StageCost> model_stages;  // by model stage (chunk * P + position)
  std::vector<int> worker_device;       // device of each worker
  int microbatch_size = 1;
  int microbatches_per_iteration = 1;   // over all replicas of the input stage
  int iterations = 1;
  int allreduce_buckets = 1;            // of the lists' all-reduces (training.allreduce_buckets)
  double launch_overhead_s = 0;
  double communication_overhead_s = 0;
  std::vector<std::string> warnings;

  // Seconds a compute op occupies its device (launch overhead included).
  double ComputeSeconds(const Op& op) const;
  // Bytes a message carries: the cut after its upstream stage.
  double MessageBytes(const MessageKey& message) const;
  // The worker's weights, gradients and optimizer bytes (summed over its chunks).
  double WorkerGradientBytes(int worker) const;
  // Iteration a micro-batch belongs to.
  int IterationOf(int microbatch) const { return microbatch / microbatches_per_iteration; }
};


// Checks the plan against the workload and the cluster (InputError naming `plan_file` and the
// JSON path: a layer range out of bounds, more workers than devices), builds the schedule and
// its costs. `plan_file` is where the plan came from ("" for the scenario's own).
SimulationSetup PrepareSimulation(const Scenario& scenario, const Plan& plan,
                                  const SimOptions& options, const std::string& plan_file = "");

}  // namespace pipetwin::sim
