// The analytic figures of GPT's and BERT's layers (analytic.h).
#include <cmath>

#include "workloads/analytic/analytic.h"

namespace pipetwin {

namespace {

// Layer norm, forward, per element: mean (1 add), variance (subtract, square, add), normalise
// (subtract, multiply by 1/sigma), scale and shift: about 8 FLOPs. A rough count; these layers
// are memory-bound, so it barely moves the roofline time.
constexpr double kLayerNormFlopsPerElement = 8;

// The sizes of a config as doubles, so that products of them never overflow an int.
struct Sizes {
  double h, a, s, b, v, dtype;
  explicit Sizes(const TransformerConfig& c)
      : h(c.hidden), a(c.heads), s(c.sequence), b(c.microbatch), v(c.vocabulary),
        dtype(c.dtype_bytes) {}
};

bool IsGpt(const TransformerConfig& c) { return c.kind == "gpt"; }

// Token + position embeddings (GPT); BERT adds token-type embeddings (2 types) and the embedding
// layer norm (Devlin et al., NAACL 2019, section 3.2).
//   parameters  GPT: V h + s h;  BERT: V h + s h + 2h + 2h
//   FLOPs       one add per element per extra table (s b h each), BERT's layer norm 8 s b h
//   bytes       gathered rows of each table read, output written; BERT's norm reads and writes
Layer EmbeddingLayer(const TransformerConfig& config, const DeviceSpec& device) {
  const Sizes z(config);
  const double tokens_x_hidden = z.s * z.b * z.h;
  Layer layer;
  layer.id = "embedding";
  double flops = tokens_x_hidden;                              // token + position
  double elements_moved = 2 * tokens_x_hidden + z.s * z.h;     // token rows, position, output
  if (IsGpt(config)) {
    layer.description = "token + position embedding";
    layer.parameters = z.v * z.h + z.s * z.h;
  } else {
    layer.description = "token + position + token-type embedding, layer norm";
    layer.parameters = z.v * z.h + z.s * z.h + 2 * z.h + 2 * z.h;
    flops += tokens_x_hidden + kLayerNormFlopsPerElement * tokens_x_hidden;
    elements_moved += tokens_x_hidden + 2 * tokens_x_hidden;  // type rows; norm read + write
  }
  layer.parameter_bytes = layer.parameters * z.dtype;
  layer.activation_bytes = tokens_x_hidden * z.dtype;
  SetRooflineTimes(layer, flops, elements_moved * z.dtype, device);
  return layer;
}

// One transformer block (GPT: pre-LN decoder; BERT: post-LN encoder; same sizes).
//   parameters  12h^2 + 13h (TransformerBlockParameters)
//   FLOPs       24 b s h^2 + 4 b s^2 h (TransformerBlockForwardFlops)
//   bytes       the parameters read once, and every stashed activation written once
//               (TransformerBlockStashBytes): a lower bound on the traffic of the forward pass
//   output      s b h elements: the hidden state handed to the next block
Layer BlockLayer(const TransformerConfig& config, const DeviceSpec& device, int index) {
  const Sizes z(config);
  Layer layer;
  layer.id = "block" + std::to_string(index);
  layer.description = IsGpt(config) ? "decoder block (masked self-attention + MLP)"
                                    : "encoder block (self-attention + MLP)";
  layer.parameters = TransformerBlockParameters(config);
  layer.parameter_bytes = layer.parameters * z.dtype;
  layer.activation_bytes = z.s * z.b * z.h * z.dtype;
  layer.stash_bytes = TransformerBlockStashBytes(config);
  SetRooflineTimes(layer, TransformerBlockForwardFlops(config),
           layer.parameter_bytes + TransformerBlockStashBytes(config), device);
  return layer;
}

// GPT head: the final layer norm (2h parameters) and the output projection onto the vocabulary,
// tied to the token embedding (GPT-2, Radford et al. 2019; no parameters of its own).
//   FLOPs   layer norm 8 s b h; logits 2 b s h V (Megatron-LM SC'21 section 5.1: the logit layer
//           costs 6 B s h V over forward and backward)
//   bytes   input read, norm written, embedding V h read, logits s b V written
//   output  the logits, s b V elements (the loss reads them)
Layer GptHeadLayer(const TransformerConfig& config, const DeviceSpec& device) {
  const Sizes z(config);
  const double tokens_x_hidden = z.s * z.b * z.h;
  Layer layer;
  layer.id = "head";
  layer.description = "final layer norm + output projection (tied to the token embedding)";
  layer.parameters = 2 * z.h;
  layer.parameter_bytes = layer.parameters * z.dtype;
  layer.activation_bytes = z.s * z.b * z.v * z.dtype;
  const double flops = kLayerNormFlopsPerElement * tokens_x_hidden + 2 * tokens_x_hidden * z.v;
  const double elements_moved = 2 * tokens_x_hidden + z.v * z.h + z.s * z.b * z.v;
  SetRooflineTimes(layer, flops, elements_moved * z.dtype, device);
  return layer;
}

// BERT pre-training heads (Devlin et al., NAACL 2019, section 3.1 and appendix A.1):
//   pooler: dense h x h + bias on the [CLS] token, tanh           h^2 + h
//   next-sentence classifier: h x 2 + bias                           2h + 2
//   masked-LM transform: dense h x h + bias, GELU, layer norm        h^2 + h + 2h
//   masked-LM decoder: weight tied to the token embedding, own bias  V
//   parameters  2h^2 + 6h + 2 + V
//   FLOPs       transform 2 b s h^2 + norm 8 s b h + logits 2 b s h V (every position scored,
//               as common implementations do), pooler 2 b h^2, classifier 4 b h
//   output      the logits s b V and the 2 b sentence scores
Layer BertHeadLayer(const TransformerConfig& config, const DeviceSpec& device) {
  const Sizes z(config);
  const double tokens_x_hidden = z.s * z.b * z.h;
  Layer layer;
  layer.id = "head";
  layer.description = "pooler + next-sentence classifier + masked-LM head (decoder tied)";
  layer.parameters = 2 * z.h * z.h + 6 * z.h + 2 + z.v;
  layer.parameter_bytes = layer.parameters * z.dtype;
  layer.activation_bytes = (z.s * z.b * z.v + 2 * z.b) * z.dtype;
  const double flops = 2 * tokens_x_hidden * z.h + kLayerNormFlopsPerElement * tokens_x_hidden +
                       2 * tokens_x_hidden * z.v + 2 * z.b * z.h * z.h + 4 * z.b * z.h;
  // Input read, transform and norm outputs written, embedding read, logits written, own weights.
  const double elements_moved = 3 * tokens_x_hidden + z.v * z.h + z.s * z.b * z.v +
                                layer.parameters;
  SetRooflineTimes(layer, flops, elements_moved * z.dtype, device);
  return layer;
}

}  // namespace

// Kaplan et al., "Scaling Laws for Neural Language Models", 2020, section 2.1 (12 n_layer
// d_model^2 without biases); with biases and norms, per block:
//   attention  QKV 3h^2 + 3h, output projection h^2 + h
//   MLP        h -> 4h: 4h^2 + 4h, 4h -> h: 4h^2 + h
//   two layer norms (scale and shift): 4h
double TransformerBlockParameters(const TransformerConfig& config) {
  const Sizes z(config);
  return 12 * z.h * z.h + 13 * z.h;
}

// Megatron-LM SC'21 section 5.1 (one multiply-add = 2 FLOPs):
//   QKV projections 6 b s h^2, attention scores Q K^T 2 b s^2 h, scores x V 2 b s^2 h,
//   output projection 2 b s h^2, MLP 16 b s h^2;  sum 24 b s h^2 + 4 b s^2 h.
double TransformerBlockForwardFlops(const TransformerConfig& config) {
  const Sizes z(config);
  return 24 * z.b * z.s * z.h * z.h + 4 * z.b * z.s * z.s * z.h;
}

// Korthikanti et al. 2022, section 4.1, in bytes at 16-bit (elements x 2, masks x 1):
//   attention  QKV input 2sbh, Q and K 4sbh, softmax output 2as^2b, its dropout mask as^2b,
//              dropout output 2as^2b, V 2sbh, projection input 2sbh, dropout mask sbh
//              -> 11sbh + 5as^2b
//   MLP        first linear input 2sbh, GELU input 8sbh, GELU output 8sbh, dropout mask sbh
//              -> 19sbh
//   layer norm inputs 4sbh
//   total      sbh (34 + 5as/h) = 2 x (16 sbh + 2 a s^2 b) tensor bytes + (2 sbh + a s^2 b) mask
// At another dtype the tensor part scales with dtype_bytes; the masks stay one byte per element.
double TransformerBlockStashBytes(const TransformerConfig& config) {
  const Sizes z(config);
  const double sbh = z.s * z.b * z.h;
  const double as2b = z.a * z.s * z.s * z.b;
  return z.dtype * (16 * sbh + 2 * as2b) + (2 * sbh + as2b);
}

Layer AnalyticTransformerLayer(const TransformerConfig& config, const NetworkLayer& layer,
                               int block_index, const DeviceSpec& device) {
  switch (layer.kind) {
    case LayerKind::kEmbedding: return EmbeddingLayer(config, device);
    case LayerKind::kTransformerBlock: return BlockLayer(config, device, block_index);
    default:
      return IsGpt(config) ? GptHeadLayer(config, device) : BertHeadLayer(config, device);
  }
}

}  // namespace pipetwin
