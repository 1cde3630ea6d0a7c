// `pipetwin sweep` (run as pipetwin-sim sweep): simulate the cartesian product of variations of
// a scenario, in parallel processes, one CSV row per point.
#include <unistd.h>

#include <chrono>
#include <cstdio>
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

// A bar redrawn in place on a terminal, a line per finished point elsewhere (logs, a Slurm
// job's output); both with the time so far and an estimate of the rest: the mean time per
// point so far times the points left (points run `--jobs` at a time, so it is wall time).
void ShowProgress(size_t done, size_t total) {
  static const bool terminal = isatty(STDERR_FILENO);
  static const auto start = std::chrono::steady_clock::now();
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char times[96] = "";
  if (done > 0 && done < total)
    std::snprintf(times, sizeof times, ", %.1f s so far, about %.1f s left", elapsed,
                  elapsed / done * (total - done));
  else if (done == total)
    std::snprintf(times, sizeof times, " in %.1f s", elapsed);
  if (!terminal) {
    if (done > 0)
      std::cerr << "sweep: " << done << "/" << total << " points" << times << "\n" << std::flush;
    return;
  }
  constexpr int kWidth = 30;
  const int filled = total ? static_cast<int>(kWidth * done / total) : kWidth;
  std::cerr << "\rsweep [" << std::string(filled, '#') << std::string(kWidth - filled, '.')
            << "] " << done << "/" << total << " points" << times << "\033[K"
            << (done == total ? "\n" : "") << std::flush;
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
  if (!o.merge.empty()) {
    std::vector<std::string> texts;
    for (const std::string& f : o.merge) texts.push_back(ReadTextFile(f));
    std::string header;
    std::string csv;
    for (const std::string& row : MergeShardCsvs(texts, o.merge, &header)) csv += row + "\n";
    csv = header + "\n" + csv;
    if (!o.csv_file.empty()) WriteTextFileAtomically(o.csv_file, csv);
    else std::cout << csv;
    return 0;
  }
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
      csv += ReportCsvRow(r.report, columns, labels);
      entry["report"] = ReportToJson(r.report, false);
      json.push_back(entry);
      continue;
    }
    csv += ReportCsvErrorRow(columns, labels, r.error);
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
