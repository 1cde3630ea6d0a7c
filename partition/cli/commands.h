// The subcommands of `pipetwin`. Each takes the words after its name and returns the process's
// exit status; bad input is thrown as InputError and turned into one line and exit 2 by main.
#pragma once

#include <string>
#include <vector>

namespace pipetwin::cli {

using Args = std::vector<std::string>;

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const Args& args);
};

// All subcommands, in the order `pipetwin --help` lists them.
const std::vector<Command>& Commands();

int RunWorkloadCommand(const Args& args);
int RunScheduleCommand(const Args& args);
int RunPlanCommand(const Args& args);
int RunSimulateCommand(const Args& args);
int RunSweepCommand(const Args& args);
int RunRunCommand(const Args& args);
int RunProfileCommand(const Args& args);
int RunCalibrateCommand(const Args& args);
int RunCompareCommand(const Args& args);

}  // namespace pipetwin::cli
