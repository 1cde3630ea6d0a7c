// Analytic GPT (decoder) and BERT (encoder) workloads.
//
// Layers: the token+position embedding, one layer per transformer block, and the head (final
// layer norm and, for GPT, the output projection tied to the embedding). Per block with hidden
// size h, sequence s, micro-batch b (Narayanan et al., "Efficient Large-Scale Language Model
// Training on GPU Clusters using Megatron-LM", SC'21, section 5.1; Korthikanti et al., "Reducing
// Activation Recomputation in Large Transformer Models", 2022, section 4):
//   parameters          12h^2 + 13h
//   forward FLOPs       24 b s h^2 + 4 b s^2 h
//   backward FLOPs      2x forward
//   stored activations  s b h (34 + 5 a s / h) bytes at 16-bit precision
//   output activation   s b h x dtype bytes (what crosses a stage boundary)
// Parameter totals follow the standard count: blocks + token embedding V h + position embedding
// s h + final layer norm 2h (GPT-2 XL: 1,558M; GPT-3: 175B).
//
//   TransformerConfig c;  c.layers = 48; c.hidden = 1600; c.heads = 25; c.sequence = 1024;
//   c.vocabulary = 50257; Workload w = GenerateTransformer(c, DeviceModel{});
#pragma once

#include <string>

#include "partition/workload.h"
#include "workloads/device_model.h"

namespace pipetwin {

struct TransformerConfig {
  std::string kind = "gpt";  // "gpt" (decoder, tied output head) or "bert" (encoder)
  int layers = 24;
  int hidden = 1024;
  int heads = 16;
  int sequence = 1024;
  int vocabulary = 50257;
  int microbatch = 1;        // samples per micro-batch: the reference batch size of the times
  double dtype_bytes = 2;    // bytes per parameter and activation element (fp16/bf16)
};

// Throws InputError when a field is out of range (hidden not divisible by heads, zero sizes).
Workload GenerateTransformer(const TransformerConfig& config, const DeviceModel& device);

}  // namespace pipetwin
