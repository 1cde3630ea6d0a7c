// A Megatron-LM transformer as a Workload: one rank's share of each layer of a tensor-parallel
// group (the embedding, the blocks, the output layer), timed op by op on the cluster's device,
// for the planners and the simulator, which run it on the cluster's tensor-parallel view
// (cluster.h, TensorParallelView: one rank of each group stands for the group).
//
//   Workload w = MegatronWorkload(GptModel(96, 12288, 96, 2048, 50257), parallel, dgx_a100);
//   w.tensor_parallel;   // parallel.tensor
//
// The device model, per kernel (cluster.h's DeviceSpec):
//   GEMM   max(flops / (peak x GemmEfficiency), bytes / (HBM x memory share)); the efficiency is
//          the device's best-shape share (gemm_efficiency) times what tiles of 128 x 256 and
//          waves of one tile per SM leave of it (tile and wave quantisation, NVIDIA, "Matrix
//          Multiplication Background User's Guide", sections on tile and wave quantization)
//   flash  flops at FlashAttention-2's share of peak, 73% forward and 63% backward (Dao 2023,
//          section 4.1, A100), causal masking halving the work
//   memory bytes / (HBM x memory_bandwidth_efficiency)
// plus the cluster's launch_overhead_us per kernel. Collectives of the tensor-parallel group:
// TensorParallelCollectiveCost on the server's links; in the forward they run alone (Megatron's
// forward waits for them), in the backward beside the GEMM they name, costing what they take
// beyond it. Optimizer step: Adam over fp32 main weights is memory-bound, 30 bytes per
// parameter (read the fp32 gradient 4, main weight 4 + 4, two moments 8 + 8, write the bf16
// weight 2); 28 in fp32 (no bf16 copy, 4 + 4 + 4 + 16).
#pragma once

#include "partition/model/cluster.h"
#include "partition/model/workload.h"
#include "workloads/megatron/layer_work.h"

namespace pipetwin {

double GemmEfficiency(const Kernel& gemm, const DeviceSpec& device);
double KernelMs(const Kernel& kernel, const DeviceSpec& device, double launch_overhead_us = 0);

struct PassMs {
  double forward = 0, backward = 0;
  double forward_communication = 0, backward_communication = 0;  // exposed, included above
};
// One layer's forward and backward on one rank of `parallel.tensor` devices of `cluster`'s
// servers (the cluster as given, not its tensor-parallel view), selective recomputation in the
// backward.
PassMs LayerPassMs(const LayerWork& work, const Cluster& cluster, int tensor);

// Throws InputError (ValidateMegatron's, naming no file: the caller places it). A group too
// large for a server is TensorParallelView's to refuse.
Workload MegatronWorkload(const MegatronModel& model, const MegatronParallel& parallel,
                          const Cluster& cluster);

}  // namespace pipetwin
