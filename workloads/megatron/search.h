// A search over the ways to run a Megatron-LM model on a number of GPUs: tensor-parallel size t
// (a divisor of the server's GPUs), pipeline depth p (a divisor of the layers), data-parallel
// width d = GPUs / (t p), micro-batch size, virtual stages v, recomputation (none, selective,
// full), sequence parallelism (on whenever t > 1: it never costs time and saves memory) and the
// distributed optimizer (on whenever d > 1), for a global batch, keeping the configurations
// whose first stage fits the device's memory (FirstStageMemory), ranked by a closed-form
// iteration time:
//
//   T = (m + (p - 1) / v) (F + B) + A + U
//
// with m micro-batches per pipeline, F and B the slowest stage's forward and backward of one
// micro-batch (all its chunks; a full recomputation's forward rerun in B), (p - 1) / v the
// bubble of 1F1B and of interleaved 1F1B (Narayanan et al. SC'21, sections 2.2.1 and 2.2.2),
// A the replicas' gradient synchronisation after the backward (the distributed optimizer's
// reduce-scatter and all-gather: communication.h, GradientSyncBytes) as the simulator's rings
// run it on the cluster's tensor-parallel view, and U the optimizer step (OptimizerStepBytes).
// Interleaving needs m divisible by p, as in Megatron-LM.
//
//   auto ranked = SearchMegatron(gpt3, "bf16", false, ClusterPreset("dgx-a100", 1), 1024, 1536);
//   ranked[0].iteration_s;   // the fastest estimate that fits
#pragma once

#include <vector>

#include "partition/model/cluster.h"
#include "partition/model/plan.h"
#include "workloads/megatron/megatron_memory.h"
#include "workloads/megatron/model.h"

namespace pipetwin {

struct MegatronCandidate {
  MegatronParallel parallel;  // tensor, sequence_parallel, recompute, microbatch, data_parallel,
                              // distributed_optimizer, precision, flash_attention
  int pipeline = 1;
  int chunks = 1;
  int microbatches = 1;       // per pipeline
  double iteration_s = 0;     // the closed form above
  MegatronMemory memory;      // the first stage's rank
};

struct MegatronSearch {
  std::vector<MegatronCandidate> fitting;  // fastest first
  int considered = 0;                      // configurations that divide evenly
  int over_memory = 0;                     // of those, how many do not fit
};

// `server` is one server of the cluster (its device, its links, its NIC); `gpus` a multiple of
// its devices. Throws InputError when `gpus` is not. `gradient_precision`: every candidate's
// (MegatronParallel::gradient_precision, as the launch line sets it).
MegatronSearch SearchMegatron(const MegatronModel& model, const std::string& precision,
                              bool flash_attention, const Cluster& server, int gpus,
                              int global_batch, const std::string& gradient_precision = "fp32");

// PipeDream-2BW's planner (planners/two_bw.h: width, depth, micro-batch, full recomputation and
// the split, under the device memory) for every tensor-parallel size too: for each t that
// divides a server's GPUs and suits the model (ValidateMegatron), the layers as one rank's share
// (MegatronWorkload: sequence parallelism on when t > 1, selective recomputation off or on) on
// the cluster's tensor-parallel view, each searched by Plan2BW for the global batch; the plans
// that fit, fastest first (Plan::predicted_samples_per_s). Throws InputError when none fits.
struct TwoBWCandidate {
  MegatronParallel parallel;  // tensor, sequence_parallel, recompute (none or selective),
                              // precision, flash_attention; microbatch as the plan's
  Plan plan;                  // on the tensor-parallel view of the cluster
};
std::vector<TwoBWCandidate> Search2BWMegatron(const MegatronModel& model,
                                              const std::string& precision, bool flash_attention,
                                              const Cluster& server, int gpus, int global_batch,
                                              const std::string& gradient_precision = "fp32");

}  // namespace pipetwin
