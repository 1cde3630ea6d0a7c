// Subcommands whose back end is still to be built. Each already has its final help text; run
// without --help it says plainly that it is not built yet and exits 2.
#include "partition/cli/options.h"

namespace pipetwin::cli {

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
