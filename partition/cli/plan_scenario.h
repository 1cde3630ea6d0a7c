// `pipetwin plan [SCENARIO]`: any planner on a scenario's workload and cluster.
#pragma once

#include <ostream>

#include "partition/cli/parse.h"
#include "partition/model/plan.h"

namespace pipetwin::cli {

// A plan's stages as a table (layers, replicas, devices, compute and communication ms, memory
// GB), the columns of layers and devices `layers_width` and `devices_width` wide.
void WriteStageTable(std::ostream& out, const Plan& plan, int layers_width, int devices_width);

// Reads "scenario" (optional: the embedded default), "planner", "output" and "json" from `vm`.
int RunPlanOnScenario(const po::variables_map& vm);

}  // namespace pipetwin::cli
