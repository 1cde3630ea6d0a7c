#include "partition/cli/options.h"

namespace pipetwin::cli {

int RunWorkloadCommand(const Args& args) {
  po::options_description desc("options");
  return NotBuiltYet("workload", "show FILE | gpt|bert|vgg16|resnet50 [options]", "tbd", desc, args);
}

}  // namespace pipetwin::cli
