// `pipetwin from-megatron [--cluster PRESET] [--nodes N] -- MEGATRON-LM ARGUMENTS...`: the
// scenario of a Megatron-LM run (pretrain_gpt.py's arguments), on standard output, for plan,
// simulate and sweep; its shape and per-GPU memory on standard error.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <map>
#include <sstream>
#include <iostream>
#include <regex>

#include "partition/cli/commands.h"
#include "partition/cli/parse.h"
#include "partition/model/cluster.h"
#include "partition/util/error.h"
#include "partition/util/json_writer.h"
#include "workloads/megatron/megatron_memory.h"
#include "workloads/megatron/megatron_spec.h"
#include "workloads/megatron/search.h"
#include "partition/cli/compare/work_directory.h"
#include "partition/cli/handover.h"
#include "partition/util/files.h"
#include "partition/util/json_reader.h"
#include "partition/util/limits.h"

namespace pipetwin::cli {

namespace {

const char* kUsage = "[--cluster PRESET] [--nodes N] [--iterations K] -- MEGATRON-ARGS...";
const char* kDescription =
    "Write the scenario of a Megatron-LM training run, given the arguments of its launch line\n"
    "(pretrain_gpt.py's --num-layers, --hidden-size, --tensor-model-parallel-size, ...), on\n"
    "standard output; plan, simulate and sweep take it. Ranks are placed as Megatron orders\n"
    "them: tensor-parallel innermost (inside a server), then data-parallel, then pipeline\n"
    "(--use-tp-pp-dp-mapping among Megatron's arguments: pipeline before data-parallel).\n"
    "An argument it does not model is named in a warning on standard error, with the run's\n"
    "shape and the first stage's per-GPU memory against the device's. A flag given again\n"
    "overrides the earlier value, as in Megatron-LM (argparse), with a warning.";

// The Megatron-LM arguments modelled; every other one is warned about.
po::options_description MegatronOptions() {
  po::options_description m("Megatron-LM arguments");
  m.add_options()
      ("num-layers", po::value<int>(), "transformer layers")
      ("hidden-size", po::value<int>(), "")
      ("ffn-hidden-size", po::value<int>(), "")
      ("num-attention-heads", po::value<int>(), "")
      ("num-query-groups", po::value<int>(), "")
      ("group-query-attention", "")
      ("seq-length", po::value<int>(), "")
      ("max-position-embeddings", po::value<int>(), "")
      ("vocab-size", po::value<int>(), "")
      ("padded-vocab-size", po::value<int>(), "")
      ("make-vocab-size-divisible-by", po::value<int>(), "")
      ("micro-batch-size", po::value<int>(), "")
      ("global-batch-size", po::value<int>(), "")
      ("tensor-model-parallel-size", po::value<int>(), "")
      ("pipeline-model-parallel-size", po::value<int>(), "")
      ("num-layers-per-virtual-pipeline-stage", po::value<int>(), "")
      ("virtual-pipeline-model-parallel-size", po::value<int>(), "")
      ("num-virtual-stages-per-pipeline-rank", po::value<int>(), "")
      ("sequence-parallel", "")
      ("recompute-granularity", po::value<std::string>(), "")
      ("recompute-method", po::value<std::string>(), "")
      ("recompute-num-layers", po::value<int>(), "")
      ("recompute-activations", "")
      ("use-distributed-optimizer", "")
      ("bf16", "")
      ("fp16", "")
      ("grad-reduce-in-bf16", "")
      ("accumulate-allreduce-grads-in-fp32", "")
      ("swiglu", "")
      ("normalization", po::value<std::string>(), "")
      ("position-embedding-type", po::value<std::string>(), "")
      ("disable-bias-linear", "")
      ("untie-embeddings-and-output-weights", "")
      ("attention-dropout", po::value<double>(), "")
      ("hidden-dropout", po::value<double>(), "")
      ("overlap-grad-reduce", "")
      ("overlap-param-gather", "")
      ("overlap-p2p-communication", "")
      ("no-overlap-p2p-communication", "")
      ("use-flash-attn", "")
      ("tp-comm-overlap", "")
      ("use-tp-pp-dp-mapping", "");
  return m;
}

// ValidateMegatron names the scenario's keys; here the user wrote Megatron's flags.
std::string InFlags(std::string message) {
  static const std::pair<const char*, const char*> names[] = {
      {"padded_vocabulary", "--padded-vocab-size"}, {"vocabulary", "--vocab-size"},
      {"tensor_parallel", "--tensor-model-parallel-size"}, {"heads", "--num-attention-heads"},
      {"query_groups", "--num-query-groups"}, {"ffn_hidden", "--ffn-hidden-size"},
      {"hidden", "--hidden-size"}, {"sequence", "--seq-length"},
      {"max_position_embeddings", "--max-position-embeddings"}, {"layers", "--num-layers"},
      {"tp_comm_overlap", "--tp-comm-overlap"}, {"sequence_parallel", "--sequence-parallel"}};
  for (const auto& [key, flag] : names)
    message = std::regex_replace(message, std::regex(std::string("\\b") + key + "\\b"), flag);
  return message;
}

// Megatron-LM parses its launch line with argparse, where a flag given again overrides the
// earlier one (launch scripts append overrides to a shared argument list): the last counts
// here too, and an overridden value is named in a warning.
std::vector<std::string> KeepTheLastOfEach(po::parsed_options& parsed) {
  std::vector<std::string> warnings;
  std::map<std::string, std::size_t> last;
  for (std::size_t i = 0; i < parsed.options.size(); ++i)
    if (!parsed.options[i].unregistered) last[parsed.options[i].string_key] = i;
  auto words = [](const po::option& o) {
    std::string text = "--" + o.string_key;
    for (const std::string& v : o.value) text += " " + v;
    return text;
  };
  std::vector<po::option> kept;
  for (std::size_t i = 0; i < parsed.options.size(); ++i) {
    const po::option& o = parsed.options[i];
    if (!o.unregistered && last[o.string_key] != i) {
      const po::option& later = parsed.options[last[o.string_key]];
      const std::string warning = words(o) + " is overridden by a later " + words(later) +
                                  ", as in Megatron-LM";
      if (o.value != later.value &&
          std::find(warnings.begin(), warnings.end(), warning) == warnings.end())
        warnings.push_back(warning);
      continue;
    }
    kept.push_back(o);
  }
  parsed.options = std::move(kept);
  return warnings;
}

[[noreturn]] void Fail(const std::string& what) {
  throw InputError("pipetwin from-megatron: " + what);
}

// A positive integer flag within pipetwin's limits (util/limits.h), as the scenario it becomes
// must be: layers at most 2^16, sizes and batches at most 2^24, parallel sizes at most 2^20.
const Limit& LimitOf(const std::string& flag) {
  if (flag == "num-layers" || flag == "num-layers-per-virtual-pipeline-stage" ||
      flag == "virtual-pipeline-model-parallel-size" ||
      flag == "num-virtual-stages-per-pipeline-rank" || flag == "recompute-num-layers")
    return kMaxLayers;
  if (flag == "tensor-model-parallel-size" || flag == "pipeline-model-parallel-size")
    return kMaxDevices;
  if (flag == "micro-batch-size" || flag == "global-batch-size") return kMaxSamples;
  return kMaxDimension;
}

int Required(const po::variables_map& vm, const char* flag) {
  if (!vm.count(flag)) Fail(std::string("--") + flag + " is required");
  const int v = vm[flag].as<int>();
  const Limit& limit = LimitOf(flag);
  if (v < 1 || v > limit.max)
    Fail(std::string("--") + flag + ": expected an integer from 1 to " + std::to_string(limit.max) +
         " (pipetwin's limit for " + limit.what + "), got " + std::to_string(v));
  return v;
}

int Optional(const po::variables_map& vm, const char* flag, int fallback) {
  return vm.count(flag) ? Required(vm, flag) : fallback;
}

std::string GiB(double bytes) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(1);
  out << bytes / (1024.0 * 1024 * 1024) << " GiB";
  return out.str();
}

// A Megatron-LM run as its arguments describe it, before it becomes a scenario.
struct MegatronRun {
  MegatronSpec spec;
  int pipeline = 1, chunks = 1, nodes = 1, microbatches = 1, iterations = 2;
  std::string preset;
  Cluster server;  // one server of the preset
  bool overlap_grad_reduce = false;
  // Megatron's rank order: tensor-parallel innermost, then data-parallel, then pipeline (its
  // default, "tp-dp-pp"); --use-tp-pp-dp-mapping puts pipeline before data-parallel.
  bool tp_pp_dp = false;
  // Megatron-LM waits on its pipeline sends and receives before each forward and backward
  // (p2p_communication.py); only its interleaved schedule overlaps them with the chunks'
  // compute, --overlap-p2p-communication (on unless --no-overlap-p2p-communication).
  bool overlap_p2p = true;
  bool overlap_param_gather = false;  // the distributed optimizer's weights gathered under the forward
  bool global_batch_defaulted = false;  // no --global-batch-size: one micro-batch per DP rank
  // Said on stderr once the line is accepted (a refused line gets its one line only).
  std::vector<std::string> warnings;
};

void PrintWarnings(const MegatronRun& run) {
  for (const std::string& w : run.warnings)
    std::cerr << "pipetwin from-megatron: warning: " << w << "\n";
}

// The model's arguments (sizes, architecture), precision and flash attention.
void ReadModel(const po::variables_map& mv, MegatronModel& m, MegatronParallel& p,
               std::vector<std::string>& warnings) {
  // Each flag sets what it sets in Megatron-LM, every other property keeps Megatron-LM's default
  // (LayerNorm, learned positions, biases, tied embeddings, dropout 0.1): --swiglu alone
  // changes the MLP only.
  m = MegatronModel{};
  m.layers = Required(mv, "num-layers");
  m.hidden = Required(mv, "hidden-size");
  m.heads = Required(mv, "num-attention-heads");
  m.sequence = Required(mv, "seq-length");
  m.swiglu = mv.count("swiglu") > 0;
  // Megatron-LM's default width (validate_args): 4 h, or with SwiGLU's two input projections
  // 2/3 of it rounded down to a multiple of 64.
  const int default_ffn = m.swiglu ? static_cast<int>(4.0 * m.hidden * 2 / 3 / 64) * 64 : 0;
  m.ffn_hidden = Optional(mv, "ffn-hidden-size", default_ffn);
  if (m.swiglu && m.ffn_hidden == 0)
    Fail("--swiglu at --hidden-size " + std::to_string(m.hidden) +
         " makes Megatron-LM's default --ffn-hidden-size 0: give --ffn-hidden-size");
  m.query_groups = mv.count("group-query-attention") ? Optional(mv, "num-query-groups", 1) : 0;
  m.max_position_embeddings = Optional(mv, "max-position-embeddings", 0);
  if (mv.count("padded-vocab-size")) {
    m.padded_vocabulary = Required(mv, "padded-vocab-size");
    m.vocabulary = Optional(mv, "vocab-size", m.padded_vocabulary);
  } else if (mv.count("vocab-size")) {
    m.vocabulary = Required(mv, "vocab-size");
  } else {
    Fail("--vocab-size or --padded-vocab-size is required (the tokenizer's vocabulary)");
  }
  if (mv.count("normalization")) {
    const std::string n = mv["normalization"].as<std::string>();
    if (n != "LayerNorm" && n != "RMSNorm") Fail("--normalization: expected LayerNorm or RMSNorm, got " + n);
    m.rms_norm = n == "RMSNorm";
  }
  if (mv.count("position-embedding-type")) {
    const std::string t = mv["position-embedding-type"].as<std::string>();
    if (t != "learned_absolute" && t != "rope") Fail("--position-embedding-type: expected learned_absolute or rope, got " + t);
    m.learned_positions = t == "learned_absolute";
  }
  if (mv.count("disable-bias-linear")) m.bias = false;
  m.untied = m.untied || mv.count("untie-embeddings-and-output-weights") > 0;
  if (mv.count("attention-dropout") || mv.count("hidden-dropout"))
    m.dropout = (mv.count("attention-dropout") ? mv["attention-dropout"].as<double>() : 0.1) > 0 ||
                (mv.count("hidden-dropout") ? mv["hidden-dropout"].as<double>() : 0.1) > 0;
  m.architecture = m.swiglu || m.rms_norm || !m.learned_positions ? "llama" : "gpt";

  // Megatron-LM asserts the two apart (arguments.py, validate_args: "assert not args.bf16").
  if (mv.count("bf16") && mv.count("fp16")) Fail("--bf16 and --fp16 exclude each other, as in Megatron-LM");
  p.precision = mv.count("bf16") ? "bf16" : mv.count("fp16") ? "fp16" : "fp32";
  // The gradient buffer as validate_args sets it: under --bf16 fp32 unless --grad-reduce-in-bf16
  // (which overrides --accumulate-allreduce-grads-in-fp32), under --fp16 fp16 unless
  // --accumulate-allreduce-grads-in-fp32; --grad-reduce-in-bf16 is read under --bf16 only.
  const bool bf16_gradients = mv.count("grad-reduce-in-bf16") > 0;
  const bool fp32_gradients = mv.count("accumulate-allreduce-grads-in-fp32") > 0;
  if (p.precision == "bf16") {
    p.gradient_precision = bf16_gradients ? "bf16" : "fp32";
    if (bf16_gradients && fp32_gradients)
      warnings.push_back("--grad-reduce-in-bf16 overrides --accumulate-allreduce-grads-in-fp32, "
                         "as in Megatron-LM: gradients are reduced in bf16");
  } else {
    p.gradient_precision = p.precision == "fp16" && !fp32_gradients ? "fp16" : "fp32";
    if (bf16_gradients)
      warnings.push_back("--grad-reduce-in-bf16 does nothing without --bf16 (Megatron-LM reads "
                         "it under --bf16 only)");
  }
  p.flash_attention = mv.count("use-flash-attn") > 0;
}

// The parallel layout and recomputation as the arguments give them.
void ReadParallel(const po::variables_map& mv, const MegatronModel& m, MegatronRun& run) {
  MegatronParallel& p = run.spec.parallel;
  int& pipeline = run.pipeline;
  int& chunks = run.chunks;
  p.tensor = Optional(mv, "tensor-model-parallel-size", 1);
  pipeline = Optional(mv, "pipeline-model-parallel-size", 1);
  p.sequence_parallel = mv.count("sequence-parallel") > 0 && p.tensor > 1;
  if (mv.count("tp-comm-overlap") && p.tensor == 1)
    Fail("--tp-comm-overlap needs --tensor-model-parallel-size > 1 (Megatron-LM turns "
         "--sequence-parallel off at 1, then asserts that --tp-comm-overlap has it)");
  // Megatron-LM's validate_args turns it off at TP 1, and warns.
  if (mv.count("sequence-parallel") && p.tensor == 1)
    run.warnings.push_back("--sequence-parallel is off with --tensor-model-parallel-size 1, as in "
                           "Megatron-LM");
  p.tp_comm_overlap = mv.count("tp-comm-overlap") > 0;
  p.microbatch = Required(mv, "micro-batch-size");
  p.distributed_optimizer = mv.count("use-distributed-optimizer") > 0;
  // --recompute-activations sets selective over any --recompute-granularity (Megatron-LM's
  // validate_args: "if args.recompute_activations: args.recompute_granularity = 'selective'").
  std::string granularity = mv.count("recompute-granularity") ? mv["recompute-granularity"].as<std::string>() : "";
  if (mv.count("recompute-activations")) {
    if (!granularity.empty() && granularity != "selective")
      run.warnings.push_back("--recompute-activations makes --recompute-granularity " +
                             granularity + " selective, as in Megatron-LM");
    granularity = "selective";
  }
  if (!granularity.empty() && granularity != "full" && granularity != "selective")
    Fail("--recompute-granularity: expected full or selective, got " + granularity);
  p.recompute = granularity == "full" ? Recompute::kFull
                : granularity == "selective" ? Recompute::kSelective : Recompute::kNone;
  std::string recompute_method = "uniform";
  int recompute_layers = 1;
  if (mv.count("recompute-method") || mv.count("recompute-num-layers")) {
    const std::string method = mv.count("recompute-method") ? mv["recompute-method"].as<std::string>() : "uniform";
    const int n = Optional(mv, "recompute-num-layers", 1);
    if (p.recompute != Recompute::kFull) Fail("--recompute-method and --recompute-num-layers need --recompute-granularity full");
    if (method != "uniform" && method != "block")
      Fail("--recompute-method: expected uniform or block, got " + method);
    recompute_method = method;  // counted per chunk, set once the chunks are known
    recompute_layers = n;
  }
  try {
    ValidateMegatron(m, p);
  } catch (const InputError& e) {
    Fail(InFlags(e.what()));
  }
  if (m.layers % pipeline != 0)
    Fail("--num-layers (" + std::to_string(m.layers) + ") must be divisible by "
         "--pipeline-model-parallel-size (" + std::to_string(pipeline) + ")");
  // Megatron-LM 2021-2024 named the chunks per stage --virtual-pipeline-model-parallel-size, and
  // names them --num-virtual-stages-per-pipeline-rank since; it asserts one way at most.
  const char* kVirtual[] = {"num-layers-per-virtual-pipeline-stage",
                            "virtual-pipeline-model-parallel-size",
                            "num-virtual-stages-per-pipeline-rank"};
  std::vector<std::string> virtual_given;
  for (const char* flag : kVirtual)
    if (mv.count(flag)) virtual_given.push_back(std::string("--") + flag);
  if (virtual_given.size() > 1)
    Fail(virtual_given[0] + " and " + virtual_given[1] + " exclude each other, as in Megatron-LM");
  const char* chunks_flag = mv.count(kVirtual[2]) ? kVirtual[2] : kVirtual[1];
  if (mv.count("num-layers-per-virtual-pipeline-stage")) {
    const int per = Required(mv, "num-layers-per-virtual-pipeline-stage");
    if ((m.layers / pipeline) % per != 0)
      Fail("--num-layers-per-virtual-pipeline-stage (" + std::to_string(per) +
           ") must divide the layers per pipeline stage (" + std::to_string(m.layers / pipeline) + ")");
    chunks = m.layers / pipeline / per;
  } else if (mv.count(chunks_flag)) {
    chunks = Required(mv, chunks_flag);
    if ((m.layers / pipeline) % chunks != 0)
      Fail(std::string("--") + chunks_flag + " (" + std::to_string(chunks) +
           ") must divide the layers per pipeline stage (" + std::to_string(m.layers / pipeline) + ")");
  }
  if (chunks > 1 && pipeline < 2) Fail("an interleaved schedule needs --pipeline-model-parallel-size >= 2");
  p.recompute_method = recompute_method;
  p.recompute_num_layers = recompute_layers;
  if (recompute_method == "block" || recompute_layers > 1) p.blocks_per_chunk = m.layers / pipeline / chunks;

}

// The cluster, the data-parallel width and the micro-batches, from --nodes and the batch.
void ReadShape(const po::variables_map& vm, const po::variables_map& mv, MegatronRun& run) {
  MegatronParallel& p = run.spec.parallel;
  const int pipeline = run.pipeline, chunks = run.chunks;
  const std::string& preset = run.preset;
  const int per_server = run.server.levels[0].count;
  if (per_server % p.tensor != 0)
    Fail("--tensor-model-parallel-size (" + std::to_string(p.tensor) + ") must divide the " +
         std::to_string(per_server) + " GPUs of a " + preset + " server: Megatron keeps a "
         "tensor-parallel group inside one server");
  const int model_gpus = p.tensor * pipeline;
  const int nodes = run.nodes = vm.count("nodes") ? vm["nodes"].as<int>() : (model_gpus + per_server - 1) / per_server;
  if (nodes < 1 || nodes > kMaxDevices.max / per_server)
    Fail("--nodes: expected an integer from 1 to " + std::to_string(kMaxDevices.max / per_server) +
         " (pipetwin's limit of " + std::to_string(kMaxDevices.max) + " devices in a cluster)");
  const long long gpus = static_cast<long long>(nodes) * per_server;
  if (gpus % model_gpus != 0)
    Fail(std::to_string(gpus) + " GPUs (" + std::to_string(nodes) + " nodes of " +
         std::to_string(per_server) + ") are not divisible by --tensor-model-parallel-size x "
         "--pipeline-model-parallel-size = " + std::to_string(p.tensor) + " x " + std::to_string(pipeline));
  p.data_parallel = static_cast<int>(gpus / model_gpus);
  // Without --global-batch-size, Megatron-LM trains one micro-batch per data-parallel rank a
  // step (validate_args: global_batch_size = micro_batch_size x data_parallel_size).
  const long long one_each = static_cast<long long>(p.microbatch) * p.data_parallel;
  if (!mv.count("global-batch-size") && one_each > kMaxSamples.max)
    Fail("--global-batch-size not given: Megatron-LM's default, --micro-batch-size x data-parallel "
         "size = " + std::to_string(one_each) + ", is over pipetwin's limit for " + kMaxSamples.what +
         " (" + std::to_string(kMaxSamples.max) + ")");
  const int global = mv.count("global-batch-size") ? Required(mv, "global-batch-size")
                                                   : static_cast<int>(one_each);
  run.global_batch_defaulted = !mv.count("global-batch-size");
  if (global % (p.microbatch * p.data_parallel) != 0)
    Fail("--global-batch-size (" + std::to_string(global) + ") must be divisible by "
         "--micro-batch-size x data-parallel size (" + std::to_string(p.microbatch) + " x " +
         std::to_string(p.data_parallel) + ")");
  const int microbatches = run.microbatches = global / (p.microbatch * p.data_parallel);
  if (chunks > 1 && microbatches % pipeline != 0)
    Fail("the interleaved schedule needs the micro-batches per pipeline (" + std::to_string(microbatches) +
         ") divisible by --pipeline-model-parallel-size (" + std::to_string(pipeline) + "), as Megatron-LM does");

}

nlohmann::json ScenarioOf(const MegatronRun& run) {
  const MegatronModel& m = run.spec.model;
  const MegatronParallel& p = run.spec.parallel;
  const int pipeline = run.pipeline, chunks = run.chunks, microbatches = run.microbatches;
  const int nodes = run.nodes;
  const std::string& preset = run.preset;
  // The plan: p x v chunks of equal blocks, the embedding with the first, the output with the
  // last; the devices in Megatron's order (data-parallel replicas of a stage side by side).
  nlohmann::json stages = nlohmann::json::array();
  const int per_chunk = m.layers / (pipeline * chunks), positions = pipeline * chunks;
  int first = 0;
  for (int c = 0; c < positions; ++c) {
    const int last = first + per_chunk - 1 + (c == 0) + (c == positions - 1);
    stages.push_back({{"first_layer", first}, {"last_layer", last}, {"replicas", p.data_parallel}});
    first = last + 1;
  }
  for (int s = 0; s < pipeline; ++s) {
    nlohmann::json devices = nlohmann::json::array();  // tensor-parallel groups, in rank order
    for (int r = 0; r < p.data_parallel; ++r)
      devices.push_back(run.tp_pp_dp ? r * pipeline + s : s * p.data_parallel + r);
    stages[s]["devices"] = devices;
  }
  const bool full = p.recompute == Recompute::kFull;
  MegatronSpec workload = run.spec;
  if (full) workload.parallel.recompute = Recompute::kNone;  // the schedule's recompute
  nlohmann::json training = {{"microbatch_size", p.microbatch},
                             {"microbatches", microbatches},
                             {"iterations", run.iterations},
                             {"recompute", full},
                             {"optimizer", "adam"},
                             // fp32 main weights and two moments; sharded by the distributed optimizer
                             {"optimizer_bytes_per_parameter",
                              (p.precision == "fp32" ? 8.0 : 12.0) /
                                  (p.distributed_optimizer ? p.data_parallel : 1)}};
  if (chunks > 1) training["chunks"] = chunks;
  training["p2p"] = chunks > 1 && run.overlap_p2p ? "eager" : "blocking";
  if (p.distributed_optimizer && p.data_parallel > 1) {
    training["distributed_optimizer"] = true;
    if (run.overlap_param_gather) training["overlap_param_gather"] = true;
  }
  if (run.overlap_grad_reduce && p.data_parallel > 1) {
    // Megatron's gradient buckets: max(40M, 1M x d) parameters (--ddp-bucket-size's default).
    const double stage_parameters = BlockParametersPerRank(m, p.tensor) * m.layers / pipeline;
    training["allreduce_buckets"] = std::max(1, static_cast<int>(std::ceil(
        stage_parameters / std::max(4e7, 1e6 * p.data_parallel))));
  }
  const std::string shape = "TP " + std::to_string(p.tensor) + " x PP " + std::to_string(pipeline) +
                            " x DP " + std::to_string(p.data_parallel);
  nlohmann::json scenario = {
      {"name", "from-megatron: " + m.architecture + " " + std::to_string(m.layers) + " x " +
                   std::to_string(m.hidden) + ", " + shape + " on " + std::to_string(nodes) + " " +
                   preset + " servers"},
      {"workload", MegatronSpecToJson(workload)},
      {"cluster", {{"preset", preset}, {"servers", nodes}}},
      {"plan", {{"planner", "manual"}, {"stages", stages}}},
      {"schedule", chunks > 1 ? "interleaved" : "flush"},
      {"training", training}};

  return scenario;
}

void PrintShape(std::ostream& err, const MegatronRun& run) {
  const MegatronModel& m = run.spec.model;
  const MegatronParallel& p = run.spec.parallel;
  const int pipeline = run.pipeline, chunks = run.chunks, microbatches = run.microbatches;
  const long long gpus = static_cast<long long>(run.nodes) * run.server.levels[0].count;
  const std::string shape = "TP " + std::to_string(p.tensor) + " x PP " + std::to_string(pipeline) +
                            " x DP " + std::to_string(p.data_parallel);
  const ScheduleKind kind = chunks > 1 ? ScheduleKind::kInterleaved : ScheduleKind::kFlush;
  const MegatronMemory memory = FirstStageMemory(m, p, pipeline, chunks, microbatches, kind);
  const int vocabulary = RunVocabulary(m, p.tensor);
  std::ostringstream billions;
  billions << std::fixed << std::setprecision(2) << CountParameters(m, vocabulary).total / 1e9;
  err << "pipetwin from-megatron: " << m.architecture << ", "
            << billions.str() << " billion parameters (vocabulary padded to "
            << vocabulary << "); " << gpus << " GPUs = " << shape << "; " << microbatches
            << (microbatches == 1 ? " micro-batch of " : " micro-batches of ") << p.microbatch
            << " per pipeline"
            << (chunks > 1 ? ", " + std::to_string(chunks) + " chunks per stage" : "") << "\n"
            << "pipetwin from-megatron: memory per GPU of stage 0: weights " << GiB(memory.weights)
            << ", gradients " << GiB(memory.gradients) << ", optimizer " << GiB(memory.optimizer)
            << ", activations " << GiB(memory.activations) << " (" << memory.microbatches_in_flight
            << (memory.microbatches_in_flight == 1 ? " micro-batch" : " micro-batches")
            << " in flight, recompute " << RecomputeName(p.recompute) << "): "
            << GiB(memory.Total()) << " of " << GiB(run.server.device.memory_bytes) << ", "
            << (memory.Total() <= run.server.device.memory_bytes ? "fits" : "does not fit") << "\n";
}

// The candidate a search writes: the fastest of the `simulate` simulated (`simulated`: seconds),
// else the first (the fastest estimate). Says which on standard error.
int BestCandidate(const std::vector<double>& simulated, int simulate) {
  int best = 0;
  for (int i = 1; i < simulate; ++i)
    if (simulated[i] > 0 && simulated[i] < simulated[best]) best = i;
  std::cerr << "pipetwin from-megatron --search: writing rank " << best + 1
            << (simulate > 0 ? " (the fastest simulated)" : " (the fastest estimate)") << "\n";
  return best;
}

// A candidate's scenario simulated for one iteration: its iteration_s.
double SimulateCandidate(const WorkDirectory& work, int rank, const nlohmann::json& scenario) {
  const std::string file = work.File("candidate" + std::to_string(rank) + ".json");
  WriteTextFileAtomically(file, JsonText(scenario, 1) + "\n");
  std::string out;
  if (RunBackEnd("pipetwin-sim", {"simulate", file, "--json", "--no-timeline"}, &out) != 0)
    throw RunError("pipetwin from-megatron: simulating candidate " + std::to_string(rank) + " failed");
  return ParseJsonText(out, file).value("iteration_s", 0.0);
}

// The scenario of a PipeDream-2BW candidate (search.h, Search2BWMegatron): its workload at its
// tensor-parallel size, its plan on the cluster's tensor-parallel view, the 2bw schedule.
nlohmann::json TwoBWScenarioOf(const MegatronRun& run, const TwoBWCandidate& c, int iterations) {
  const Plan& plan = c.plan;
  const MegatronSpec workload{run.spec.model, c.parallel};
  int width = 0;
  for (const StagePlan& s : plan.stages) width = std::max(width, s.replicas);
  const std::string shape = "TP " + std::to_string(c.parallel.tensor) + " x PP " +
                            std::to_string(plan.StageCount()) + " x DP " + std::to_string(width);
  return {{"name", "from-megatron: " + run.spec.model.architecture + " " +
                       std::to_string(run.spec.model.layers) + " x " +
                       std::to_string(run.spec.model.hidden) + ", PipeDream-2BW, " + shape +
                       " on " + std::to_string(run.nodes) + " " + run.preset + " servers"},
          {"workload", MegatronSpecToJson(workload)},
          {"cluster", {{"preset", run.preset}, {"servers", run.nodes}}},
          {"plan", PlanToJson(plan)},
          {"schedule", "2bw"},
          {"training", {{"microbatch_size", plan.microbatch_size},
                        {"microbatches", plan.microbatches_per_update},
                        {"iterations", iterations},
                        {"recompute", plan.recompute},
                        {"optimizer", "adam"},
                        {"optimizer_bytes_per_parameter", c.parallel.precision == "fp32" ? 8.0 : 12.0}}}};
}

// `--search --planner 2bw`: PipeDream-2BW's plans at every tensor-parallel size, ranked by the
// planner's throughput, the top ones simulated. 2BW never flushes: a candidate is simulated for
// three updates and its steady state (the second; the first fills the pipeline, the last
// drains it) compared with the planner's time per update, w b m / samples/s.
int Search2BW(const po::variables_map& vm, const MegatronRun& run, int gpus, int global) {
  const std::vector<TwoBWCandidate> found =
      Search2BWMegatron(run.spec.model, run.spec.parallel.precision,
                        run.spec.parallel.flash_attention, run.server, gpus, global,
                        run.spec.parallel.gradient_precision);
  const int top = std::min<int>(vm["top"].as<int>(), static_cast<int>(found.size()));
  const int simulate = std::min(vm["simulate"].as<int>(), top);
  std::cerr << "pipetwin from-megatron --search --planner 2bw: PipeDream-2BW (asynchronous, "
               "weights one update stale) at " << found.size()
            << " tensor-parallel settings that fit " << GiB(run.server.device.memory_bytes) << "\n"
            << "rank  TP  PP   DP  micro    m  recompute  samples/s  estimate s  memory GiB  simulated s\n";
  const WorkDirectory work("");  // removed at the end
  std::vector<double> simulated;
  for (int i = 0; i < top; ++i) {
    const TwoBWCandidate& c = found[i];
    const Plan& plan = c.plan;
    int width = 0;
    for (const StagePlan& s : plan.stages) width = std::max(width, s.replicas);
    double memory = 0;
    for (double bytes : plan.memory_bytes_per_device) memory = std::max(memory, bytes);
    const double seconds = i < simulate ? SimulateCandidate(work, i + 1, TwoBWScenarioOf(run, c, 3)) : 0;
    const double estimate =
        width * plan.microbatch_size * plan.microbatches_per_update / plan.predicted_samples_per_s;
    simulated.push_back(seconds);
    const std::string recompute = plan.recompute ? "full" : RecomputeName(c.parallel.recompute);
    std::ostringstream row;
    row << std::setw(4) << i + 1 << std::setw(4) << c.parallel.tensor << std::setw(4)
        << plan.StageCount() << std::setw(5) << width << std::setw(7) << plan.microbatch_size
        << std::setw(5) << plan.microbatches_per_update << std::setw(11) << recompute << std::fixed
        << std::setprecision(1) << std::setw(11) << plan.predicted_samples_per_s
        << std::setprecision(2) << std::setw(12) << estimate << std::setprecision(1)
        << std::setw(12) << memory / (1024.0 * 1024 * 1024) << std::setprecision(2);
    if (i < simulate) row << std::setw(13) << seconds;
    else row << std::setw(13) << "-";
    std::cerr << row.str() << "\n";
  }
  const int best = BestCandidate(simulated, simulate);
  std::cout << JsonText(TwoBWScenarioOf(run, found[best], vm["iterations"].as<int>()), 1) << "\n";
  return 0;
}

// `--search`: the fastest configurations that fit, the top ones simulated (search.h).
int Search(const po::variables_map& vm, const po::variables_map& mv, MegatronRun run) {
  for (const char* flag : {"tensor-model-parallel-size", "pipeline-model-parallel-size",
                           "num-layers-per-virtual-pipeline-stage",
                           "virtual-pipeline-model-parallel-size",
                           "num-virtual-stages-per-pipeline-rank", "micro-batch-size",
                           "sequence-parallel", "recompute-granularity", "recompute-activations",
                           "recompute-method", "recompute-num-layers", "use-distributed-optimizer"})
    if (mv.count(flag)) Fail(std::string("--search chooses --") + flag + ": leave it out");
  if (!vm.count("nodes")) Fail("--search needs --nodes (the GPUs to plan for)");
  run.nodes = vm["nodes"].as<int>();
  const int per_server = run.server.levels[0].count;
  if (run.nodes < 1 || run.nodes > kMaxDevices.max / per_server)
    Fail("--nodes: expected an integer from 1 to " + std::to_string(kMaxDevices.max / per_server) +
         " (pipetwin's limit of " + std::to_string(kMaxDevices.max) + " devices in a cluster)");
  const MegatronModel& m = run.spec.model;
  const int global = Required(mv, "global-batch-size");
  const int gpus = run.nodes * run.server.levels[0].count;
  const std::string planner = vm["planner"].as<std::string>();
  if (planner != "megatron" && planner != "2bw")
    Fail("--planner: expected megatron or 2bw, got " + planner);
  if (planner == "2bw") {
    PrintWarnings(run);
    return Search2BW(vm, run, gpus, global);
  }
  PrintWarnings(run);
  const MegatronSearch found =
      SearchMegatron(m, run.spec.parallel.precision, run.spec.parallel.flash_attention,
                     run.server, gpus, global, run.spec.parallel.gradient_precision);
  std::cerr << "pipetwin from-megatron --search: " << found.considered << " configurations of "
            << gpus << " GPUs divide evenly, " << found.over_memory << " do not fit "
            << GiB(run.server.device.memory_bytes) << ", " << found.fitting.size() << " fit\n";
  if (found.fitting.empty()) Fail("no configuration fits: more --nodes, or a smaller model or batch");
  const int top = std::min<int>(vm["top"].as<int>(), static_cast<int>(found.fitting.size()));
  const int simulate = std::min(vm["simulate"].as<int>(), top);
  std::cerr << "rank  TP  PP   DP  micro  chunks  recompute  estimate s  memory GiB  simulated s\n";
  std::vector<MegatronRun> runs;
  std::vector<double> simulated;
  const WorkDirectory work("");  // removed at the end
  for (int i = 0; i < top; ++i) {
    const MegatronCandidate& c = found.fitting[i];
    MegatronRun r = run;
    r.spec.parallel = c.parallel;
    r.pipeline = c.pipeline;
    r.chunks = c.chunks;
    r.microbatches = c.microbatches;
    r.iterations = 1;
    const double seconds = i < simulate ? SimulateCandidate(work, i + 1, ScenarioOf(r)) : 0;
    runs.push_back(r);
    simulated.push_back(seconds);
    std::ostringstream row;  // its own stream: the table's formatting stays in the table
    row << std::setw(4) << i + 1 << std::setw(4) << c.parallel.tensor << std::setw(4)
        << c.pipeline << std::setw(5) << c.parallel.data_parallel << std::setw(7)
        << c.parallel.microbatch << std::setw(8) << c.chunks << std::setw(11)
        << RecomputeName(c.parallel.recompute) << std::fixed << std::setprecision(2)
        << std::setw(12) << c.iteration_s << std::setprecision(1) << std::setw(12)
        << c.memory.Total() / (1024.0 * 1024 * 1024) << std::setprecision(2);
    if (i < simulate) row << std::setw(13) << seconds;
    else row << std::setw(13) << "-";
    std::cerr << row.str() << "\n";
  }
  const int best = BestCandidate(simulated, simulate);
  runs[best].iterations = vm["iterations"].as<int>();
  PrintShape(std::cerr, runs[best]);
  std::cout << JsonText(ScenarioOf(runs[best]), 1) << "\n";
  return 0;
}

}  // namespace

int RunFromMegatronCommand(const Args& args) {
  po::options_description desc("options");
  desc.add_options()
      ("cluster", po::value<std::string>()->default_value("dgx-a100"),
       "cluster preset whose servers the run uses (dgx-a100, dgx-h100, dgx-h200, ...)")
      ("nodes", po::value<int>(), "servers (default: the fewest holding one model replica)")
      ("iterations", po::value<int>()->default_value(2), "training iterations to simulate")
      ("scatter-gather-pipeline",
       "the run is Megatron-LM's before 2023: without sequence parallelism a stage sends 1/t of "
       "its output (scatter-gather; the all-gather after the receive is not modelled), not all")
      ("search", "choose TP, PP, DP, micro-batch, virtual stages and recomputation for --nodes "
                 "and the global batch: the fastest that fit, ranked")
      ("planner", po::value<std::string>()->default_value("megatron"),
       "with --search: megatron (its schedules: 1F1B, interleaved) or 2bw (PipeDream-2BW's "
       "planner at every tensor-parallel size)")
      ("top", po::value<int>()->default_value(10), "with --search: configurations listed")
      ("simulate", po::value<int>()->default_value(3),
       "with --search: how many of the top ones to simulate (0: none)");
  // Ours before "--", Megatron's after.
  Args own, megatron;
  bool after = false;
  for (const std::string& a : args) {
    if (!after && a == "--") after = true;
    else (after ? megatron : own).push_back(a);
  }
  po::variables_map vm = ParseCommandLine("from-megatron", desc, {}, own);
  if (vm.count("help")) {
    PrintUsage(std::cout, "from-megatron", kUsage, kDescription, desc);
    return 0;
  }
  if (vm["iterations"].as<int>() < 1) Fail("--iterations: expected an integer >= 1");
  if (vm["top"].as<int>() < 1) Fail("--top: expected an integer >= 1");
  if (vm["simulate"].as<int>() < 0) Fail("--simulate: expected an integer >= 0");
  po::variables_map mv;
  std::vector<std::string> ignored, overridden;
  const po::options_description megatron_options = MegatronOptions();  // outlives `parsed`
  try {
    po::parsed_options parsed =
        po::command_line_parser(megatron).options(megatron_options).allow_unregistered().run();
    ignored = po::collect_unrecognized(parsed.options, po::include_positional);
    overridden = KeepTheLastOfEach(parsed);
    po::store(parsed, mv);
  } catch (const po::error& e) {
    Fail(std::string("in Megatron-LM's arguments: ") + e.what());
  }
  // An unknown flag and the values after it, as one warning.
  std::vector<std::string> unknown;
  for (const std::string& word : ignored)
    if (word.rfind("--", 0) == 0 || unknown.empty()) unknown.push_back(word);
    else unknown.back() += " " + word;

  MegatronRun run;
  run.warnings = overridden;
  for (const std::string& words : unknown) run.warnings.push_back(words + " is not modelled and is ignored");
  run.preset = vm["cluster"].as<std::string>();
  try {
    run.server = ClusterPreset(run.preset, 1);
  } catch (const InputError& e) {
    Fail(std::string("--cluster: ") + e.what());
  }
  run.iterations = vm["iterations"].as<int>();
  run.overlap_grad_reduce = mv.count("overlap-grad-reduce") > 0;
  run.tp_pp_dp = mv.count("use-tp-pp-dp-mapping") > 0;
  run.overlap_p2p = mv.count("no-overlap-p2p-communication") == 0;
  run.overlap_param_gather = mv.count("overlap-param-gather") > 0;
  if (run.overlap_param_gather && !mv.count("use-distributed-optimizer"))
    Fail("--overlap-param-gather needs --use-distributed-optimizer (Megatron-LM asserts it: only a "
         "sharded optimizer all-gathers the weights)");
  ReadModel(mv, run.spec.model, run.spec.parallel, run.warnings);
  run.spec.parallel.scatter_gather_pipeline = vm.count("scatter-gather-pipeline") > 0;
  if (vm.count("search")) return Search(vm, mv, run);
  ReadParallel(mv, run.spec.model, run);
  ReadShape(vm, mv, run);
  PrintWarnings(run);
  if (run.global_batch_defaulted)
    std::cerr << "pipetwin from-megatron: --global-batch-size not given: "
              << run.microbatches * run.spec.parallel.microbatch * run.spec.parallel.data_parallel
              << " (--micro-batch-size x data-parallel size), as Megatron-LM sets it\n";
  PrintShape(std::cerr, run);
  if (run.overlap_grad_reduce && run.spec.parallel.data_parallel == 1)
    std::cerr << "pipetwin from-megatron: warning: --overlap-grad-reduce has no effect without "
                 "data parallelism\n";
  if (run.spec.parallel.data_parallel == 1 &&
      (run.spec.parallel.distributed_optimizer || run.overlap_param_gather))
    std::cerr << "pipetwin from-megatron: warning: --use-distributed-optimizer"
              << (run.overlap_param_gather ? " and --overlap-param-gather have" : " has")
              << " no effect without data parallelism\n";
  std::cout << JsonText(ScenarioOf(run), 1) << "\n";
  return 0;
}

}  // namespace pipetwin::cli
