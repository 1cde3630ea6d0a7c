// `pipetwin simulate` (run as pipetwin-sim simulate): one scenario, one plan, one simulation.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <string>

#include <cstdio>
#include <iostream>

#include "partition/cli/options/simulate.h"
#include "partition/util/error.h"
#include "partition/util/host.h"
#include "partition/util/json_reader.h"
#include "partition/report/report.h"
#include "partition/util/json_writer.h"
#include "sim/commands.h"
#include "sim/report_builder.h"
#include "sim/actors.h"
#include "sim/trace.h"
#include "workloads/scenario/plan_for_scenario.h"
#include "workloads/scenario/schedule_for_scenario.h"
#include "partition/report/csv.h"
#include "partition/report/text.h"
#include "partition/timeline/chrome_trace.h"
#include "partition/timeline/svg.h"

namespace pipetwin::sim {

namespace {

namespace po = boost::program_options;

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
  const po::variables_map vm = cli::ParseSimulateWords(args);
  if (vm.count("help")) {
    cli::PrintUsage(std::cout, "simulate", cli::SimulateUsage(), cli::SimulateDescription(),
                    cli::SimulateOptionsDescription());
    return 0;
  }
  const cli::SimulateOptions o = cli::ReadSimulateOptions(vm);
  SimOptions options;
  options.record_memory_timeline = o.timeline;
  options.warmup_iterations = o.warmup_iterations;
  if (o.collective_steps) options.collectives = CollectiveModel::kSteps;
  options.symmetry = o.symmetry;

  Scenario scenario = o.scenario.empty() ? DefaultScenario() : LoadScenarioFile(o.scenario);
  if (o.allreduce_buckets > 0) scenario.training.allreduce_buckets = o.allreduce_buckets;
  const std::string& plan_file = o.plan_file;
  const Plan plan = plan_file.empty() ? PlanForScenario(scenario) : LoadPlanFile(plan_file);
  if (!o.weight_stashing) TurnOffWeightStashing(scenario, plan, "simulate");
  const SimulationSetup setup = PrepareSimulation(scenario, plan, options, plan_file);

  const bool bench = o.bench;
  const double bare_rate =
      bench ? BareSimGridActivitiesPerSecond(setup, ListedActivities(setup)) : 0;
  // The same with the actors' code run by as many threads as this machine has CPUs (SimGrid's
  // contexts/nthreads), for what parallel execution would give; the simulator's actors share
  // their records, so they run sequentially. It may fail: Debian's SimGrid 3.32 crashes when
  // actors on two threads start executions at once (Exec::init).
  const int cpus = static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
  std::string parallel;
  if (bench && cpus > 1) {
    try {
      parallel = std::to_string(std::lround(
                     BareSimGridActivitiesPerSecond(setup, ListedActivities(setup), cpus))) +
                 " activities/s";
    } catch (const std::exception& e) {
      parallel = std::string("failed (") + e.what() + ")";
    }
  }
  const SimulationRecord record = RunSimulation(setup);
  const Report report = BuildReport(setup, record);
  for (const std::string& w : report.warnings) {
    if (o.strict && report.over_capacity)
      throw InputError("pipetwin simulate: " + w + " (--strict)");
    std::cerr << "pipetwin simulate: warning: " << w << "\n";
  }
  if (!o.trace_file.empty())
    WriteTextFileAtomically(o.trace_file, JsonText(ChromeTrace(setup, record)));
  if (!o.svg_file.empty()) WriteTextFileAtomically(o.svg_file, TimelineSvg(setup, record));
  if (o.json) {
    std::cout << JsonText(ReportToJson(report, options.record_memory_timeline), 1) << "\n";
  } else if (o.csv) {
    std::cout << ReportCsvHeader({}) << ReportCsvRow(report, {}, {});
  } else {
    std::cout << ReportToText(report);
  }
  if (bench) {
    const double rate = record.run_wall_s > 0 ? record.activities / record.run_wall_s : 0;
    char line[512];
    std::snprintf(line, sizeof line,
                  "bench: %d workers, %lld activities in %.3f s (%.0f activities/s; platform "
                  "and actors %.3f s); SimGrid alone on this platform: %.0f activities/s; "
                  "with %d threads: %s; peak RSS %.1f MB; %d of %d "
                  "data-parallel replicas simulated\n",
                  setup.schedule.WorkerCount(), record.activities, record.run_wall_s, rate,
                  record.platform_wall_s, bare_rate, cpus, parallel.c_str(), PeakRssBytes() / 1e6,
                  record.simulated_replicas, record.replicas);
    std::cerr << line;
  }
  return 0;
}

}  // namespace pipetwin::sim
