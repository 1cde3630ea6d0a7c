// `pipetwin plan [SCENARIO]`: any planner on a scenario's workload and cluster.
#pragma once

#include "partition/cli/parse.h"

namespace pipetwin::cli {

// Reads "scenario" (optional: the embedded default), "planner", "output" and "json" from `vm`.
int RunPlanOnScenario(const po::variables_map& vm);

}  // namespace pipetwin::cli
