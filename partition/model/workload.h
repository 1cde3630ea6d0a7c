// Workload: the layer graph every planner, the simulator and the executor share.
//
// A Workload is a DAG of layers (a chain in the common case) measured or modelled at a stated
// reference batch size on a stated reference device. Each layer carries its forward and backward
// time at that batch size, the bytes of its output activations, the bytes of its parameters and
// optionally its forward FLOPs. Layers are kept in a topological order: every input of layer i
// has an index below i. JSON schema: scenarios/README.md ("Workload file").
//
//   Workload w = LoadWorkloadFile("vgg16.json");         // or ImportPipeDreamProfile(...)
//   double total_ms = w.TotalForwardMs() + w.TotalBackwardMs();
//   SaveWorkloadFile(w, "copy.json");
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pipetwin {

// A tensor-parallel layer's collectives among its group (workloads/megatron), one rank's share
// at the reference batch, on the server's links with nothing else on them: how much of the
// layer's forward_ms / backward_ms is collectives running alone (exposed), how long the
// collectives running beside a kernel last (their cost is in the times already; they occupy the
// links meanwhile), and the bytes each rank sends for them. The planners take the times as they
// are; the simulator runs the collectives as flows on the device's server link
// (sim/actors.cc), where other traffic of the server shares them.
struct GroupCollectives {
  double forward_exposed_ms = 0, forward_overlapped_ms = 0, forward_bytes = 0;
  double backward_exposed_ms = 0, backward_overlapped_ms = 0, backward_bytes = 0;
  // The backward's collectives as a zero-bubble schedule runs them, split between its input-
  // gradient pass (I) and its weight-gradient pass (W) (Layer::backward_input_ms); present
  // only with that split.
  double input_exposed_ms = 0, input_overlapped_ms = 0, input_bytes = 0;
  double weight_exposed_ms = 0, weight_overlapped_ms = 0, weight_bytes = 0;

  // Every figure above with its key in a workload file, whether it is a time (ms; else bytes)
  // and whether it belongs to the I/W split: one list for reading, writing, checking and summing.
  struct Field {
    const char* key;
    double GroupCollectives::*member;
    bool time, split;
  };
  static const std::vector<Field>& Fields();
  // The I/W split of a layer that gives none: `input_share` of the backward's to I, the rest to W.
  void SplitBackward(double input_share);
};

// One layer (a node of the layer graph).
struct Layer {
  std::string id;            // unique within the workload ("node4", "block3")
  std::string description;   // what the layer is ("Conv2d(3, 64, ...)", "decoder block")
  double forward_ms = 0;     // forward time at the reference batch size and device
  double backward_ms = 0;    // backward time, same reference
  double activation_bytes = 0;           // bytes of all its outputs, summed
  std::vector<double> output_bytes;      // per output, when the layer has several (else empty)
  double parameter_bytes = 0;            // bytes of its trainable parameters
  double parameters = 0;                 // number of trainable parameters
  std::optional<double> forward_flops;   // forward FLOPs at the reference batch size
  // Bytes the layer keeps for its backward at the reference batch (absent: activation_bytes).
  std::optional<double> stash_bytes;
  // The optimizer step of this layer's parameters, once per weight update (`pipetwin profile`
  // measures it for the scenario's optimizer on CPUs, where it is not negligible); absent: 0.
  std::optional<double> update_ms;
  // Of update_ms, the copy of the layer's weights into new tensors that an update makes when the
  // current version is stashed for a backward still to come (versioned weights: PipeDream,
  // 2BW); an update of a version nobody needs steps it in place and costs update_ms less this
  // (op.h, UpdatesCopyingWeights). `pipetwin profile` measures it for such schedules; absent: 0.
  std::optional<double> update_copy_ms;
  // Of update_ms, the part a sharded optimizer (training.distributed_optimizer) divides among
  // the stage's d replicas, each stepping its 1 / d of the parameters; the rest every replica
  // runs whole (Megatron-LM's distributed optimizer norms, steps and copies its shard but
  // scales and zeroes its whole gradient buffer: OptimizerStepBytes). Absent: all of it.
  std::optional<double> update_sharded_ms;
  // Of backward_ms, the time spent adding the parameters' gradients into the sums an update's
  // micro-batches accumulate (a pass over the gradient bytes: read the sum and the new gradient,
  // write the sum). backward_ms counts it, as most backwards of a batch add; the first backward
  // after an update takes its gradient as it is and costs backward_ms less this
  // (op.h, AddsToGradientSums). `pipetwin profile` measures it; absent: 0.
  std::optional<double> gradient_add_ms;
  // How far each time may move on a second profiling: the half-width of the 95% interval of
  // the mean of the profiler's rounds (util/spread.h), in ms; absent when not measured.
  std::optional<double> forward_ms_spread, backward_ms_spread, update_ms_spread;
  std::optional<GroupCollectives> collectives;  // tensor-parallel layers only
  // A zero-bubble schedule's backward in two passes (Qi et al., ICLR 2024): the input-gradient
  // pass I and the weight-gradient pass W, each run apart, same reference. They may add up to
  // more than backward_ms, since a collective that ran beside the other pass's kernels runs
  // alone. Both or neither; absent, the share rule of BackwardInputShare (stage_costs.h) splits
  // backward_ms.
  std::optional<double> backward_input_ms, backward_weight_ms;
  // What a zero-bubble schedule's W still needs once I has run, at the reference batch: the
  // kept inputs and output gradients of the layer's weight-gradient GEMMs (Qi et al., ICLR 2024,
  // Table 1: M_W = 32 s b h for a GPT layer, against M_B = s b (34 h + 5 a s)). Absent: the
  // whole stash and the stage's input, held until W (pipetwin's executor and torch keep the
  // autograd graph for it).
  std::optional<double> weight_stash_bytes;
  // Under the schedule's recomputation (training.recompute), how the layer is rebuilt
  // (cost/memory.h, RecomputeFootprint). By default it is rerun with the rest of its stage from
  // the stage's input (PipeDream-2BW, ICML'21, section 4.1; pipetwin's executor). With
  // checkpoint_bytes (at the reference batch) it opens a checkpointed segment: it keeps an input
  // of that many bytes, and it and the recomputed layers after it without a checkpoint of their
  // own are rerun together just before their backward (Megatron-LM's full recomputation,
  // --recompute-method uniform --recompute-num-layers N: every N-th block a checkpoint; N = 1,
  // Korthikanti et al. 2022, section 5, 2 s b h per layer). recomputed = false: never rerun, its
  // stash kept as without recomputation (Megatron-LM's embedding and output layer, outside its
  // checkpointed blocks, and with --recompute-method block the blocks past the first N).
  std::optional<double> checkpoint_bytes;
  bool recomputed = true;
  std::vector<int> inputs;               // indices of the layers feeding this one (all < own)
};

// How repeatable a measured workload's times are (`pipetwin profile`): the training step (every
// layer's forward, backward and optimizer step) timed in rounds until the mean of the rounds
// settled within target_spread, or the time limit came.
struct ProfileStability {
  int rounds = 0;
  double seconds = 0;            // timed, all rounds
  double step_ms = 0;            // the mean of the rounds' step times
  double step_spread_ms = 0;     // the half-width of its 95% interval
  double lowest_round_ms = 0, highest_round_ms = 0;
  double target_spread = 0;      // the relative half-width asked for (0: no stopping rule)
  bool settled = false;          // step_spread_ms <= target_spread x step_ms
  std::vector<std::string> disturbances;  // the machine's load or steal, rounds far off
  // One core's GEMM rate, GFLOP/s, before and after the rounds, their mean (the machine's speed
  // while the profile was taken, exec/measure/machine_speed.h); 0: not read (a GPU, older files).
  double one_core_gflops = 0;
};

// A profile taken on cores shared with other processes (`pipetwin profile --concurrent` beyond
// the cores) times each layer by its thread's CPU time while another process runs on its core
// between its slices, and so pays for the caches refilled after it. The profiler also times
// rounds on a core of its own (that process paused, the other cores still loaded), alternating
// with the shared ones; each figure's time there over its time shared, every layer's summed.
// The simulator charges a compute op this share of its time where its worker was the last to
// run on its core. 0: not measured (a figure without ops, or a profile without time-sharing).
struct OwnCoreShare {
  double forward = 0, backward = 0, update = 0;
  bool Measured() const { return forward > 0 || backward > 0 || update > 0; }
};

// Where the times of a workload were taken.
struct ReferencePoint {
  int batch_size = 1;           // samples per minibatch the times are for
  std::string device = "unknown";
  std::string source = "manual";  // "pipedream-profile", "analytic", "measured", "manual"
};

class Workload {
 public:
  std::string name;
  ReferencePoint reference;
  double parameter_dtype_bytes = 4;  // bytes per parameter (fp32 by default)
  // Bytes per gradient element (mixed precision keeps fp32 gradients of bf16 weights: 4);
  // 0: parameter_dtype_bytes.
  double gradient_dtype_bytes = 0;
  // The devices of one tensor-parallel group each layer is split over (workloads/megatron):
  // the layers' times, parameters and activations are one rank's share, and a scenario runs
  // the workload on its cluster's tensor-parallel view (TensorParallelView). 1: not split.
  int tensor_parallel = 1;
  // Model FLOPs of one sample, forward and backward, all ranks together, recomputation not
  // counted (Narayanan et al. SC'21, section 5.1); 0: not known. Reports derive TFLOP/s per
  // GPU and the model FLOPs utilisation from it.
  double model_flops_per_sample = 0;
  // Host time to load one reference batch, not part of any layer (cost/data_loading.h).
  double data_loading_ms = 0;
  // Each layer's stash holds its own input (Korthikanti et al. 2022's accounting: a block keeps
  // its first norm's input, which is the block's input), so a stage keeps its input once, in
  // its first layer's stash (cost/memory.h, KeptActivationBytes). Otherwise layers stash their
  // outputs and a stage keeps its input besides.
  bool stash_holds_input = false;
  // Times measured by processes sharing CPU cores (`pipetwin profile --concurrent` beyond the
  // cores): what a core of its own costs (sim/actors.cc). Not measured: every op as profiled.
  OwnCoreShare own_core;
  std::optional<ProfileStability> stability;  // measured workloads only
  std::vector<Layer> layers;

  int LayerCount() const { return static_cast<int>(layers.size()); }
  double GradientDtypeBytes() const {
    return gradient_dtype_bytes > 0 ? gradient_dtype_bytes : parameter_dtype_bytes;
  }
  // True when every layer but the first has exactly the previous layer as its only input.
  bool IsChain() const;
  double TotalForwardMs() const;
  double TotalBackwardMs() const;
  double TotalParameterBytes() const;
  double TotalParameters() const;
  double TotalActivationBytes() const;
  // Layer i's stash: stash_bytes when given, else its activation_bytes.
  double StashBytes(int i) const;
  // Layer i's trainable parameters: `parameters` when given (> 0), else parameter_bytes /
  // parameter_dtype_bytes.
  double LayerParameters(int i) const;
  // Indices of the layers that take layer i's output.
  std::vector<std::vector<int>> Successors() const;
  // True when some layer's time has a measured spread (`pipetwin profile`'s rounds).
  bool HasSpread() const;
  // This workload with every time at one end of its 95% interval: side +1 adds each time's
  // spread (the slow end), -1 takes it off (the fast end, never below 0); times without a
  // spread stay. What `compare` simulates for the prediction's band.
  Workload AtSpreadEdge(int side) const;
};

// The mean of several profiles of one model taken at different times (`compare` profiles
// between its measured runs): each time the mean of the profiles', its spread the half-width of
// the 95% interval of that mean over the profiles (how far the machine moved between them), or
// the widest single profile's spread divided by sqrt(K) when that is larger; the stability's
// rounds and seconds summed, its disturbances kept with the profile they came from. The
// profiles must have the same layers (same ids in the same order), else InputError naming the
// first that differs.
Workload MeanOfProfiles(const std::vector<Workload>& profiles, const std::vector<std::string>& files);

// Checks the invariants (unique ids, inputs that exist, no cycle, finite non-negative numbers)
// and puts the layers in topological order (a stable order: among ready layers the one listed
// first comes first). `file` names the source for errors. Throws InputError.
// `path` is the JSON path of the workload inside its file ("" for a workload file, "workload" in
// a scenario); errors name it as a prefix.
void ValidateAndSortWorkload(Workload& workload, const std::string& file,
                             const std::string& path = "");

// JSON (schema in scenarios/README.md). FromJson throws InputError naming `file` and the JSON path.
nlohmann::json WorkloadToJson(const Workload& workload);
Workload WorkloadFromJson(const nlohmann::json& doc, const std::string& file,
                          const std::string& path = "");
Workload LoadWorkloadFile(const std::string& path);
// Writes through a temporary file: a failure never leaves a half-written file.
void SaveWorkloadFile(const Workload& workload, const std::string& path);

}  // namespace pipetwin
