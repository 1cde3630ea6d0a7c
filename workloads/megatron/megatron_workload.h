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
//          Multiplication Background User's Guide", sections on tile and wave quantization);
//          with measured GEMMs (DeviceSpec::gemm_table), a measured shape's own rate, another
//          shape the nearest measured one's share scaled by the two shapes' quantization
//   flash  flops at FlashAttention-2's share of peak, 73% forward and 63% backward (Dao 2023,
//          section 4.1, A100), causal masking halving the work
//   memory bytes / (HBM x memory_bandwidth_efficiency)
// plus the cluster's launch_overhead_us per kernel. Collectives of the tensor-parallel group:
// TensorParallelCollectiveMs on the server's links; in the forward they run alone (Megatron's
// forward waits for them), in the backward beside the GEMM they name, costing what the pair
// takes beyond that GEMM (CollectiveBesideKernelMs). Optimizer step: OptimizerStepBytes.
#pragma once

#include "partition/model/cluster.h"
#include "partition/model/workload.h"
#include "workloads/megatron/layer_work.h"

namespace pipetwin {

double GemmEfficiency(const Kernel& gemm, const DeviceSpec& device);

// A collective and a kernel of the same pass started together (layer_work.h, Collective::beside):
// the collective holds `channels` of the device's `sms` SMs while it runs (NCCL: a thread block
// per channel; ClusterLevel::collective_channels), so the kernel runs at r = (sms - channels) /
// sms of its speed until the collective ends. The pair takes max(T_c, T_k + T_c (1 - r)); what
// it takes beyond the kernel alone is returned: max(T_c - T_k, T_c channels / sms). Without
// SMs or channels, r = 1: max(T_c - T_k, 0).
double CollectiveBesideKernelMs(double collective_ms, double kernel_ms, int channels, int sms);

// Bytes the optimizer step moves per parameter of a rank, as Megatron-LM runs it over its fp32
// main weights (megatron/optimizer/optimizer.py, clip_grads.py and its DistributedDataParallel,
// with apex's multi-tensor kernels), for a gradient buffer of G bytes a value
// (MegatronParallel::gradient_precision: 4 in fp32, 2 in 16 bits):
//   the gradient buffer scaled by 1 / d before its all-reduce (read, write)        2 G
//   a 16-bit gradient copied to fp32 for the step (.float(): read G, write 4)      G + 4, or 0
//   fp16 only: unscaled by the loss scale, checked for inf (read, write fp32)      8
//   gradient norm for clipping (multi_tensor_l2norm: read the fp32 gradient)       4
//   Adam (FusedAdam: read gradient, weight and both moments, write the last three) 28
//   main weights copied into the bf16 / fp16 model weights (read 4, write 2)       6
//   the gradient buffer zeroed for the next iteration (write)                      G
// With fp32 gradients 50 in bf16, 58 in fp16, 44 in fp32 (the model weights are the main
// weights: no copy); with bf16 gradients 50. With the distributed optimizer (`data_parallel`
// > 1) a rank copies, unscales, norms, steps and copies back its 1 / d shard and scales and
// zeroes its whole buffer: 38 / d + 12 (bf16, fp32 gradients). A clipped step (the norm over the
// limit) would also scale the gradients (8 more); taken as not clipped.
double OptimizerStepBytes(const MegatronParallel& p);
// Of those, the bytes per parameter a rank's shard moves: 38 in bf16 with fp32 gradients.
double OptimizerShardBytes(const MegatronParallel& p);
double KernelMs(const Kernel& kernel, const DeviceSpec& device, double launch_overhead_us = 0);

struct PassMs {
  double forward = 0, backward = 0;  // the passes, the group's collectives included
  // The group's collectives: running alone (exposed, included above), running beside a kernel
  // (their time alone: the pair's cost is in the passes; the links are busy meanwhile), and the
  // bytes a rank sends for all of them (RingBytesPerRank).
  double forward_exposed = 0, forward_overlapped = 0, forward_bytes = 0;
  double backward_exposed = 0, backward_overlapped = 0, backward_bytes = 0;
  // The backward as a zero-bubble schedule runs it, in two passes apart (Layer::
  // backward_input_ms): I, every backward kernel but the weight gradients (and the
  // recomputation), with the collectives on the input gradient's path; W, the weight
  // gradients with sequence parallelism's re-gather of their input. The zero-bubble runtime
  // runs each pass's collectives synchronously (sail-sg/zero-bubble-pipeline-parallelism,
  // tensor_parallel/layers.py: async_op is off when the backward is split, and WeightGradStore
  // calls the all-gather with async_op=False), so they are all exposed.
  double input = 0, input_exposed = 0, input_bytes = 0;
  double weight = 0, weight_exposed = 0, weight_bytes = 0;
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
