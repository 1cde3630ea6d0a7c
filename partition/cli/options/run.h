// The options of `pipetwin run`, defined once for the front end (which prints their help and
// rejects bad words before anything starts) and for pipetwin-exec (which acts on them).
// Header-only and free of LibTorch.
//
//   po::variables_map vm = ParseCommandLine("run", RunOptionsDescription(), RunPositional(), args);
//   RunOptions o = ReadRunOptions(vm);     // throws InputError on out-of-range values
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "partition/cli/parse.h"
#include "partition/util/error.h"
#include "partition/util/files.h"

namespace pipetwin::cli {

inline const char* RunUsage() { return "SCENARIO [--plan PLAN] [--json] [--trace F] [options]"; }
inline const char* RunDescription() {
  return "Train the plan for real with LibTorch: one process per worker (launched here, or\n"
         "started by torchrun/Slurm with RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and\n"
         "MASTER_PORT set), c10d Gloo between them on CPUs and NCCL on GPUs, the schedule's op\n"
         "lists run in order. Prints the measured report: samples/s in steady state, per-worker\n"
         "busy/idle time, memory by category, the weight version each micro-batch used.";
}

inline po::options_description RunOptionsDescription() {
  po::options_description desc("options");
  desc.add_options()
      ("plan", po::value<std::string>(), "plan file (else the scenario's plan or planner)")
      ("json", "report as JSON on stdout")
      ("trace", po::value<std::string>(), "write a Chrome trace of the real run to FILE")
      ("force", "replace existing output files (never one of the command's inputs)")
      ("iterations", po::value<int>(), "weight updates (batches) to run (default: scenario's)")
      ("warmup", po::value<int>()->default_value(1), "iterations left out of the steady state")
      ("seed", po::value<int>()->default_value(1), "seed of weights and synthetic data")
      ("data", po::value<std::string>()->default_value("synthetic"),
       "synthetic|fashion-mnist (the MLP on Debian's dataset-fashion-mnist)")
      ("data-dir", po::value<std::string>()->default_value("/usr/share/datasets/fashion-mnist"),
       "folder of the Fashion-MNIST IDX files (gzipped or not)")
      ("evaluate", "after training, measure accuracy on the test set through the pipeline")
      ("no-weight-stashing", "pipedream only: backwards on the latest weights, each forward rerun "
       "first (sets the scenario's training.weight_stashing to false; for comparison)")
      ("device", po::value<std::string>()->default_value("cpu"),
       "cpu|cuda: where workers compute. cuda: GPU LOCAL_RANK of the machine, NCCL between "
       "workers on their own GPUs; workers beyond the GPUs share one, messages through host "
       "memory over Gloo (docs/executor.md)")
      ("precision", po::value<std::string>()->default_value("fp32"),
       "fp32|bf16|fp16: with --device cuda, forwards under CUDA autocast to bf16 or fp16; "
       "weights, gradients, optimizer and messages stay fp32")
      ("threads", po::value<int>(), "intra-op threads per worker (default: cores / workers)")
      ("default-scheduler", "keep workers under SCHED_OTHER where they outnumber the cores "
       "(else SCHED_RR, which the simulator models)")
      ("timeout", po::value<double>()->default_value(25),
       "seconds a worker waits for a peer (25: a lost or hung worker ends the run within 30 s)")
      ("verbose", "also print the communication library's own messages (c10d, Gloo), which "
       "are otherwise folded into pipetwin's one line")
      ("check", "only check that the executor can run the scenario and this machine can hold it "
       "(tasks, memory, workers per CPU): exit 0, or say why not (2)")
      ("rank-prefix", po::value<std::string>(),
       "start each worker as PREFIX WORDS... pipetwin-exec run ... (words separated by spaces; "
       "RANK and WORLD_SIZE in its environment): the prefix places the rank, e.g. in a network "
       "namespace (scripts/netns.sh), and rank 0 hosts the store");
  return desc;
}

inline po::positional_options_description RunPositional() {
  po::positional_options_description p;
  p.add("scenario", 1);
  return p;
}

inline po::variables_map ParseRunWords(const Args& args) {
  po::options_description parsed = WithPositional(RunOptionsDescription(), "scenario");
  // The tests' own option, parsed but not in --help.
  parsed.add_options()("dump-weights", po::value<std::string>(), "");
  return ParseCommandLine("run", parsed, RunPositional(), args);
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
  std::string device = "cpu";   // "cpu" or "cuda" (exec/runtime/device.h)
  std::string precision = "fp32";  // "fp32", "bf16", "fp16" (CUDA autocast)
  int threads = 0;              // 0: cores / local workers
  bool round_robin = true;      // SCHED_RR where the workers outnumber the cores (cpu_policy.h)
  double timeout_s = 25;
  bool verbose = false;         // the communication library's own messages too
  std::string dump_weights_dir;
  std::vector<std::string> rank_prefix;  // the words before each worker's command (launcher.h)
};

// Reads the parsed options; the scenario must be given. Throws InputError on bad values.
inline RunOptions ReadRunOptions(const po::variables_map& vm) {
  RunOptions o;
  if (!vm.count("scenario")) throw InputError("pipetwin run: expected a SCENARIO file");
  o.scenario = vm["scenario"].as<std::string>();
  if (vm.count("plan")) o.plan_file = vm["plan"].as<std::string>();
  o.json = vm.count("json") > 0;
  if (vm.count("trace")) o.trace_file = vm["trace"].as<std::string>();
  if (!o.trace_file.empty())
    CheckOutputPath(o.trace_file, "--trace", vm.count("force") > 0, {o.scenario, o.plan_file});
  o.check_only = vm.count("check") > 0;
  if (vm.count("iterations")) o.iterations = vm["iterations"].as<int>();
  o.warmup_iterations = vm["warmup"].as<int>();
  o.seed = vm["seed"].as<int>();
  o.data = vm["data"].as<std::string>();
  o.data_dir = vm["data-dir"].as<std::string>();
  o.evaluate = vm.count("evaluate") > 0;
  o.weight_stashing = vm.count("no-weight-stashing") == 0;
  if (vm.count("threads")) o.threads = vm["threads"].as<int>();
  o.device = vm["device"].as<std::string>();
  o.precision = vm["precision"].as<std::string>();
  o.round_robin = vm.count("default-scheduler") == 0;
  o.timeout_s = vm["timeout"].as<double>();
  o.verbose = vm.count("verbose") > 0;
  if (vm.count("dump-weights")) o.dump_weights_dir = vm["dump-weights"].as<std::string>();
  if (vm.count("rank-prefix")) {
    std::istringstream words(vm["rank-prefix"].as<std::string>());
    for (std::string w; words >> w;) o.rank_prefix.push_back(w);
    if (o.rank_prefix.empty()) throw InputError("pipetwin run: --rank-prefix needs a command");
  }
  if (vm.count("iterations") && o.iterations < 1)
    throw InputError("pipetwin run: --iterations must be >= 1, got " +
                     std::to_string(o.iterations));
  if (o.warmup_iterations < 0)
    throw InputError("pipetwin run: --warmup must be >= 0, got " +
                     std::to_string(o.warmup_iterations));
  if (o.data != "synthetic" && o.data != "fashion-mnist")
    throw InputError("pipetwin run: --data must be synthetic or fashion-mnist, got " + o.data);
  if (o.device != "cpu" && o.device != "cuda")
    throw InputError("pipetwin run: --device must be cpu or cuda, got " + o.device);
  if (o.precision != "fp32" && o.precision != "bf16" && o.precision != "fp16")
    throw InputError("pipetwin run: --precision must be fp32, bf16 or fp16, got " + o.precision);
  if (o.precision != "fp32" && o.device != "cuda")
    throw InputError("pipetwin run: --precision " + o.precision + " needs --device cuda (mixed "
                     "precision is CUDA autocast)");
  if (vm.count("threads") && o.threads < 1)
    throw InputError("pipetwin run: --threads must be >= 1, got " + std::to_string(o.threads));
  if (!(o.timeout_s > 0))
    throw InputError("pipetwin run: --timeout must be > 0 seconds");
  return o;
}

}  // namespace pipetwin::cli
