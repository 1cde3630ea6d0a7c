// `pipetwin plan [SCENARIO]`: any planner on a scenario's workload and cluster.
#pragma once

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "partition/cli/parse.h"
#include "partition/model/plan.h"

namespace pipetwin::cli {

// A plan's stages as a table (layers, replicas, devices, compute and communication ms, memory
// GiB), the columns of layers and devices `layers_width` and `devices_width` wide; with the
// device's `capacity_bytes` (> 0) and a plan that estimates its memory, whether each stage fits
// it and by how much it is over.
void WriteStageTable(std::ostream& out, const Plan& plan, int layers_width, int devices_width,
                     double capacity_bytes = 0);

// The fit verdict of a plan on devices of `capacity_bytes`: the fullest stage, its bytes, and
// how far over the capacity it is (0 when every stage fits).
struct PlanFit {
  int fullest_stage = -1;
  double peak_bytes = 0;
  double capacity_bytes = 0;
  double over_bytes = 0;
  bool Fits() const { return over_bytes <= 0; }
};
PlanFit FitOf(const Plan& plan, double capacity_bytes);
// "every stage fits its device's 80.0 GiB (the fullest, stage 0, needs 46.1 GiB)", or
// "stage 0 needs 363.6 GiB per device, over its 80.0 GiB by 283.6 GiB (4.55x)".
std::string DescribeFit(const PlanFit& fit);

// The verdict in a plan's JSON (docs/output-schema.md, plan --json): capacity_bytes_per_device,
// fits and over_capacity_bytes, and each stage's fits and over_capacity_bytes when the plan
// estimates its memory.
void AddFitVerdicts(nlohmann::json& plan_json, const Plan& plan, const PlanFit& fit);

// Reads "scenario" (optional: the embedded default), "planner", "output" and "json" from `vm`.
int RunPlanOnScenario(const po::variables_map& vm);

}  // namespace pipetwin::cli
