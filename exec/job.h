// ExecutorJob: everything a run decides before any worker process starts.
//
// From the scenario (and an optional plan file) come the plan, the model to build (the
// workload's generator and its settings), and the schedule: the per-worker op lists of
// partition/schedule.h, built once from the same ScheduleSpec rules the simulator uses. Every
// worker calls PrepareJob itself with the same options and so holds the same lists; the launcher
// calls it first, so that a scenario the executor cannot run is refused before any process starts.
//
//   ExecutorJob job = PrepareJob(options);     // InputError: unsupported model or schedule
//   job.schedule.workers[rank].ops;           // what worker `rank` runs, in order
//
// Free of LibTorch (the launcher and the report merge use it).
#pragma once

#include <string>
#include <vector>

#include "partition/cli/options/run.h"
#include "partition/model/plan.h"
#include "partition/schedule/op.h"
#include "workloads/networks/network.h"
#include "workloads/scenario/scenario.h"

namespace pipetwin::exec {

using cli::RunOptions;

struct ExecutorJob {
  RunOptions options;
  Scenario scenario;
  Plan plan;
  Network network;             // what the executor builds (workloads/networks/network.h)
  // Every worker's ops for the whole run (workloads/scenario/schedule_for_scenario.h): the very
  // lists the simulator runs.
  PipelineSchedule schedule;
  int iterations = 1;                  // batches (weight updates of the input stage)
  int microbatches_per_iteration = 1;  // m (PipeDream: minibatches per iteration)
  int microbatch_size = 1;             // samples per micro-batch per replica of a stage

  int WorkerCount() const { return schedule.WorkerCount(); }
  int SamplesPerIteration() const { return microbatches_per_iteration * microbatch_size; }
  // The iteration a micro-batch belongs to.
  int IterationOf(int microbatch) const { return microbatch / microbatches_per_iteration; }
};

// Builds the job; throws InputError (naming the scenario file and field) for what this executor
// cannot run: a workload without a generator, an interleaved schedule, Fashion-MNIST data on a
// model other than an MLP with 784 inputs and 10 classes, --no-weight-stashing off PipeDream.
ExecutorJob PrepareJob(const RunOptions& options);

// The network of a workload source ({"generator": ..., settings}); throws InputError naming
// `file` and `path` when the source is not a generator (a file or inline layers carry no model to
// build) or its settings are out of range.
Network NetworkFromSource(const nlohmann::json& source, const std::string& file,
                          const std::string& path);

}  // namespace pipetwin::exec
