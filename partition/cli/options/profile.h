// The options of `pipetwin profile`, defined once for the front end and for pipetwin-exec.
// Header-only and free of LibTorch.
//
//   po::variables_map vm = ParseCommandLine("profile", WithPositional(ProfileOptionsDescription(),
//                                           "workload"), ProfilePositional(), args);
//   ProfileOptions o = ReadProfileOptions(vm);   // throws InputError on out-of-range values
#pragma once

#include <string>

#include <boost/program_options.hpp>

#include "partition/cli/options/run.h"
#include "partition/cli/parse.h"
#include "partition/util/error.h"
#include "partition/util/files.h"

namespace pipetwin::cli {

inline const char* ProfileUsage() { return "WORKLOAD [--batch B] [--output FILE] [--json]"; }
inline const char* ProfileDescription() {
  return "Measure each layer's forward and backward time (the mean of repeated runs after\n"
         "warm-up), activation and parameter bytes on this machine with LibTorch, and write a\n"
         "workload file that the planners and the simulator take.\n"
         "WORKLOAD is a scenario file or a workload source ({\"generator\": \"mlp\", ...}).";
}

inline po::options_description ProfileOptionsDescription() {
  po::options_description desc("options");
  desc.add_options()
      ("batch", po::value<int>(), "samples per run (default: the workload's reference batch)")
      ("output", po::value<std::string>(), "workload file to write")
      ("force", "replace existing output files (never one of the command's inputs)")
      ("json", "print the measured workload as JSON")
      ("repeats", po::value<int>()->default_value(10),
       "timed runs per layer (their mean)")
      ("warmup", po::value<int>()->default_value(3),
       "untimed runs first (more, up to the first optimizer step, where a step follows several)")
      ("min-seconds", po::value<double>()->default_value(0),
       "after --repeats, keep timing runs until they have taken S seconds in all (a longer "
       "window averages over more of the machine's moods)")
      ("target-spread", po::value<double>()->default_value(2),
       "time in rounds until the training step's mean is known within this many percent (the "
       "half-width of its 95% interval over the rounds); 0: no stopping rule, --repeats and "
       "--min-seconds alone")
      ("round-seconds", po::value<double>()->default_value(0.5),
       "each round's passes take at least S seconds (a round is one sample of the machine's "
       "speed; every time's spread is over the rounds)")
      ("max-seconds", po::value<double>()->default_value(30),
       "with --target-spread, stop after S seconds of timing even if the mean has not settled "
       "(the profile then says so)")
      ("device", po::value<std::string>()->default_value("cpu"),
       "cpu|cuda: time the layers on this machine's CPU, or on its GPU (LOCAL_RANK's, else the "
       "first) by CUDA events")
      ("precision", po::value<std::string>()->default_value("fp32"),
       "fp32|bf16|fp16: with --device cuda, forwards under CUDA autocast (as `run --precision`)")
      ("whole-model",
       "time every layer in passes of the whole model, even where WORKLOAD is a scenario "
       "with a plan (whose stages are otherwise timed apart, each as its worker runs it)")
      ("threads", po::value<int>()->default_value(1), "intra-op threads (a worker's share)")
      ("concurrent", po::value<int>()->default_value(1),
       "time the layers while N-1 other processes compute the same layers on this machine's "
       "cores, as N pipeline workers sharing it do (N > cores: time-shared, the layers timed "
       "by their thread's CPU time; at most 4 per core)");
  return desc;
}

inline po::positional_options_description ProfilePositional() {
  po::positional_options_description p;
  p.add("workload", 1);
  return p;
}

inline po::variables_map ParseProfileWords(const Args& args) {
  po::options_description parsed = WithPositional(ProfileOptionsDescription(), "workload");
  // How --concurrent starts its load processes (one per core), parsed but not in --help.
  parsed.add_options()("load-cpu", po::value<int>(), "");
  return ParseCommandLine("profile", parsed, ProfilePositional(), args);
}

struct ProfileOptions {
  std::string workload;
  int batch = 0;  // 0: the workload's reference batch
  std::string output_file;
  bool json = false;
  int repeats = 10;
  int warmup = 3;
  double min_seconds = 0;  // timed runs go on until they have taken this long
  double target_spread = 0.02;  // relative half-width of the step's 95% interval; 0: no rule
  double round_seconds = 0.5;
  double max_seconds = 30;
  std::string device = "cpu";
  std::string precision = "fp32";
  int threads = 1;
  int concurrent = 1;  // processes computing at once, this one included
  int load_cpu = -1;   // >= 0: a load process of another profile, pinned to this core
  bool whole_model = false;  // a plan's stages timed in passes of the whole model, not apart
};

inline ProfileOptions ReadProfileOptions(const po::variables_map& vm) {
  ProfileOptions o;
  if (!vm.count("workload")) throw InputError("pipetwin profile: expected a WORKLOAD file");
  o.workload = vm["workload"].as<std::string>();
  if (vm.count("batch")) o.batch = vm["batch"].as<int>();
  if (vm.count("output")) o.output_file = vm["output"].as<std::string>();
  if (!o.output_file.empty())
    CheckOutputPath(o.output_file, "--output", vm.count("force") > 0, {o.workload});
  o.json = vm.count("json") > 0;
  o.repeats = vm["repeats"].as<int>();
  o.warmup = vm["warmup"].as<int>();
  o.min_seconds = vm["min-seconds"].as<double>();
  const double target_percent = vm["target-spread"].as<double>();
  if (!(target_percent >= 0 && target_percent <= 100))
    throw InputError("pipetwin profile: --target-spread must be within 0..100 (percent), got " +
                     std::to_string(target_percent));
  o.target_spread = target_percent / 100;
  o.round_seconds = vm["round-seconds"].as<double>();
  o.max_seconds = vm["max-seconds"].as<double>();
  if (!(o.round_seconds >= 0 && o.round_seconds <= 60))
    throw InputError("pipetwin profile: --round-seconds must be within 0..60, got " +
                     std::to_string(o.round_seconds));
  if (!(o.max_seconds >= 0 && o.max_seconds <= 3600))
    throw InputError("pipetwin profile: --max-seconds must be within 0..3600, got " +
                     std::to_string(o.max_seconds));
  o.whole_model = vm.count("whole-model") > 0;
  o.threads = vm["threads"].as<int>();
  o.concurrent = vm["concurrent"].as<int>();
  o.device = vm["device"].as<std::string>();
  o.precision = vm["precision"].as<std::string>();
  if (o.device != "cpu" && o.device != "cuda")
    throw InputError("pipetwin profile: --device must be cpu or cuda, got " + o.device);
  if (o.precision != "fp32" && o.precision != "bf16" && o.precision != "fp16")
    throw InputError("pipetwin profile: --precision must be fp32, bf16 or fp16, got " +
                     o.precision);
  if (o.precision != "fp32" && o.device != "cuda")
    throw InputError("pipetwin profile: --precision " + o.precision + " needs --device cuda");
  // Workers sharing a GPU take turns on it (the simulator runs their ops one at a time): a
  // layer is timed alone.
  if (o.device == "cuda" && o.concurrent > 1)
    throw InputError("pipetwin profile: --concurrent is for CPUs; on a GPU the layers are timed "
                     "alone");
  if (vm.count("load-cpu")) o.load_cpu = vm["load-cpu"].as<int>();
  if (o.concurrent < 1)
    throw InputError("pipetwin profile: --concurrent must be >= 1, got " +
                     std::to_string(o.concurrent));
  if (vm.count("batch") && o.batch < 1)
    throw InputError("pipetwin profile: --batch must be >= 1, got " + std::to_string(o.batch));
  if (o.repeats < 1) throw InputError("pipetwin profile: --repeats must be >= 1");
  if (o.warmup < 0) throw InputError("pipetwin profile: --warmup must be >= 0");
  if (!(o.min_seconds >= 0 && o.min_seconds <= 600))
    throw InputError("pipetwin profile: --min-seconds must be within 0..600, got " +
                     std::to_string(o.min_seconds));
  if (o.threads < 1) throw InputError("pipetwin profile: --threads must be >= 1");
  return o;
}

}  // namespace pipetwin::cli
