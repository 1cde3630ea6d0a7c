#include "workloads/mlp.h"

#include <cmath>
#include <string>

#include "partition/util/error.h"

namespace pipetwin {

namespace {

void RequireAtLeastOne(const char* field, int value) {
  if (value < 1)
    throw InputError(std::string("mlp: ") + field + " must be >= 1, got " +
                     std::to_string(value));
}

}  // namespace

Workload GenerateMlp(const MlpConfig& c, const DeviceModel& device) {
  RequireAtLeastOne("layers", c.layers);
  RequireAtLeastOne("input", c.input);
  RequireAtLeastOne("width", c.width);
  RequireAtLeastOne("classes", c.classes);
  RequireAtLeastOne("batch", c.batch);
  if (!std::isfinite(c.dtype_bytes) || c.dtype_bytes <= 0)
    throw InputError("mlp: dtype_bytes must be > 0");
  Workload w;
  w.name = "mlp-" + std::to_string(c.layers) + "x" + std::to_string(c.width);
  w.reference.batch_size = c.batch;
  w.reference.device = device.name;
  w.reference.source = "analytic";
  w.parameter_dtype_bytes = c.dtype_bytes;
  for (int i = 0; i < c.layers; ++i) {
    const double in = i == 0 ? c.input : c.width;
    const double out = i + 1 == c.layers ? c.classes : c.width;
    const bool last = i + 1 == c.layers;
    Layer layer;
    layer.id = "fc" + std::to_string(i);
    layer.description = "Linear(" + std::to_string(static_cast<long long>(in)) + ", " +
                        std::to_string(static_cast<long long>(out)) + ")" +
                        (last ? "" : " + ReLU");
    layer.parameters = in * out + out;
    layer.parameter_bytes = layer.parameters * c.dtype_bytes;
    layer.activation_bytes = out * c.batch * c.dtype_bytes;
    if (i > 0) layer.inputs = {i - 1};
    // Roofline: weights read once, input read and output written once per sample.
    const double flops = 2 * in * out * c.batch;
    const double bytes = (layer.parameters + (in + out) * c.batch) * c.dtype_bytes;
    layer.forward_flops = flops;
    layer.forward_ms = device.TimeMs(flops, bytes);
    layer.backward_ms = device.TimeMs(2 * flops, 2 * bytes);
    w.layers.push_back(std::move(layer));
  }
  return w;
}

MlpConfig MlpConfigFromSpec(JsonReader& spec) {
  MlpConfig c;
  c.layers = static_cast<int>(spec.OptionalPositiveInteger("layers", c.layers));
  c.input = static_cast<int>(spec.OptionalPositiveInteger("input", c.input));
  c.width = static_cast<int>(spec.OptionalPositiveInteger("width", c.width));
  c.classes = static_cast<int>(spec.OptionalPositiveInteger("classes", c.classes));
  c.batch = static_cast<int>(spec.OptionalPositiveInteger("batch", c.batch));
  c.dtype_bytes = spec.OptionalPositiveNumber("dtype_bytes", c.dtype_bytes);
  return c;
}

Workload GenerateMlpFromSpec(JsonReader& spec, const DeviceModel& device) {
  MlpConfig c = MlpConfigFromSpec(spec);
  spec.Finish();
  return GenerateMlp(c, device);
}

}  // namespace pipetwin
