// The MLP's description (network.h).
#include <cmath>
#include <string>

#include "partition/util/error.h"
#include "workloads/networks/network.h"

namespace pipetwin {

namespace {

void RequireAtLeastOne(const char* field, int value) {
  if (value < 1)
    throw InputError(std::string("mlp: ") + field + " must be >= 1, got " +
                     std::to_string(value));
}

}  // namespace

Network DescribeMlp(const MlpConfig& c) {
  RequireAtLeastOne("layers", c.layers);
  RequireAtLeastOne("input", c.input);
  RequireAtLeastOne("width", c.width);
  RequireAtLeastOne("classes", c.classes);
  RequireAtLeastOne("batch", c.batch);
  if (!std::isfinite(c.dtype_bytes) || c.dtype_bytes <= 0)
    throw InputError("mlp: dtype_bytes must be > 0");
  Network n;
  n.generator = "mlp";
  n.name = "mlp-" + std::to_string(c.layers) + "x" + std::to_string(c.width);
  n.input.sample_shape = {c.input};
  n.input.classes = c.classes;
  n.batch = c.batch;
  n.dtype_bytes = c.dtype_bytes;
  for (int i = 0; i < c.layers; ++i) {
    const bool last = i + 1 == c.layers;
    NetworkLayer layer;
    layer.id = "fc" + std::to_string(i);
    layer.kind = LayerKind::kLinear;
    layer.inputs = {i - 1};
    layer.in = i == 0 ? c.input : c.width;
    layer.out = last ? c.classes : c.width;
    layer.relu = !last;
    layer.output_shape = {layer.out};
    layer.description = "Linear(" + std::to_string(layer.in) + ", " + std::to_string(layer.out) +
                        ")" + (last ? "" : " + ReLU");
    n.layers.push_back(std::move(layer));
  }
  return n;
}

}  // namespace pipetwin
