// What the simulator runs, worked out from a scenario and a plan before SimGrid starts: the
// schedule's op lists (expanded over the iterations), the device of every worker, and the cost
// of every operation. Nothing here needs SimGrid, so bad input fails fast with one line.
//
//   Scenario scenario = LoadScenarioFile("scenarios/sim-flush-8.json");
//   SimulationSetup setup = PrepareSimulation(scenario, PlanForScenario(scenario), {});
//   setup.schedule.workers[3].ops;          // what worker 3 runs, in order
//   setup.model_stages[2].forward_ms;       // one micro-batch through model stage 2
//
// Costs: each model stage's times and bytes for one micro-batch are the core's
// (cost/stage_costs.h: layer times x micro-batch / reference batch / speed, bytes across the cut
// in the plan's layer order). Times, not FLOPs: every workload has times, and the analytic ones
// derive them from FLOPs and the roofline. Split backwards (zero bubble) take half each;
// recomputation repeats the forward; each compute op also pays the cluster's
// launch_overhead_us. A message carries the cut after its upstream stage; an all-reduce the
// stage's gradient bytes, as a ring (sim/collective.h); memory follows the stash and release
// ops (sim/memory_tracker.h).
#pragma once

#include <string>
#include <vector>

#include "partition/cost/data_loading.h"
#include "partition/cost/stage_costs.h"
#include "workloads/scenario/schedule_for_scenario.h"
#include "partition/model/cluster.h"
#include "partition/model/plan.h"
#include "partition/schedule/op.h"
#include "partition/model/workload.h"
#include "workloads/scenario/scenario.h"

namespace pipetwin::sim {

// How a ring collective (a replicated stage's gradient all-reduce, reduce-scatter, all-gather)
// becomes SimGrid communications (sim/actors.cc, StreamMain):
//   kPhases  one flow per member and phase of the ring plan, carrying the phase's steps x
//            fraction x S bytes to its successor, after the latencies and per-message
//            overheads of those steps: O(g) communications for a group of g, each link
//            charged its bytes, sharing with what else crosses it;
//   kSteps   every step of the ring as its own message (2(g-1) steps of g messages: O(g^2)),
//            the reference the phases are tested against (tests/sim/scale_test.cc).
enum class CollectiveModel { kPhases, kSteps };

// Knobs of the simulation that are not part of the scenario.
struct SimOptions {
  CollectiveModel collectives = CollectiveModel::kPhases;
  // Simulate one group of identical data-parallel replicas for all of them where that is exact
  // (sim/symmetry.h).
  bool symmetry = true;
  // Keep per-device memory timelines (the JSON report's `timeline`).
  bool record_memory_timeline = true;
  // Iterations left out of the steady state (the first fills the pipeline), as `pipetwin run
  // --warmup` leaves them out of the measured one.
  int warmup_iterations = 1;
};

struct SimulationSetup {
  std::string scenario_name;
  std::string planner;
  Cluster cluster;
  Plan plan;
  SimOptions options;
  PipelineSchedule schedule;            // expanded over all iterations
  std::vector<StageCost> model_stages;  // by model stage (chunk * P + position), in ms
  std::vector<int> worker_device;       // device of each worker
  int microbatch_size = 1;
  int microbatches_per_iteration = 1;   // over all replicas of the input stage
  int iterations = 1;
  int allreduce_buckets = 1;            // of the lists' all-reduces (training.allreduce_buckets)
  // A sharded optimizer (training.distributed_optimizer): an AllReduce op reduce-scatters the
  // gradients and an Update all-gathers the weights after its step; with
  // overlap_param_gather, a forward waits for the first bucket of them only.
  bool sharded_optimizer = false;
  bool overlap_param_gather = false;
  double launch_overhead_s = 0;
  double communication_overhead_s = 0;
  // Of a compute op's time, what one whose worker kept its core costs, on a server whose workers
  // outnumber its cores (workload.h, OwnCoreShare); not measured: every op as profiled.
  OwnCoreShare own_core;
  // Loading one micro-batch on an input-stage worker, and how it meets the compute
  // (cost/data_loading.h).
  double load_s = 0;
  DataLoading data_loading = DataLoading::kOverlapped;
  std::vector<std::string> warnings;
  // The workload's model FLOPs per sample and the GPUs each worker stands for (its
  // tensor-parallel group), for the report's TFLOP/s per GPU and MFU.
  double model_flops_per_sample = 0;
  int gpus_per_worker = 1;

  // Seconds a compute op occupies its device (launch overhead included), a weight-gradient op
  // adding its gradients into the sums.
  double ComputeSeconds(const Op& op) const;
  // Op i of worker w's list: as above, less the additions where it takes its gradients as they
  // are (gradient_adds).
  double ComputeSeconds(int worker, size_t i) const;
  // Per worker, per op: whether it adds its gradients into the sums (op.h, GradientSumAdds).
  std::vector<std::vector<bool>> gradient_adds;
  // Seconds of the optimizer step at Update op i of worker w, over every stage it holds, each
  // replica stepping its 1 / `shards` of a sharded optimizer's part (UpdateMs), less the copy of
  // the weights where the update steps its version in place (update_copies).
  double UpdateSeconds(int worker, size_t i, int shards) const;
  // Per worker, per op: whether an Update copies the weights first (op.h, UpdatesCopyingWeights).
  std::vector<std::vector<bool>> update_copies;
  // The tensor-parallel group's collectives inside a compute op (StageCost::collectives; zeros
  // for a workload that is not split): part of ComputeSeconds, run by the simulator as flows on
  // the device's server link. A recompute repeats its recomputed layers' forward ones; a split
  // backward has half each.
  struct GroupCollectiveWork {
    double exposed_s = 0, overlapped_s = 0;  // alone on the links
    double bytes = 0;                        // a rank sends
  };
  GroupCollectiveWork GroupCollectivesOf(const Op& op) const;
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
