// `pipetwin simulate` (run as pipetwin-sim simulate): one scenario, one plan, one simulation.
#include <sys/resource.h>

#include <cstdio>
#include <iostream>

#include "partition/cli/options.h"
#include "partition/util/error.h"
#include "partition/util/host.h"
#include "partition/util/json_reader.h"
#include "partition/report/report.h"
#include "sim/commands.h"
#include "sim/report_builder.h"
#include "sim/actors.h"
#include "sim/trace.h"
#include "workloads/scenario/plan_for_scenario.h"
#include "partition/report/csv.h"
#include "partition/report/text.h"
#include "partition/timeline/chrome_trace.h"
#include "partition/timeline/svg.h"

namespace pipetwin::sim {

namespace {

namespace po = boost::program_options;

const char kUsage[] = "[SCENARIO] [--plan PLAN] [--json|--csv] [--trace F] [--svg F] [--strict]";

const char kDescription[] =
    "Predict throughput, per-device memory and weight staleness with a SimGrid model of GPUs,\n"
    "links and NICs: every worker runs its op list of the plan's schedule; transfers and\n"
    "all-reduces share the cluster's links. Without SCENARIO, the embedded default scenario.\n"
    "A plan that needs more memory than a device has is simulated anyway, with a warning\n"
    "(--strict: exit 2).";

po::options_description Options() {
  po::options_description desc("options");
  desc.add_options()
      ("plan", po::value<std::string>(), "plan file (else the scenario's plan or planner)")
      ("json", "report as JSON on stdout")
      ("csv", "report as one CSV row (with its header) on stdout")
      ("trace", po::value<std::string>(), "write a Chrome trace (Perfetto) to FILE")
      ("svg", po::value<std::string>(), "write the simulated timeline to FILE")
      ("strict", "fail (exit 2) when a device's memory is exceeded")
      ("allreduce-buckets", po::value<int>(),
       "gradient all-reduce buckets, launched during the backward before the all-reduce "
       "(overrides the scenario's training.allreduce_buckets; 1: after that backward)")
      ("warmup", po::value<int>()->default_value(1),
       "iterations left out of the steady state (as `pipetwin run --warmup`)")
      ("no-timeline", "leave the per-device memory timelines out of --json")
      ("bench", "print the simulator's speed (activities/s, wall time, peak RSS) on stderr, "
                "beside SimGrid alone on the same platform");
  return desc;
}

long long ListedActivities(const SimulationSetup& setup) {
  long long n = 0;
  for (const WorkerProgram& w : setup.schedule.workers)
    for (const Op& op : w.ops)
      n += IsComputeOp(op.kind) || op.kind == OpKind::kSendActivation ||
           op.kind == OpKind::kSendGradient;
  return n;
}

}  // namespace

int RunSimulateCommand(const std::vector<std::string>& args) {
  po::positional_options_description positional;
  positional.add("scenario", -1);
  po::options_description parsed = Options();
  parsed.add_options()("scenario", po::value<std::vector<std::string>>(), "scenario file");
  const po::variables_map vm = cli::ParseCommandLine("simulate", parsed, positional, args);
  if (vm.count("help")) {
    cli::PrintUsage(std::cout, "simulate", kUsage, kDescription, Options());
    return 0;
  }
  std::vector<std::string> scenarios;
  if (vm.count("scenario")) scenarios = vm["scenario"].as<std::vector<std::string>>();
  if (scenarios.size() > 1)
    throw InputError("pipetwin simulate: expected one scenario, got " +
                     std::to_string(scenarios.size()));
  if (vm.count("json") && vm.count("csv"))
    throw InputError("pipetwin simulate: --json and --csv exclude each other");
  SimOptions options;
  options.record_memory_timeline = !vm.count("no-timeline");
  options.warmup_iterations = vm["warmup"].as<int>();
  if (options.warmup_iterations < 0)
    throw InputError("pipetwin simulate: --warmup must be >= 0, got " +
                     std::to_string(options.warmup_iterations));

  Scenario scenario = scenarios.empty() ? DefaultScenario() : LoadScenarioFile(scenarios[0]);
  if (vm.count("allreduce-buckets")) {
    const int buckets = vm["allreduce-buckets"].as<int>();
    if (buckets < 1)
      throw InputError("pipetwin simulate: --allreduce-buckets must be >= 1, got " +
                       std::to_string(buckets));
    scenario.training.allreduce_buckets = buckets;
  }
  const std::string plan_file = vm.count("plan") ? vm["plan"].as<std::string>() : "";
  const Plan plan = plan_file.empty() ? PlanForScenario(scenario) : LoadPlanFile(plan_file);
  const SimulationSetup setup = PrepareSimulation(scenario, plan, options, plan_file);

  const bool bench = vm.count("bench") > 0;
  const double bare_rate =
      bench ? BareSimGridActivitiesPerSecond(setup, ListedActivities(setup)) : 0;
  const SimulationRecord record = RunSimulation(setup);
  const Report report = BuildReport(setup, record);
  for (const std::string& w : report.warnings) {
    if (vm.count("strict") && report.over_capacity)
      throw InputError("pipetwin simulate: " + w + " (--strict)");
    std::cerr << "pipetwin simulate: warning: " << w << "\n";
  }
  if (vm.count("trace"))
    WriteTextFileAtomically(vm["trace"].as<std::string>(), ChromeTrace(setup, record).dump());
  if (vm.count("svg"))
    WriteTextFileAtomically(vm["svg"].as<std::string>(), TimelineSvg(setup, record));
  if (vm.count("json")) {
    std::cout << ReportToJson(report, options.record_memory_timeline).dump(1) << "\n";
  } else if (vm.count("csv")) {
    std::cout << ReportCsvHeader({}) << ReportCsvRow(report, {});
  } else {
    std::cout << ReportToText(report);
  }
  if (bench) {
    const double rate = record.run_wall_s > 0 ? record.activities / record.run_wall_s : 0;
    char line[512];
    std::snprintf(line, sizeof line,
                  "bench: %d workers, %lld activities in %.3f s (%.0f activities/s; platform "
                  "and actors %.3f s); SimGrid alone on this platform: %.0f activities/s; "
                  "peak RSS %.1f MB\n",
                  setup.schedule.WorkerCount(), record.activities, record.run_wall_s, rate,
                  record.platform_wall_s, bare_rate, PeakRssBytes() / 1e6);
    std::cerr << line;
  }
  return 0;
}

}  // namespace pipetwin::sim
