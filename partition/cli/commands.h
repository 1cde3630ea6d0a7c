// The commands of the front end `pipetwin`. Each takes the words after its name and returns the
// process's exit status; what it throws, RunMain turns into one line and an exit status
// (run_main.h).
#pragma once

#include <vector>

#include "partition/cli/run_main.h"

namespace pipetwin::cli {

// All commands, in the order `pipetwin --help` lists them.
const std::vector<Command>& Commands();

int RunWorkloadCommand(const Args& args);
int RunScheduleCommand(const Args& args);
int RunPlanCommand(const Args& args);
int RunSimulateCommand(const Args& args);  // handover_commands.cc: to pipetwin-sim
int RunSweepCommand(const Args& args);
int RunRunCommand(const Args& args);       // handover_commands.cc: to pipetwin-exec
int RunProfileCommand(const Args& args);
int RunCalibrateCommand(const Args& args);
int RunCompareCommand(const Args& args);   // compare/
int RunFromMegatronCommand(const Args& args);

}  // namespace pipetwin::cli
