#include "workloads/scenario/workload_source.h"

#include "workloads/networks/network.h"
#include "workloads/analytic/analytic.h"
#include "workloads/import/pipedream_profile.h"
#include "workloads/megatron/megatron_spec.h"
#include "workloads/megatron/megatron_workload.h"

namespace pipetwin {

const std::vector<std::string>& GeneratorNames() {
  static const std::vector<std::string> names = {"gpt", "bert", "vgg16", "resnet50", "mlp",
                                                  "megatron"};
  return names;
}

Workload LoadAnyWorkloadFile(const std::string& path) {
  std::string text = ReadTextFile(path);
  if (LooksLikePipeDreamProfile(text)) return ParsePipeDreamProfile(text, path);
  return WorkloadFromJson(ParseJsonText(text, path), path);
}

namespace {

MlpConfig MlpConfigFromSpec(JsonReader& spec) {
  MlpConfig c;
  c.layers = spec.OptionalInteger("layers", 1, kMaxLayers, c.layers);
  c.input = spec.OptionalInteger("input", 1, kMaxDimension, c.input);
  c.width = spec.OptionalInteger("width", 1, kMaxDimension, c.width);
  c.classes = spec.OptionalInteger("classes", 1, kMaxDimension, c.classes);
  c.batch = spec.OptionalInteger("batch", 1, kMaxSamples, c.batch);
  c.dtype_bytes = spec.OptionalPositiveNumber("dtype_bytes", c.dtype_bytes);
  return c;
}

TransformerConfig TransformerConfigFromSpec(JsonReader& spec, const std::string& generator) {
  TransformerConfig c;
  c.kind = generator;
  if (generator == "bert") {  // BERT-Large's defaults (Devlin et al. 2019)
    c.vocabulary = 30522;
    c.sequence = 512;
  }
  c.layers = spec.OptionalInteger("layers", 1, kMaxLayers, c.layers);
  c.hidden = spec.OptionalInteger("hidden", 1, kMaxDimension, c.hidden);
  c.heads = spec.OptionalInteger("heads", 1, kMaxDimension, c.heads);
  c.sequence = spec.OptionalInteger("sequence", 1, kMaxDimension, c.sequence);
  c.vocabulary = spec.OptionalInteger("vocabulary", 1, kMaxDimension, c.vocabulary);
  c.microbatch = spec.OptionalInteger("microbatch", 1, kMaxSamples, c.microbatch);
  c.dtype_bytes = spec.OptionalPositiveNumber("dtype_bytes", c.dtype_bytes);
  return c;
}

CnnConfig CnnConfigFromSpec(JsonReader& spec) {
  CnnConfig c;
  c.image_size = spec.OptionalInteger("image_size", 1, kMaxDimension, c.image_size);
  c.batch = spec.OptionalInteger("batch", 1, kMaxSamples, c.batch);
  c.classes = spec.OptionalInteger("classes", 1, kMaxDimension, c.classes);
  c.width = spec.OptionalPositiveNumber("width", c.width);
  c.dtype_bytes = spec.OptionalPositiveNumber("dtype_bytes", c.dtype_bytes);
  return c;
}

}  // namespace

GeneratorSpec ReadGeneratorSpec(JsonReader& spec) {
  GeneratorSpec g;
  g.generator = spec.Choice("generator", GeneratorNames());
  if (g.generator == "megatron")
    spec.FailAt("generator", "the megatron generator models GPUs for plan, simulate and sweep; "
                             "the executor builds gpt, bert, vgg16, resnet50 and mlp");
  if (g.generator == "mlp") g.mlp = MlpConfigFromSpec(spec);
  else if (g.generator == "gpt" || g.generator == "bert")
    g.transformer = TransformerConfigFromSpec(spec, g.generator);
  else g.cnn = CnnConfigFromSpec(spec);
  return g;
}

Network DescribeNetwork(const GeneratorSpec& g) {
  if (g.generator == "mlp") return DescribeMlp(g.mlp);
  if (g.generator == "gpt" || g.generator == "bert") return DescribeTransformer(g.transformer);
  if (g.generator == "vgg16") return DescribeVgg16(g.cnn);
  return DescribeResnet50(g.cnn);
}

namespace {

Workload FromMegatron(JsonReader& spec, const Cluster& cluster) {
  spec.Accept("generator");
  const MegatronSpec m = ReadMegatronSpec(spec);
  spec.Finish();
  try {
    return MegatronWorkload(m.model, m.parallel, cluster);
  } catch (const InputError& e) {
    if (!e.file().empty()) throw;
    spec.Fail(e.what());  // a model's rule, placed at this spec's JSON path
  }
}

Workload FromGenerator(JsonReader& spec, const DeviceSpec& device) {
  const GeneratorSpec generator = ReadGeneratorSpec(spec);
  spec.Finish();
  try {
    return AnalyticWorkload(DescribeNetwork(generator), device);
  } catch (const InputError& e) {
    if (!e.file().empty()) throw;
    spec.Fail(e.what());  // a generator's rule, placed at this spec's JSON path
  }
}

}  // namespace

Workload WorkloadFromSource(JsonReader spec, const Cluster& cluster,
                            const std::string& base_dir) {
  if (!spec.value().is_object())
    spec.Fail("expected an object (generator, file or inline layers), got " +
              DescribeJson(spec.value()));
  if (spec.Has("generator")) {
    if (spec.value()["generator"] == "megatron") return FromMegatron(spec, cluster);
    return FromGenerator(spec, cluster.device);
  }
  if (spec.Has("file")) {
    std::string path = spec.String("file");
    spec.Finish();
    if (!path.empty() && path[0] != '/' && !base_dir.empty()) path = base_dir + "/" + path;
    return LoadAnyWorkloadFile(path);
  }
  if (spec.Has("layers")) {
    return WorkloadFromJson(spec.value(), spec.file(), spec.path());  // inline schema
  }
  spec.Fail("expected one of \"generator\", \"file\" or inline \"layers\"");
}

}  // namespace pipetwin
