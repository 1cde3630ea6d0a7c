// The executor's LibTorch modules: one per layer of a network's description
// (workloads/networks/network.h), each a pure function of its inputs and parameters.
//
// Weight stashing needs the forward of a micro-batch to run on a named weight version while other
// versions exist, so a module holds no parameters: `Forward(inputs, parameters)` runs on the
// tensors it is handed. Sizes come from the description, as the analytic model's do; where the
// executor's module differs from the network the description names, modules.cc says so.
//
//   std::unique_ptr<LayerFunction> f = MakeModule(network, network.layers[i]);
//   at::Generator g = at::detail::createCPUGenerator(seed);
//   torch::Tensor y = f->Forward({x}, f->InitialParameters(g));
#pragma once

#include <memory>
#include <vector>

#include <torch/torch.h>

#include "workloads/networks/network.h"

namespace pipetwin::exec {

// One workload layer as a function of its inputs and parameters.
class LayerFunction {
 public:
  virtual ~LayerFunction() = default;
  // Fresh parameters drawn from `generator` (the same seed gives the same tensors).
  virtual std::vector<torch::Tensor> InitialParameters(at::Generator& generator) const = 0;
  // The layer's output for the outputs of its input layers (in workload order).
  virtual torch::Tensor Forward(const std::vector<torch::Tensor>& inputs,
                                at::TensorList parameters) const = 0;
  // How many parameter tensors InitialParameters returns.
  virtual int ParameterTensorCount() const = 0;
};

// The module of one layer of `network`.
std::unique_ptr<LayerFunction> MakeModule(const Network& network, const NetworkLayer& layer);

}  // namespace pipetwin::exec
