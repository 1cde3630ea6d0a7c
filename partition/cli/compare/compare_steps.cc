#include "partition/cli/compare/compare_steps.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "partition/cli/handover.h"
#include "partition/report/validation_table.h"
#include "partition/timeline/chrome_trace.h"
#include "partition/timeline/svg.h"
#include "partition/util/error.h"
#include "partition/util/files.h"
#include "partition/util/host.h"
#include "partition/util/json_reader.h"
#include "partition/util/json_writer.h"
#include "workloads/scenario/plan_for_scenario.h"

namespace pipetwin::cli {

namespace fs = std::filesystem;

namespace {

void Require(bool holds, const std::string& rule) {
  if (!holds) throw InputError("pipetwin compare: " + rule);
}

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

std::string ReadAll(const std::string& file) {
  std::ifstream in(file);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<std::string> RunArgs(const CompareOptions& o, const PredictedScenario& predicted) {
  std::vector<std::string> args = {"run", o.scenario, "--json", "--warmup",
                                   std::to_string(o.warmup), "--timeout",
                                   std::to_string(o.timeout_s)};
  if (o.threads > 0) args.insert(args.end(), {"--threads", std::to_string(o.threads)});
  args.insert(args.end(), {"--device", o.device, "--precision", o.precision});
  args.insert(args.end(), predicted.plan_args.begin(), predicted.plan_args.end());
  return args;
}

}  // namespace

CompareOptions ReadCompareOptions(const po::variables_map& vm) {
  CompareOptions o;
  Require(vm.count("scenario") > 0, "expected a SCENARIO file");
  o.scenario = vm["scenario"].as<std::string>();
  o.json = vm.count("json") > 0;
  if (vm.count("trace")) o.trace_file = vm["trace"].as<std::string>();
  if (vm.count("svg")) o.svg_file = vm["svg"].as<std::string>();
  if (vm.count("profile")) o.profile_file = vm["profile"].as<std::string>();
  if (vm.count("calibration")) o.calibration_file = vm["calibration"].as<std::string>();
  if (vm.count("measured")) o.measured_files = vm["measured"].as<std::vector<std::string>>();
  if (vm.count("hosts")) o.hosts = vm["hosts"].as<int>();
  if (vm.count("link-gbps")) o.link_gbps = vm["link-gbps"].as<double>();
  o.link_latency_us = vm["link-latency-us"].as<double>();
  if (vm.count("keep")) o.keep_dir = vm["keep"].as<std::string>();
  o.warmup = vm["warmup"].as<int>();
  o.repeats = vm["repeats"].as<int>();
  o.runs = vm["runs"].as<int>();
  o.profile_seconds = vm["profile-seconds"].as<double>();
  o.profile_target_spread = vm["profile-target-spread"].as<double>();
  o.profile_max_seconds = vm["profile-max-seconds"].as<double>();
  o.calibration_target_spread = vm["calibration-target-spread"].as<double>();
  o.calibration_max_seconds = vm["calibration-max-seconds"].as<double>();
  if (vm.count("threads")) o.threads = vm["threads"].as<int>();
  o.device = vm["device"].as<std::string>();
  o.precision = vm["precision"].as<std::string>();
  Require(o.device == "cpu" || o.device == "cuda", "--device must be cpu or cuda, got " + o.device);
  Require(o.precision == "fp32" || o.precision == "bf16" || o.precision == "fp16",
          "--precision must be fp32, bf16 or fp16, got " + o.precision);
  Require(o.precision == "fp32" || o.device == "cuda",
          "--precision " + o.precision + " needs --device cuda");
  o.timeout_s = vm["timeout"].as<double>();
  std::vector<std::string> inputs = {o.scenario, o.profile_file, o.calibration_file};
  inputs.insert(inputs.end(), o.measured_files.begin(), o.measured_files.end());
  for (const auto& [file, option] : {std::pair{o.trace_file, "--trace"}, {o.svg_file, "--svg"}})
    if (!file.empty()) CheckOutputPath(file, option, vm.count("force") > 0, inputs);
  Require(o.warmup >= 0, "--warmup must be >= 0");
  Require(o.repeats >= 1, "--repeats must be >= 1");
  Require(o.profile_seconds >= 0 && o.profile_seconds <= 600,
          "--profile-seconds must be within 0..600, got " + std::to_string(o.profile_seconds));
  Require(o.profile_target_spread >= 0 && o.profile_target_spread <= 100,
          "--profile-target-spread must be within 0..100 (percent), got " +
              std::to_string(o.profile_target_spread));
  Require(o.profile_max_seconds >= 0 && o.profile_max_seconds <= 3600,
          "--profile-max-seconds must be within 0..3600, got " +
              std::to_string(o.profile_max_seconds));
  Require(o.calibration_target_spread >= 0 && o.calibration_target_spread <= 100,
          "--calibration-target-spread must be within 0..100 (percent), got " +
              std::to_string(o.calibration_target_spread));
  Require(o.calibration_max_seconds >= 0 && o.calibration_max_seconds <= 3600,
          "--calibration-max-seconds must be within 0..3600, got " +
              std::to_string(o.calibration_max_seconds));
  Require(o.runs >= 1, "--runs must be >= 1");
  Require(o.measured_files.empty() || !o.Timelines(),
          "--trace and --svg need the run here, not --measured");
  Require(o.hosts >= 1, "--hosts must be >= 1");
  Require(o.hosts == 1 || vm.count("link-gbps"), "--hosts needs --link-gbps");
  Require(!vm.count("link-gbps") || o.link_gbps > 0, "--link-gbps must be > 0");
  for (const auto& [file, option] : {std::pair{o.profile_file, "--profile"},
                                     std::pair{o.calibration_file, "--calibration"}})
    if (!file.empty() && !fs::exists(file))
      throw InputError(file, "", std::string("no such file (") + option + ")");
  for (const std::string& f : o.measured_files)
    if (!fs::exists(f)) throw InputError(f, "", "no such file (--measured)");
  return o;
}

void RefuseWhatCannotRunHere(const CompareOptions& o) {
  if (!o.measured_files.empty()) return;  // measured elsewhere
  // What the executor cannot run, or this machine cannot hold (exec/launch/machine_check.h), is
  // refused before anything is profiled or calibrated.
  Step("the executor's check", "pipetwin-exec", {"run", o.scenario, "--check"});
}

std::string ProfileStep(const CompareOptions& o, const Scenario& scenario, WorkDirectory& work,
                        const Say& say, int k) {
  if (!o.profile_file.empty()) return Absolute(o.profile_file);
  const int workers = scenario.plan ? scenario.plan->WorkerCount()
                                    : scenario.cluster.DeviceCount();
  const std::string profile =
      work.File(k == 0 ? "profile.json" : "profile-" + std::to_string(k) + ".json");
  std::vector<std::string> args = {
      "profile", o.scenario, "--batch", std::to_string(scenario.training.microbatch_size),
      "--repeats", std::to_string(o.repeats), "--min-seconds", std::to_string(o.profile_seconds),
      "--target-spread", std::to_string(o.profile_target_spread), "--max-seconds",
      std::to_string(o.profile_max_seconds),
      "--warmup", "10", "--output", profile};
  if (o.device == "cuda") {
    // On a GPU the layers are timed alone: workers sharing it take turns, which the simulator
    // models (shared_cores).
    say("profiling the workload on the GPU (CUDA events)");
    args.insert(args.end(), {"--device", "cuda", "--precision", o.precision});
  } else {
    // As many processes as workers (time-shared when they outnumber the cores, as the run's
    // workers will be), up to the profiler's 4 per core.
    const int concurrent = std::min(workers, 4 * static_cast<int>(AllowedCpus().size()));
    say("profiling the workload (" + std::to_string(concurrent) + " processes computing at once)");
    args.insert(args.end(), {"--concurrent", std::to_string(concurrent)});
  }
  Step("profiling", "pipetwin-exec", args);
  return profile;
}

std::string MeanProfileStep(const std::vector<std::string>& profiles, WorkDirectory& work) {
  if (profiles.size() == 1) return profiles.front();
  std::vector<Workload> loaded;
  for (const std::string& f : profiles) loaded.push_back(LoadWorkloadFile(f));
  const std::string mean = work.File("profile.json");
  SaveWorkloadFile(MeanOfProfiles(loaded, profiles), mean);
  return mean;
}

void UseProfile(const PredictedScenario& predicted, const std::string& profile) {
  nlohmann::json doc = ParseJsonFile(predicted.file);
  doc["workload"] = {{"file", profile}};
  WriteTextFileAtomically(predicted.file, JsonText(doc, 1) + "\n");
}

std::string CalibrationStep(const CompareOptions& o, const Scenario& scenario,
                            WorkDirectory& work, const Say& say) {
  if (!o.calibration_file.empty()) return Absolute(o.calibration_file);
  const std::string calibration = work.File("cluster.json");
  say("calibrating this machine");
  Step("calibration", "pipetwin-exec",
       {"calibrate", "--workers", std::to_string(scenario.cluster.DeviceCount()), "--device",
        o.device, "--target-spread", std::to_string(o.calibration_target_spread),
        "--max-seconds", std::to_string(o.calibration_max_seconds), "--output", calibration});
  return calibration;
}

PredictedScenario WritePredictedScenario(const CompareOptions& o, const Scenario& scenario,
                                         const std::string& profile,
                                         const std::string& calibration, WorkDirectory& work) {
  nlohmann::json doc = scenario.source;
  doc["workload"] = {{"file", profile}};
  // The cluster of the prediction: the calibrated machine with as many workers as the
  // scenario's cluster has devices, so that its plan's device ids stay valid.
  doc["cluster"] = ClusterToJson(ShapeCalibratedMachine(LoadClusterFile(calibration), calibration,
                                                        scenario.cluster.DeviceCount(), o.hosts,
                                                        o.link_gbps, o.link_latency_us));
  if (doc.contains("plan_file")) {
    const fs::path plan_file = doc["plan_file"].get<std::string>();
    doc["plan_file"] = plan_file.is_absolute()
                           ? plan_file.string()
                           : (fs::absolute(o.scenario).parent_path() / plan_file).string();
  }
  doc["name"] = scenario.name + " (predicted on the calibrated machine)";
  PredictedScenario predicted;
  predicted.file = work.File("predicted-scenario.json");
  WriteTextFileAtomically(predicted.file, JsonText(doc, 1) + "\n");
  if (!scenario.plan) {
    const std::string plan_file = work.File("plan.json");
    WriteTextFileAtomically(plan_file,
                            JsonText(PlanToJson(PlanForScenario(LoadScenarioFile(predicted.file))), 1));
    predicted.plan_args = {"--plan", plan_file};
  }
  return predicted;
}

Simulated SimulateStep(const CompareOptions& o, const PredictedScenario& predicted,
                       WorkDirectory& work, const Say& say) {
  std::vector<std::string> args = {"simulate", predicted.file, "--json", "--warmup",
                                   std::to_string(o.warmup)};
  Simulated simulated;
  if (o.Timelines()) {
    simulated.trace = work.File("predicted-trace.json");
    args.insert(args.end(), {"--trace", simulated.trace});
  }
  args.insert(args.end(), predicted.plan_args.begin(), predicted.plan_args.end());
  say("simulating");
  simulated.report = Step("the simulation", "pipetwin-sim", args);
  WriteTextFileAtomically(work.File("predicted.json"), simulated.report);
  return simulated;
}

std::optional<Comparison::Band> BandStep(const CompareOptions& o,
                                         const PredictedScenario& predicted,
                                         const std::string& profile, WorkDirectory& work,
                                         const Say& say) {
  const Workload measured = LoadWorkloadFile(profile);
  nlohmann::json predicted_doc = ParseJsonFile(predicted.file);
  const Cluster calibrated = ClusterFromJson(predicted_doc["cluster"], predicted.file, "cluster");
  if (!measured.HasSpread() && calibrated.spread.empty()) return std::nullopt;
  say("simulating the slow and the fast end of the profile's and the calibration's spread");
  Comparison::Band band;
  for (int side : {+1, -1}) {
    const std::string tag = side > 0 ? "slow" : "fast";
    const std::string workload = work.File("profile-" + tag + ".json");
    SaveWorkloadFile(measured.AtSpreadEdge(side), workload);
    nlohmann::json doc = predicted_doc;
    doc["workload"] = {{"file", workload}};
    doc["cluster"] = ClusterToJson(calibrated.AtSpreadEdge(side));
    const std::string scenario = work.File("predicted-scenario-" + tag + ".json");
    WriteTextFileAtomically(scenario, JsonText(doc, 1) + "\n");
    std::vector<std::string> args = {"simulate", scenario, "--json", "--warmup",
                                     std::to_string(o.warmup)};
    args.insert(args.end(), predicted.plan_args.begin(), predicted.plan_args.end());
    // Its warnings are the prediction's own, said once already: kept in the work folder, and
    // shown only when this simulation fails.
    const std::string errors = work.File("predicted-" + tag + ".stderr");
    std::string report;
    const int status = RunBackEnd("pipetwin-sim", args, &report, errors);
    if (status != 0) {
      std::cerr << ReadAll(errors);
      if (status != 2)
        std::cerr << "pipetwin compare: the simulation of the " << tag << " end failed "
                  << "(pipetwin-sim exited with " << status << ")\n";
      throw StepFailed{status};
    }
    WriteTextFileAtomically(work.File("predicted-" + tag + ".json"), report);
    (side > 0 ? band.low_samples_per_s : band.high_samples_per_s) =
        ReportFrom(report, "simulator").samples_per_s;
  }
  return band;
}

MeasuredRuns RunStep(const CompareOptions& o, const PredictedScenario& predicted,
                     WorkDirectory& work, const Say& say,
                     const std::function<void(int)>& before_run) {
  // Several runs (--runs, or --measured given several times): the machine's speed drifts from
  // run to run; the run of median throughput is compared, every run's rate kept.
  struct Run {
    double samples_per_s;
    std::string report, trace;
  };
  std::vector<Run> done;
  for (const std::string& f : o.measured_files) {
    const std::string text = ReadAll(f);
    done.push_back({ReportFrom(text, "executor").samples_per_s, text, ""});
  }
  for (int k = 0; o.measured_files.empty() && k < o.runs; ++k) {
    if (before_run) before_run(k);
    say(o.runs > 1 ? "running for real (" + std::to_string(k + 1) + " of " +
                         std::to_string(o.runs) + ")"
                   : std::string("running for real"));
    std::vector<std::string> args = RunArgs(o, predicted);
    std::string trace;
    if (o.Timelines()) {
      trace = work.File(o.runs > 1 ? "measured-trace-" + std::to_string(k + 1) + ".json"
                                   : "measured-trace.json");
      args.insert(args.end(), {"--trace", trace});
    }
    const std::string out = Step("the run", "pipetwin-exec", args);
    done.push_back({ReportFrom(out, "executor").samples_per_s, out, trace});
  }
  MeasuredRuns measured;
  for (const Run& r : done) measured.samples_per_s.push_back(r.samples_per_s);
  std::sort(done.begin(), done.end(),
            [](const Run& a, const Run& b) { return a.samples_per_s < b.samples_per_s; });
  measured.report = done[(done.size() - 1) / 2].report;
  measured.trace = done[(done.size() - 1) / 2].trace;
  WriteTextFileAtomically(work.File("measured.json"), measured.report);
  return measured;
}

Comparison CompareStep(const std::string& predicted_report, const MeasuredRuns& measured,
                       const std::string& profile, const std::string& calibration,
                       const std::optional<Comparison::Band>& band) {
  Comparison c = CompareReports(ReportFrom(predicted_report, "simulator"),
                                ReportFrom(measured.report, "executor"));
  c.band = band;
  if (const auto& q = LoadWorkloadFile(profile).stability) AddProfileSpeed(c, q->one_core_gflops);
  c.predicted.details["profile"] = profile;
  c.predicted.details["calibration"] = calibration;
  if (measured.samples_per_s.size() > 1)
    c.measured.details["runs_samples_per_s"] = measured.samples_per_s;
  return c;
}

void WriteTimelines(const CompareOptions& o, const std::string& predicted_trace,
                    const std::string& measured_trace) {
  if (!o.Timelines()) return;
  Timeline predicted = TimelineFromChromeTrace(ParseJsonFile(predicted_trace), predicted_trace);
  Timeline measured = TimelineFromChromeTrace(ParseJsonFile(measured_trace), measured_trace);
  predicted.label = "predicted";
  measured.label = "measured";
  if (!o.trace_file.empty())
    WriteTextFileAtomically(o.trace_file,
                            JsonText(ChromeTrace(std::vector<Timeline>{predicted, measured})));
  if (!o.svg_file.empty()) WriteTextFileAtomically(o.svg_file, TimelineSvg({predicted, measured}));
}

namespace {

// DIR's NAME.compare.json files as validation rows, by name; none when DIR holds none.
std::vector<ValidationRow> ValidationRowsIn(const fs::path& dir) {
  const std::string suffix = ".compare.json";
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  std::vector<ValidationRow> rows;
  for (const std::string& file : files) {
    const std::string name = fs::path(file).filename().string();
    rows.push_back({name.substr(0, name.size() - suffix.size()), ParseJsonFile(file)});
    for (const char* key : {"predicted", "measured", "staleness_match"})
      if (!rows.back().comparison.contains(key))
        throw InputError(file, key, "missing (expected `pipetwin compare --json` output)");
  }
  return rows;
}

}  // namespace

int WriteValidationTable(const po::variables_map& vm) {
  const std::string dir = vm["table"].as<std::string>();
  if (!fs::is_directory(dir)) throw InputError(dir, "", "no such folder (--table)");
  const std::string machine = vm["machine"].as<std::string>();
  const std::string command = vm["command"].as<std::string>();
  const std::string md = (fs::path(dir) / "validation.md").string();
  const std::string csv = (fs::path(dir) / "validation.csv").string();
  std::string table;
  if (const std::vector<ValidationRow> rows = ValidationRowsIn(dir); !rows.empty()) {
    table = ValidationMarkdown(rows, machine, command);
    WriteTextFileAtomically(csv, ValidationCsv(rows));
  } else {
    // scripts/validate.sh --repeat K: one folder per repetition, rep-1 ... rep-K.
    std::vector<fs::path> folders;
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.is_directory() && entry.path().filename().string().rfind("rep-", 0) == 0)
        folders.push_back(entry.path());
    std::sort(folders.begin(), folders.end(), [](const fs::path& a, const fs::path& b) {
      return std::stoi("0" + a.filename().string().substr(4)) <
             std::stoi("0" + b.filename().string().substr(4));
    });
    std::vector<std::vector<ValidationRow>> repetitions;
    for (const fs::path& folder : folders)
      if (std::vector<ValidationRow> rows = ValidationRowsIn(folder); !rows.empty())
        repetitions.push_back(std::move(rows));
    if (repetitions.empty())
      throw InputError(dir, "", "no NAME.compare.json files, nor rep-K folders of them (--table)");
    table = ValidationRepeatMarkdown(repetitions, machine, command);
    WriteTextFileAtomically(csv, ValidationRepeatCsv(repetitions));
  }
  WriteTextFileAtomically(md, table);
  std::cout << table << "\nwrote " << md << " and " << csv << "\n";
  return 0;
}

}  // namespace pipetwin::cli
