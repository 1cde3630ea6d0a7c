// The executor's model of a network (workloads/networks/network.h): one module per layer of its
// description (model/modules.h), with the parameters held outside the modules, and the layers of
// one plan stage run as a StageModel on one weight version's tensors. Layer i of the description
// is model layer i and workload layer i.
//
//   Model model = BuildModel(job.network);               // mlp | gpt | bert | vgg16 | resnet50
//   StageModel stage(model, /*first_layer=*/0, /*last_layer=*/3, /*microbatch_size=*/8);
//   std::vector<torch::Tensor> w = stage.InitialParameters(/*seed=*/1);
//   std::vector<torch::Tensor> out = stage.Forward(w, {batch.input});
//
// Layer graphs that are not chains (ResNet-50) cross a stage boundary with several tensors: the
// boundary after layer b carries every output of a layer <= b that a layer > b reads (a stage
// passes on what it does not use itself).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "exec/model/modules.h"
#include "workloads/networks/network.h"

namespace pipetwin::exec {

struct Model {
  std::string name;
  NetworkInput input;
  std::vector<std::string> layer_ids;
  std::vector<std::unique_ptr<LayerFunction>> layers;
  std::vector<std::vector<int>> layer_inputs;           // producing layers; -1: the model input
  std::vector<std::vector<int64_t>> output_sample_shape;  // of one sample, per layer
  // Per layer: its index in the workload (set by ApplyLayerOrder; empty: the same as here).
  std::vector<int> workload_layer;

  int LayerCount() const { return static_cast<int>(layers.size()); }
  // Mean cross-entropy of the logits (the last layer's output) against the labels.
  torch::Tensor Loss(const torch::Tensor& logits, const torch::Tensor& labels) const;
  // Correct top-1 predictions.
  int64_t Correct(const torch::Tensor& logits, const torch::Tensor& labels) const;
};

// One module per layer of the network's description.
Model BuildModel(const Network& network);

// Puts the layers in a plan's layer order (position p holds layer order[p], a topological
// order), so that stages are contiguous ranges of positions. Empty: unchanged.
void ApplyLayerOrder(Model& model, const std::vector<int>& order);

// The layers first_layer..last_layer of a model, run as one pipeline stage.
class StageModel {
 public:
  StageModel(const Model& model, int first_layer, int last_layer, int microbatch_size);

  int first_layer() const { return first_; }
  int last_layer() const { return last_; }
  bool is_first() const { return first_ == 0; }
  bool is_last() const { return last_ + 1 == model_->LayerCount(); }
  // Layers (or -1, the model input) whose outputs enter / leave this stage, ascending.
  const std::vector<int>& input_ids() const { return input_ids_; }
  const std::vector<int>& output_ids() const { return output_ids_; }
  // Full shapes (micro-batch first) of what enters and leaves: the message layout.
  std::vector<std::vector<int64_t>> InputShapes() const;
  std::vector<std::vector<int64_t>> OutputShapes() const;

  // The stage's parameters, layer by layer; workload layer i is seeded with (seed, i) whatever
  // the stage boundaries and the plan's layer order, so every partition starts from the same
  // weights.
  std::vector<torch::Tensor> InitialParameters(int seed) const;
  // Runs the stage on `parameters` (one version's tensors). `inputs` follow input_ids(); the
  // result follows output_ids() (the last stage: the logits alone).
  std::vector<torch::Tensor> Forward(at::TensorList parameters,
                                     const std::vector<torch::Tensor>& inputs) const;
  const Model& model() const { return *model_; }

 private:
  std::vector<int64_t> ShapeOf(int id) const;

  const Model* model_;
  int first_, last_, microbatch_size_;
  std::vector<int> input_ids_, output_ids_;
  std::vector<int> parameter_offset_;  // per stage layer: index of its first tensor
};

// Packs tensors into one flat fp32 buffer and back (a stage boundary is one message).
torch::Tensor Pack(const std::vector<torch::Tensor>& tensors);
std::vector<torch::Tensor> Unpack(const torch::Tensor& buffer,
                                  const std::vector<std::vector<int64_t>>& shapes);
int64_t TotalElements(const std::vector<std::vector<int64_t>>& shapes);

}  // namespace pipetwin::exec
