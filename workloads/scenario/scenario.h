// Scenario: one what-if question, tying a workload, a cluster, a planner (or an explicit plan), a
// schedule and the training settings together. `scenarios/` holds examples; the default scenario
// is embedded in the binary so `pipetwin simulate` works with no file at all.
//
//   Scenario s = LoadScenarioFile("scenarios/vgg16-cluster-a-4x4.json");
//   s.workload.LayerCount();  s.cluster.DeviceCount();  *s.planner;  s.training.microbatches;
//
// Schema (scenarios/README.md, "Scenario file"):
//   {"name": "...", "workload": {generator|file|inline}, "cluster": {preset|full},
//    "planner": "pipedream" | "plan": {...} | "plan_file": "plan.json",
//    "schedule": "gpipe|flush|...|dualpipe-v" | "schedule_csv": "torch.csv",
//    "training": {"global_batch_size", "microbatch_size", "microbatches", "iterations",
//                 "optimizer", "optimizer_bytes_per_parameter", "learning_rate",
//                 "vertical_sync", "weight_stashing", "recompute", "recompute_timing", "data_loading", "chunks",
//                 "allreduce_buckets", "p2p", "distributed_optimizer", "overlap_param_gather"}}
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "partition/model/cluster.h"
#include "partition/model/plan.h"
#include "partition/model/workload.h"
#include "partition/cost/data_loading.h"
#include "partition/schedule/spec.h"

namespace pipetwin {

struct TrainingSettings {
  int global_batch_size = 0;  // samples per weight update over the whole cluster (0: derived)
  int microbatch_size = 1;    // samples per micro-batch
  int microbatches = 8;       // micro-batches per update (m), per pipeline
  int iterations = 4;         // weight updates to simulate or run
  std::string optimizer = "adam";         // "sgd", "momentum", "adam"
  double optimizer_bytes_per_parameter = 8;  // Adam in fp32: two moments of 4 bytes
  double learning_rate = 1e-3;
  bool vertical_sync = false;  // PipeDream: every stage uses the input stage's version
  // PipeDream: each backward on the weights its forward used (true), or on the latest ones
  // (false, schedule/spec.h): for comparison, as PipeDream SOSP'19 section 5.5 shows it.
  bool weight_stashing = true;
  bool recompute = false;      // activation recomputation
  // When a stage recomputes: in the backward once the gradient has arrived (Megatron-LM,
  // torch.utils.checkpoint), or early while the gradient travels.
  RecomputeTiming recompute_timing = RecomputeTiming::kInBackward;
  // How the input stage's data loading meets its compute (cost/data_loading.h).
  DataLoading data_loading = DataLoading::kOverlapped;
  int chunks = 1;              // model chunks per worker (interleaved, looped-bfs, interleaved-zb)
  // Buckets a replicated stage's gradient all-reduce runs in (schedule/spec.h: 1 by default,
  // after the backward; more overlap the backward, which the executor does not do).
  int allreduce_buckets = kDefaultAllReduceBuckets;
  // Whether a worker waits for its pipeline sends to be delivered before its next forward or
  // backward (schedule/op.h, SendMode): "eager" (c10d isend, torch) or "blocking" (Megatron-LM).
  SendMode send_mode = SendMode::kEager;
  // The optimizer state sharded over each stage's replicas (ZeRO-1, Megatron-LM's
  // --use-distributed-optimizer): gradients reduce-scattered, the shard stepped, weights
  // all-gathered (communication.h, GradientSyncBytes). Simulator and planners only.
  bool distributed_optimizer = false;
  // With it, the weights' all-gather overlaps the next batch's forward (Megatron-LM's
  // --overlap-param-gather): a forward waits for the first bucket of weights only.
  bool overlap_param_gather = false;
};

// The planners a scenario may name.
enum class PlannerKind {
  kPipeDream,        // PipeDream's dynamic program (SOSP'19 section 3.1)
  kPipeDreamCompat,  // what PipeDream's public optimizer computes, quirks included
  kTwoBW,            // PipeDream-2BW's search (ICML'21 section 4)
  kDataParallel,     // the baselines (planners/baselines.h)
  kGPipe,
  kFlush,
  kUniform,
  kBalanced,
};

// "pipedream", "pipedream-compat", "2bw", "data-parallel", "gpipe", "flush", "uniform",
// "balanced".
std::string PlannerKindName(PlannerKind kind);
const std::vector<std::string>& PlannerNames();
// Throws InputError naming the choices.
PlannerKind ParsePlannerKind(const std::string& name);

struct Scenario {
  std::string name;
  std::string file;          // where it came from ("<embedded default>" for the default)
  Workload workload;
  Cluster cluster;
  std::optional<PlannerKind> planner;  // absent when an explicit plan is given
  std::optional<Plan> plan;  // explicit plan, checked against workload and cluster
  // The scenario's own "schedule", when its file names one: it governs an explicit plan's, and
  // a planner's plan runs it (ScheduleFor).
  std::optional<ScheduleKind> schedule;
  // "schedule_csv": a torch.distributed.pipelining action CSV (either form, read by
  // ScheduleFromCsv), one iteration's lists the plan runs instead of a built schedule; then
  // `schedule` is kImported and training.chunks the CSV's stages per rank.
  std::optional<PipelineSchedule> imported;
  TrainingSettings training;
  nlohmann::json source;     // the document as read (sweeps vary it and reload)
  // What the scenario's settings replace in its own plan (OverriddenPlanSettings), one line
  // each, for the commands to say: nothing is replaced without a word.
  std::vector<std::string> notes;
};

// Throws InputError naming the file and JSON path of the first fault.
Scenario ScenarioFromJson(const nlohmann::json& doc, const std::string& file,
                          const std::string& base_dir);
Scenario LoadScenarioFile(const std::string& path);
// The embedded default scenario (also scenarios/default.json; a test keeps them equal).
const char* DefaultScenarioJson();
Scenario DefaultScenario();

// Model chunks per worker: training.chunks under interleaved 1F1B (at least 2), looped-bfs,
// interleaved-zb and an imported schedule (the CSV's); 2 under zb-v, dualpipe-v and dualpipe (a
// V); else 1.
int ChunksPerWorker(ScheduleKind schedule, const TrainingSettings& training);
// The plan's stages that fold onto one set of workers (ValidatePlan's `chunks`): ChunksPerWorker,
// but 1 under dualpipe, whose plan lists one stage per rank (each rank holds its own stage and
// its mirror's: schedule/kind.h).
int PlanChunksPerWorker(ScheduleKind schedule, const TrainingSettings& training);

}  // namespace pipetwin
