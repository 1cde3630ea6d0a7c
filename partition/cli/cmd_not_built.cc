// Subcommands whose back end is still to be built. Each already has its final help text; run
// without --help it says plainly that it is not built yet and exits 2.
#include "partition/cli/options.h"

namespace pipetwin::cli {

int RunRunCommand(const Args& args) {
  po::options_description desc("options");
  desc.add_options()
      ("plan", po::value<std::string>(), "plan file")
      ("json", "report as JSON on stdout")
      ("trace", po::value<std::string>(), "write a Chrome trace of the real run to FILE");
  return NotBuiltYet("run", "SCENARIO [--plan PLAN] [--json] [--trace F]",
                     "Train the plan for real with LibTorch (one process per worker, c10d) and "
                     "measure the simulator's quantities.",
                     desc, args);
}

int RunProfileCommand(const Args& args) {
  po::options_description desc("options");
  desc.add_options()
      ("batch", po::value<int>(), "batch size to profile at")
      ("output", po::value<std::string>(), "workload file to write")
      ("json", "print the measured workload as JSON");
  return NotBuiltYet("profile", "WORKLOAD [--batch B] [--output FILE]",
                     "Measure each layer's forward and backward time, activation and parameter "
                     "bytes on this machine.",
                     desc, args);
}

int RunCompareCommand(const Args& args) {
  po::options_description desc("options");
  desc.add_options()
      ("json", "predicted, measured and relative error as JSON")
      ("trace", po::value<std::string>(), "both timelines in one Chrome trace")
      ("svg", po::value<std::string>(), "both timelines, one above the other");
  return NotBuiltYet("compare", "SCENARIO [--json] [--trace F] [--svg F]",
                     "Predicted against measured on this machine, with relative errors.", desc,
                     args);
}

}  // namespace pipetwin::cli
