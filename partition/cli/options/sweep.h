// The options of `pipetwin sweep`, defined once for the front end and for pipetwin-sim.
#pragma once

#include <string>
#include <vector>

#include "partition/cli/parse.h"
#include "partition/util/error.h"
#include "partition/util/files.h"

namespace pipetwin::cli {

inline const char* SweepUsage() {
  return "SCENARIO --vary PATH=V1,V2,... [--vary ...] [--csv F] [--json] [--jobs N]";
}
inline const char* SweepDescription() {
  return "Simulate the cartesian product of scenario variations, one process per point, as many at\n"
         "a time as there are cores; a scenario with a planner is replanned at every point. PATH is\n"
         "a JSON path into the scenario file, e.g.\n"
         "  --vary cluster.levels[1].bandwidth_gbps=1,10,25,100 --vary schedule=gpipe,flush,2bw\n"
         "  --vary training.allreduce_buckets=1,4\n"
         "One CSV row per point (on stdout, or in --csv FILE); a point that fails keeps its row with\n"
         "the error in the last column.";
}

inline po::options_description SweepOptionsDescription() {
  po::options_description desc("options");
  desc.add_options()
      ("vary", po::value<std::vector<std::string>>(), "PATH=V1,V2,... (repeatable)")
      ("csv", po::value<std::string>(), "write the rows to FILE instead of stdout")
      ("force", "replace existing output files (never one of the command's inputs)")
      ("json", "results as JSON on stdout (the reports without memory timelines)")
      ("jobs,j", po::value<int>()->default_value(0), "points at a time (0: one per core)")
      ("quiet,q", "no progress bar");
  return desc;
}

inline po::variables_map ParseSweepWords(const Args& args) {
  po::positional_options_description positional;
  positional.add("scenario", -1);
  po::options_description parsed = SweepOptionsDescription();
  parsed.add_options()("scenario", po::value<std::vector<std::string>>(), "scenario file");
  return ParseCommandLine("sweep", parsed, positional, args);
}

struct SweepOptions {
  std::string scenario;
  std::vector<std::string> variations;  // PATH=V1,V2,... as given
  std::string csv_file;                 // empty: stdout
  bool json = false, quiet = false;
  int jobs = 0;                         // 0: one per core
};

inline SweepOptions ReadSweepOptions(const po::variables_map& vm) {
  SweepOptions o;
  if (!vm.count("scenario") || vm["scenario"].as<std::vector<std::string>>().size() != 1)
    throw InputError("pipetwin sweep: expected one scenario file");
  o.scenario = vm["scenario"].as<std::vector<std::string>>()[0];
  if (!vm.count("vary")) throw InputError("pipetwin sweep: --vary PATH=V1,V2,... is required");
  o.variations = vm["vary"].as<std::vector<std::string>>();
  if (vm.count("csv")) o.csv_file = vm["csv"].as<std::string>();
  if (!o.csv_file.empty()) CheckOutputPath(o.csv_file, "--csv", vm.count("force") > 0, {o.scenario});
  o.json = vm.count("json") > 0;
  o.quiet = vm.count("quiet") > 0;
  o.jobs = vm["jobs"].as<int>();
  if (o.jobs < 0 || o.jobs > 4096)
    throw InputError("pipetwin sweep: --jobs must be from 0 (one per core) to 4096, got " +
                     std::to_string(o.jobs));
  return o;
}

}  // namespace pipetwin::cli
