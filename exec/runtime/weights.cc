#include "exec/runtime/weights.h"

#include <cmath>

#include "partition/util/error.h"

namespace pipetwin::exec {

int64_t TensorBytes(const std::vector<torch::Tensor>& tensors) {
  int64_t bytes = 0;
  for (const auto& t : tensors)
    if (t.defined()) bytes += t.numel() * static_cast<int64_t>(t.element_size());
  return bytes;
}

OptimizerSettings OptimizerFromName(const std::string& name, double learning_rate) {
  OptimizerSettings s;
  s.learning_rate = learning_rate;
  if (name == "sgd") s.kind = OptimizerKind::kSgd;
  else if (name == "momentum") s.kind = OptimizerKind::kMomentum;
  else if (name == "adam") s.kind = OptimizerKind::kAdam;
  else throw InputError("unknown optimizer \"" + name + "\" (expected sgd, momentum or adam)");
  return s;
}

void Optimizer::Step(std::vector<torch::Tensor>& parameters,
                     const std::vector<torch::Tensor>& gradients, double scale) {
  torch::NoGradGuard no_grad;
  TORCH_CHECK(parameters.size() == gradients.size(), "Optimizer::Step: ", parameters.size(),
              " parameters, ", gradients.size(), " gradients");
  ++steps_;
  const double lr = settings_.learning_rate;
  if (first_.empty() && settings_.kind != OptimizerKind::kSgd) {
    for (const auto& p : parameters) first_.push_back(torch::zeros_like(p));
    if (settings_.kind == OptimizerKind::kAdam)
      for (const auto& p : parameters) second_.push_back(torch::zeros_like(p));
  }
  for (size_t i = 0; i < parameters.size(); ++i) {
    const torch::Tensor& g = gradients[i];
    switch (settings_.kind) {
      case OptimizerKind::kSgd:
        parameters[i].sub_(g, lr * scale);
        break;
      case OptimizerKind::kMomentum:
        first_[i].mul_(settings_.momentum).add_(g, scale);
        parameters[i].sub_(first_[i], lr);
        break;
      case OptimizerKind::kAdam: {
        const double b1 = settings_.beta1, b2 = settings_.beta2;
        first_[i].mul_(b1).add_(g, (1 - b1) * scale);
        second_[i].mul_(b2).addcmul_(g, g, (1 - b2) * scale * scale);
        const double correction1 = 1 - std::pow(b1, static_cast<double>(steps_));
        const double correction2 = 1 - std::pow(b2, static_cast<double>(steps_));
        auto denominator = (second_[i] / correction2).sqrt_().add_(settings_.eps);
        parameters[i].addcdiv_(first_[i], denominator, -lr / correction1);
        break;
      }
    }
  }
}

int64_t Optimizer::StateBytes() const { return TensorBytes(first_) + TensorBytes(second_); }

StageWeights::StageWeights(std::vector<torch::Tensor> initial, OptimizerSettings optimizer)
    : current_(std::move(initial)), optimizer_(optimizer) {
  for (auto& p : current_) p = p.detach().requires_grad_(true);
  bytes_per_version_ = TensorBytes(current_);
}

const std::vector<torch::Tensor>& StageWeights::Version(int v) const {
  if (v == current_version_) return current_;
  auto it = stashed_.find(v);
  if (it == stashed_.end())
    throw WeightVersionError("weight version " + std::to_string(v) + " is not alive (current " +
                             std::to_string(current_version_) + ", " +
                             std::to_string(stashed_.size()) + " stashed)");
  return it->second;
}

void StageWeights::Stash(int v) {
  if (v != current_version_)
    throw WeightVersionError("StashWeights(" + std::to_string(v) + ") but the current version is " +
                             std::to_string(current_version_));
  stashed_[v] = current_;
}

void StageWeights::Release(int v) {
  if (!stashed_.erase(v))
    throw WeightVersionError("ReleaseWeights(" + std::to_string(v) + ") of a version not stashed");
}

void StageWeights::Update(int new_version, const std::vector<torch::Tensor>& gradients,
                          double scale) {
  if (new_version <= current_version_)
    throw WeightVersionError("Update to version " + std::to_string(new_version) +
                             " but the current version is " + std::to_string(current_version_));
  std::vector<torch::Tensor> next;
  if (stashed_.count(current_version_)) {
    // The stashed tensors stay as they are for the backwards that still need them.
    for (const auto& p : current_) next.push_back(p.detach().clone());
  } else {
    for (const auto& p : current_) next.push_back(p.detach());
  }
  optimizer_.Step(next, gradients, scale);
  current_.clear();
  for (auto& p : next) current_.push_back(p.requires_grad_(true));
  current_version_ = new_version;
}

int64_t StageWeights::ParameterCount() const {
  int64_t n = 0;
  for (const auto& p : current_) n += p.numel();
  return n;
}

}  // namespace pipetwin::exec
