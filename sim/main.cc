// pipetwin-sim: the SimGrid back end as a program. `pipetwin simulate ...` and `pipetwin sweep
// ...` exec it (the front end links no SimGrid); it can also be run directly:
//   pipetwin-sim simulate scenarios/sim-gpt3-1024.json --bench
#include "partition/cli/run_main.h"
#include "sim/commands.h"

int main(int argc, char** argv) {
  using namespace pipetwin;
  const cli::Program program{
      "pipetwin-sim",
      "The SimGrid back end of pipetwin: `pipetwin simulate` and `pipetwin sweep` run here.",
      {{"simulate", "predict throughput, memory and staleness with SimGrid",
        sim::RunSimulateCommand},
       {"sweep", "simulate the cartesian product of scenario variations", sim::RunSweepCommand}}};
  return cli::RunMain(program, argc, argv);
}
