#include "workloads/megatron/megatron_workload.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "partition/util/error.h"

namespace pipetwin {

namespace {

constexpr double kTileRows = 128, kTileColumns = 256;
constexpr double kFlashForwardShare = 0.73, kFlashBackwardShare = 0.63;

double MemoryBytesPerS(const DeviceSpec& d) {
  return d.memory_bandwidth_bytes_per_s * d.memory_bandwidth_efficiency;
}

}  // namespace

namespace {

// What tiles of 128 x 256 and waves of one tile per SM leave of a GEMM's peak (NVIDIA, "Matrix
// Multiplication Background User's Guide", tile and wave quantization).
double QuantizationShare(double m, double n, double batch, const DeviceSpec& device) {
  const double row_tiles = std::ceil(m / kTileRows), column_tiles = std::ceil(n / kTileColumns);
  const double tiles = batch * row_tiles * column_tiles;
  const double tile_share = m * n / (row_tiles * kTileRows * column_tiles * kTileColumns);
  double wave_share = 1;
  if (device.multiprocessors > 0) {
    const double sms = device.multiprocessors;
    wave_share = tiles / (std::ceil(tiles / sms) * sms);
  }
  return tile_share * wave_share;
}

}  // namespace

double GemmEfficiency(const Kernel& g, const DeviceSpec& device) {
  if (!device.gemm_table.empty()) {
    // The nearest measured shape (the sum of squared log ratios of m, n, k and the batch): its
    // share of peak, times what quantization leaves of this shape over what it left of that one.
    const MeasuredGemm* nearest = nullptr;
    double distance = 0;
    for (const MeasuredGemm& t : device.gemm_table) {
      double d = 0;
      for (const auto& [a, b] : {std::pair{g.m, t.m}, {g.n, t.n}, {g.k, t.k}, {g.batch, t.batch}})
        d += std::pow(std::log(a / b), 2);
      if (!nearest || d < distance) nearest = &t, distance = d;
    }
    const double measured = nearest->tflops * 1e12 / device.peak_flops;
    return std::min(1.0, measured * QuantizationShare(g.m, g.n, g.batch, device) /
                             QuantizationShare(nearest->m, nearest->n, nearest->batch, device));
  }
  if (device.gemm_efficiency <= 0) return device.flops_efficiency;
  return device.gemm_efficiency * QuantizationShare(g.m, g.n, g.batch, device);
}

double CollectiveBesideKernelMs(double collective_ms, double kernel_ms, int channels, int sms) {
  const double taken = sms > 0 ? std::clamp(double(channels) / sms, 0.0, 1.0) : 0.0;
  return std::max({collective_ms - kernel_ms, collective_ms * taken, 0.0});
}

double OptimizerShardBytes(const MegatronParallel& p) {
  const double g = p.GradientBytes();
  const double to_fp32 = g == 4 ? 0 : g + 4;               // .float() of a 16-bit gradient
  const double unscale = p.precision == "fp16" ? 8 : 0;   // the loss scale's, fp16 only
  const double norm = 4, adam = 28;
  const double copy = p.precision == "fp32" ? 0 : 6;
  return to_fp32 + unscale + norm + adam + copy;
}

double OptimizerStepBytes(const MegatronParallel& p) {
  const double g = p.GradientBytes();
  const double scale = 2 * g, zero = g;
  const double shard = p.distributed_optimizer && p.data_parallel > 1 ? p.data_parallel : 1;
  return OptimizerShardBytes(p) / shard + scale + zero;
}

double KernelMs(const Kernel& k, const DeviceSpec& device, double launch_overhead_us) {
  double seconds = 0;
  switch (k.kind) {
    case KernelKind::kGemm:
      seconds = std::max(k.flops / (device.peak_flops * GemmEfficiency(k, device)),
                         k.bytes / MemoryBytesPerS(device));
      break;
    case KernelKind::kFlashAttention: {
      const bool backward = k.name.size() > 5 && k.name.compare(k.name.size() - 5, 5, " grad") == 0;
      const double share = backward ? kFlashBackwardShare : kFlashForwardShare;
      seconds = std::max(0.5 * k.flops / (device.peak_flops * share), k.bytes / MemoryBytesPerS(device));
      break;
    }
    case KernelKind::kMemoryBound:
      seconds = k.bytes / MemoryBytesPerS(device);
      break;
  }
  return 1e3 * seconds + 1e-3 * launch_overhead_us;
}

PassMs LayerPassMs(const LayerWork& w, const Cluster& cluster, int tensor) {
  const DeviceSpec& device = cluster.device;
  const int channels = cluster.levels.empty() ? 0 : cluster.levels[0].collective_channels;
  // Adds a pass's collectives to its time and to the pass's collective figures.
  auto add = [&](const std::vector<Collective>& collectives,
                 const std::map<std::string, double>& kernels, double& pass, double& exposed,
                 double& overlapped, double& bytes) {
    for (const Collective& c : collectives) {
      const double alone = TensorParallelCollectiveMs(cluster, tensor, c.kind, c.bytes);
      bytes += RingBytesPerRank(tensor, c.kind, c.bytes);
      const auto k = c.beside.empty() ? kernels.end() : kernels.find(c.beside);
      if (k == kernels.end()) {
        pass += alone;
        exposed += alone;
      } else {
        pass += CollectiveBesideKernelMs(alone, k->second, channels, device.multiprocessors);
        overlapped += alone;
      }
    }
  };
  PassMs out;
  std::map<std::string, double> forward_ms;
  for (const Kernel& k : w.forward) {
    const double ms = KernelMs(k, device, cluster.launch_overhead_us);
    forward_ms[k.name] = ms;
    out.forward += ms;
  }
  add(w.forward_collectives, forward_ms, out.forward, out.forward_exposed, out.forward_overlapped,
      out.forward_bytes);
  std::map<std::string, double> kernel_ms;
  for (const Kernel& k : w.backward) {
    const double ms = KernelMs(k, device, cluster.launch_overhead_us);
    kernel_ms[k.name] = ms;
    out.backward += ms;
    (k.weight_gradient ? out.weight : out.input) += ms;
  }
  for (const Kernel& k : w.recomputed) {
    const double ms = KernelMs(k, device, cluster.launch_overhead_us);
    out.backward += ms;
    out.input += ms;
  }
  add(w.backward_collectives, kernel_ms, out.backward, out.backward_exposed,
      out.backward_overlapped, out.backward_bytes);
  // The split passes: every collective alone (no kernel beside it: kernels left empty).
  double never = 0;
  for (const Collective& c : w.backward_collectives) {
    if (c.weight_gradient) add({c}, {}, out.weight, out.weight_exposed, never, out.weight_bytes);
    else add({c}, {}, out.input, out.input_exposed, never, out.input_bytes);
  }
  return out;
}

namespace {

Layer ToLayer(const std::string& id, const std::string& description, const LayerWork& w,
              const Cluster& cluster, const MegatronParallel& p, int input) {
  Layer layer;
  layer.id = id;
  layer.description = description;
  const PassMs ms = LayerPassMs(w, cluster, p.tensor);
  layer.forward_ms = ms.forward;
  layer.backward_ms = ms.backward;
  layer.backward_input_ms = ms.input;
  layer.backward_weight_ms = ms.weight;
  if (p.tensor > 1)
    layer.collectives = GroupCollectives{ms.forward_exposed,  ms.forward_overlapped,
                                         ms.forward_bytes,    ms.backward_exposed,
                                         ms.backward_overlapped, ms.backward_bytes,
                                         ms.input_exposed,    0,
                                         ms.input_bytes,      ms.weight_exposed,
                                         0,                   ms.weight_bytes};
  double flops = 0;
  for (const Kernel& k : w.forward) flops += k.flops;
  layer.forward_flops = flops;
  layer.parameters = w.parameters;
  layer.parameter_bytes = w.parameters * p.DtypeBytes();
  layer.activation_bytes = w.output_bytes;
  layer.stash_bytes = w.stash_bytes;
  layer.weight_stash_bytes = w.weight_stash_bytes;
  layer.update_ms = 1e3 * w.parameters * OptimizerStepBytes(p) / MemoryBytesPerS(cluster.device);
  // What a sharded optimizer (the simulator's training.distributed_optimizer) still divides
  // among the replicas: the shard's part, unless this step is already a shard's (the planner's
  // candidates; a scenario's workload has p.data_parallel 1).
  const bool sharded = p.distributed_optimizer && p.data_parallel > 1;
  layer.update_sharded_ms =
      sharded ? 0
              : 1e3 * w.parameters * OptimizerShardBytes(p) / MemoryBytesPerS(cluster.device);
  if (input >= 0) layer.inputs = {input};
  return layer;
}

}  // namespace

Workload MegatronWorkload(const MegatronModel& m, const MegatronParallel& p, const Cluster& cluster) {
  ValidateMegatron(m, p);
  Workload w;
  w.name = m.architecture + "-" + std::to_string(m.layers) + "x" + std::to_string(m.hidden) +
           (p.tensor > 1 ? "-tp" + std::to_string(p.tensor) : "");
  w.reference.batch_size = p.microbatch;
  w.reference.device = cluster.device.name;
  w.reference.source = "analytic";
  w.parameter_dtype_bytes = p.DtypeBytes();
  w.gradient_dtype_bytes = p.GradientBytes();  // MegatronParallel::gradient_precision
  w.tensor_parallel = p.tensor;
  w.stash_holds_input = true;  // Korthikanti's stash: a block keeps its first norm's input
  const std::string split = p.tensor > 1 ? " (one of " + std::to_string(p.tensor) + " ranks)" : "";
  w.layers.push_back(ToLayer("embedding", "word" + std::string(m.learned_positions ? " + position" : "") +
                                              " embedding" + split,
                             EmbeddingWork(m, p), cluster, p, -1));
  // Under the schedule's (full) recomputation Megatron-LM checkpoints each block on its own and
  // reruns neither the embedding nor the output layer (Layer::checkpoint_bytes, recomputed).
  w.layers.back().recomputed = false;
  const LayerWork block = BlockWork(m, p);
  // Every block is the same layer: timed once, copied with its id and input.
  Layer timed = ToLayer("block0", (m.architecture == "gpt" ? "GPT block" : "Llama block") + split,
                        block, cluster, p, 0);
  timed.checkpoint_bytes = BlockCheckpointBytes(m, p);
  for (int i = 0; i < m.layers; ++i) {
    Layer layer = timed;
    layer.id = "block" + std::to_string(i);
    layer.inputs = {i};
    // Where the block's place in its chunk says (MegatronParallel::recompute_method): the
    // block method reruns the first N blocks only, the uniform one checkpoints every N-th.
    const int place = p.blocks_per_chunk > 0 ? i % p.blocks_per_chunk : 0;
    if (p.recompute_method == "block" && place >= p.recompute_num_layers) {
      layer.recomputed = false;
      layer.checkpoint_bytes.reset();
    } else if (p.recompute_method == "uniform" && place % p.recompute_num_layers != 0) {
      layer.checkpoint_bytes.reset();  // rerun with the segment the checkpoint before it opens
    }
    w.layers.push_back(std::move(layer));
  }
  // Model FLOPs: every matrix product forward, and twice over backward (the GEMMs' and the
  // attention core's), on all t ranks: Narayanan's formula for GPT (tests/megatron_test.cc).
  auto matrix_flops = [](const LayerWork& work) {
    double f = 0;
    for (const Kernel& k : work.forward)
      if (k.kind != KernelKind::kMemoryBound) f += k.flops;
    return f;
  };
  const double forward_flops = m.layers * matrix_flops(block) + matrix_flops(OutputWork(m, p));
  w.model_flops_per_sample = 3 * forward_flops * p.tensor / p.microbatch;
  w.layers.push_back(ToLayer("output", std::string("final norm + ") +
                                           (m.untied ? "output layer" : "tied output layer") +
                                           " + cross-entropy" + split,
                             OutputWork(m, p), cluster, p, m.layers));
  w.layers.back().recomputed = false;
  return w;
}

}  // namespace pipetwin
