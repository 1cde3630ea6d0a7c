// pipetwin: the front end. Plans, schedules and workloads here; simulations, runs, profiles and
// calibrations handed to the back ends beside it (handover_commands.cc).
#include "partition/cli/commands.h"

int main(int argc, char** argv) {
  const pipetwin::cli::Program program{
      "pipetwin",
      "Predict (SimGrid) and measure (LibTorch) pipeline-parallel training of deep neural\n"
      "networks from one plan and one schedule.",
      pipetwin::cli::Commands()};
  return pipetwin::cli::RunMain(program, argc, argv);
}
