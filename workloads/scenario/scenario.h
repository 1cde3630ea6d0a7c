// Scenario: one what-if question, tying a workload, a cluster, a planner (or an explicit plan), a
// schedule and the training settings together. `scenarios/` holds examples; the default scenario
// is embedded in the binary so `pipetwin simulate` works with no file at all.
//
//   Scenario s = LoadScenarioFile("scenarios/vgg16-cluster-a-4x4.json");
//   s.workload.LayerCount();  s.cluster.DeviceCount();  s.planner;  s.training.microbatches;
//
// Schema (README.md, "Scenario file"):
//   {"name": "...", "workload": {generator|file|inline}, "cluster": {preset|full},
//    "planner": "pipedream" | "plan": {...} | "plan_file": "plan.json",
//    "schedule": "gpipe|flush|pipedream|2bw|interleaved|zb-h1",
//    "training": {"global_batch_size", "microbatch_size", "microbatches", "iterations",
//                 "optimizer", "optimizer_bytes_per_parameter", "learning_rate",
//                 "vertical_sync", "recompute", "chunks", "allreduce_buckets"}}
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "partition/model/cluster.h"
#include "partition/model/plan.h"
#include "partition/model/workload.h"
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
  bool recompute = false;      // activation recomputation
  int chunks = 1;              // model chunks per worker (interleaved 1F1B)
  // Buckets a replicated stage's gradient all-reduce runs in (schedule/spec.h: 1 by default,
  // after the backward; more overlap the backward, which the executor does not do).
  int allreduce_buckets = kDefaultAllReduceBuckets;
};

struct Scenario {
  std::string name;
  std::string file;          // where it came from ("<embedded default>" for the default)
  Workload workload;
  Cluster cluster;
  std::string planner;       // empty when an explicit plan is given
  std::optional<Plan> plan;  // explicit plan, checked against workload and cluster
  std::string schedule = "flush";
  TrainingSettings training;
  nlohmann::json source;     // the document as read (sweeps vary it and reload)
};

// Throws InputError naming the file and JSON path of the first fault.
Scenario ScenarioFromJson(const nlohmann::json& doc, const std::string& file,
                          const std::string& base_dir);
Scenario LoadScenarioFile(const std::string& path);
// The embedded default scenario (also scenarios/default.json; a test keeps them equal).
const char* DefaultScenarioJson();
Scenario DefaultScenario();

const std::vector<std::string>& ScheduleNames();
// Model chunks per worker: training.chunks (at least 2) under interleaved 1F1B, else 1.
int ChunksPerWorker(const std::string& schedule, const TrainingSettings& training);
const std::vector<std::string>& PlannerNames();

}  // namespace pipetwin
