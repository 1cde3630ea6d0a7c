// Settings of PipeDream's partitioner, shared by its dynamic program and its front end.
//
// The inputs mirror the public optimizer's (optimizer/optimizer_graph_hierarchical.py in
// msr-fiddle/pipedream): machines and bandwidth per topology level (lowest level first), memory
// per machine, and its switches. The cost model picks between the SOSP'19 paper's formulas and
// the public code's.
//
//   PipeDreamOptions o;
//   o.levels = {{4, 1.25e10}, {4, 1.25e9}};   // 4 servers of 4 GPUs
//   o.cost_model = PipeDreamCostModel::kCompat;
//   o.activation_compression_ratio = 1;
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace pipetwin {

enum class PipeDreamCostModel {
  // The paper (Narayanan et al., "PipeDream: Generalized Pipeline Parallelism for DNN Training",
  // SOSP'19, section 3.1): a stage overlaps compute with weight synchronisation, so it costs
  // max(compute, sync) / replicas; every cut between stages costs 2 a / B (activations forward,
  // gradients backward).
  kPaper,
  // Exactly what the public optimizer computes, quirks included (shared/PIPEDREAM_PLANNER.md):
  // compute plus sync, no cut cost without a compression ratio, `within` on the first stage
  // only, its memory rule.
  kCompat,
};

struct PipeDreamLevel {
  int machines = 1;                   // children per unit at this level (GPUs per server, ...)
  double bandwidth_bytes_per_s = 0;   // per link at this level
};

struct PipeDreamOptions {
  PipeDreamCostModel cost_model = PipeDreamCostModel::kPaper;
  std::vector<PipeDreamLevel> levels;                // lowest level first
  std::optional<double> activation_compression_ratio;  // absent: the optimizer's default
  double memory_bytes_per_device = 16e9;             // the optimizer's default (-s)
  bool use_memory_constraint = false;
  bool straight_pipeline = false;                    // one replica per stage
  bool use_fewer_machines = false;                   // a level may leave machines idle
  int batch_size = 1;                                // samples per minibatch of the profile
  // Loading one minibatch (cost/data_loading.h) and how it meets the input stage's compute;
  // the paper's model charges it to every configuration's first stage, the compat one leaves it
  // out as the public optimizer does.
  double data_loading_s = 0;
  bool data_loading_serial = false;
};

// "pipedream" / "pipedream-compat".
std::string PipeDreamPlannerName(PipeDreamCostModel model);

// Throws InputError naming the setting: no level, a level with fewer than 1 machine, a bandwidth
// not > 0 (or not finite), a compression ratio or memory not > 0, a batch size below 1.
void ValidatePipeDreamOptions(const PipeDreamOptions& options);

}  // namespace pipetwin
