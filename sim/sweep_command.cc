// `pipetwin sweep` (run as pipetwin-sim sweep): simulate the cartesian product of variations of
// a scenario, in parallel processes, one CSV row per point.
#include <unistd.h>

#include <iostream>

#include "partition/cli/options/sweep.h"
#include "partition/util/error.h"
#include "partition/util/json_reader.h"
#include "partition/report/report.h"
#include "partition/util/json_writer.h"
#include "sim/commands.h"
#include "sim/sweep.h"
#include "partition/report/csv.h"

namespace pipetwin::sim {

namespace {

namespace po = boost::program_options;

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
  const po::variables_map vm = cli::ParseSweepWords(args);
  if (vm.count("help")) {
    cli::PrintUsage(std::cout, "sweep", cli::SweepUsage(), cli::SweepDescription(),
                    cli::SweepOptionsDescription());
    return 0;
  }
  const cli::SweepOptions o = cli::ReadSweepOptions(vm);
  std::vector<Variation> variations;
  std::vector<std::string> columns;
  // A shard's rows lead with their point's index: the shards' CSVs merge by sorting on it.
  const bool sharded = o.shards > 0;
  if (sharded) columns.push_back("point");
  for (const std::string& v : o.variations) {
    variations.push_back(ParseVariation(v));
    columns.push_back(variations.back().path);
  }
  SimOptions options;
  options.record_memory_timeline = false;
  const Scenario scenario = LoadScenarioFile(o.scenario);

  const bool quiet = o.quiet;
  const std::vector<SweepResult> results =
      RunSweep(scenario, variations, options, o.jobs,
               quiet ? std::function<void(size_t, size_t)>() : ShowProgress, o.shard, o.shards);

  size_t failed = 0;
  for (const SweepResult& r : results) failed += !r.ok;
  if (!results.empty() && failed == results.size())
    throw InputError(results.size() == 1 ? results.front().error
                                         : "pipetwin sweep: every point failed, the first with: " +
                                               results.front().error);
  std::string csv = ReportCsvHeader(columns);
  nlohmann::json json = nlohmann::json::array();
  for (const SweepResult& r : results) {
    nlohmann::json point = nlohmann::json::object();
    for (size_t v = 0; v < variations.size(); ++v) point[variations[v].path] = r.labels[v];
    std::vector<std::string> labels = r.labels;
    if (sharded) labels.insert(labels.begin(), std::to_string(r.point));
    nlohmann::json entry = {{"point", point}};
    if (sharded) entry["index"] = r.point;
    if (r.ok) {
      csv += ReportCsvRow(r.report, labels);
      entry["report"] = ReportToJson(r.report, false);
      json.push_back(entry);
      continue;
    }
    csv += ReportCsvErrorRow(labels, r.error);
    entry["error"] = r.error;
    json.push_back(entry);
    std::string where;
    for (size_t v = 0; v < variations.size(); ++v)
      where += (v ? " " : "") + variations[v].path + "=" + r.labels[v];
    std::cerr << "pipetwin sweep: " << where << ": " << r.error << "\n";
  }
  if (!o.csv_file.empty()) WriteTextFileAtomically(o.csv_file, csv);
  if (o.json) std::cout << JsonText(json, 1) << "\n";
  else if (o.csv_file.empty()) std::cout << csv;
  return 0;
}

}  // namespace pipetwin::sim
