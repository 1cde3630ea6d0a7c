#include "workloads/analytic/analytic.h"

namespace pipetwin {

namespace {

// A layer of an MLP or a CNN (header: the formula of each kind).
Layer AnalyticLayer(const Network& n, const NetworkLayer& l, const DeviceSpec& device) {
  const double batch = n.batch, dtype = n.dtype_bytes;
  const double in_elements = static_cast<double>(Elements(n.ShapeOf(l.inputs[0])));
  const double out_elements = static_cast<double>(Elements(l.output_shape));
  Layer layer;
  double flops = 0, elements_moved = 0;
  switch (l.kind) {
    case LayerKind::kLinear:
      layer.parameters = static_cast<double>(l.in) * l.out + l.out;
      flops = 2.0 * l.in * l.out * batch;
      elements_moved = layer.parameters + static_cast<double>(l.in + l.out) * batch;
      break;
    case LayerKind::kConvolution: {
      const double weights = static_cast<double>(l.kernel) * l.kernel * l.in * l.out;
      layer.parameters = weights + (l.batch_norm ? 2 : 1) * static_cast<double>(l.out);
      flops = 2 * weights * l.output_shape[1] * l.output_shape[2] * batch;
      elements_moved = layer.parameters + (in_elements + out_elements) * batch +
                       (l.batch_norm ? 2 * out_elements * batch : 0);
      break;
    }
    case LayerKind::kMaxPool:
      flops = static_cast<double>(l.kernel) * l.kernel * out_elements * batch;
      elements_moved = (in_elements + out_elements) * batch;
      break;
    case LayerKind::kGlobalAveragePool:
      flops = in_elements * batch;
      elements_moved = (in_elements + out_elements) * batch;
      break;
    case LayerKind::kResidualAdd:
      flops = out_elements * batch;
      elements_moved = 3 * out_elements * batch;
      break;
    default:
      break;
  }
  layer.parameter_bytes = layer.parameters * dtype;
  layer.activation_bytes = out_elements * batch * dtype;
  SetRooflineTimes(layer, flops, elements_moved * dtype, device);
  return layer;
}

}  // namespace

void SetRooflineTimes(Layer& layer, double forward_flops, double forward_bytes,
                      const DeviceSpec& device) {
  layer.forward_flops = forward_flops;
  layer.forward_ms = device.RooflineMs(forward_flops, forward_bytes);
  layer.backward_ms = device.RooflineMs(2 * forward_flops, 2 * forward_bytes);
}

Workload AnalyticWorkload(const Network& n, const DeviceSpec& device) {
  Workload w;
  w.name = n.name;
  w.reference.batch_size = n.batch;
  w.reference.device = device.name;
  w.reference.source = "analytic";
  w.parameter_dtype_bytes = n.dtype_bytes;
  int block = 0;
  for (const NetworkLayer& l : n.layers) {
    const bool transformer = l.kind == LayerKind::kEmbedding ||
                             l.kind == LayerKind::kTransformerBlock ||
                             l.kind == LayerKind::kTransformerHead;
    Layer layer = transformer ? AnalyticTransformerLayer(n.transformer, l, block, device)
                              : AnalyticLayer(n, l, device);
    if (l.kind == LayerKind::kTransformerBlock) ++block;
    layer.id = l.id;
    layer.description = l.description;
    for (int input : l.inputs)
      if (input >= 0) layer.inputs.push_back(input);
    w.layers.push_back(std::move(layer));
  }
  return w;
}

Workload GenerateMlp(const MlpConfig& config, const DeviceSpec& device) {
  return AnalyticWorkload(DescribeMlp(config), device);
}

Workload GenerateTransformer(const TransformerConfig& config, const DeviceSpec& device) {
  return AnalyticWorkload(DescribeTransformer(config), device);
}

Workload GenerateVgg16(const CnnConfig& config, const DeviceSpec& device) {
  return AnalyticWorkload(DescribeVgg16(config), device);
}

Workload GenerateResnet50(const CnnConfig& config, const DeviceSpec& device) {
  return AnalyticWorkload(DescribeResnet50(config), device);
}

}  // namespace pipetwin
