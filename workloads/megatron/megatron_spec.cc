#include "workloads/megatron/megatron_spec.h"

#include "partition/util/limits.h"

namespace pipetwin {

MegatronSpec ReadMegatronSpec(JsonReader& r) {
  MegatronSpec s;
  const std::string architecture = r.OptionalChoice("architecture", {"gpt", "llama"}, "gpt");
  MegatronModel& m = s.model;
  if (architecture == "llama") m = LlamaModel(32, 4096, 11008, 32, 32, 4096, 32000);
  m.layers = r.OptionalInteger("layers", 1, kMaxLayers, m.layers);
  m.hidden = r.OptionalInteger("hidden", 1, kMaxDimension, m.hidden);
  m.ffn_hidden = r.OptionalInteger("ffn_hidden", 0, kMaxDimension, m.ffn_hidden);
  m.heads = r.OptionalInteger("heads", 1, kMaxDimension, m.heads);
  m.query_groups = r.OptionalInteger("query_groups", 0, kMaxDimension, m.query_groups);
  m.sequence = r.OptionalInteger("sequence", 1, kMaxDimension, m.sequence);
  m.vocabulary = r.OptionalInteger("vocabulary", 1, kMaxDimension, m.vocabulary);
  m.padded_vocabulary = r.OptionalInteger("padded_vocabulary", 0, kMaxDimension, m.padded_vocabulary);
  m.max_position_embeddings =
      r.OptionalInteger("max_position_embeddings", 0, kMaxDimension, m.max_position_embeddings);
  m.swiglu = r.OptionalBool("swiglu", m.swiglu);
  m.rms_norm = r.OptionalChoice("normalization", {"layernorm", "rmsnorm"},
                                m.rms_norm ? "rmsnorm" : "layernorm") == "rmsnorm";
  m.bias = r.OptionalBool("bias", m.bias);
  m.learned_positions = r.OptionalChoice("position_embedding", {"learned", "rope"},
                                         m.learned_positions ? "learned" : "rope") == "learned";
  m.untied = r.OptionalBool("untie_embeddings", m.untied);
  m.dropout = r.OptionalBool("dropout", m.dropout);
  MegatronParallel& p = s.parallel;
  p.tensor = r.OptionalInteger("tensor_parallel", 1, kMaxDevices, p.tensor);
  p.sequence_parallel = r.OptionalBool("sequence_parallel", p.sequence_parallel);
  // Full recomputation is the schedule's (training.recompute): every layer's forward rerun.
  p.recompute = r.OptionalChoice("recompute", {"none", "selective"}, "none") == "selective"
                    ? Recompute::kSelective
                    : Recompute::kNone;
  p.flash_attention = r.OptionalBool("flash_attention", p.flash_attention);
  p.tp_comm_overlap = r.OptionalBool("tp_comm_overlap", p.tp_comm_overlap);
  p.microbatch = r.OptionalInteger("microbatch", 1, kMaxSamples, p.microbatch);
  p.precision = r.OptionalChoice("precision", {"bf16", "fp16", "fp32"}, p.precision);
  p.gradient_precision =
      r.OptionalChoice("gradient_precision", {"fp32", "bf16", "fp16"}, p.gradient_precision);
  p.scatter_gather_pipeline = r.OptionalBool("scatter_gather_pipeline", p.scatter_gather_pipeline);
  p.recompute_method = r.OptionalChoice("recompute_method", {"uniform", "block"}, p.recompute_method);
  p.recompute_num_layers =
      r.OptionalInteger("recompute_num_layers", 1, kMaxLayers, p.recompute_num_layers);
  p.blocks_per_chunk = r.OptionalInteger("blocks_per_chunk", 0, kMaxLayers, p.blocks_per_chunk);
  return s;
}

nlohmann::json MegatronSpecToJson(const MegatronSpec& s) {
  const MegatronModel& m = s.model;
  const MegatronParallel& p = s.parallel;
  nlohmann::json j = {{"generator", "megatron"},
                      {"architecture", m.architecture},
                      {"layers", m.layers},
                      {"hidden", m.hidden},
                      {"heads", m.heads},
                      {"query_groups", m.QueryGroups()},
                      {"sequence", m.sequence},
                      {"vocabulary", m.vocabulary}};
  if (m.ffn_hidden > 0) j["ffn_hidden"] = m.ffn_hidden;  // 0: 4 x hidden
  if (m.padded_vocabulary > 0) j["padded_vocabulary"] = m.padded_vocabulary;
  if (m.learned_positions) j["max_position_embeddings"] = m.Positions();
  j["swiglu"] = m.swiglu;
  j["normalization"] = m.rms_norm ? "rmsnorm" : "layernorm";
  j["bias"] = m.bias;
  j["position_embedding"] = m.learned_positions ? "learned" : "rope";
  j["untie_embeddings"] = m.untied;
  j["dropout"] = m.dropout;
  j["tensor_parallel"] = p.tensor;
  j["sequence_parallel"] = p.sequence_parallel;
  j["recompute"] = p.recompute == Recompute::kSelective ? "selective" : "none";
  j["flash_attention"] = p.flash_attention;
  j["tp_comm_overlap"] = p.tp_comm_overlap;
  j["microbatch"] = p.microbatch;
  j["precision"] = p.precision;
  if (p.gradient_precision != "fp32") j["gradient_precision"] = p.gradient_precision;
  if (p.scatter_gather_pipeline) j["scatter_gather_pipeline"] = true;
  if (p.recompute_method != "uniform" || p.recompute_num_layers != 1) {
    j["recompute_method"] = p.recompute_method;
    j["recompute_num_layers"] = p.recompute_num_layers;
    j["blocks_per_chunk"] = p.blocks_per_chunk;
  }
  return j;
}

}  // namespace pipetwin
