// The analytic model of a network (networks/network.h): per layer its parameters, forward FLOPs,
// output activation and stash bytes, and its times on a device from the roofline
// (DeviceSpec::RooflineMs), as a Workload the planners and the simulator take.
//
// Per layer kind, one sample (b samples: x b), dtype bytes per element:
//   linear        parameters in out + out; FLOPs 2 in out; moves the weights once and the input
//                 and output once per sample
//   convolution   parameters k^2 C_in C_out + C_out (bias) or + 2 C_out (batch-norm scale and
//                 shift); FLOPs 2 k^2 C_in C_out H_out W_out (a multiply-add is two FLOPs;
//                 biases and normalisation not counted); moves weights, input and output once,
//                 and batch norm (not fused in training) reads and writes the output again
//   max-pool      one comparison per window element per output
//   average pool  one add per input element
//   residual add  one FLOP per element; reads both inputs, writes one output
//   transformer   embedding, block and head as analytic/transformer.cc derives them (Megatron-LM
//                 SC'21 section 5.1; Korthikanti et al. 2022 section 4)
// Backward does twice the forward FLOPs (gradients with respect to input and weights) and, as an
// estimate, moves twice the bytes. Times are for the network's batch on `device`; the workload's
// reference is that batch and device, source "analytic".
//
//   Workload w = GenerateVgg16(CnnConfig{}, DeviceSpec{});   // AnalyticWorkload(DescribeVgg16)
#pragma once

#include "partition/model/cluster.h"
#include "partition/model/workload.h"
#include "workloads/networks/network.h"

namespace pipetwin {

Workload AnalyticWorkload(const Network& network, const DeviceSpec& device);

// AnalyticWorkload of each description; throw InputError as the descriptions do.
Workload GenerateMlp(const MlpConfig& config, const DeviceSpec& device);
Workload GenerateTransformer(const TransformerConfig& config, const DeviceSpec& device);
Workload GenerateVgg16(const CnnConfig& config, const DeviceSpec& device);
Workload GenerateResnet50(const CnnConfig& config, const DeviceSpec& device);

// Per-block quantities of a transformer, for planners that need more than the Layer carries.
// The config must be valid (these do not validate).
// Trainable parameters of one block: 12h^2 + 13h.
double TransformerBlockParameters(const TransformerConfig& config);
// Forward FLOPs of one block for one micro-batch: 24 b s h^2 + 4 b s^2 h.
double TransformerBlockForwardFlops(const TransformerConfig& config);
// Bytes one block keeps from its forward pass for its backward pass (no recomputation), for one
// micro-batch: s b h (34 + 5 a s / h) at dtype_bytes = 2 (Korthikanti et al. 2022, section 4);
// at another dtype the tensors scale with dtype_bytes and the dropout masks stay 1 byte.
double TransformerBlockStashBytes(const TransformerConfig& config);

// Sets a layer's forward FLOPs and its roofline times: the backward does twice the forward FLOPs
// (the gradients with respect to the inputs and to the weights, Megatron-LM SC'21 section 5.1)
// and, as an estimate, moves twice the bytes (it reads the stash and the output gradient and
// writes both gradients).
void SetRooflineTimes(Layer& layer, double forward_flops, double forward_bytes,
                      const DeviceSpec& device);

// The transformer layers' analytic figures (analytic/transformer.cc); `layer` carries the id and
// description of the network's layer.
Layer AnalyticTransformerLayer(const TransformerConfig& config, const NetworkLayer& layer,
                               int block_index, const DeviceSpec& device);

}  // namespace pipetwin
