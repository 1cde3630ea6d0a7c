// `pipetwin sweep` (run as pipetwin-sim sweep): simulate the cartesian product of variations of
// a scenario, in parallel processes, one CSV row per point.
#include <unistd.h>

#include <iostream>

#include "partition/cli/options.h"
#include "partition/util/error.h"
#include "partition/util/json_reader.h"
#include "partition/report/report.h"
#include "sim/commands.h"
#include "sim/sweep.h"
#include "partition/report/csv.h"

namespace pipetwin::sim {

namespace {

namespace po = boost::program_options;

const char kUsage[] = "SCENARIO --vary PATH=V1,V2,... [--vary ...] [--csv F] [--json] [--jobs N]";

const char kDescription[] =
    "Simulate the cartesian product of scenario variations, one process per point, as many at\n"
    "a time as there are cores; a scenario with a planner is replanned at every point. PATH is\n"
    "a JSON path into the scenario file, e.g.\n"
    "  --vary cluster.levels[1].bandwidth_gbps=1,10,25,100 --vary schedule=gpipe,flush,2bw\n"
    "  --vary training.allreduce_buckets=1,4\n"
    "One CSV row per point (on stdout, or in --csv FILE); a point that fails keeps its row with\n"
    "the error in the last column.";

po::options_description Options() {
  po::options_description desc("options");
  desc.add_options()
      ("vary", po::value<std::vector<std::string>>(), "PATH=V1,V2,... (repeatable)")
      ("csv", po::value<std::string>(), "write the rows to FILE instead of stdout")
      ("json", "results as JSON on stdout (the reports without memory timelines)")
      ("jobs,j", po::value<int>()->default_value(0), "points at a time (0: one per core)")
      ("quiet,q", "no progress bar");
  return desc;
}

// A bar redrawn in place on a terminal; elsewhere (logs, pipes) only the final state.
void ShowProgress(size_t done, size_t total) {
  static const bool terminal = isatty(STDERR_FILENO);
  if (!terminal && done < total) return;
  constexpr int kWidth = 30;
  const int filled = total ? static_cast<int>(kWidth * done / total) : kWidth;
  std::cerr << "\rsweep [" << std::string(filled, '#') << std::string(kWidth - filled, '.')
            << "] " << done << "/" << total << " points" << (done == total ? "\n" : "")
            << std::flush;
}

}  // namespace

int RunSweepCommand(const std::vector<std::string>& args) {
  po::positional_options_description positional;
  positional.add("scenario", -1);
  po::options_description parsed = Options();
  parsed.add_options()("scenario", po::value<std::vector<std::string>>(), "scenario file");
  const po::variables_map vm = cli::ParseCommandLine("sweep", parsed, positional, args);
  if (vm.count("help")) {
    cli::PrintUsage(std::cout, "sweep", kUsage, kDescription, Options());
    return 0;
  }
  if (!vm.count("scenario") || vm["scenario"].as<std::vector<std::string>>().size() != 1)
    throw InputError("pipetwin sweep: expected one scenario file");
  if (!vm.count("vary")) throw InputError("pipetwin sweep: --vary PATH=V1,V2,... is required");
  std::vector<Variation> variations;
  std::vector<std::string> columns;
  for (const std::string& v : vm["vary"].as<std::vector<std::string>>()) {
    variations.push_back(ParseVariation(v));
    columns.push_back(variations.back().path);
  }
  SimOptions options;
  options.record_memory_timeline = false;
  const Scenario scenario = LoadScenarioFile(vm["scenario"].as<std::vector<std::string>>()[0]);

  const bool quiet = vm.count("quiet") > 0;
  const std::vector<SweepResult> results =
      RunSweep(scenario, variations, options, vm["jobs"].as<int>(),
               quiet ? std::function<void(size_t, size_t)>() : ShowProgress);

  size_t failed = 0;
  for (const SweepResult& r : results) failed += !r.ok;
  if (failed == results.size())
    throw InputError(results.size() == 1 ? results.front().error
                                         : "pipetwin sweep: every point failed, the first with: " +
                                               results.front().error);
  std::string csv = ReportCsvHeader(columns);
  nlohmann::json json = nlohmann::json::array();
  for (const SweepResult& r : results) {
    nlohmann::json point = nlohmann::json::object();
    for (size_t v = 0; v < variations.size(); ++v) point[variations[v].path] = r.labels[v];
    if (r.ok) {
      csv += ReportCsvRow(r.report, r.labels);
      json.push_back({{"point", point}, {"report", ReportToJson(r.report, false)}});
      continue;
    }
    csv += ReportCsvErrorRow(r.labels, r.error);
    json.push_back({{"point", point}, {"error", r.error}});
    std::string where;
    for (size_t v = 0; v < variations.size(); ++v)
      where += (v ? " " : "") + variations[v].path + "=" + r.labels[v];
    std::cerr << "pipetwin sweep: " << where << ": " << r.error << "\n";
  }
  if (vm.count("csv")) WriteTextFileAtomically(vm["csv"].as<std::string>(), csv);
  if (vm.count("json")) std::cout << json.dump(1) << "\n";
  else if (!vm.count("csv")) std::cout << csv;
  return 0;
}

}  // namespace pipetwin::sim
