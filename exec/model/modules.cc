// The executor's modules, one class per kind of layer of a network's description, each a pure
// function of its inputs and parameters (modules.h). Where the module differs from the network
// the description names:
//   - GPT's output projection is untied from the token embedding (a pipeline would otherwise
//     all-reduce the shared matrix between the first and the last stage, as Megatron-LM does);
//   - BERT's head is the masked-LM head alone (untied decoder with its bias); the pooler and the
//     next-sentence classifier, which the loss would not use, are left out;
//   - no dropout (runs must be reproducible bit for bit); ResNet's batch norm normalises with
//     each micro-batch's statistics and keeps no running averages.
#include <cmath>

#include "exec/model/modules.h"

namespace pipetwin::exec {

namespace {

using Tensors = std::vector<torch::Tensor>;

// U(-bound, bound): PyTorch's default for Linear and Conv2d is bound = 1/sqrt(fan_in).
torch::Tensor Uniform(at::Generator& g, at::IntArrayRef shape, double bound) {
  return (torch::rand(shape, g) * 2 - 1) * bound;
}

// N(0, std^2): GPT-2's initialisation of every weight matrix (std 0.02).
torch::Tensor Normal(at::Generator& g, at::IntArrayRef shape, double std) {
  return torch::randn(shape, g) * std;
}

// Fully connected on the flattened input, y = x W^T + b, ReLU after when `relu`.
class Linear : public LayerFunction {
 public:
  Linear(int64_t in, int64_t out, bool relu) : in_(in), out_(out), relu_(relu) {}
  Tensors InitialParameters(at::Generator& g) const override {
    const double bound = 1 / std::sqrt(static_cast<double>(in_));
    return {Uniform(g, {out_, in_}, bound), Uniform(g, {out_}, bound)};
  }
  torch::Tensor Forward(const Tensors& x, at::TensorList p) const override {
    auto y = torch::linear(x[0].dim() > 2 ? x[0].flatten(1) : x[0], p[0], p[1]);
    return relu_ ? torch::relu(y) : y;
  }
  int ParameterTensorCount() const override { return 2; }

 private:
  int64_t in_, out_;
  bool relu_;
};

// --- transformers (GPT decoder, BERT encoder) ---

torch::Tensor LayerNorm(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
  return torch::layer_norm(x, {x.size(-1)}, w, b, 1e-5);
}

// Token + position embeddings; BERT adds the token-type embedding (all type 0 here) and a norm.
class Embedding : public LayerFunction {
 public:
  Embedding(const TransformerConfig& c) : c_(c), bert_(c.kind == "bert") {}
  Tensors InitialParameters(at::Generator& g) const override {
    const int64_t h = c_.hidden;
    Tensors p = {Normal(g, {c_.vocabulary, h}, 0.02), Normal(g, {c_.sequence, h}, 0.02)};
    if (bert_) {
      p.push_back(Normal(g, {2, h}, 0.02));
      p.push_back(torch::ones({h}));
      p.push_back(torch::zeros({h}));
    }
    return p;
  }
  torch::Tensor Forward(const Tensors& x, at::TensorList p) const override {
    auto y = torch::embedding(p[0], x[0]) + p[1].unsqueeze(0);
    if (!bert_) return y;
    return LayerNorm(y + p[2][0], p[3], p[4]);
  }
  int ParameterTensorCount() const override { return bert_ ? 5 : 2; }

 private:
  TransformerConfig c_;
  bool bert_;
};

// One block: multi-head self-attention (causal for GPT) and a 4h MLP with GELU; pre-LN (GPT-2)
// or post-LN (BERT). 12h^2 + 13h parameters, as workloads/transformer.cc counts them.
class Block : public LayerFunction {
 public:
  Block(const TransformerConfig& c) : c_(c), gpt_(c.kind == "gpt") {}
  Tensors InitialParameters(at::Generator& g) const override {
    const int64_t h = c_.hidden;
    return {torch::ones({h}),         torch::zeros({h}),                   // ln1
            Normal(g, {3 * h, h}, 0.02), torch::zeros({3 * h}),            // QKV
            Normal(g, {h, h}, 0.02),  torch::zeros({h}),                   // output projection
            torch::ones({h}),         torch::zeros({h}),                   // ln2
            Normal(g, {4 * h, h}, 0.02), torch::zeros({4 * h}),            // MLP in
            Normal(g, {h, 4 * h}, 0.02), torch::zeros({h})};               // MLP out
  }
  torch::Tensor Forward(const Tensors& x, at::TensorList p) const override {
    const torch::Tensor& in = x[0];
    if (gpt_) {
      auto y = in + Attention(LayerNorm(in, p[0], p[1]), p);
      return y + Mlp(LayerNorm(y, p[6], p[7]), p);
    }
    auto y = LayerNorm(in + Attention(in, p), p[0], p[1]);
    return LayerNorm(y + Mlp(y, p), p[6], p[7]);
  }
  int ParameterTensorCount() const override { return 12; }

 private:
  // softmax(Q K^T / sqrt(d)) V per head (Vaswani et al. 2017, section 3.2.1).
  torch::Tensor Attention(const torch::Tensor& x, at::TensorList p) const {
    const int64_t b = x.size(0), s = x.size(1), h = c_.hidden, a = c_.heads, d = h / a;
    auto qkv = torch::linear(x, p[2], p[3]).chunk(3, -1);
    auto heads = [&](const torch::Tensor& t) { return t.reshape({b, s, a, d}).transpose(1, 2); };
    auto q = heads(qkv[0]), k = heads(qkv[1]), v = heads(qkv[2]);
    auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(d));
    if (gpt_) {
      auto future = torch::ones({s, s}, scores.options().dtype(torch::kBool)).triu(1);
      scores = scores.masked_fill(future, -std::numeric_limits<float>::infinity());
    }
    auto context = torch::matmul(torch::softmax(scores, -1), v);
    return torch::linear(context.transpose(1, 2).reshape({b, s, h}), p[4], p[5]);
  }
  torch::Tensor Mlp(const torch::Tensor& x, at::TensorList p) const {
    return torch::linear(torch::gelu(torch::linear(x, p[8], p[9])), p[10], p[11]);
  }

  TransformerConfig c_;
  bool gpt_;
};

// GPT: final layer norm and the (untied) projection onto the vocabulary. BERT: the masked-LM
// transform (dense, GELU, layer norm) and the (untied) decoder with its bias.
class Head : public LayerFunction {
 public:
  Head(const TransformerConfig& c) : c_(c), gpt_(c.kind == "gpt") {}
  Tensors InitialParameters(at::Generator& g) const override {
    const int64_t h = c_.hidden, v = c_.vocabulary;
    if (gpt_) return {torch::ones({h}), torch::zeros({h}), Normal(g, {v, h}, 0.02)};
    return {Normal(g, {h, h}, 0.02), torch::zeros({h}), torch::ones({h}), torch::zeros({h}),
            Normal(g, {v, h}, 0.02), torch::zeros({v})};
  }
  torch::Tensor Forward(const Tensors& x, at::TensorList p) const override {
    if (gpt_) return torch::linear(LayerNorm(x[0], p[0], p[1]), p[2]);
    auto t = LayerNorm(torch::gelu(torch::linear(x[0], p[0], p[1])), p[2], p[3]);
    return torch::linear(t, p[4], p[5]);
  }
  int ParameterTensorCount() const override { return gpt_ ? 3 : 6; }

 private:
  TransformerConfig c_;
  bool gpt_;
};

// --- convolutional networks ---

// k x k convolution, then the bias (VGG) or a batch norm (ResNet), then ReLU when `relu`.
class Convolution : public LayerFunction {
 public:
  Convolution(int64_t in, int64_t out, int64_t kernel, int64_t stride, int64_t padding,
              bool batch_norm, bool relu)
      : in_(in), out_(out), kernel_(kernel), stride_(stride), padding_(padding),
        batch_norm_(batch_norm), relu_(relu) {}
  Tensors InitialParameters(at::Generator& g) const override {
    const double bound = 1 / std::sqrt(static_cast<double>(in_ * kernel_ * kernel_));
    Tensors p = {Uniform(g, {out_, in_, kernel_, kernel_}, bound)};
    if (batch_norm_) {
      p.push_back(torch::ones({out_}));
      p.push_back(torch::zeros({out_}));
    } else {
      p.push_back(Uniform(g, {out_}, bound));
    }
    return p;
  }
  torch::Tensor Forward(const Tensors& x, at::TensorList p) const override {
    auto y = torch::conv2d(x[0], p[0], batch_norm_ ? torch::Tensor() : p[1], stride_, padding_);
    if (batch_norm_)
      y = torch::batch_norm(y, p[1], p[2], {}, {}, /*training=*/true, 0.1, 1e-5, false);
    return relu_ ? torch::relu(y) : y;
  }
  int ParameterTensorCount() const override { return batch_norm_ ? 3 : 2; }

 private:
  int64_t in_, out_, kernel_, stride_, padding_;
  bool batch_norm_, relu_;
};

class MaxPool : public LayerFunction {
 public:
  MaxPool(int64_t kernel, int64_t stride, int64_t padding)
      : kernel_(kernel), stride_(stride), padding_(padding) {}
  Tensors InitialParameters(at::Generator&) const override { return {}; }
  torch::Tensor Forward(const Tensors& x, at::TensorList) const override {
    return torch::max_pool2d(x[0], kernel_, stride_, padding_);
  }
  int ParameterTensorCount() const override { return 0; }

 private:
  int64_t kernel_, stride_, padding_;
};

class GlobalAveragePool : public LayerFunction {
 public:
  Tensors InitialParameters(at::Generator&) const override { return {}; }
  torch::Tensor Forward(const Tensors& x, at::TensorList) const override {
    return torch::adaptive_avg_pool2d(x[0], {1, 1});
  }
  int ParameterTensorCount() const override { return 0; }
};

class ResidualAdd : public LayerFunction {
 public:
  Tensors InitialParameters(at::Generator&) const override { return {}; }
  torch::Tensor Forward(const Tensors& x, at::TensorList) const override {
    return torch::relu(x[0] + x[1]);
  }
  int ParameterTensorCount() const override { return 0; }
};

}  // namespace

std::unique_ptr<LayerFunction> MakeModule(const Network& network, const NetworkLayer& l) {
  switch (l.kind) {
    case LayerKind::kLinear: return std::make_unique<Linear>(l.in, l.out, l.relu);
    case LayerKind::kConvolution:
      return std::make_unique<Convolution>(l.in, l.out, l.kernel, l.stride, l.padding,
                                           l.batch_norm, l.relu);
    case LayerKind::kMaxPool: return std::make_unique<MaxPool>(l.kernel, l.stride, l.padding);
    case LayerKind::kGlobalAveragePool: return std::make_unique<GlobalAveragePool>();
    case LayerKind::kResidualAdd: return std::make_unique<ResidualAdd>();
    case LayerKind::kEmbedding: return std::make_unique<Embedding>(network.transformer);
    case LayerKind::kTransformerBlock: return std::make_unique<Block>(network.transformer);
    case LayerKind::kTransformerHead: return std::make_unique<Head>(network.transformer);
  }
  TORCH_CHECK(false, "MakeModule: layer ", l.id, " of an unknown kind");
}

}  // namespace pipetwin::exec
