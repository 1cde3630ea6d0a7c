// Weight versions of one stage on real tensors, and the optimizers that make new versions.
//
// StageWeights holds the current version (a number and its tensors) and the stashed versions the
// schedule keeps alive (PipeDream SOSP'19 section 3.3, weight stashing; PipeDream-2BW ICML'21
// section 3.1, double buffering). The op lists say when: StashWeights(v) just before the Update
// that replaces v when a backward still needs v, ReleaseWeights(v) after its last use.
//
//   StageWeights w(stage.InitialParameters(seed), optimizer);
//   auto& p = w.Version(op.weight_version);  // throws WeightVersionError if v is not alive
//   w.Stash(0);                              // version 0 stays readable after the update
//   w.Update(1, gradients);                  // W(1) = step(W(0), gradients); current = 1
//   w.Release(0);
//
// An update writes new tensors when the current version is stashed (a pending backward's graph
// refers to the old ones) and updates in place otherwise.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace pipetwin::exec {

// A version an op names is not the one the worker holds: the schedule and the executor disagree.
class WeightVersionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class OptimizerKind { kSgd, kMomentum, kAdam };

struct OptimizerSettings {
  OptimizerKind kind = OptimizerKind::kSgd;
  double learning_rate = 1e-3;
  double momentum = 0.9;                       // momentum (PyTorch's SGD convention)
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;  // Adam (Kingma and Ba, ICLR 2015, alg. 1)
};

// "sgd", "momentum", "adam" (the scenario's names).
OptimizerSettings OptimizerFromName(const std::string& name, double learning_rate);

// Optimizer state of one stage; Step writes the new parameters into `parameters`.
class Optimizer {
 public:
  explicit Optimizer(OptimizerSettings settings) : settings_(settings) {}
  //   sgd       p -= lr g
  //   momentum  b = mu b + g;  p -= lr b
  //   adam      m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;
  //             p -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
  // The gradients are multiplied by `scale` first (1 / the micro-batches they sum), without a
  // pass of their own.
  void Step(std::vector<torch::Tensor>& parameters, const std::vector<torch::Tensor>& gradients,
            double scale = 1);
  int64_t StateBytes() const;

 private:
  OptimizerSettings settings_;
  int64_t steps_ = 0;
  std::vector<torch::Tensor> first_, second_;
};

class StageWeights {
 public:
  StageWeights(std::vector<torch::Tensor> initial, OptimizerSettings optimizer);
  StageWeights(const StageWeights&) = delete;
  StageWeights& operator=(const StageWeights&) = delete;

  int current_version() const { return current_version_; }
  // The tensors of version `v`: the current one or a stashed one.
  const std::vector<torch::Tensor>& Version(int v) const;
  const std::vector<torch::Tensor>& Current() const { return current_; }
  bool IsAlive(int v) const { return v == current_version_ || stashed_.count(v) > 0; }

  // Keeps version `v` (which must be current) readable after the next update.
  void Stash(int v);
  // Frees stashed version `v`.
  void Release(int v);
  // Applies `scale` x `gradients` to the current version and makes it `new_version`.
  void Update(int new_version, const std::vector<torch::Tensor>& gradients, double scale = 1);

  int VersionsAlive() const { return 1 + static_cast<int>(stashed_.size()); }
  int64_t BytesPerVersion() const { return bytes_per_version_; }
  int64_t WeightBytes() const { return bytes_per_version_ * VersionsAlive(); }
  int64_t OptimizerBytes() const { return optimizer_.StateBytes(); }
  int64_t ParameterCount() const;

 private:
  int current_version_ = 0;
  std::vector<torch::Tensor> current_;
  std::map<int, std::vector<torch::Tensor>> stashed_;
  Optimizer optimizer_;
  int64_t bytes_per_version_ = 0;
};

// Bytes of a list of tensors.
int64_t TensorBytes(const std::vector<torch::Tensor>& tensors);

}  // namespace pipetwin::exec
