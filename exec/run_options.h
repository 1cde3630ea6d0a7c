// The options of `pipetwin run` and `pipetwin profile`, defined once for the front end (which
// prints their help and rejects bad words before anything starts) and for pipetwin-exec (which
// acts on them). Header-only and free of LibTorch, so the front end can include it.
//
//   po::variables_map vm = ParseCommandLine("run", RunOptionsDescription(), RunPositional(), args);
//   RunOptions o = ReadRunOptions(vm);     // throws InputError on out-of-range values
#pragma once

#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "partition/util/error.h"

namespace pipetwin::exec {

namespace po = boost::program_options;

inline const char* RunUsage() { return "SCENARIO [--plan PLAN] [--json] [--trace F] [options]"; }
inline const char* RunDescription() {
  return "Train the plan for real with LibTorch: one process per worker (launched here, or\n"
         "started by torchrun/Slurm with RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and\n"
         "MASTER_PORT set), c10d Gloo between them, the schedule's op lists run in order. Prints\n"
         "the measured report: samples/s in steady state, per-worker busy/idle time, memory by\n"
         "category, the weight version each micro-batch used.";
}

inline po::options_description RunOptionsDescription() {
  po::options_description desc("options");
  desc.add_options()
      ("plan", po::value<std::string>(), "plan file (else the scenario's plan or planner)")
      ("json", "report as JSON on stdout")
      ("trace", po::value<std::string>(), "write a Chrome trace of the real run to FILE")
      ("iterations", po::value<int>(), "weight updates (batches) to run (default: scenario's)")
      ("warmup", po::value<int>()->default_value(1), "iterations left out of the steady state")
      ("seed", po::value<int>()->default_value(1), "seed of weights and synthetic data")
      ("data", po::value<std::string>()->default_value("synthetic"),
       "synthetic|fashion-mnist (the MLP on Debian's dataset-fashion-mnist)")
      ("data-dir", po::value<std::string>()->default_value("/usr/share/datasets/fashion-mnist"),
       "folder of the Fashion-MNIST IDX files (gzipped or not)")
      ("evaluate", "after training, measure accuracy on the test set through the pipeline")
      ("no-weight-stashing", "pipedream only: backwards use the latest weights (for comparison)")
      ("threads", po::value<int>(), "intra-op threads per worker (default: cores / workers)")
      ("default-scheduler", "keep workers under SCHED_OTHER where they outnumber the cores "
       "(else SCHED_RR, which the simulator models)")
      ("timeout", po::value<double>()->default_value(30), "seconds a worker waits for a peer")
      ("dump-weights", po::value<std::string>(), "write every weight version to DIR (tests)")
      ("check", "only check that the executor can run the scenario (exit 0) or say why not (2)");
  return desc;
}

// `desc` with the hidden positional argument `name` added (for parsing, not for help).
inline po::options_description WithPositional(po::options_description desc, const char* name) {
  desc.add_options()(name, po::value<std::string>(), "positional argument");
  return desc;
}

inline po::positional_options_description RunPositional() {
  po::positional_options_description p;
  p.add("scenario", 1);
  return p;
}

// What a run was asked to do.
struct RunOptions {
  std::string scenario;
  std::string plan_file;        // empty: the scenario's
  bool json = false;
  std::string trace_file;       // empty: none
  bool check_only = false;      // --check: refuse or accept, run nothing
  int iterations = 0;           // 0: the scenario's
  int warmup_iterations = 1;
  int seed = 1;
  std::string data = "synthetic";
  std::string data_dir;
  bool evaluate = false;
  bool weight_stashing = true;
  int threads = 0;              // 0: cores / local workers
  bool round_robin = true;      // SCHED_RR where the workers outnumber the cores (cpu_policy.h)
  double timeout_s = 30;
  std::string dump_weights_dir;
};

// Reads the parsed options; the scenario must be given. Throws InputError on bad values.
inline RunOptions ReadRunOptions(const po::variables_map& vm) {
  RunOptions o;
  if (!vm.count("scenario")) throw InputError("pipetwin run: expected a SCENARIO file");
  o.scenario = vm["scenario"].as<std::string>();
  if (vm.count("plan")) o.plan_file = vm["plan"].as<std::string>();
  o.json = vm.count("json") > 0;
  if (vm.count("trace")) o.trace_file = vm["trace"].as<std::string>();
  o.check_only = vm.count("check") > 0;
  if (vm.count("iterations")) o.iterations = vm["iterations"].as<int>();
  o.warmup_iterations = vm["warmup"].as<int>();
  o.seed = vm["seed"].as<int>();
  o.data = vm["data"].as<std::string>();
  o.data_dir = vm["data-dir"].as<std::string>();
  o.evaluate = vm.count("evaluate") > 0;
  o.weight_stashing = vm.count("no-weight-stashing") == 0;
  if (vm.count("threads")) o.threads = vm["threads"].as<int>();
  o.round_robin = vm.count("default-scheduler") == 0;
  o.timeout_s = vm["timeout"].as<double>();
  if (vm.count("dump-weights")) o.dump_weights_dir = vm["dump-weights"].as<std::string>();
  if (vm.count("iterations") && o.iterations < 1)
    throw InputError("pipetwin run: --iterations must be >= 1, got " +
                     std::to_string(o.iterations));
  if (o.warmup_iterations < 0)
    throw InputError("pipetwin run: --warmup must be >= 0, got " +
                     std::to_string(o.warmup_iterations));
  if (o.data != "synthetic" && o.data != "fashion-mnist")
    throw InputError("pipetwin run: --data must be synthetic or fashion-mnist, got " + o.data);
  if (vm.count("threads") && o.threads < 1)
    throw InputError("pipetwin run: --threads must be >= 1, got " + std::to_string(o.threads));
  if (!(o.timeout_s > 0))
    throw InputError("pipetwin run: --timeout must be > 0 seconds");
  return o;
}

inline const char* ProfileUsage() { return "WORKLOAD [--batch B] [--output FILE] [--json]"; }
inline const char* ProfileDescription() {
  return "Measure each layer's forward and backward time (the mean of repeated runs after\n"
         "warm-up, the slowest tenth left out), activation and parameter bytes on this machine\n"
         "with LibTorch, and write a workload file that the planners and the simulator take.\n"
         "WORKLOAD is a scenario file or a workload source ({\"generator\": \"mlp\", ...}).";
}

inline po::options_description ProfileOptionsDescription() {
  po::options_description desc("options");
  desc.add_options()
      ("batch", po::value<int>(), "samples per run (default: the workload's reference batch)")
      ("output", po::value<std::string>(), "workload file to write")
      ("json", "print the measured workload as JSON")
      ("repeats", po::value<int>()->default_value(10),
       "timed runs per layer (their mean without the slowest tenth)")
      ("warmup", po::value<int>()->default_value(3), "untimed runs first")
      ("min-seconds", po::value<double>()->default_value(0),
       "after --repeats, keep timing runs until they have taken S seconds in all (a longer "
       "window averages over more of the machine's moods)")
      ("threads", po::value<int>()->default_value(1), "intra-op threads (a worker's share)")
      ("concurrent", po::value<int>()->default_value(1),
       "time the layers while N-1 other processes compute the same layers on this machine's "
       "cores, as N pipeline workers sharing it do (N > cores: time-shared, the layers timed "
       "by their thread's CPU time; at most 4 per core)")
      ("load-cpu", po::value<int>(), "(internal) be one of those load processes, on this core");
  return desc;
}

inline po::positional_options_description ProfilePositional() {
  po::positional_options_description p;
  p.add("workload", 1);
  return p;
}

struct ProfileOptions {
  std::string workload;
  int batch = 0;  // 0: the workload's reference batch
  std::string output_file;
  bool json = false;
  int repeats = 10;
  int warmup = 3;
  double min_seconds = 0;  // timed runs go on until they have taken this long
  int threads = 1;
  int concurrent = 1;  // processes computing at once, this one included
  int load_cpu = -1;   // >= 0: a load process of another profile, pinned to this core
};

inline ProfileOptions ReadProfileOptions(const po::variables_map& vm) {
  ProfileOptions o;
  if (!vm.count("workload")) throw InputError("pipetwin profile: expected a WORKLOAD file");
  o.workload = vm["workload"].as<std::string>();
  if (vm.count("batch")) o.batch = vm["batch"].as<int>();
  if (vm.count("output")) o.output_file = vm["output"].as<std::string>();
  o.json = vm.count("json") > 0;
  o.repeats = vm["repeats"].as<int>();
  o.warmup = vm["warmup"].as<int>();
  o.min_seconds = vm["min-seconds"].as<double>();
  o.threads = vm["threads"].as<int>();
  o.concurrent = vm["concurrent"].as<int>();
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

}  // namespace pipetwin::exec
