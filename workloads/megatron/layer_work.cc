// The kernels, collectives and stash of each layer (layer_work.h gives the sizes' names).
#include "workloads/megatron/layer_work.h"

namespace pipetwin {

Kernel Gemm(const std::string& name, double m, double n, double k, double batch, double dtype) {
  Kernel g;
  g.name = name;
  g.kind = KernelKind::kGemm;
  g.m = m;
  g.n = n;
  g.k = k;
  g.batch = batch;
  g.flops = 2 * m * n * k * batch;
  g.bytes = dtype * batch * (m * k + k * n + m * n);
  return g;
}

Kernel Linear(const std::string& name, double m, double n, double k, double dtype) {
  Kernel g = Gemm(name, m, n, k, 1, dtype);
  g.linear = true;
  return g;
}

std::vector<Kernel> GemmBackward(const Kernel& f) {
  const double dtype = f.bytes / (f.batch * (f.m * f.k + f.k * f.n + f.m * f.n));
  Kernel weight = Gemm(f.name + " weight grad", f.k, f.n, f.m, f.batch, dtype);
  weight.weight_gradient = f.linear;
  return {Gemm(f.name + " input grad", f.m, f.k, f.n, f.batch, dtype), weight};
}

namespace {

Kernel Elementwise(const std::string& name, double bytes) {
  Kernel e;
  e.name = name;
  e.kind = KernelKind::kMemoryBound;
  e.bytes = bytes;
  return e;
}

// The sizes of one block's tensors on one rank.
struct Sizes {
  double s, b, h, a, t, d, g, f, f_in, D;
  double N;      // s b h
  double Nrep;   // N' (norms, dropouts, residuals): N / t under sequence parallelism
  double sent;   // elements a rank sends to the next stage (MegatronParallel::scatter_gather_pipeline)
  bool sp, overlap;
  Sizes(const MegatronModel& m, const MegatronParallel& p)
      : s(m.sequence), b(p.microbatch), h(m.hidden), a(m.heads), t(p.tensor), d(m.HeadDim()),
        g(m.QueryGroups()), f(m.FfnHidden()), f_in(m.swiglu ? 2.0 * m.FfnHidden() : m.FfnHidden()),
        D(p.DtypeBytes()), N(s * b * h), Nrep(p.sequence_parallel ? N / t : N),
        sent(p.sequence_parallel || p.scatter_gather_pipeline ? N / t : N),
        sp(p.sequence_parallel && p.tensor > 1), overlap(sp && p.tp_comm_overlap) {}
};

// Adds `k` to the forward and its backward kernels to the backward. An element-wise kernel's
// backward moves `backward_bytes` (what its gradient kernel reads and writes; each call says).
void Add(LayerWork& w, const Kernel& k, double backward_bytes = 0) {
  w.forward.push_back(k);
  if (k.kind == KernelKind::kGemm) {
    for (const Kernel& b : GemmBackward(k)) w.backward.push_back(b);
  } else if (k.kind == KernelKind::kFlashAttention) {
    // FlashAttention-2's backward runs 5 matrix products to the forward's 2 (Dao 2023, sec. 3.2).
    Kernel b = k;
    b.name += " grad";
    b.flops *= 2.5;
    b.bytes *= 2;
    w.backward.push_back(b);
  } else {
    w.backward.push_back(Elementwise(k.name + " grad", backward_bytes));
  }
}

// Adds a linear layer's GEMM, and what a zero-bubble schedule's W keeps of it after I: the
// GEMM's input and its output's gradient (the zero-bubble runtime's WeightGradStore holds the two
// for the weight-gradient GEMM, sail-sg/zero-bubble-pipeline-parallelism, tensor_parallel/
// layers.py). An input that sequence parallelism gathered is kept as its shard, 1 / t of it, and
// gathered again in W. For a GPT block, 16 s b h elements: Qi et al.'s M_W = 32 s b h in 16 bits.
void AddLinear(LayerWork& w, const Sizes& z, const Kernel& k, bool gathered_input) {
  Add(w, k);
  w.weight_stash_bytes += z.D * (k.m * k.k / (gathered_input && z.sp ? z.t : 1) + k.m * k.n);
}

// The bias gradient of a linear layer: its output gradient summed over the tokens, a reduction
// that reads it (Megatron-LM's ColumnParallelLinear: grad_output.sum(dim=0); where the bias is
// added in a fused bias-GeLU or bias-dropout-add, autograd's reduction of that kernel's gradient).
void AddBiasGrad(LayerWork& w, const std::string& linear, double gradient_bytes) {
  w.backward.push_back(Elementwise(linear + " bias grad", gradient_bytes));
}

// Where a tensor-parallel region opens (before a column-parallel linear) and closes (after a
// row-parallel one), Megatron's f and g operators (Shoeybi et al. 2019, figure 3): without
// sequence parallelism f is the identity forward and an all-reduce backward, g an all-reduce
// forward; with it f all-gathers forward and reduce-scatters backward, g the reverse
// (Korthikanti et al. 2022, figure 5).
void OpenRegion(LayerWork& w, const Sizes& z, const std::string& name, const std::string& gemm) {
  if (z.t <= 1) return;
  if (z.sp) {
    w.forward_collectives.push_back(
        {name + " all-gather", CollectiveKind::kAllGather, z.D * z.N, z.overlap ? gemm : ""});
    // The backward all-gathers the kept shard again for the weight gradient, beside the input
    // gradient GEMM, and reduce-scatters the input gradient beside the weight gradient GEMM.
    w.backward_collectives.push_back({name + " all-gather", CollectiveKind::kAllGather, z.D * z.N,
                                      gemm + " input grad", /*weight_gradient=*/true});
    w.backward_collectives.push_back(
        {name + " reduce-scatter", CollectiveKind::kReduceScatter, z.D * z.N, gemm + " weight grad"});
  } else {
    w.backward_collectives.push_back(
        {name + " all-reduce", CollectiveKind::kAllReduce, z.D * z.N, gemm + " weight grad"});
  }
}

void CloseRegion(LayerWork& w, const Sizes& z, const std::string& name, const std::string& gemm) {
  if (z.t <= 1) return;
  if (z.sp) {
    w.forward_collectives.push_back({name + " reduce-scatter", CollectiveKind::kReduceScatter,
                                     z.D * z.N, z.overlap ? gemm : ""});
    // Under --tp-comm-overlap Transformer Engine exchanges the output gradient beside the
    // input-gradient GEMM that takes it (its proj_dgrad and fc2_dgrad ring exchanges,
    // initialize_ub in transformer_engine/pytorch/module/base.py, v1.8); else it waits.
    w.backward_collectives.push_back({name + " all-gather", CollectiveKind::kAllGather, z.D * z.N,
                                      z.overlap ? gemm + " input grad" : ""});
  } else {
    w.forward_collectives.push_back({name + " all-reduce", CollectiveKind::kAllReduce, z.D * z.N, ""});
  }
}

}  // namespace

LayerWork BlockWork(const MegatronModel& m, const MegatronParallel& p) {
  const Sizes z(m, p);
  const double tokens = z.s * z.b;
  const double q_cols = z.h / z.t, kv_cols = z.g * z.d / z.t;  // per rank
  const double heads = z.a / z.t;
  const bool flash = p.flash_attention;
  const double scores = z.a * z.s * z.s * z.b / z.t;  // elements of the s x s scores, per rank
  LayerWork w;
  w.parameters = BlockParametersPerRank(m, p.tensor);
  w.output_bytes = z.D * z.sent;

  // Attention.
  // LayerNorm / RMSNorm: read x, write y; backward reads x and dy, writes dx (the scale's
  // and shift's gradients are partial sums, small).
  Add(w, Elementwise("input norm", 2 * z.D * z.Nrep), 3 * z.D * z.Nrep);
  OpenRegion(w, z, "attention", "qkv");
  AddLinear(w, z, Linear("qkv", tokens, q_cols + 2 * kv_cols, z.h, z.D), /*gathered_input=*/true);
  if (m.bias) AddBiasGrad(w, "qkv", z.D * tokens * (q_cols + 2 * kv_cols));
  if (!m.learned_positions) {  // rotary embedding of Q and K: read and write them, both ways
    const double qk = 2 * z.D * tokens * (q_cols + kv_cols);
    Add(w, Elementwise("rotary", qk), qk);
  }
  std::vector<Kernel> core;
  if (flash) {
    Kernel fa;
    fa.name = "flash attention";
    fa.kind = KernelKind::kFlashAttention;
    fa.flops = 4 * z.b * heads * z.s * z.s * z.d;  // Q K^T and P V
    fa.bytes = z.D * tokens * (2 * q_cols + 2 * kv_cols);  // Q, K, V read, output written
    core.push_back(fa);
  } else {
    // Grouped-query attention: each query head reads its group's K and V; the products are
    // those of full attention.
    core.push_back(Gemm("scores", z.s, z.s, z.d, z.b * heads, z.D));
    core.push_back(Elementwise("scale-mask-softmax", 2 * z.D * scores));
    if (m.dropout) core.push_back(Elementwise("attention dropout", (2 * z.D + 1) * scores));
    core.push_back(Gemm("context", z.s, z.d, z.s, z.b * heads, z.D));
  }
  // Backward traffic: softmax reads y and dy, writes dx (6 bytes an element in 16 bits);
  // dropout reads dy and the mask, writes dx (5), as its forward.
  for (const Kernel& k : core)
    Add(w, k, k.name == "scale-mask-softmax" ? 3 * z.D * scores : k.bytes);
  if (p.recompute == Recompute::kSelective && !flash) w.recomputed = core;
  AddLinear(w, z, Linear("projection", tokens, z.h, z.h / z.t, z.D), /*gathered_input=*/false);
  CloseRegion(w, z, "attention", "projection");
  // Forward: read x and the residual, write the sum (and the dropout mask). Backward: the
  // dropout's gradient (read dy and the mask, write dx), and at the block's input autograd adds
  // the residual path's gradient to the norm's (read two, write one).
  const double residual = m.dropout ? 3 * z.D + 1 : 3 * z.D;
  const double residual_grad = (m.dropout ? 2 * z.D + 1 : 0) + 3 * z.D;
  Add(w, Elementwise(m.dropout ? "bias-dropout-add" : "residual add", residual * z.Nrep),
      residual_grad * z.Nrep);
  if (m.bias) AddBiasGrad(w, "projection", z.D * z.Nrep);

  // MLP.
  Add(w, Elementwise("post-attention norm", 2 * z.D * z.Nrep), 3 * z.D * z.Nrep);
  OpenRegion(w, z, "mlp", "mlp in");
  AddLinear(w, z, Linear("mlp in", tokens, z.f_in / z.t, z.h, z.D), /*gathered_input=*/true);
  // Forward: read f_in, write f. Backward: read dy (f) and the saved input (f_in), write the
  // input's gradient (f_in).
  Add(w, Elementwise(m.swiglu ? "swiglu" : "bias-gelu", z.D * tokens * (z.f_in + z.f) / z.t),
      z.D * tokens * (2 * z.f_in + z.f) / z.t);
  if (m.bias) AddBiasGrad(w, "mlp in", z.D * tokens * z.f_in / z.t);
  AddLinear(w, z, Linear("mlp out", tokens, z.h, z.f / z.t, z.D), /*gathered_input=*/false);
  CloseRegion(w, z, "mlp", "mlp out");
  Add(w, Elementwise(m.dropout ? "bias-dropout-add" : "residual add", residual * z.Nrep),
      residual_grad * z.Nrep);
  if (m.bias) AddBiasGrad(w, "mlp out", z.D * z.Nrep);

  // The stash (layer_work.h).
  const double mask = m.dropout ? 1 : 0;
  double stash = 2 * z.D * z.Nrep                         // the two norms' inputs
                 + z.D * z.Nrep                            // QKV input
                 + z.D * tokens * (q_cols + kv_cols)       // Q and K
                 + z.D * tokens * kv_cols                  // V
                 + z.D * z.N / z.t                         // projection input
                 + mask * z.Nrep                           // attention dropout mask
                 + z.D * z.Nrep                            // MLP input
                 + z.D * tokens * (z.f_in + z.f) / z.t     // activation input and output
                 + mask * z.Nrep;                          // MLP dropout mask
  if (flash) stash += 4 * heads * z.s * z.b;  // softmax statistics in fp32
  else if (p.recompute != Recompute::kSelective)
    stash += (m.dropout ? 2 * z.D + 1 : z.D) * scores;  // softmax out (+ mask, dropout out)
  w.stash_bytes = stash;
  return w;
}

double BlockCheckpointBytes(const MegatronModel& m, const MegatronParallel& p) {
  const Sizes z(m, p);
  return z.D * z.Nrep;
}

LayerWork EmbeddingWork(const MegatronModel& m, const MegatronParallel& p) {
  const Sizes z(m, p);
  const double v = RunVocabulary(m, p.tensor);
  LayerWork w;
  w.parameters = v / z.t * z.h + (m.learned_positions ? double(m.Positions()) * z.h : 0);
  w.output_bytes = z.D * z.sent;
  // Each rank gathers the rows it holds (masking the others) and writes N partial sums.
  w.forward.push_back(Elementwise("word embedding lookup", 2 * z.D * z.N));
  // The backward scatters the output gradient into the rank's rows (read, read-modify-write).
  w.backward.push_back(Elementwise("word embedding grad", 3 * z.D * z.N));
  w.backward.back().weight_gradient = true;
  if (z.t > 1) {
    if (z.sp) {
      w.forward_collectives.push_back({"embedding reduce-scatter", CollectiveKind::kReduceScatter, z.D * z.N, ""});
      // It gathers the output gradient for the table's gradient only (the input is token ids).
      w.backward_collectives.push_back({"embedding all-gather", CollectiveKind::kAllGather,
                                        z.D * z.N, "", /*weight_gradient=*/true});
    } else {
      w.forward_collectives.push_back({"embedding all-reduce", CollectiveKind::kAllReduce, z.D * z.N, ""});
    }
  }
  // The position embedding's gradient: the output gradient summed over the micro-batch into
  // the table's rows (read it, read-modify-write the rows); the dropout's, as its forward.
  if (m.learned_positions) {
    Add(w, Elementwise("position embedding add", 3 * z.D * z.Nrep), 3 * z.D * z.Nrep);
    w.backward.back().weight_gradient = true;
  }
  if (m.dropout)
    Add(w, Elementwise("embedding dropout", (2 * z.D + 1) * z.Nrep), (2 * z.D + 1) * z.Nrep);
  w.stash_bytes = m.dropout ? z.Nrep : 0;  // the dropout mask
  // W scatters the output gradient into the tables' rows: it keeps that gradient (the shard,
  // under sequence parallelism, which W gathers).
  w.weight_stash_bytes = z.D * z.Nrep;
  return w;
}

LayerWork OutputWork(const MegatronModel& m, const MegatronParallel& p) {
  const Sizes z(m, p);
  const double v = RunVocabulary(m, p.tensor);
  const double tokens = z.s * z.b, logits = tokens * v / z.t;
  LayerWork w;
  // Untied: the output layer's own V / t rows; tied: the last stage's copy of the embedding's
  // (Megatron all-reduces the two copies' gradients after every iteration).
  w.parameters = v / z.t * z.h + (m.rms_norm ? z.h : 2 * z.h);
  w.output_bytes = 0;
  Add(w, Elementwise("final norm", 2 * z.D * z.Nrep), 3 * z.D * z.Nrep);
  OpenRegion(w, z, "output", "logits");
  AddLinear(w, z, Linear("logits", tokens, v / z.t, z.h, z.D), /*gathered_input=*/true);
  // Vocabulary-parallel cross-entropy in fp32 (megatron/core/tensor_parallel/cross_entropy.py):
  // cast to fp32 (2 read, 4 written), subtract the max (4 + 4), exp (4 + 4), sum (4), divide
  // (4 + 4): 34 bytes per logit; the backward, softmax minus one-hot and the cast back (4 + 4,
  // 4 + 2): 14. Its all-reduces of the max, the sum and the target logit are s b floats each.
  w.forward.push_back(Elementwise("cross-entropy", 34 * logits));
  w.backward.push_back(Elementwise("cross-entropy grad", 14 * logits));
  if (z.t > 1)
    for (const char* what : {"max", "sum", "target"})
      w.forward_collectives.push_back({std::string("cross-entropy ") + what + " all-reduce",
                                       CollectiveKind::kAllReduce, 4 * tokens, ""});
  w.stash_bytes = 2 * z.D * z.Nrep /* norm input, logits input */ + 4 * logits /* softmax */;
  return w;
}

}  // namespace pipetwin
