// `pipetwin simulate` and `sweep` (handed to pipetwin-sim, the SimGrid back end), `run`,
// `profile` and `calibrate` (handed to pipetwin-exec, the LibTorch back end): the front end
// links neither, so it starts in milliseconds. Help and bad words are answered here, before
// anything starts (the option tables are defined once, in options/); the back end acts.
#include <iostream>

#include "partition/cli/commands.h"
#include "partition/cli/handover.h"
#include "partition/cli/options/calibrate.h"
#include "partition/cli/options/profile.h"
#include "partition/cli/options/run.h"
#include "partition/cli/options/simulate.h"
#include "partition/cli/options/sweep.h"

namespace pipetwin::cli {

int RunSimulateCommand(const Args& args) {
  const auto vm = ParseSimulateWords(args);
  if (vm.count("help")) {
    PrintUsage(std::cout, "simulate", SimulateUsage(), SimulateDescription(),
               SimulateOptionsDescription());
    return 0;
  }
  ReadSimulateOptions(vm);  // bad values fail here, before SimGrid loads
  HandOver("pipetwin-sim", "simulate", args);
}

int RunSweepCommand(const Args& args) {
  const auto vm = ParseSweepWords(args);
  if (vm.count("help")) {
    PrintUsage(std::cout, "sweep", SweepUsage(), SweepDescription(), SweepOptionsDescription());
    return 0;
  }
  ReadSweepOptions(vm);
  HandOver("pipetwin-sim", "sweep", args);
}

int RunRunCommand(const Args& args) {
  const auto vm = ParseRunWords(args);
  if (vm.count("help")) {
    PrintUsage(std::cout, "run", RunUsage(), RunDescription(), RunOptionsDescription());
    return 0;
  }
  ReadRunOptions(vm);  // bad values fail here, before LibTorch loads
  HandOver("pipetwin-exec", "run", args);
}

int RunProfileCommand(const Args& args) {
  const auto vm = ParseProfileWords(args);
  if (vm.count("help")) {
    PrintUsage(std::cout, "profile", ProfileUsage(), ProfileDescription(),
               ProfileOptionsDescription());
    return 0;
  }
  ReadProfileOptions(vm);
  HandOver("pipetwin-exec", "profile", args);
}

int RunCalibrateCommand(const Args& args) {
  const auto vm = ParseCommandLine("calibrate", CalibrateOptionsDescription(), {}, args);
  if (vm.count("help")) {
    PrintUsage(std::cout, "calibrate", CalibrateUsage(), CalibrateDescription(),
               CalibrateOptionsDescription());
    return 0;
  }
  CheckCalibrationOutput(ReadCalibrateOptions(vm));
  HandOver("pipetwin-exec", "calibrate", args);
}

}  // namespace pipetwin::cli
