#include "exec/model/stage_model.h"

#include <algorithm>


namespace pipetwin::exec {

torch::Tensor Model::Loss(const torch::Tensor& logits, const torch::Tensor& labels) const {
  const int64_t classes = logits.size(-1);
  return torch::nn::functional::cross_entropy(logits.reshape({-1, classes}),
                                              labels.reshape({-1}));
}

int64_t Model::Correct(const torch::Tensor& logits, const torch::Tensor& labels) const {
  const int64_t classes = logits.size(-1);
  auto predicted = logits.reshape({-1, classes}).argmax(1);
  return predicted.eq(labels.reshape({-1})).sum().item<int64_t>();
}

Model BuildModel(const Network& network) {
  Model model;
  model.name = network.name;
  model.input = network.input;
  for (const NetworkLayer& layer : network.layers) {
    model.layer_ids.push_back(layer.id);
    model.layers.push_back(MakeModule(network, layer));
    model.layer_inputs.push_back(layer.inputs);
    model.output_sample_shape.push_back(layer.output_shape);
  }
  return model;
}

void ApplyLayerOrder(Model& model, const std::vector<int>& order) {
  if (order.empty()) return;
  const int n = model.LayerCount();
  TORCH_CHECK(static_cast<int>(order.size()) == n, "ApplyLayerOrder: ", order.size(),
              " positions for ", n, " layers");
  std::vector<int> position(n);
  for (int p = 0; p < n; ++p) position[order[p]] = p;
  Model out;
  out.name = model.name;
  out.input = model.input;
  for (int p = 0; p < n; ++p) {
    const int layer = order[p];
    out.layer_ids.push_back(model.layer_ids[layer]);
    out.layers.push_back(std::move(model.layers[layer]));
    std::vector<int> inputs;
    for (int j : model.layer_inputs[layer]) inputs.push_back(j < 0 ? j : position[j]);
    out.layer_inputs.push_back(inputs);
    out.output_sample_shape.push_back(model.output_sample_shape[layer]);
    out.workload_layer.push_back(model.workload_layer.empty() ? layer : model.workload_layer[layer]);
  }
  model = std::move(out);
}

StageModel::StageModel(const Model& model, int first_layer, int last_layer, int microbatch_size)
    : model_(&model), first_(first_layer), last_(last_layer), microbatch_size_(microbatch_size) {
  const int n = model.LayerCount();
  TORCH_CHECK(0 <= first_ && first_ <= last_ && last_ < n, "StageModel: bad layer range ",
              first_, "..", last_, " of ", n, " layers");
  // The last reader of each output (-1, the model input, sits at index 0).
  std::vector<int> last_reader(n + 1, -1);
  for (int i = 0; i < n; ++i)
    for (int j : model.layer_inputs[i]) last_reader[j + 1] = std::max(last_reader[j + 1], i);
  for (int id = -1; id < n; ++id) {
    const int reader = last_reader[id + 1];
    if (id < first_ && reader >= first_) input_ids_.push_back(id);
    if (id <= last_ && reader > last_) output_ids_.push_back(id);
  }
  if (is_last()) output_ids_ = {n - 1};
  TORCH_CHECK(is_first() || std::find(output_ids_.begin(), output_ids_.end(), -1) ==
                                output_ids_.end(),
              "StageModel: the model input may not cross a stage boundary");
  int offset = 0;
  for (int i = first_; i <= last_; ++i) {
    parameter_offset_.push_back(offset);
    offset += model.layers[i]->ParameterTensorCount();
  }
  parameter_offset_.push_back(offset);
}

std::vector<int64_t> StageModel::ShapeOf(int id) const {
  std::vector<int64_t> shape = {microbatch_size_};
  const auto& sample = id < 0 ? model_->input.sample_shape : model_->output_sample_shape[id];
  shape.insert(shape.end(), sample.begin(), sample.end());
  return shape;
}

std::vector<std::vector<int64_t>> StageModel::InputShapes() const {
  std::vector<std::vector<int64_t>> shapes;
  for (int id : input_ids_) shapes.push_back(ShapeOf(id));
  return shapes;
}

std::vector<std::vector<int64_t>> StageModel::OutputShapes() const {
  std::vector<std::vector<int64_t>> shapes;
  for (int id : output_ids_) shapes.push_back(ShapeOf(id));
  return shapes;
}

std::vector<torch::Tensor> StageModel::InitialParameters(int seed) const {
  std::vector<torch::Tensor> parameters;
  for (int i = first_; i <= last_; ++i) {
    const int workload_layer = model_->workload_layer.empty() ? i : model_->workload_layer[i];
    at::Generator generator = at::detail::createCPUGenerator(
        static_cast<uint64_t>(seed) * 1000003ULL + workload_layer);
    for (auto& p : model_->layers[i]->InitialParameters(generator))
      parameters.push_back(p.contiguous());
  }
  return parameters;
}

std::vector<torch::Tensor> StageModel::Forward(at::TensorList parameters,
                                               const std::vector<torch::Tensor>& inputs) const {
  TORCH_CHECK(inputs.size() == input_ids_.size(), "StageModel::Forward: expected ",
              input_ids_.size(), " inputs, got ", inputs.size());
  TORCH_CHECK(static_cast<int>(parameters.size()) == parameter_offset_.back(),
              "StageModel::Forward: expected ", parameter_offset_.back(),
              " parameter tensors, got ", parameters.size());
  std::map<int, torch::Tensor> values;  // outputs alive, by layer (-1: the model input)
  for (size_t k = 0; k < inputs.size(); ++k) values[input_ids_[k]] = inputs[k];
  for (int i = first_; i <= last_; ++i) {
    std::vector<torch::Tensor> in;
    for (int j : model_->layer_inputs[i]) in.push_back(values.at(j));
    const int begin = parameter_offset_[i - first_], end = parameter_offset_[i - first_ + 1];
    values[i] = model_->layers[i]->Forward(in, parameters.slice(begin, end - begin));
  }
  std::vector<torch::Tensor> out;
  for (int id : output_ids_) out.push_back(values.at(id));
  return out;
}

torch::Tensor Pack(const std::vector<torch::Tensor>& tensors) {
  // In fp32 whatever the compute type (autocast may leave a boundary in bf16): a receiver's
  // buffer, posted before the sender computes, has one type, and the simulator's message bytes
  // are the workload's fp32 activation bytes.
  if (tensors.size() == 1) return tensors[0].detach().reshape({-1}).to(torch::kFloat).contiguous();
  std::vector<torch::Tensor> flat;
  for (const auto& t : tensors) flat.push_back(t.detach().reshape({-1}).to(torch::kFloat));
  return torch::cat(flat);
}

int64_t TotalElements(const std::vector<std::vector<int64_t>>& shapes) {
  int64_t total = 0;
  for (const auto& s : shapes) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    total += n;
  }
  return total;
}

std::vector<torch::Tensor> Unpack(const torch::Tensor& buffer,
                                  const std::vector<std::vector<int64_t>>& shapes) {
  TORCH_CHECK(buffer.numel() == TotalElements(shapes), "Unpack: a message of ", buffer.numel(),
              " elements for a layout of ", TotalElements(shapes));
  std::vector<torch::Tensor> out;
  int64_t offset = 0;
  for (const auto& s : shapes) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    out.push_back(buffer.narrow(0, offset, n).view(s));
    offset += n;
  }
  return out;
}

}  // namespace pipetwin::exec
