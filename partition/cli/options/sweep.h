// The options of `pipetwin sweep`, defined once for the front end and for pipetwin-sim.
#pragma once

#include <cstdlib>
#include <string>
#include <vector>

#include "partition/cli/parse.h"
#include "partition/util/error.h"
#include "partition/util/files.h"

namespace pipetwin::cli {

inline const char* SweepUsage() {
  return "SCENARIO --vary PATH=V1,V2,... [--vary ...] [--csv F] [--json] [--jobs N] [--shard I/N]\n"
         "       pipetwin sweep --merge SHARD.csv... [--csv F]";
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
      ("shard", po::value<std::string>(),
       "I/N: simulate only the points whose index is I modulo N (0 <= I < N), one of N "
       "machines' share, each row led by its point's index so the shards' CSVs merge by sorting "
       "(scripts/sweep-slurm.sh); slurm: I and N from a Slurm job array's "
       "SLURM_ARRAY_TASK_ID, _MIN and _COUNT")
      ("merge", po::value<std::vector<std::string>>()->multitoken(),
       "SHARD.csv ...: join the CSVs of a sweep's shards into the table the whole sweep writes "
       "(rows in point order, the point column taken off); checks that each point is in "
       "exactly one")
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
  int shard = 0, shards = 0;            // --shard I/N (shards 0: every point, no index column)
  std::vector<std::string> merge;       // --merge: the shards' CSVs (then nothing is simulated)
};

// "I/N", or "slurm" with the job array's variables from `env` (getenv by default).
inline void ParseShard(const std::string& text, SweepOptions& o,
                       const char* (*env)(const char*) = [](const char* n) -> const char* {
                         return std::getenv(n);
                       }) {
  auto number = [&](const std::string& word, const std::string& what) {
    size_t used = 0;
    int n = -1;
    try {
      n = std::stoi(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != word.size() || n < 0)
      throw InputError("pipetwin sweep: --shard expects I/N or slurm, with " + what +
                       " a whole number, got \"" + word + "\"");
    return n;
  };
  if (text == "slurm") {
    const char* id = env("SLURM_ARRAY_TASK_ID");
    const char* min = env("SLURM_ARRAY_TASK_MIN");
    const char* count = env("SLURM_ARRAY_TASK_COUNT");
    if (!id || !count)
      throw InputError("pipetwin sweep: --shard slurm runs inside a Slurm job array "
                       "(sbatch --array), but SLURM_ARRAY_TASK_ID or SLURM_ARRAY_TASK_COUNT is "
                       "not set");
    o.shard = number(id, "SLURM_ARRAY_TASK_ID") - (min ? number(min, "SLURM_ARRAY_TASK_MIN") : 0);
    o.shards = number(count, "SLURM_ARRAY_TASK_COUNT");
  } else {
    const size_t slash = text.find('/');
    if (slash == std::string::npos)
      throw InputError("pipetwin sweep: --shard expects I/N (this machine's share I of N) or "
                       "slurm, got \"" + text + "\"");
    o.shard = number(text.substr(0, slash), "I");
    o.shards = number(text.substr(slash + 1), "N");
  }
  if (o.shards < 1 || o.shard >= o.shards)
    throw InputError("pipetwin sweep: --shard I/N needs 0 <= I < N, got " +
                     std::to_string(o.shard) + "/" + std::to_string(o.shards));
}

inline SweepOptions ReadSweepOptions(const po::variables_map& vm) {
  SweepOptions o;
  if (vm.count("merge")) {
    o.merge = vm["merge"].as<std::vector<std::string>>();
    if (vm.count("scenario")) {
      const auto more = vm["scenario"].as<std::vector<std::string>>();
      o.merge.insert(o.merge.end(), more.begin(), more.end());
    }
    for (const char* other : {"vary", "shard", "json"})
      if (vm.count(other))
        throw InputError(std::string("pipetwin sweep: --merge joins shards' CSVs; --") + other +
                         " belongs to the sweep that wrote them");
    if (vm.count("csv")) o.csv_file = vm["csv"].as<std::string>();
    if (!o.csv_file.empty()) CheckOutputPath(o.csv_file, "--csv", vm.count("force") > 0, o.merge);
    return o;
  }
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
  if (vm.count("shard")) ParseShard(vm["shard"].as<std::string>(), o);
  if (o.jobs < 0 || o.jobs > 4096)
    throw InputError("pipetwin sweep: --jobs must be from 0 (one per core) to 4096, got " +
                     std::to_string(o.jobs));
  return o;
}

}  // namespace pipetwin::cli
