// What one tensor-parallel rank does for one micro-batch in each layer of a Megatron-LM
// transformer: the kernels of its forward and backward (GEMMs with their shapes, the attention
// core, the memory-bound element-wise kernels), the collectives of its tensor-parallel group,
// what it keeps for the backward, and what it sends to the next pipeline stage.
//
//   LayerWork block = BlockWork(model, parallel);
//   block.forward;               // ln1, qkv, scores, softmax, ... as Megatron-LM runs them
//   block.forward_collectives;   // 2 all-reduces of b s h (or all-gathers and reduce-scatters)
//
// Sizes (Korthikanti et al. 2022 notation): s sequence, b micro-batch, h hidden, a heads, t the
// tensor-parallel size, g query groups of d = h / a, f the MLP width, V the padded vocabulary, D
// the bytes of an activation element (2 in bf16 and fp16). N = s b h; N' = N / t under sequence
// parallelism (norms, dropouts and residuals then run on s / t tokens), else N.
#pragma once

#include <string>
#include <vector>

#include "partition/cost/communication.h"
#include "workloads/megatron/model.h"

namespace pipetwin {

enum class KernelKind {
  kGemm,            // C[m x n] = A[m x k] B[k x n], `batch` of them
  kFlashAttention,  // the fused attention core (Dao et al. 2022)
  kMemoryBound,     // element-wise: norms, activations, dropout, residual adds, softmax
};

struct Kernel {
  std::string name;
  KernelKind kind = KernelKind::kMemoryBound;
  double m = 0, n = 0, k = 0, batch = 1;
  double flops = 0;  // 2 m n k batch for a GEMM
  double bytes = 0;  // memory traffic: a GEMM's operands and result once, an element-wise
                     // kernel's reads and writes
  bool linear = false;  // a GEMM whose B is a trained weight (not attention's Q K^T or P V)
  // A backward kernel computing a parameter's gradient, which a zero-bubble schedule defers to
  // its W pass: a linear layer's weight-gradient GEMM and the embedding tables' gradients.
  // Everything else of the backward is the I pass, bias gradients included (the zero-bubble
  // runtime's Megatron layers, sail-sg/zero-bubble-pipeline-parallelism, tensor_parallel/
  // layers.py: grad_bias is computed beside grad_input, the wgrad GEMM is queued).
  bool weight_gradient = false;
};

struct Collective {
  std::string name;
  CollectiveKind kind = CollectiveKind::kAllReduce;
  double bytes = 0;  // the whole tensor (communication.h, TensorParallelCollectiveCost)
  // The kernel of the same pass it runs beside (Megatron-LM overlaps a backward's input-
  // gradient all-reduce, or sequence parallelism's all-gather and reduce-scatter, with the
  // weight- and input-gradient GEMMs of the same linear layer; with tp_comm_overlap the
  // forward's too); empty: it runs alone.
  std::string beside;
  // Sequence parallelism's all-gather of the kept input shard for a weight gradient, which a
  // zero-bubble schedule's W pass runs (layers.py above: WeightGradStore runs it, then the
  // wgrad GEMM); every other backward collective is on the input gradient's path, I's.
  bool weight_gradient = false;
};

struct LayerWork {
  std::vector<Kernel> forward, backward;
  std::vector<Kernel> recomputed;  // rerun in the backward under selective recomputation
  std::vector<Collective> forward_collectives, backward_collectives;
  double parameters = 0;     // this rank's
  double stash_bytes = 0;    // kept from the forward for the backward, one micro-batch
  double weight_stash_bytes = 0;  // kept from a zero-bubble I for its W (Layer::)
  double output_bytes = 0;   // sent to the next stage: D N, or D N / t under sequence
                             // parallelism or scatter-gather (MegatronParallel::)
};

// A GEMM's kernel, and its two backward GEMMs (the input gradient dA = dC B^T, m x k over n;
// the weight gradient dB = A^T dC, k x n over m: each as many FLOPs as the forward). Linear: a
// linear layer's GEMM, B its weight.
Kernel Gemm(const std::string& name, double m, double n, double k, double batch, double dtype);
Kernel Linear(const std::string& name, double m, double n, double k, double dtype);
std::vector<Kernel> GemmBackward(const Kernel& forward);

// One transformer block. The stash (per rank, bytes) generalises Korthikanti et al. 2022,
// section 4.1 to grouped-query attention, another MLP width and SwiGLU: the two norms' inputs
// D N' each, the QKV input D N', Q and K D s b (h + g d) / t, V D s b g d / t, the softmax
// output D a s^2 b / t, its dropout mask a s^2 b / t and output D a s^2 b / t, the projection's
// input D N / t, the attention's dropout mask N', the MLP's input D N', the activation's input
// D s b f_in / t and output D s b f / t, the MLP's dropout mask N'. For GPT (f = 4h, g = a) with
// no sequence parallelism this is Table 2's s b h (10 + 24 / t + 5 a s / h t); with it
// s b h / t (34 + 5 a s / h). Selective recomputation keeps none of the s^2 terms (Table 2:
// 10 + 24 / t, or 34 / t); flash attention keeps none either, but the softmax statistics,
// 4 a s b / t. Full recomputation is the schedule's (every layer's forward rerun): its stash is
// this one, held for one micro-batch at a time.
LayerWork BlockWork(const MegatronModel& model, const MegatronParallel& parallel);
// What a block keeps under full recomputation, one micro-batch: its input, D s b h, or D s b h / t
// under sequence parallelism (Korthikanti et al. 2022, section 5: "2sbh" per layer in 16 bits;
// Megatron-LM's checkpoint of each block, --recompute-method uniform --recompute-num-layers 1).
double BlockCheckpointBytes(const MegatronModel& model, const MegatronParallel& parallel);
// The vocabulary-parallel word embedding (each rank looks up its V / t rows and the partial
// sums are all-reduced, or reduce-scattered under sequence parallelism), the position
// embedding and the embedding dropout.
LayerWork EmbeddingWork(const MegatronModel& model, const MegatronParallel& parallel);
// The final norm, the vocabulary-parallel output layer (its own weights or a copy of the tied
// embedding on the last stage) and the vocabulary-parallel cross-entropy in fp32.
LayerWork OutputWork(const MegatronModel& model, const MegatronParallel& parallel);

}  // namespace pipetwin
