// Megatron-LM's GPT and Llama-style transformers as its launch arguments describe them, split
// over a tensor-parallel group: the parameter counts, and the settings of the split.
//
//   MegatronModel gpt3 = GptModel(96, 12288, 96, 2048, 50257);   // GPT-3 175B
//   CountParameters(gpt3, gpt3.vocabulary).total;                 // 174.6e9 (+ biases, norms)
//   MegatronParallel p;  p.tensor = 8;  p.sequence_parallel = true;
//
// GPT (Radford et al. 2019; Brown et al. 2020) as Megatron-LM builds it: learned position
// embeddings, pre-LayerNorm blocks, a GeLU MLP of ffn_hidden = 4h, biases on every linear layer,
// dropout, the output layer tied to the word embedding. Llama (Touvron et al. 2023; Dubey et al.
// 2024): rotary positions (no table), RMSNorm, a SwiGLU MLP of its own ffn_hidden (two input
// projections), no biases, no dropout, grouped-query attention with `query_groups` key/value
// heads, an untied output layer.
#pragma once

#include <string>

namespace pipetwin {

struct MegatronModel {
  std::string architecture = "gpt";  // "gpt" or "llama": the defaults of the flags below
  int layers = 24;
  int hidden = 1024;
  int ffn_hidden = 0;        // 0: 4 x hidden
  int heads = 16;
  int query_groups = 0;      // key/value heads (grouped-query attention); 0: heads
  int sequence = 2048;
  int vocabulary = 51200;    // the tokenizer's
  int padded_vocabulary = 0; // 0: PaddedVocabulary(vocabulary, tensor)
  int max_position_embeddings = 0;  // rows of the learned position table; 0: sequence
  bool swiglu = false;
  bool rms_norm = false;
  bool bias = true;
  bool learned_positions = true;
  bool untied = false;       // the output layer has its own weights
  bool dropout = true;       // hidden and attention dropout (Megatron's default 0.1)

  int FfnHidden() const { return ffn_hidden > 0 ? ffn_hidden : 4 * hidden; }
  int QueryGroups() const { return query_groups > 0 ? query_groups : heads; }
  int HeadDim() const { return hidden / heads; }
  int Positions() const { return max_position_embeddings > 0 ? max_position_embeddings : sequence; }
};

MegatronModel GptModel(int layers, int hidden, int heads, int sequence, int vocabulary);
MegatronModel LlamaModel(int layers, int hidden, int ffn_hidden, int heads, int query_groups,
                         int sequence, int vocabulary);

// Activation recomputation (Korthikanti et al. 2022, section 5): none; selective (the attention
// core, softmax to context, is recomputed in the backward and not kept); full (a layer keeps
// only its input and reruns its forward in the backward: the schedule's recompute op).
enum class Recompute { kNone, kSelective, kFull };
const char* RecomputeName(Recompute r);  // "none", "selective", "full"

struct MegatronParallel {
  int tensor = 1;                  // t: ranks of a tensor-parallel group
  bool sequence_parallel = false;  // Korthikanti et al. 2022, section 4.2.2
  Recompute recompute = Recompute::kNone;
  bool flash_attention = false;    // Dao et al. 2022: no s x s scores kept or moved
  // Megatron's --tp-comm-overlap (Transformer Engine's userbuffers, with sequence parallelism):
  // the forward's all-gather runs beside the GEMM that takes its output and the reduce-scatter
  // beside the GEMM that makes its input, split in chunks, and the backward's all-gather of a
  // row-parallel layer's output gradient beside its input-gradient GEMM; charged what they take
  // beyond it.
  bool tp_comm_overlap = false;
  int microbatch = 1;              // b: samples per micro-batch
  std::string precision = "bf16";  // "bf16", "fp16" (weights and activations) or "fp32"
  // The gradient buffer's (main_grad's) precision, in which gradients accumulate over
  // micro-batches and are reduced over data parallelism: "fp32", or the weights' own 16 bits.
  // Megatron-LM (arguments.py, validate_args) keeps them in fp32 under --bf16 unless
  // --grad-reduce-in-bf16, and in fp16 under --fp16 unless --accumulate-allreduce-grads-in-fp32.
  std::string gradient_precision = "fp32";
  // The data-parallel width, for what the distributed optimizer shards (memory, and the step of
  // the search's candidates; a scenario's workload leaves it 1: Layer::update_sharded_ms).
  int data_parallel = 1;
  bool distributed_optimizer = false;  // Megatron's --use-distributed-optimizer (ZeRO-1)
  // What a pipeline stage sends without sequence parallelism. Megatron-LM since January 2023
  // (megatron/core/pipeline_parallel/schedules.py, get_tensor_shapes) sends every rank's whole
  // s x b x h tensor; before, it sent 1 / t of it and all-gathered the rest in the tensor-
  // parallel group after the receive (megatron/p2p_communication.py, on unless
  // --no-scatter-gather-tensors-in-pipeline; Narayanan et al. SC'21, section 4.1): true. That
  // all-gather is not modelled. With sequence parallelism both send the s / t shard.
  bool scatter_gather_pipeline = false;
  // Megatron-LM's --recompute-method and --recompute-num-layers N under full recomputation,
  // counted in each model chunk of `blocks_per_chunk` blocks (megatron/core/recompute.py):
  // "uniform" checkpoints the input of every N consecutive blocks and reruns the N together;
  // "block" checkpoints the first N blocks, each alone, and the others keep their activations.
  // uniform with N = 1 (every block its own checkpoint) needs no blocks_per_chunk.
  std::string recompute_method = "uniform";
  int recompute_num_layers = 1;
  int blocks_per_chunk = 0;  // layers / (pipeline stages x chunks)

  double DtypeBytes() const { return precision == "fp32" ? 4 : 2; }
  double GradientBytes() const { return gradient_precision == "fp32" ? 4 : 2; }
};

// Megatron pads the vocabulary to a multiple of 128 x t (--make-vocab-size-divisible-by 128,
// so that every tensor-parallel rank holds an equal, aligned slice of the embedding).
int PaddedVocabulary(int vocabulary, int tensor, int divisible_by = 128);
// The padded vocabulary a model runs with under `tensor`.
int RunVocabulary(const MegatronModel& model, int tensor);

// Throws InputError (no file: the caller places it) naming the setting at fault: heads not
// divisible by t, hidden not divisible by heads, heads by query groups, query groups by t, ...
void ValidateMegatron(const MegatronModel& model, const MegatronParallel& parallel);

// Trainable parameters, the whole model (no split).
//   word embedding V h; learned positions P h
//   block: Q h^2, K and V 2 h g d (g query groups of d = h / a), projection h^2; MLP h f (GeLU)
//          or 2 h f (SwiGLU) in, f h out; biases 3h'... of each linear layer when present;
//          two norms of 2h (LayerNorm: scale and shift) or h (RMSNorm)
//   final norm 2h or h; untied output layer V h
struct ParameterCounts {
  double embedding = 0;
  double block = 0;       // one block
  double final_norm = 0;
  double output = 0;      // 0 when tied
  double total = 0;
};
ParameterCounts CountParameters(const MegatronModel& model, int vocabulary);

// One tensor-parallel rank's parameters: the column-parallel (Q, K, V, MLP in) and row-parallel
// (projection, MLP out) matrices and the column-parallel biases split t ways; the row-parallel
// biases and the norms replicated; the vocabulary-parallel embedding and output layer V / t rows
// each, the position table replicated (Shoeybi et al. 2019, section 3).
double BlockParametersPerRank(const MegatronModel& model, int tensor);

// Model FLOPs of one iteration of `global_batch` samples (Narayanan et al. SC'21, section 5.1):
// without recomputation 72 B s l h^2 (1 + s / 6h + V / 12lh); what a run with full
// recomputation executes, 96 B s l h^2 (1 + s / 6h + V / 16lh). GPT's formula (a MLP of 4h,
// full attention); `vocabulary` is the padded one.
double NarayananModelFlops(const MegatronModel& model, double global_batch, int vocabulary);
double NarayananHardwareFlopsFullRecompute(const MegatronModel& model, double global_batch,
                                           int vocabulary);

}  // namespace pipetwin
