#include "exec/runtime/data.h"

#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "partition/util/error.h"

namespace pipetwin::exec {

namespace {

constexpr int64_t kTestStream = int64_t{1} << 40;  // synthetic test batches: a separate stream
constexpr int kSyntheticTestBatches = 16;
constexpr int64_t kTeacherFeatures = 32;
// Synthetic pool: up to 16 MiB of samples, at least 32 (an image model's 224 x 224 x 3 samples:
// 19 MiB) and at most 4,096 of them.
constexpr int64_t kPoolBytes = int64_t{16} << 20;
constexpr int64_t kMinPoolSamples = 32, kMaxPoolSamples = 4096;
constexpr int64_t kTestPoolSamplesPerBatch = 64;
constexpr int64_t kFashionMnistTestSamples = 10000;

at::Generator Seeded(int seed, int64_t stream) {
  return at::detail::createCPUGenerator(static_cast<uint64_t>(seed) * 0x9E3779B97F4A7C15ULL +
                                        static_cast<uint64_t>(stream));
}

// A fixed pool of samples made once; micro-batch k draws `size` of them (with a generator seeded
// by (seed, k)). Drawing costs a gather only: making fresh samples per micro-batch would be time
// the first stage's forward paid and no profile of the layers shows. The
// last stage reads the labels alone (TrainLabels), which cost a gather of a few integers.
class SyntheticData : public DataSource {
 public:
  SyntheticData(const Model& model, int seed) : input_(model.input), seed_(seed) {
    int64_t features = 1;
    for (int64_t d : input_.sample_shape) features *= d;
    const int64_t sample_bytes = features * (input_.tokens ? 8 : 4);
    const int64_t pool = std::clamp<int64_t>(kPoolBytes / std::max<int64_t>(sample_bytes, 1),
                                             kMinPoolSamples, kMaxPoolSamples);
    at::Generator g = Seeded(seed, -1);
    if (!input_.tokens && input_.sample_shape.size() == 1)
      // The teacher reads the first few features only: labels cost next to nothing to make.
      teacher_ = torch::randn({std::min<int64_t>(features, kTeacherFeatures), input_.classes}, g);
    train_ = MakePool(pool, g);
    at::Generator test = Seeded(seed, -3);
    test_ = MakePool(kSyntheticTestBatches * kTestPoolSamplesPerBatch, test);
  }
  Batch Train(int64_t k, int64_t size) override { return Draw(train_, Rows(k, size, train_)); }
  torch::Tensor TrainLabels(int64_t k, int64_t size) override {
    return train_.labels.index_select(0, Rows(k, size, train_));
  }
  int64_t TestBatches(int64_t) const override { return kSyntheticTestBatches; }
  Batch Test(int64_t i, int64_t size) override {
    return Draw(test_, Rows(kTestStream + i, size, test_));
  }

 private:
  Batch MakePool(int64_t n, at::Generator& g) const {
    std::vector<int64_t> shape = {n};
    shape.insert(shape.end(), input_.sample_shape.begin(), input_.sample_shape.end());
    Batch b;
    if (input_.tokens) {
      b.input = torch::randint(input_.token_range, shape, g, torch::kLong);
      b.labels = torch::randint(input_.classes, shape, g, torch::kLong);
    } else {
      b.input = torch::randn(shape, g);
      b.labels = teacher_.defined()
                     ? torch::matmul(b.input.narrow(1, 0, teacher_.size(0)), teacher_).argmax(1)
                     : torch::randint(input_.classes, {n}, g, torch::kLong);
    }
    return b;
  }
  torch::Tensor Rows(int64_t k, int64_t size, const Batch& pool) const {
    at::Generator g = Seeded(seed_, k);
    return torch::randint(pool.input.size(0), {size}, g, torch::kLong);
  }
  static Batch Draw(const Batch& pool, const torch::Tensor& rows) {
    return {pool.input.index_select(0, rows), pool.labels.index_select(0, rows)};
  }

  NetworkInput input_;
  int seed_;
  torch::Tensor teacher_;
  Batch train_, test_;
};

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// Decompresses `gz` to `out` through a temporary file and a rename (workers may race).
void Gunzip(const std::string& gz, const std::string& out) {
  gzFile in = gzopen(gz.c_str(), "rb");
  if (!in) throw InputError(gz, "", "cannot open the gzipped IDX file");
  const std::string temporary = out + ".tmp." + std::to_string(::getpid());
  std::ofstream file(temporary, std::ios::binary);
  char buffer[1 << 16];
  int n;
  while ((n = gzread(in, buffer, sizeof buffer)) > 0) file.write(buffer, n);
  const bool failed = n < 0 || !file;
  gzclose(in);
  file.close();
  if (failed || std::rename(temporary.c_str(), out.c_str()) != 0) {
    std::remove(temporary.c_str());
    throw InputError(gz, "", "cannot decompress to " + out);
  }
}

// A folder holding the four IDX files uncompressed under the names LibTorch's reader expects.
std::string UncompressedFolder(const std::string& data_dir) {
  const char* names[] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                         "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"};
  bool all_plain = true;
  for (const char* n : names) all_plain = all_plain && Exists(data_dir + "/" + n);
  if (all_plain) return data_dir;
  const char* tmp = std::getenv("TMPDIR");
  const std::string cache = std::string(tmp && *tmp ? tmp : "/tmp") + "/pipetwin-fashion-mnist-" +
                            std::to_string(::getuid());
  ::mkdir(cache.c_str(), 0700);
  for (const char* n : names) {
    const std::string out = cache + "/" + n;
    if (Exists(out)) continue;
    const std::string plain = data_dir + "/" + n, gz = plain + ".gz";
    if (Exists(gz)) Gunzip(gz, out);
    else throw InputError(data_dir, "", std::string("no ") + n + "(.gz): install Debian's "
                          "dataset-fashion-mnist or pass --data-dir");
  }
  return cache;
}

class FashionMnist : public DataSource {
 public:
  FashionMnist(const std::string& data_dir, int seed) : seed_(seed) {
    const std::string dir = UncompressedFolder(data_dir);
    try {
      torch::data::datasets::MNIST train(dir, torch::data::datasets::MNIST::Mode::kTrain);
      torch::data::datasets::MNIST test(dir, torch::data::datasets::MNIST::Mode::kTest);
      train_images_ = Standardise(train.images());
      train_labels_ = train.targets().to(torch::kLong);
      test_images_ = Standardise(test.images());
      test_labels_ = test.targets().to(torch::kLong);
    } catch (const c10::Error& e) {
      throw InputError(dir, "", std::string("cannot read the IDX files: ") + e.what_without_backtrace());
    }
  }
  Batch Train(int64_t k, int64_t size) override {
    const int64_t n = train_images_.size(0);
    std::vector<int64_t> rows;
    for (int64_t i = k * size; i < (k + 1) * size; ++i) {
      const int64_t epoch = i / n;
      if (epoch != epoch_) {
        at::Generator g = Seeded(seed_, -2 - epoch);
        order_ = torch::randperm(n, g, torch::kLong);
        epoch_ = epoch;
      }
      rows.push_back(order_.data_ptr<int64_t>()[i % n]);
    }
    auto index = torch::tensor(rows, torch::kLong);
    return {train_images_.index_select(0, index), train_labels_.index_select(0, index)};
  }
  int64_t TestBatches(int64_t size) const override { return kFashionMnistTestSamples / size; }
  Batch Test(int64_t i, int64_t size) override {
    return {test_images_.narrow(0, i * size, size), test_labels_.narrow(0, i * size, size)};
  }

 private:
  // Fashion-MNIST's mean and standard deviation over the training set.
  static torch::Tensor Standardise(const torch::Tensor& images) {
    return ((images.reshape({images.size(0), -1}) - 0.2860) / 0.3530).contiguous();
  }

  int seed_;
  int64_t epoch_ = -1;
  torch::Tensor order_;
  torch::Tensor train_images_, train_labels_, test_images_, test_labels_;
};

}  // namespace

int64_t TestBatchCount(const std::string& kind, int64_t size) {
  return kind == "fashion-mnist" ? kFashionMnistTestSamples / size : kSyntheticTestBatches;
}

std::unique_ptr<DataSource> MakeDataSource(const std::string& kind, const std::string& data_dir,
                                           const Model& model, int seed) {
  if (kind == "fashion-mnist") return std::make_unique<FashionMnist>(data_dir, seed);
  return std::make_unique<SyntheticData>(model, seed);
}

}  // namespace pipetwin::exec
