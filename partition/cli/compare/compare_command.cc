// `pipetwin compare SCENARIO`: the same scenario predicted and measured on this machine.
//
// The chain, each step a back-end program beside this one:
//   1. profile the workload here (pipetwin-exec profile --concurrent workers: the layers timed
//      while as many processes compute on this machine's cores as the pipeline has workers, by
//      their thread's CPU time when they outnumber the cores) unless --profile gives a workload
//      file measured before;
//   2. calibrate the machine (pipetwin-exec calibrate: cores, loopback latency, bandwidth and
//      c10d Gloo's per-message overhead) unless --calibration gives a cluster file;
//   3. plan (the scenario's plan, or its planner on the profiled workload and calibrated cluster);
//   4. simulate the scenario with the profiled workload on the calibrated cluster (pipetwin-sim);
//   5. run it for real (pipetwin-exec run) with the same plan;
//   6. compare the two reports (partition/compare.h).
// Nothing is fitted to the measured run: the prediction uses only the profile and calibration.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <sstream>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "partition/cli/handover.h"
#include "partition/cli/parse.h"
#include "partition/report/compare.h"
#include "partition/util/error.h"
#include "partition/util/host.h"
#include "partition/util/json_reader.h"
#include "partition/timeline/timeline.h"
#include "workloads/scenario/scenario.h"
#include "workloads/scenario/plan_for_scenario.h"
#include "partition/report/validation_table.h"
#include "partition/timeline/chrome_trace.h"
#include "partition/timeline/svg.h"

namespace pipetwin::cli {

namespace {

namespace fs = std::filesystem;

const char* kUsage =
    "SCENARIO [--json] [--trace F] [--svg F] [--profile W] [--calibration C] [--measured R]\n"
    "                        [--keep DIR]\n"
    "       pipetwin compare --table DIR [--machine TEXT] [--command TEXT]";
const char* kDescription =
    "Predicted against measured on this machine: profile the workload here (its layers timed\n"
    "while the other cores compute too), calibrate the machine (cores, loopback latency and\n"
    "bandwidth, c10d Gloo's per-message overhead), plan, simulate with that profile on that\n"
    "calibrated cluster, run the plan for real, and print both reports' headline figures with\n"
    "the relative error (predicted - measured) / measured: samples/s, iteration time, bubble\n"
    "per worker, peak memory per device (tensor bytes) and staleness per stage.\n"
    "--measured takes the measured report from elsewhere (`pipetwin run --json`, e.g. across\n"
    "network namespaces, scripts/netns.sh) instead of running here; --calibration may then be a\n"
    "cluster of several levels (the link between the namespaces).\n"
    "--table DIR: the validation matrix (scripts/validate.sh): every DIR/NAME.compare.json\n"
    "(`pipetwin compare --json` output) as one row of DIR/validation.md and DIR/validation.csv.";

po::options_description Options() {
  po::options_description desc("options");
  desc.add_options()
      ("json", "predicted, measured and relative_error as one JSON object")
      ("trace", po::value<std::string>(), "both timelines in one Chrome trace (two process groups)")
      ("svg", po::value<std::string>(), "both timelines, predicted above measured")
      ("profile", po::value<std::string>(), "reuse this workload file (pipetwin profile --output)")
      ("calibration", po::value<std::string>(),
       "reuse this cluster file (pipetwin calibrate --output)")
      ("measured", po::value<std::vector<std::string>>()->composing(),
       "use this measured report (pipetwin run --json) instead of running here (repeat it for "
       "several runs: the median is compared)")
      ("hosts", po::value<int>(),
       "predict on the calibrated machine split into N hosts (one per network namespace)...")
      ("link-gbps", po::value<double>(), "...joined by a link of this many Gbit/s...")
      ("link-latency-us", po::value<double>()->default_value(50), "...and this one-way latency")
      ("table", po::value<std::string>(), "write DIR/validation.md and .csv from DIR/*.compare.json")
      ("machine", po::value<std::string>()->default_value("this machine"), "--table: where measured")
      ("command", po::value<std::string>()->default_value("scripts/validate.sh"),
       "--table: the command that produced the rows")
      ("keep", po::value<std::string>(),
       "keep the intermediate files (profile, cluster, scenario, plan, reports, traces) in DIR")
      ("warmup", po::value<int>()->default_value(1), "iterations left out of the steady state")
      ("repeats", po::value<int>()->default_value(20), "profile: timed runs per layer")
      ("profile-seconds", po::value<double>()->default_value(2),
       "profile: and more timed runs until they have taken S seconds (pipetwin profile "
       "--min-seconds)")
      ("runs", po::value<int>()->default_value(1),
       "run the executor N times and compare with the run of median throughput (all N rates "
       "are reported)")
      ("threads", po::value<int>(), "intra-op threads per worker (default: cores / workers)")
      ("timeout", po::value<double>()->default_value(30), "seconds a worker waits for a peer");
  return desc;
}

po::options_description OptionsWithScenario() {
  po::options_description desc = Options();
  desc.add_options()("scenario", po::value<std::string>(), "positional");
  return desc;
}

// A back end failed; it has said why on standard error. Ends the comparison with its status.
struct StepFailed {
  int status;
};

// The folder the intermediate files go to: --keep DIR (created; its files are never replaced)
// or a temporary one removed at the end.
class WorkDirectory {
 public:
  explicit WorkDirectory(const std::string& keep) : keep_(!keep.empty()) {
    if (keep_) {
      // Absolute: the derived scenario names the profile by this path, and a scenario's relative
      // paths count from its own folder (a relative --keep k read k/k/profile.json).
      path_ = fs::absolute(keep).lexically_normal().string();
      std::error_code ec;
      fs::create_directories(path_, ec);
      if (ec || !fs::is_directory(path_))
        throw InputError("pipetwin compare: --keep " + keep + ": cannot create the folder");
      return;
    }
    std::string pattern = (fs::temp_directory_path() / "pipetwin-compare-XXXXXX").string();
    if (!::mkdtemp(pattern.data())) throw InputError("pipetwin compare: no temporary folder");
    path_ = pattern;
  }
  ~WorkDirectory() {
    std::error_code ec;
    if (!keep_) fs::remove_all(path_, ec);
  }
  WorkDirectory(const WorkDirectory&) = delete;
  WorkDirectory& operator=(const WorkDirectory&) = delete;

  // DIR/name; refuses a name that is already there under --keep (a user's file is never lost).
  std::string File(const std::string& name) const {
    const std::string p = (fs::path(path_) / name).string();
    if (keep_ && fs::exists(p))
      throw InputError("pipetwin compare: --keep " + path_ + ": " + name +
                       " is already there; give an empty or new folder");
    return p;
  }

 private:
  bool keep_;
  std::string path_;
};

// Runs a back end; a failure ends the comparison with that program's status.
std::string Step(const std::string& what, const std::string& program,
                 const std::vector<std::string>& args) {
  std::string out;
  const int status = RunBackEnd(program, args, &out);
  if (status != 0) {
    // Bad input (2) was said in one line by the back end; anything else gets a line saying where.
    if (status != 2)
      std::cerr << "pipetwin compare: " << what << " failed (" << program << " exited with "
                << status << ")\n";
    throw StepFailed{status};
  }
  return out;
}

std::string Absolute(const std::string& path) { return fs::absolute(path).string(); }

// The cluster of the prediction: the calibrated machine with as many workers as the scenario's
// cluster has devices (so its plan's device ids stay valid).
// With `hosts` > 1 (workers in network namespaces, scripts/netns.sh), the machine becomes that
// many servers of devices / hosts workers and cores / hosts cores each (each namespace's workers
// are pinned to their own cores), joined by the shaped link.
nlohmann::json PredictionCluster(const std::string& calibration_file, int devices, int hosts,
                                 double link_gbps, double link_latency_us) {
  Cluster cluster = LoadClusterFile(calibration_file);
  if (hosts > 1) {
    if (cluster.levels.size() != 1 || devices % hosts != 0)
      throw InputError(calibration_file, "levels",
                       "--hosts needs a one-level calibrated machine and workers divisible by "
                       "the hosts");
    cluster.levels[0].count = devices / hosts;
    ClusterLevel link;
    link.name = "link";
    link.count = hosts;
    link.bandwidth_gbps = link_gbps;
    link.latency_us = link_latency_us;
    link.link = "ethernet";
    cluster.levels.push_back(link);
    cluster.shared_cores = std::max(1, cluster.shared_cores / hosts);
    cluster.name += " as " + std::to_string(hosts) + " hosts";
    return ClusterToJson(cluster);
  }
  if (cluster.levels.size() == 1) {
    cluster.levels[0].count = devices;  // one machine, as pipetwin calibrate writes it
  } else if (cluster.DeviceCount() < devices) {
    throw InputError(calibration_file, "levels",
                     "expected at least " + std::to_string(devices) +
                         " devices (the scenario's), got " + std::to_string(cluster.DeviceCount()));
  }
  return ClusterToJson(cluster);
}

// compare trains the scenario here for real: refuse, before anything starts, a model whose
// weights, gradients and optimizer state alone (every worker's share together, one version)
// would not fit in half this machine's memory (the default scenario's GPT 1.3B: 14.7 GiB).
void CheckFitsThisMachine(const Scenario& scenario) {
  const double memory = PhysicalMemoryBytes();
  const double per_parameter = 2 * scenario.workload.parameter_dtype_bytes +
                               scenario.training.optimizer_bytes_per_parameter;
  const double need = scenario.workload.TotalParameters() * per_parameter;
  if (memory > 0 && need > memory / 2) {
    std::ostringstream what;
    what << "expected a model this machine can train for real (compare runs it here): "
         << scenario.workload.TotalParameters() / 1e6 << "M parameters need "
         << need / (1 << 30) << " GiB for weights, gradients and optimizer state, more than half of "
         << memory / (1 << 30) << " GiB";
    throw InputError(scenario.file, "workload", what.str());
  }
}

// Reads a back end's JSON report from its standard output.
Report ReportFrom(const std::string& text, const std::string& what) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    throw InputError("pipetwin compare: the " + what + " did not print a JSON report");
  }
  return ReportFromJson(doc, what);
}

int Compare(const po::variables_map& vm);

// --table DIR: DIR/NAME.compare.json in name order -> DIR/validation.md and DIR/validation.csv.
int WriteValidationTable(const po::variables_map& vm) {
  const std::string dir = vm["table"].as<std::string>();
  if (!fs::is_directory(dir)) throw InputError(dir, "", "no such folder (--table)");
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    const std::string suffix = ".compare.json";
    if (name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(),
                                                    suffix) == 0)
      files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) throw InputError(dir, "", "no NAME.compare.json files (--table)");
  std::vector<ValidationRow> rows;
  for (const std::string& file : files) {
    const std::string name = fs::path(file).filename().string();
    rows.push_back({name.substr(0, name.size() - std::string(".compare.json").size()),
                    ParseJsonFile(file)});
    for (const char* key : {"predicted", "measured", "staleness_match"})
      if (!rows.back().comparison.contains(key))
        throw InputError(file, key, "missing (expected `pipetwin compare --json` output)");
  }
  const std::string md = (fs::path(dir) / "validation.md").string();
  const std::string csv = (fs::path(dir) / "validation.csv").string();
  WriteTextFileAtomically(
      md, ValidationMarkdown(rows, vm["machine"].as<std::string>(), vm["command"].as<std::string>()));
  WriteTextFileAtomically(csv, ValidationCsv(rows));
  std::cout << ValidationMarkdown(rows, vm["machine"].as<std::string>(),
                                  vm["command"].as<std::string>())
            << "\nwrote " << md << " and " << csv << "\n";
  return 0;
}

}  // namespace

int RunCompareCommand(const Args& args) {
  po::positional_options_description positional;
  positional.add("scenario", 1);
  const po::variables_map vm = ParseCommandLine("compare", OptionsWithScenario(), positional, args);
  if (vm.count("help")) {
    PrintUsage(std::cout, "compare", kUsage, kDescription, Options());
    return 0;
  }
  try {
    if (vm.count("table")) return WriteValidationTable(vm);
    return Compare(vm);
  } catch (const StepFailed& failed) {
    return failed.status;
  }
}

namespace {

int Compare(const po::variables_map& vm) {
  if (!vm.count("scenario")) throw InputError("pipetwin compare: expected a SCENARIO file");
  const std::string scenario_file = vm["scenario"].as<std::string>();
  const Scenario scenario = LoadScenarioFile(scenario_file);
  if (!vm.count("measured")) CheckFitsThisMachine(scenario);
  const int warmup = vm["warmup"].as<int>(), repeats = vm["repeats"].as<int>();
  if (warmup < 0) throw InputError("pipetwin compare: --warmup must be >= 0");
  if (repeats < 1) throw InputError("pipetwin compare: --repeats must be >= 1");
  const double profile_seconds = vm["profile-seconds"].as<double>();
  if (!(profile_seconds >= 0 && profile_seconds <= 600))
    throw InputError("pipetwin compare: --profile-seconds must be within 0..600, got " +
                     std::to_string(profile_seconds));
  const int runs = vm["runs"].as<int>();
  if (runs < 1) throw InputError("pipetwin compare: --runs must be >= 1");
  if (vm.count("measured") && (vm.count("trace") || vm.count("svg")))
    throw InputError("pipetwin compare: --trace and --svg need the run here, not --measured");
  for (const char* input : {"profile", "calibration"})
    if (vm.count(input) && !fs::exists(vm[input].as<std::string>()))
      throw InputError(vm[input].as<std::string>(), "", std::string("no such file (--") + input + ")");
  const std::vector<std::string> measured_files =
      vm.count("measured") ? vm["measured"].as<std::vector<std::string>>()
                           : std::vector<std::string>{};
  for (const std::string& f : measured_files)
    if (!fs::exists(f)) throw InputError(f, "", "no such file (--measured)");

  WorkDirectory work(vm.count("keep") ? vm["keep"].as<std::string>() : "");
  const bool quiet = vm.count("json") > 0;
  const auto say = [&](const std::string& line) {
    if (!quiet) std::cerr << "compare: " << line << "\n";
  };

  // What the executor cannot run is refused before anything is profiled or calibrated.
  if (!vm.count("measured"))
    Step("the executor's check", "pipetwin-exec", {"run", scenario_file, "--check"});

  // The plan both back ends run (a planner's choice depends on the workload's times, so it is
  // made once, on the profiled workload, and handed to both).
  const int devices = scenario.cluster.DeviceCount();
  int workers = devices;
  if (scenario.plan) workers = scenario.plan->WorkerCount();
  // As many processes as workers (time-shared when they outnumber the cores, as the run's
  // workers will be), up to the profiler's 4 per core.
  const int concurrent = std::min(workers, 4 * static_cast<int>(AllowedCpus().size()));

  std::string profile;
  if (vm.count("profile")) {
    profile = Absolute(vm["profile"].as<std::string>());
  } else {
    profile = work.File("profile.json");
    say("profiling the workload (" + std::to_string(concurrent) + " processes computing at once)");
    Step("profiling", "pipetwin-exec",
         {"profile", scenario_file, "--batch", std::to_string(scenario.training.microbatch_size),
          "--concurrent", std::to_string(concurrent), "--repeats", std::to_string(repeats),
          "--min-seconds", std::to_string(profile_seconds), "--warmup", "10",
          "--output", profile});
  }
  std::string calibration;
  if (vm.count("calibration")) {
    calibration = Absolute(vm["calibration"].as<std::string>());
  } else {
    calibration = work.File("cluster.json");
    say("calibrating this machine");
    Step("calibration", "pipetwin-exec",
         {"calibrate", "--workers", std::to_string(devices), "--output", calibration});
  }

  // The predicted scenario: the user's, with the measured workload and the calibrated machine.
  nlohmann::json predicted_doc = scenario.source;
  predicted_doc["workload"] = {{"file", profile}};
  const int hosts = vm.count("hosts") ? vm["hosts"].as<int>() : 1;
  if (hosts < 1) throw InputError("pipetwin compare: --hosts must be >= 1");
  if (hosts > 1 && !vm.count("link-gbps"))
    throw InputError("pipetwin compare: --hosts needs --link-gbps");
  if (vm.count("link-gbps") && !(vm["link-gbps"].as<double>() > 0))
    throw InputError("pipetwin compare: --link-gbps must be > 0");
  predicted_doc["cluster"] =
      PredictionCluster(calibration, devices, hosts,
                        vm.count("link-gbps") ? vm["link-gbps"].as<double>() : 0,
                        vm["link-latency-us"].as<double>());
  if (predicted_doc.contains("plan_file")) {
    const fs::path plan_file = predicted_doc["plan_file"].get<std::string>();
    predicted_doc["plan_file"] =
        plan_file.is_absolute()
            ? plan_file.string()
            : (fs::absolute(scenario_file).parent_path() / plan_file).string();
  }
  predicted_doc["name"] = scenario.name + " (predicted on the calibrated machine)";
  const std::string predicted_file = work.File("predicted-scenario.json");
  WriteTextFileAtomically(predicted_file, predicted_doc.dump(1) + "\n");
  const Scenario predicted_scenario = LoadScenarioFile(predicted_file);
  std::vector<std::string> plan_args;
  if (!scenario.plan) {
    const std::string plan_file = work.File("plan.json");
    WriteTextFileAtomically(plan_file, PlanToJson(PlanForScenario(predicted_scenario)).dump(1));
    plan_args = {"--plan", plan_file};
  }

  const bool timelines = vm.count("trace") || vm.count("svg");
  std::vector<std::string> sim_args = {"simulate", predicted_file, "--json", "--warmup",
                                       std::to_string(warmup)};
  std::vector<std::string> run_args = {"run", scenario_file, "--json", "--warmup",
                                       std::to_string(warmup), "--timeout",
                                       std::to_string(vm["timeout"].as<double>())};
  if (vm.count("threads")) run_args.insert(run_args.end(), {"--threads", std::to_string(vm["threads"].as<int>())});
  const std::string predicted_trace = work.File("predicted-trace.json");
  std::string measured_trace = work.File("measured-trace.json");
  if (timelines) sim_args.insert(sim_args.end(), {"--trace", predicted_trace});
  sim_args.insert(sim_args.end(), plan_args.begin(), plan_args.end());
  run_args.insert(run_args.end(), plan_args.begin(), plan_args.end());

  say("simulating");
  const std::string sim_out = Step("the simulation", "pipetwin-sim", sim_args);
  // Several runs (--runs, or --measured given several times): the machine's speed drifts from
  // run to run (5-7% here); the run of median throughput is compared, every run's rate kept.
  struct Run {
    double samples_per_s;
    std::string report, trace;
  };
  std::vector<Run> done;
  for (const std::string& f : measured_files) {
    std::ifstream in(f);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    done.push_back({ReportFrom(text, "executor").samples_per_s, text, ""});
  }
  for (int k = 0; measured_files.empty() && k < runs; ++k) {
    say(runs > 1 ? "running for real (" + std::to_string(k + 1) + " of " +
                       std::to_string(runs) + ")"
                 : std::string("running for real"));
    std::vector<std::string> args = run_args;
    const std::string trace =
        runs > 1 ? work.File("measured-trace-" + std::to_string(k + 1) + ".json") : measured_trace;
    if (timelines) args.insert(args.end(), {"--trace", trace});
    const std::string out = Step("the run", "pipetwin-exec", args);
    done.push_back({ReportFrom(out, "executor").samples_per_s, out, trace});
  }
  std::vector<double> measured_rates;  // samples/s of every run, in the order they ran
  for (const Run& r : done) measured_rates.push_back(r.samples_per_s);
  std::sort(done.begin(), done.end(),
            [](const Run& a, const Run& b) { return a.samples_per_s < b.samples_per_s; });
  const std::string run_out = done[(done.size() - 1) / 2].report;
  measured_trace = done[(done.size() - 1) / 2].trace;
  WriteTextFileAtomically(work.File("predicted.json"), sim_out);
  WriteTextFileAtomically(work.File("measured.json"), run_out);

  Comparison comparison =
      CompareReports(ReportFrom(sim_out, "simulator"), ReportFrom(run_out, "executor"));
  comparison.predicted.details["profile"] = profile;
  comparison.predicted.details["calibration"] = calibration;
  if (measured_rates.size() > 1) comparison.measured.details["runs_samples_per_s"] = measured_rates;

  if (timelines) {
    Timeline predicted = TimelineFromChromeTrace(ParseJsonFile(predicted_trace), predicted_trace);
    Timeline measured = TimelineFromChromeTrace(ParseJsonFile(measured_trace), measured_trace);
    predicted.label = "predicted";
    measured.label = "measured";
    if (vm.count("trace"))
      WriteTextFileAtomically(vm["trace"].as<std::string>(),
                              ChromeTrace(std::vector<Timeline>{predicted, measured}).dump());
    if (vm.count("svg"))
      WriteTextFileAtomically(vm["svg"].as<std::string>(), TimelineSvg({predicted, measured}));
  }
  if (vm.count("json")) {
    std::cout << ComparisonToJson(comparison).dump(1) << "\n";
  } else {
    std::cout << ComparisonToText(comparison);
    std::cout << "\nprofile " << profile << (vm.count("profile") ? " (given)" : "")
              << "\ncluster " << calibration << (vm.count("calibration") ? " (given)" : "") << "\n";
  }
  return 0;
}

}  // namespace

}  // namespace pipetwin::cli
