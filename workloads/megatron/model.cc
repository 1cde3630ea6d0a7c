#include "workloads/megatron/model.h"

#include "partition/util/error.h"

namespace pipetwin {

MegatronModel GptModel(int layers, int hidden, int heads, int sequence, int vocabulary) {
  MegatronModel m;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.sequence = sequence;
  m.vocabulary = vocabulary;
  return m;
}

MegatronModel LlamaModel(int layers, int hidden, int ffn_hidden, int heads, int query_groups,
                         int sequence, int vocabulary) {
  MegatronModel m;
  m.architecture = "llama";
  m.layers = layers;
  m.hidden = hidden;
  m.ffn_hidden = ffn_hidden;
  m.heads = heads;
  m.query_groups = query_groups;
  m.sequence = sequence;
  m.vocabulary = vocabulary;
  m.swiglu = m.rms_norm = m.untied = true;
  m.bias = m.learned_positions = m.dropout = false;
  return m;
}

const char* RecomputeName(Recompute r) {
  switch (r) {
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "full";
    default: return "none";
  }
}

int PaddedVocabulary(int vocabulary, int tensor, int divisible_by) {
  const long long multiple = static_cast<long long>(divisible_by) * tensor;
  return static_cast<int>((vocabulary + multiple - 1) / multiple * multiple);
}

int RunVocabulary(const MegatronModel& model, int tensor) {
  return model.padded_vocabulary > 0 ? model.padded_vocabulary
                                     : PaddedVocabulary(model.vocabulary, tensor);
}

namespace {

void Divisible(const char* what, long long a, const char* by, long long b) {
  if (b <= 0 || a % b != 0)
    throw InputError(std::string(what) + " (" + std::to_string(a) + ") must be divisible by " +
                     by + " (" + std::to_string(b) + ")");
}

}  // namespace

void ValidateMegatron(const MegatronModel& m, const MegatronParallel& p) {
  if (m.architecture != "gpt" && m.architecture != "llama")
    throw InputError("architecture must be \"gpt\" or \"llama\", got \"" + m.architecture + "\"");
  if (m.layers < 1 || m.hidden < 1 || m.heads < 1 || m.sequence < 1 || m.vocabulary < 1)
    throw InputError("layers, hidden, heads, sequence and vocabulary must be >= 1");
  if (p.tensor < 1 || p.microbatch < 1 || p.data_parallel < 1)
    throw InputError("tensor_parallel, microbatch and data_parallel must be >= 1");
  Divisible("hidden", m.hidden, "heads", m.heads);
  Divisible("heads", m.heads, "query_groups", m.QueryGroups());
  Divisible("heads", m.heads, "tensor_parallel", p.tensor);
  Divisible("query_groups", m.QueryGroups(), "tensor_parallel", p.tensor);
  Divisible("ffn_hidden", m.FfnHidden(), "tensor_parallel", p.tensor);
  const int v = RunVocabulary(m, p.tensor);
  if (v < m.vocabulary)
    throw InputError("padded_vocabulary (" + std::to_string(v) + ") must be >= vocabulary (" +
                     std::to_string(m.vocabulary) + ")");
  Divisible("padded_vocabulary", v, "tensor_parallel", p.tensor);
  if (p.sequence_parallel && p.tensor > 1) Divisible("sequence", m.sequence, "tensor_parallel", p.tensor);
  if (p.tp_comm_overlap && !p.sequence_parallel)
    throw InputError("tp_comm_overlap needs sequence_parallel (what Megatron-LM overlaps are "
                     "the all-gathers and reduce-scatters of sequence_parallel)");
  if (p.gradient_precision != "fp32" && p.gradient_precision != p.precision)
    throw InputError("gradient_precision must be fp32 or the precision (" + p.precision +
                     "), got \"" + p.gradient_precision + "\"");
  if (m.learned_positions && m.Positions() < m.sequence)
    throw InputError("max_position_embeddings (" + std::to_string(m.Positions()) +
                     ") must be >= sequence (" + std::to_string(m.sequence) + ")");
  if (p.recompute_method != "uniform" && p.recompute_method != "block")
    throw InputError("recompute_method must be uniform or block, got \"" + p.recompute_method + "\"");
  if (p.recompute_num_layers < 1 || p.blocks_per_chunk < 0)
    throw InputError("recompute_num_layers must be >= 1 and blocks_per_chunk >= 0");
  if (p.recompute_method == "block" || p.recompute_num_layers > 1) {
    if (p.blocks_per_chunk < 1)
      throw InputError("recompute_method " + p.recompute_method + " with recompute_num_layers " +
                       std::to_string(p.recompute_num_layers) + " needs blocks_per_chunk (the "
                       "blocks of one model chunk, which Megatron-LM counts its layers in)");
    Divisible("layers", m.layers, "blocks_per_chunk", p.blocks_per_chunk);
  }
  if (p.precision != "bf16" && p.precision != "fp16" && p.precision != "fp32")
    throw InputError("precision must be bf16, fp16 or fp32, got \"" + p.precision + "\"");
}

namespace {

struct BlockShapes {
  double h, f_in, f, kv, norm;  // hidden, MLP input columns, MLP width, K+V columns, per norm
};

BlockShapes Shapes(const MegatronModel& m) {
  const double h = m.hidden, f = m.FfnHidden();
  return {h, m.swiglu ? 2 * f : f, f, 2.0 * m.QueryGroups() * m.HeadDim(), m.rms_norm ? h : 2 * h};
}

}  // namespace

ParameterCounts CountParameters(const MegatronModel& m, int vocabulary) {
  const BlockShapes z = Shapes(m);
  const double v = vocabulary, h = z.h;
  ParameterCounts c;
  c.embedding = v * h + (m.learned_positions ? static_cast<double>(m.Positions()) * h : 0);
  const double weights = h * (h + z.kv) + h * h + h * z.f_in + z.f * h;
  const double biases = m.bias ? (h + z.kv) + h + z.f_in + h : 0;
  c.block = weights + biases + 2 * z.norm;
  c.final_norm = z.norm;
  c.output = m.untied ? v * h : 0;
  c.total = c.embedding + m.layers * c.block + c.final_norm + c.output;
  return c;
}

double BlockParametersPerRank(const MegatronModel& m, int tensor) {
  const BlockShapes z = Shapes(m);
  const double t = tensor, h = z.h;
  const double split = (h * (h + z.kv) + h * h + h * z.f_in + z.f * h) / t +
                       (m.bias ? ((h + z.kv) + z.f_in) / t : 0);
  const double replicated = (m.bias ? 2 * h : 0) + 2 * z.norm;
  return split + replicated;
}

double NarayananModelFlops(const MegatronModel& m, double B, int vocabulary) {
  const double s = m.sequence, l = m.layers, h = m.hidden, V = vocabulary;
  return 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
}

double NarayananHardwareFlopsFullRecompute(const MegatronModel& m, double B, int vocabulary) {
  const double s = m.sequence, l = m.layers, h = m.hidden, V = vocabulary;
  return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
}

}  // namespace pipetwin
