// Plan: what a planner decides and what the simulator and executor take.
//
// Stages are contiguous ranges of the workload's layers in its topological order
// (first_layer..last_layer, inclusive), each replicated `replicas` times onto the listed devices
// (device ids count from 0 in the cluster's order: device d sits in server d / devices-per-server).
// A plan also fixes the micro-batch size, the micro-batches per weight update, the schedule and
// recomputation, and carries the planner's own prediction and cost breakdown.
//
//   Plan p;  p.stages = {{0, 9, 2}, {10, 20, 1}};  p.schedule = ScheduleKind::kPipeDream;
//   p.WorkerCount();   // 3
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "partition/schedule/kind.h"

namespace pipetwin {

class Workload;

struct StagePlan {
  int first_layer = 0;       // inclusive, index in the workload's topological order
  int last_layer = 0;        // inclusive
  int replicas = 1;
  std::vector<int> devices;  // one device id per replica (may be empty before placement)
  // The planner's view of this stage (per minibatch or micro-batch, as the planner states).
  double compute_ms = 0;
  double communication_ms = 0;
  double memory_bytes = 0;
};

struct Plan {
  std::string planner = "manual";  // who made it: "manual" (by hand) or a planner's name
  ScheduleKind schedule = ScheduleKind::kFlush;
  bool schedule_stated = true;  // false when read from a file that names no schedule
  std::vector<StagePlan> stages;
  // The order in which stages count layers: position p holds workload layer layer_order[p].
  // Empty means the workload's own topological order. A planner sets it when a DAG's stages are
  // not contiguous in that order (PipeDream's antichain cuts through residual branches); it is
  // always a topological order (every input of a layer sits at an earlier position).
  std::vector<int> layer_order;
  int microbatch_size = 1;          // samples per micro-batch per replica of the input stage
  int microbatches_per_update = 1;  // m: micro-batches coalesced into one weight update
  bool recompute = false;
  bool vertical_sync = false;
  // The planner's prediction (0 when not predicted).
  double predicted_samples_per_s = 0;
  double predicted_time_per_sample_s = 0;
  std::vector<double> memory_bytes_per_device;
  // Planner-specific fields (NOAM; data_parallel, pipeline_depth; the compat optimizer's
  // outputs; the cost breakdown).
  nlohmann::json details = nlohmann::json::object();

  int StageCount() const { return static_cast<int>(stages.size()); }
  // Written by hand: the scenario's training settings give its micro-batches.
  bool IsHandWritten() const { return planner == "manual"; }
  int WorkerCount() const;
  // The workload layer at position p of the plan's order.
  int LayerAt(int position) const {
    return layer_order.empty() ? position : layer_order[position];
  }
};

nlohmann::json PlanToJson(const Plan& plan);
// Throws InputError naming `file` and the JSON path. Checks the plan's own consistency (stages
// contiguous from layer 0, replicas >= 1, device lists of the right length); checks against a
// workload and a cluster are ValidatePlan's.
Plan PlanFromJson(const nlohmann::json& doc, const std::string& file,
                  const std::string& path = "");
Plan LoadPlanFile(const std::string& path);

// Checks a plan against a workload (layer count; layer_order a permutation in which inputs come
// first) and a cluster's device count; throws InputError
// naming `file` ("stages[2].last_layer: expected <= 15 (the workload has 16 layers), got 20").
// `path` is the plan's JSON path inside `file` ("plan" in a scenario, "" for a plan file).
// Under interleaving a plan lists every model chunk as a stage (chunk c of worker position s is
// stage c * P + s); with `chunks` > 1 only the first StageCount() / chunks stages hold workers
// and devices.
void ValidatePlan(const Plan& plan, const Workload& workload, int device_count,
                  const std::string& file, const std::string& path = "", int chunks = 1);

}  // namespace pipetwin
