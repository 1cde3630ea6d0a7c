// GPT's and BERT's description (network.h): the layers' sizes live in Network::transformer.
#include <cmath>
#include <string>

#include "partition/util/error.h"
#include "workloads/networks/network.h"

namespace pipetwin {

namespace {

void RequireAtLeastOne(const char* field, int value) {
  if (value < 1)
    throw InputError(std::string("transformer: ") + field + " must be >= 1, got " +
                     std::to_string(value));
}

// "2" for 2.0, "1.5" for 1.5: no trailing zeros in messages.
std::string ShortNumber(double x) {
  std::string out = std::to_string(x);
  if (out.find('.') == std::string::npos) return out;  // "inf", "nan"
  out.erase(out.find_last_not_of('0') + 1);
  if (!out.empty() && out.back() == '.') out.pop_back();
  return out;
}

NetworkLayer Layer(const std::string& id, const std::string& description, LayerKind kind,
                   int input, std::vector<int64_t> shape) {
  NetworkLayer layer;
  layer.id = id;
  layer.description = description;
  layer.kind = kind;
  layer.inputs = {input};
  layer.output_shape = std::move(shape);
  return layer;
}

}  // namespace

void ValidateTransformerConfig(const TransformerConfig& config) {
  if (config.kind != "gpt" && config.kind != "bert")
    throw InputError("transformer: kind must be \"gpt\" or \"bert\", got \"" + config.kind +
                     "\"");
  RequireAtLeastOne("layers", config.layers);
  RequireAtLeastOne("hidden", config.hidden);
  RequireAtLeastOne("heads", config.heads);
  RequireAtLeastOne("sequence", config.sequence);
  RequireAtLeastOne("vocabulary", config.vocabulary);
  RequireAtLeastOne("microbatch", config.microbatch);
  if (config.hidden % config.heads != 0)
    throw InputError("transformer: hidden (" + std::to_string(config.hidden) +
                     ") must be divisible by heads (" + std::to_string(config.heads) + ")");
  if (!std::isfinite(config.dtype_bytes) || config.dtype_bytes <= 0)
    throw InputError("transformer: dtype_bytes must be > 0, got " +
                     ShortNumber(config.dtype_bytes));
}

Network DescribeTransformer(const TransformerConfig& c) {
  ValidateTransformerConfig(c);
  const bool gpt = c.kind == "gpt";
  Network n;
  n.generator = c.kind;
  n.name = c.kind + "-" + std::to_string(c.layers) + "x" + std::to_string(c.hidden);
  n.input.tokens = true;
  n.input.sample_shape = {c.sequence};
  n.input.token_range = c.vocabulary;
  n.input.classes = c.vocabulary;
  n.input.labels_per_token = true;
  n.batch = c.microbatch;
  n.dtype_bytes = c.dtype_bytes;
  n.transformer = c;
  const std::vector<int64_t> hidden = {c.sequence, c.hidden};
  n.layers.push_back(Layer("embedding",
                           gpt ? "token + position embedding"
                               : "token + position + token-type embedding, layer norm",
                           LayerKind::kEmbedding, -1, hidden));
  for (int i = 0; i < c.layers; ++i)
    n.layers.push_back(Layer("block" + std::to_string(i),
                             gpt ? "decoder block (masked self-attention + MLP)"
                                 : "encoder block (self-attention + MLP)",
                             LayerKind::kTransformerBlock, i, hidden));
  n.layers.push_back(
      Layer("head",
            gpt ? "final layer norm + output projection (tied to the token embedding)"
                : "pooler + next-sentence classifier + masked-LM head (decoder tied)",
            LayerKind::kTransformerHead, c.layers, {c.sequence, c.vocabulary}));
  return n;
}

}  // namespace pipetwin
