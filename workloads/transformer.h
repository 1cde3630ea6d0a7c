// Analytic GPT (decoder) and BERT (encoder) workloads.
//
// Layers: the embedding, one layer per transformer block, and the head. Per block with hidden
// size h, a heads, sequence s, micro-batch b (Narayanan et al., "Efficient Large-Scale Language
// Model Training on GPU Clusters using Megatron-LM", SC'21, section 5.1; Korthikanti et al.,
// "Reducing Activation Recomputation in Large Transformer Models", 2022, section 4):
//   parameters          12h^2 + 13h
//   forward FLOPs       24 b s h^2 + 4 b s^2 h
//   backward FLOPs      2x forward
//   stored activations  s b h (34 + 5 a s / h) bytes at 16-bit precision (stash for backward)
//   output activation   s b h x dtype bytes (what crosses a stage boundary)
// Parameter totals follow the standard count: blocks + token embedding V h + position embedding
// s h + final layer norm 2h (GPT-2 XL: 1,557,611,200; GPT-3: 174.6e9).
//
// GPT: embedding = token + position tables; head = final layer norm and the output projection,
// whose weight is tied to the token embedding (no parameters of its own; a pipeline keeps a copy
// on the last stage and all-reduces its gradient with the first, as Megatron-LM does).
// BERT (post-LN, no final layer norm): embedding = token + position + token-type (2 types) tables
// and the embedding layer norm; head = the full pre-training heads of Devlin et al. (NAACL 2019):
// pooler (h x h dense on [CLS]), next-sentence classifier (h x 2), masked-LM transform (h x h
// dense, GELU, layer norm) and the masked-LM decoder tied to the token embedding plus its own
// V output biases. BERT-Large then has 336,226,108 parameters (335,141,888 without the
// pre-training heads but with the pooler, the usual "BERT-Large 340M").
//
//   TransformerConfig c;  c.layers = 48; c.hidden = 1600; c.heads = 25; c.sequence = 1024;
//   c.vocabulary = 50257; Workload w = GenerateTransformer(c, DeviceModel{});
//   // w.layers: "embedding", "block0" ... "block47", "head"; w.name "gpt-48x1600"
#pragma once

#include <string>

#include "partition/model/workload.h"
#include "workloads/device_model.h"

namespace pipetwin {

struct TransformerConfig {
  std::string kind = "gpt";  // "gpt" (decoder, tied output head) or "bert" (encoder)
  int layers = 24;
  int hidden = 1024;
  int heads = 16;
  int sequence = 1024;       // tokens per sample; also the rows of the position table
  int vocabulary = 50257;
  int microbatch = 1;        // samples per micro-batch: the reference batch size of the times
  double dtype_bytes = 2;    // bytes per parameter and activation element (fp16/bf16)
};

// Throws InputError naming the field when the config is out of range: a kind other than "gpt" or
// "bert", an integer below 1, hidden not divisible by heads, dtype_bytes not > 0.
void ValidateTransformerConfig(const TransformerConfig& config);

// The generated workload: a chain embedding -> block0 .. blockN-1 -> head, times from the
// device's roofline, reference batch = microbatch, source "analytic". Throws InputError as
// ValidateTransformerConfig does.
Workload GenerateTransformer(const TransformerConfig& config, const DeviceModel& device);

// Per-block quantities, for planners that need more than the Layer carries. The config must be
// valid (these do not validate).
// Trainable parameters of one block: 12h^2 + 13h.
double TransformerBlockParameters(const TransformerConfig& config);
// Forward FLOPs of one block for one micro-batch: 24 b s h^2 + 4 b s^2 h.
double TransformerBlockForwardFlops(const TransformerConfig& config);
// Bytes one block keeps from its forward pass for its backward pass (no recomputation), for one
// micro-batch: s b h (34 + 5 a s / h) at dtype_bytes = 2 (Korthikanti et al. 2022, section 4);
// at another dtype the tensors scale with dtype_bytes and the dropout masks stay 1 byte.
double TransformerBlockStashBytes(const TransformerConfig& config);

}  // namespace pipetwin
