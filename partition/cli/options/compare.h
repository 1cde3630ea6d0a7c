// The options of `pipetwin compare`.
//
//   const po::variables_map vm = ParseCompareWords(args);
//   const CompareOptions o = ReadCompareOptions(vm);   // throws InputError on bad values
#pragma once

#include <string>
#include <vector>

#include "partition/cli/parse.h"

namespace pipetwin::cli {

inline const char* CompareUsage() {
  return "SCENARIO [--json] [--trace F] [--svg F] [--profile W] [--calibration C] [--measured R]\n"
         "                        [--keep DIR]\n"
         "       pipetwin compare --table DIR [--machine TEXT] [--command TEXT]";
}
inline const char* CompareDescription() {
  return "Predicted against measured on this machine: profile the workload here (its layers timed\n"
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
}

inline po::options_description CompareOptionsDescription() {
  po::options_description desc("options");
  desc.add_options()
      ("json", "predicted, measured and relative_error as one JSON object")
      ("trace", po::value<std::string>(), "both timelines in one Chrome trace (two process groups)")
      ("svg", po::value<std::string>(), "both timelines, predicted above measured")
      ("force", "replace existing output files (never one of the command's inputs)")
      ("profile", po::value<std::string>(), "reuse this workload file (pipetwin profile --output)")
      ("calibration", po::value<std::string>(),
       "reuse this cluster file (pipetwin calibrate --output)")
      ("measured", po::value<std::vector<std::string>>()->composing(),
       "use this measured report (pipetwin run --json) instead of running here (repeat it for "
       "several runs: the median is compared); one without workers, devices and stages "
       "(scripts/bench_vs_torch.py --report: torch's runtime) compares throughput alone")
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
      ("profile-target-spread", po::value<double>()->default_value(2),
       "profile: in rounds until the training step is known within this many percent (pipetwin "
       "profile --target-spread; the prediction's band comes from that spread)")
      ("profile-max-seconds", po::value<double>()->default_value(10),
       "profile: ...or until S seconds of timing (pipetwin profile --max-seconds); with --runs N, "
       "each of the N profiles, one before each run")
      ("calibration-target-spread", po::value<double>()->default_value(2),
       "calibrate: in rounds until the compute rate, message time and bandwidth are each known "
       "within this many percent (pipetwin calibrate --target-spread; the band carries it)")
      ("calibration-max-seconds", po::value<double>()->default_value(15),
       "calibrate: ...or until S seconds (pipetwin calibrate --max-seconds)")
      ("runs", po::value<int>()->default_value(1),
       "run the executor N times and compare with the run of median throughput (all N rates "
       "are reported)")
      ("threads", po::value<int>(), "intra-op threads per worker (default: cores / workers)")
      ("device", po::value<std::string>()->default_value("cpu"),
       "cpu|cuda: profile, calibrate and run on this machine's CPUs or its GPUs (as `run "
       "--device`; workers beyond the GPUs share them)")
      ("precision", po::value<std::string>()->default_value("fp32"),
       "fp32|bf16|fp16: with --device cuda, profile and run under CUDA autocast")
      ("timeout", po::value<double>()->default_value(25),
       "seconds a worker waits for a peer (25: a lost or hung worker ends the run within 30 s)");
  return desc;
}

inline po::variables_map ParseCompareWords(const Args& args) {
  po::positional_options_description positional;
  positional.add("scenario", 1);
  return ParseCommandLine("compare", WithPositional(CompareOptionsDescription(), "scenario"),
                          positional, args);
}

struct CompareOptions {
  std::string scenario;
  bool json = false;
  std::string trace_file, svg_file;                 // empty: none
  std::string profile_file, calibration_file;       // empty: measured here
  std::vector<std::string> measured_files;          // empty: run here
  int hosts = 1;
  double link_gbps = 0, link_latency_us = 50;
  std::string keep_dir;                             // empty: a temporary folder
  int warmup = 1, repeats = 20, runs = 1;
  double profile_seconds = 2;
  double profile_target_spread = 2;  // percent
  double profile_max_seconds = 10;
  double calibration_target_spread = 2;  // percent
  double calibration_max_seconds = 15;
  int threads = 0;                                  // 0: the executor's default
  std::string device = "cpu", precision = "fp32";   // as `run --device --precision`
  double timeout_s = 25;

  bool Timelines() const { return !trace_file.empty() || !svg_file.empty(); }
};

// Reads and checks the options of a comparison (not --table); the files named must exist.
CompareOptions ReadCompareOptions(const po::variables_map& vm);

}  // namespace pipetwin::cli
