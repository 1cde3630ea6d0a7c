#include "partition/cli/commands.h"

namespace pipetwin::cli {

const std::vector<Command>& Commands() {
  static const std::vector<Command> commands = {
      {"workload", "show or generate a workload (layer graph with times and sizes)",
       RunWorkloadCommand},
      {"schedule", "per-worker op lists of a pipeline schedule; check, export, draw",
       RunScheduleCommand},
      {"plan", "partition a workload over a cluster (PipeDream, 2BW, baselines)", RunPlanCommand},
      {"simulate", "predict throughput, memory and staleness with SimGrid", RunSimulateCommand},
      {"sweep", "simulate the cartesian product of scenario variations", RunSweepCommand},
      {"run", "train the plan for real with LibTorch and measure it", RunRunCommand},
      {"profile", "measure a workload's per-layer times and sizes on this machine",
       RunProfileCommand},
      {"calibrate", "measure this machine (cores, loopback, Gloo) as a cluster file",
       RunCalibrateCommand},
      {"compare", "predicted against measured for one scenario", RunCompareCommand},
      {"from-megatron", "the scenario of a Megatron-LM launch line (its arguments)",
       RunFromMegatronCommand},
  };
  return commands;
}

}  // namespace pipetwin::cli
