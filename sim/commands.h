// The commands of pipetwin-sim, the program `pipetwin simulate` and `pipetwin sweep` hand over
// to (the front end links no SimGrid). Each takes the words after the command's name and returns
// the exit status; bad input is thrown as InputError (one line, exit 2, printed by main).
//
//   pipetwin-sim simulate [SCENARIO] [--plan PLAN] [--json|--csv] [--trace F] [--svg F]
//                         [--strict] [--allreduce-buckets N] [--no-weight-stashing] [--bench]
//   pipetwin-sim sweep SCENARIO --vary PATH=V1,V2,... [--vary ...] [--csv F] [--json] [--jobs N]
#pragma once

#include <string>
#include <vector>

#include "sim/setup.h"

namespace pipetwin::sim {

int RunSimulateCommand(const std::vector<std::string>& args);
int RunSweepCommand(const std::vector<std::string>& args);

// --bench: SimGrid alone on the same platform, `activities` executions and messages spread over
// `workers` actors, in a child process; returns activities per second.
// `threads` > 1: with SimGrid's parallel contexts (contexts/nthreads).
double BareSimGridActivitiesPerSecond(const SimulationSetup& setup, long long activities,
                                      int threads = 1);

}  // namespace pipetwin::sim
