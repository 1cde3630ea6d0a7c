// `pipetwin plan`: partition a workload over a cluster.
//
// Built: PipeDream's partitioner on a PipeDream profile, with the optimizer's own inputs
// (optimizer/optimizer_graph_hierarchical.py -f -n -b -s ...):
//   pipetwin plan --profile vgg16/graph.txt --workers 16 --bandwidth 1.25e9
//       --activation-compression-ratio 1 --planner pipedream-compat --json
// The scenario form `pipetwin plan [SCENARIO]` (any planner) is in cmd_plan_scenario.cc.
#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "partition/cli/parse.h"
#include "partition/cli/plan_scenario.h"
#include "partition/util/error.h"
#include "partition/planners/pipedream/planner.h"
#include "partition/util/json_writer.h"
#include "workloads/import/pipedream_profile.h"
#include "workloads/scenario/scenario.h"
#include "partition/util/format.h"

namespace pipetwin::cli {

namespace {

const char* kUsage =
    "--profile graph.txt --workers M1 [M2 ...] --bandwidth B1 [B2 ...]\n"
    "                     [--planner pipedream|pipedream-compat] [options] [--json]\n"
    "       pipetwin plan [SCENARIO] [--planner NAME] [--output PLAN.json] [--json]";

const char* kDescription =
    "Partition a workload over a cluster and predict its time per sample and memory per\n"
    "device. PipeDream's partitioner (SOSP'19, section 3.1) solves per topology level, lowest\n"
    "first (--workers and --bandwidth list the levels, lowest first: GPUs per server, then\n"
    "servers). --planner pipedream is the paper's cost model (compute overlaps weight\n"
    "synchronisation; every cut costs 2a/B); pipedream-compat computes exactly what the public\n"
    "optimizer prints, quirks included. Throughput counts samples = minibatches x --batch.\n\n"
    "With a scenario (the embedded default when none is given) any planner runs on the\n"
    "scenario's workload and cluster; the table shows each stage's layers, replicas, devices,\n"
    "compute and communication time and memory, the predicted samples/s and the speed-up over\n"
    "data parallelism on the same cluster.";

po::options_description Options() {
  po::options_description desc("options");
  desc.add_options()
      ("planner", po::value<std::string>(),
       "with a scenario: pipedream|pipedream-compat|2bw|data-parallel|gpipe|flush|uniform|"
       "balanced (default: the scenario's); with --profile: pipedream (default) or "
       "pipedream-compat")
      ("output", po::value<std::string>(), "write the plan to FILE, for `simulate --plan` and "
                                           "`run --plan`")
      ("force", "replace an existing --output file (never the scenario)")
      ("profile", po::value<std::string>(), "PipeDream graph.txt (instead of a scenario)")
      ("workers", po::value<std::vector<int>>()->multitoken(), "machines per level, lowest first")
      ("bandwidth", po::value<std::vector<double>>()->multitoken(),
       "bytes/s per level, lowest first")
      ("activation-compression-ratio", po::value<double>(),
       "divide activation transfers by R (compat: without it cuts cost nothing)")
      ("memory-limit", po::value<double>()->default_value(16e9, "16e9"),
       "bytes per device (the optimizer's -s): every plan's verdict, and the planner's limit "
       "with --use-memory-constraint")
      ("use-memory-constraint", "exclude stages whose stash exceeds --memory-limit")
      ("straight", "no replication: one machine per stage")
      ("use-fewer-machines", "a level may leave machines idle when that is faster")
      ("batch", po::value<int>()->default_value(1), "samples per minibatch of the profile")
      ("bench", po::value<int>(), "solve N times and print the median wall time")
      ("allow-over-capacity", "print a plan that does not fit its devices (a scenario's "
       "device memory, or --memory-limit; else refused, exit 2)")
      ("json", "machine-readable output on stdout");
  return desc;
}

PipeDreamOptions ReadOptions(const po::variables_map& vm) {
  PipeDreamOptions o;
  const std::string planner =
      vm.count("planner") ? vm["planner"].as<std::string>() : std::string("pipedream");
  PlannerKind kind;
  try {
    kind = ParsePlannerKind(planner);
  } catch (const InputError& e) {
    throw InputError(std::string("pipetwin plan: --planner: ") + e.what());
  }
  if (kind == PlannerKind::kPipeDreamCompat) o.cost_model = PipeDreamCostModel::kCompat;
  else if (kind != PlannerKind::kPipeDream)
    throw InputError("pipetwin plan: --planner " + planner + " on a --profile is not built "
                     "(built: pipedream, pipedream-compat)");
  if (!vm.count("workers") || !vm.count("bandwidth"))
    throw InputError("pipetwin plan: --profile needs --workers and --bandwidth (one value per "
                     "topology level, lowest first)");
  const auto& workers = vm["workers"].as<std::vector<int>>();
  const auto& bandwidth = vm["bandwidth"].as<std::vector<double>>();
  if (workers.size() != bandwidth.size())
    throw InputError("pipetwin plan: --workers and --bandwidth must list the same levels, got " +
                     std::to_string(workers.size()) + " and " +
                     std::to_string(bandwidth.size()) + " values");
  for (size_t l = 0; l < workers.size(); ++l) o.levels.push_back({workers[l], bandwidth[l]});
  if (vm.count("activation-compression-ratio"))
    o.activation_compression_ratio = vm["activation-compression-ratio"].as<double>();
  o.memory_bytes_per_device = vm["memory-limit"].as<double>();
  o.use_memory_constraint = vm.count("use-memory-constraint") > 0;
  o.straight_pipeline = vm.count("straight") > 0;
  o.use_fewer_machines = vm.count("use-fewer-machines") > 0;
  o.batch_size = vm["batch"].as<int>();
  ValidatePipeDreamOptions(o);
  return o;
}

void PrintTable(std::ostream& out, const Workload& w, const PipeDreamOptions& o,
                const PipeDreamResult& r) {
  const Plan& p = r.plan;
  out << p.planner << ": " << w.name << " (" << r.state_count << " states), levels";
  for (const PipeDreamLevel& l : o.levels)
    out << " " << l.machines << " x " << l.bandwidth_bytes_per_s << " B/s";
  out << "\n" << std::setprecision(6) << "time per stage " << r.time_per_stage_s
      << " s per minibatch, " << p.predicted_samples_per_s << " samples/s (batch "
      << o.batch_size << "), NOAM " << r.noam << "\nsingle stage " << r.single_stage_time_s
      << " s, data parallel " << r.data_parallel_time_s << " s\n\n";
  WriteStageTable(out, p, 13, 16, o.memory_bytes_per_device);
  if (r.reordered)
    out << "\nlayers are counted in a reordered topological order (the plan's layer_order)\n";
  out << "\nmemory: " << DescribeFit(FitOf(p, o.memory_bytes_per_device)) << " (--memory-limit)\n";
}

nlohmann::json ResultJson(const Workload& w, const PipeDreamOptions& o, const PipeDreamResult& r) {
  nlohmann::json j = PlanToJson(r.plan);
  j["workload"] = w.name;
  j["noam"] = r.noam;
  j["time_per_stage_s"] = r.time_per_stage_s;
  AddFitVerdicts(j, r.plan, FitOf(r.plan, o.memory_bytes_per_device));
  j["batch_size"] = o.batch_size;  // samples per minibatch: samples/s = minibatches/s x batch
  // levels: highest level first, per stage [start_state, end_state (exclusive), replicas], as
  // the optimizer prints "(start, end) compute_time replication_factor".
  if (o.cost_model == PipeDreamCostModel::kCompat)
    j["compat"] = {{"time_per_stage_s", r.time_per_stage_s},
                   {"single_stage_time_s", r.single_stage_time_s},
                   {"data_parallel_time_s", r.data_parallel_time_s},
                   {"levels", r.plan.details["levels"]}};
  return j;
}

int Bench(const Workload& w, const PipeDreamOptions& o, int runs) {
  if (runs < 1) throw InputError("pipetwin plan: expected --bench N with N >= 1, got " +
                                 std::to_string(runs));
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    const auto start = std::chrono::steady_clock::now();
    PipeDreamResult r = PlanPipeDream(w, o);
    const auto stop = std::chrono::steady_clock::now();
    ms.push_back(std::chrono::duration<double, std::milli>(stop - start).count());
  }
  std::sort(ms.begin(), ms.end());
  std::cout << PipeDreamPlannerName(o.cost_model) << " " << w.name << ": median "
            << ms[ms.size() / 2] << " ms, min " << ms.front() << " ms over " << runs
            << " solves (antichains, every level, layout)\n";
  return 0;
}

}  // namespace

int RunPlanCommand(const Args& args) {
  po::options_description desc = Options();
  po::options_description with_positional = desc;
  with_positional.add_options()("scenario", po::value<std::vector<std::string>>(), "scenario");
  po::positional_options_description positional;
  positional.add("scenario", -1);
  po::variables_map vm = ParseCommandLine("plan", with_positional, positional, args);
  if (vm.count("help")) {
    PrintUsage(std::cout, "plan", kUsage, kDescription, desc);
    return 0;
  }
  if (!vm.count("profile")) return RunPlanOnScenario(vm);
  if (vm.count("scenario"))
    throw InputError("pipetwin plan: give either SCENARIO or --profile, not both");
  if (vm.count("output"))
    throw InputError("pipetwin plan: --output applies to the scenario form");
  const PipeDreamOptions options = ReadOptions(vm);
  const std::string profile = vm["profile"].as<std::string>();
  const Workload workload = ImportPipeDreamProfile(profile);
  try {
    if (vm.count("bench")) {
      const int runs = vm["bench"].as<int>();
      if (runs < 1 || runs > 10000)
        throw InputError("pipetwin plan: --bench must be from 1 to 10000 runs, got " +
                         std::to_string(runs));
      return Bench(workload, options, runs);
    }
    const PipeDreamResult result = PlanPipeDream(workload, options);
    // As for a scenario's plan: one over the device's memory is not recommended unless asked.
    const PlanFit fit = FitOf(result.plan, options.memory_bytes_per_device);
    if (!fit.Fits() && !vm.count("allow-over-capacity"))
      throw InputError(profile, "", "expected a plan that fits --memory-limit: the " +
                                        result.plan.planner + " plan's " + DescribeFit(fit) +
                                        " (--use-memory-constraint plans within it; "
                                        "--allow-over-capacity prints it anyway)");
    if (vm.count("json"))
      std::cout << JsonText(ResultJson(workload, options, result), 2) << "\n";
    else
      PrintTable(std::cout, workload, options, result);
  } catch (const InputError& e) {
    // The partitioner's rules name no file: what they refuse came from the profile.
    if (!e.file().empty() || std::string(e.what()).rfind("pipetwin plan:", 0) == 0) throw;
    // The library names its setting; here the user sets it with an option.
    std::string what = e.what();
    const std::string setting = "(use_fewer_machines)";
    if (const size_t at = what.find(setting); at != std::string::npos)
      what.replace(at, setting.size(), "(--use-fewer-machines)");
    throw InputError(profile, "", what);
  }
  return 0;
}

}  // namespace pipetwin::cli
