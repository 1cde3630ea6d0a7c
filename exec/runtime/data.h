// Training data for the executor: synthetic and seeded, or Fashion-MNIST.
//
// Micro-batch k of a run is the same tensors in every process and every partition (the input
// stage reads its input, the last stage its labels), so a pipeline and a single-process reference
// see the same data.
//   - synthetic: a pool of samples made once from the seed (inputs from N(0, 1), tokens
//     uniformly; up to 4,096 samples or 16 MiB), from which micro-batch k draws its samples with
//     a generator seeded by (seed, k); MLP labels are the argmax of a fixed random linear
//     "teacher" of the input's first 32 features, so the loss can fall; other models get uniform
//     labels. Test batches come from a second pool.
//   - fashion-mnist: the IDX files of Debian's dataset-fashion-mnist (gzipped there; decompressed
//     once into a cache folder and read with LibTorch's MNIST reader), images flattened to 784
//     features and standardised; micro-batch k takes samples k b .. (k+1) b - 1 of a seeded
//     permutation of the training set, a new permutation per epoch.
#pragma once

#include <memory>
#include <string>

#include <torch/torch.h>

#include "exec/model/stage_model.h"

namespace pipetwin::exec {

struct Batch {
  torch::Tensor input;   // {b, sample shape...}: float, or int64 tokens
  torch::Tensor labels;  // {b} or {b, sequence}: int64
};

class DataSource {
 public:
  virtual ~DataSource() = default;
  // Training micro-batch `k` (its index in the whole run) of `size` samples.
  virtual Batch Train(int64_t k, int64_t size) = 0;
  // Its labels alone (what the last stage of a pipeline reads).
  virtual torch::Tensor TrainLabels(int64_t k, int64_t size) { return Train(k, size).labels; }
  // Test micro-batches: how many of `size` samples, and the i-th.
  virtual int64_t TestBatches(int64_t size) const = 0;
  virtual Batch Test(int64_t i, int64_t size) = 0;
};

// Test micro-batches of `size` samples a data kind has (the pipeline's middle stages, which hold
// no data, need the count too).
int64_t TestBatchCount(const std::string& kind, int64_t size);

// "synthetic" or "fashion-mnist" (read from `data_dir`); throws InputError when the files are
// missing or unreadable.
std::unique_ptr<DataSource> MakeDataSource(const std::string& kind, const std::string& data_dir,
                                           const Model& model, int seed);

}  // namespace pipetwin::exec
