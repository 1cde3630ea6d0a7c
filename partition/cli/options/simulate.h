// The options of `pipetwin simulate`, defined once for the front end (which answers --help and
// bad words without loading SimGrid) and for pipetwin-sim (which simulates).
//
//   const po::variables_map vm = ParseSimulateWords(args);   // throws InputError on bad words
//   const SimulateOptions o = ReadSimulateOptions(vm);
#pragma once

#include <string>
#include <vector>

#include "partition/cli/parse.h"
#include "partition/util/error.h"
#include "partition/util/files.h"

namespace pipetwin::cli {

inline const char* SimulateUsage() {
  return "[SCENARIO] [--plan PLAN] [--json|--csv] [--trace F] [--svg F] [--strict]";
}
inline const char* SimulateDescription() {
  return "Predict throughput, per-device memory and weight staleness with a SimGrid model of GPUs,\n"
         "links and NICs: every worker runs its op list of the plan's schedule; transfers and\n"
         "all-reduces share the cluster's links. Without SCENARIO, the embedded default scenario.\n"
         "A plan that needs more memory than a device has is simulated anyway, with a warning\n"
         "(--strict: exit 2).";
}

inline po::options_description SimulateOptionsDescription() {
  po::options_description desc("options");
  desc.add_options()
      ("plan", po::value<std::string>(), "plan file (else the scenario's plan or planner)")
      ("json", "report as JSON on stdout")
      ("csv", "report as one CSV row (with its header) on stdout")
      ("trace", po::value<std::string>(), "write a Chrome trace (Perfetto) to FILE")
      ("svg", po::value<std::string>(), "write the simulated timeline to FILE")
      ("strict", "fail (exit 2) when a device's memory is exceeded")
      ("force", "replace existing output files (never one of the command's inputs)")
      ("allreduce-buckets", po::value<int>(),
       "gradient all-reduce buckets, launched during the backward before the all-reduce "
       "(overrides the scenario's training.allreduce_buckets; 1: after that backward)")
      ("no-weight-stashing", "pipedream only: backwards on the latest weights, each forward rerun "
       "first (sets the scenario's training.weight_stashing to false, as `run` does)")
      ("warmup", po::value<int>()->default_value(1),
       "iterations left out of the steady state (as `pipetwin run --warmup`)")
      ("no-timeline", "leave the per-device memory timelines out of --json")
      ("collectives", po::value<std::string>()->default_value("phases"),
       "how a data-parallel ring all-reduce is simulated: phases (one flow per member and ring "
       "phase, linear in the group) or steps (every ring step a message: quadratic, the "
       "reference)")
      ("no-symmetry", "simulate every data-parallel replica, even where identical replicas "
                      "would repeat each other's events exactly (by default one group of them "
                      "is simulated and stands for the rest)")
      ("bench", "print the simulator's speed (activities/s, wall time, peak RSS) on stderr, "
                "beside SimGrid alone on the same platform");
  return desc;
}

inline po::variables_map ParseSimulateWords(const Args& args) {
  po::positional_options_description positional;
  positional.add("scenario", -1);
  po::options_description parsed = SimulateOptionsDescription();
  parsed.add_options()("scenario", po::value<std::vector<std::string>>(), "scenario file");
  return ParseCommandLine("simulate", parsed, positional, args);
}

struct SimulateOptions {
  std::string scenario;     // empty: the embedded default
  std::string plan_file;    // empty: the scenario's
  bool json = false, csv = false, strict = false, timeline = true, bench = false, force = false;
  std::string trace_file, svg_file;
  int allreduce_buckets = 0;  // 0: the scenario's
  bool weight_stashing = true;  // not --no-weight-stashing
  int warmup_iterations = 1;
  bool collective_steps = false;  // --collectives steps
  bool symmetry = true;           // not --no-symmetry
};

inline SimulateOptions ReadSimulateOptions(const po::variables_map& vm) {
  SimulateOptions o;
  std::vector<std::string> scenarios;
  if (vm.count("scenario")) scenarios = vm["scenario"].as<std::vector<std::string>>();
  if (scenarios.size() > 1)
    throw InputError("pipetwin simulate: expected one scenario, got " +
                     std::to_string(scenarios.size()));
  if (!scenarios.empty()) o.scenario = scenarios[0];
  if (vm.count("plan")) o.plan_file = vm["plan"].as<std::string>();
  o.json = vm.count("json") > 0;
  o.csv = vm.count("csv") > 0;
  if (o.json && o.csv) throw InputError("pipetwin simulate: --json and --csv exclude each other");
  o.strict = vm.count("strict") > 0;
  o.timeline = vm.count("no-timeline") == 0;
  o.bench = vm.count("bench") > 0;
  const std::string collectives = vm["collectives"].as<std::string>();
  if (collectives != "phases" && collectives != "steps")
    throw InputError("pipetwin simulate: --collectives expects phases or steps, got \"" +
                     collectives + "\"");
  o.collective_steps = collectives == "steps";
  o.symmetry = vm.count("no-symmetry") == 0;
  if (vm.count("trace")) o.trace_file = vm["trace"].as<std::string>();
  if (vm.count("svg")) o.svg_file = vm["svg"].as<std::string>();
  o.force = vm.count("force") > 0;
  for (const auto& [file, option] : {std::pair{o.trace_file, "--trace"}, {o.svg_file, "--svg"}})
    if (!file.empty()) CheckOutputPath(file, option, o.force, {o.scenario, o.plan_file});
  if (vm.count("allreduce-buckets")) {
    o.allreduce_buckets = vm["allreduce-buckets"].as<int>();
    if (o.allreduce_buckets < 1)
      throw InputError("pipetwin simulate: --allreduce-buckets must be >= 1, got " +
                       std::to_string(o.allreduce_buckets));
  }
  o.weight_stashing = vm.count("no-weight-stashing") == 0;
  o.warmup_iterations = vm["warmup"].as<int>();
  if (o.warmup_iterations < 0)
    throw InputError("pipetwin simulate: --warmup must be >= 0, got " +
                     std::to_string(o.warmup_iterations));
  return o;
}

}  // namespace pipetwin::cli
