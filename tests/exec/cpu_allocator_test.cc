// The executor's CPU caching allocator (exec/cpu_allocator.h): freed blocks come back for the
// next tensor of their size, live bytes and their peak are counted and reach LibTorch's memory
// profiler hook (which AllocatorProbe reads), and the cache stays within its limit.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "exec/runtime/cpu_allocator.h"
#include "exec/runtime/stage_executor.h"

namespace pipetwin::exec {
namespace {

class ExecCpuAllocator : public ::testing::Test {
 protected:
  void SetUp() override { UseCachingCpuAllocator(); }
};

TEST_F(ExecCpuAllocator, BlockSizesRoundUpTo64BytesThenTo4KiB) {
  EXPECT_EQ(CachingCpuAllocatorBlockBytes(0), 64u);
  EXPECT_EQ(CachingCpuAllocatorBlockBytes(1), 64u);
  EXPECT_EQ(CachingCpuAllocatorBlockBytes(64), 64u);
  EXPECT_EQ(CachingCpuAllocatorBlockBytes(65), 128u);
  EXPECT_EQ(CachingCpuAllocatorBlockBytes(4096), 4096u);
  EXPECT_EQ(CachingCpuAllocatorBlockBytes(4097), 8192u);
  EXPECT_EQ(CachingCpuAllocatorBlockBytes(131072), 131072u);
}

TEST_F(ExecCpuAllocator, AFreedBlockServesTheNextTensorOfItsSize) {
  const int64_t elements = 32 * 1024;  // 128 KiB, an MLP activation at batch 32
  void* first = nullptr;
  CpuAllocatorStats before_second;
  {
    torch::Tensor a = torch::empty({elements});
    first = a.data_ptr();
  }
  before_second = CachingCpuAllocatorStats();
  torch::Tensor b = torch::empty({elements});
  const CpuAllocatorStats after = CachingCpuAllocatorStats();
  EXPECT_EQ(b.data_ptr(), first);
  EXPECT_EQ(after.hits, before_second.hits + 1);
  EXPECT_EQ(after.misses, before_second.misses);
  EXPECT_EQ(after.system_bytes, before_second.system_bytes);
  EXPECT_EQ(after.cached_bytes, before_second.cached_bytes - elements * 4);
}

TEST_F(ExecCpuAllocator, ARepeatedTrainingStepTakesNothingNewFromTheSystem) {
  // Forward, backward and an update of a small MLP, over and over: after the first steps every
  // tensor is a block freed by an earlier one.
  torch::nn::Linear l1(256, 256), l2(256, 10);
  torch::optim::Adam adam(std::vector<torch::Tensor>{l1->weight, l1->bias, l2->weight, l2->bias});
  auto step = [&] {
    adam.zero_grad();
    torch::Tensor x = torch::randn({32, 256});
    torch::Tensor loss = l2(torch::relu(l1(x))).logsumexp(1).mean();
    loss.backward();
    adam.step();
  };
  for (int i = 0; i < 3; ++i) step();
  const CpuAllocatorStats warm = CachingCpuAllocatorStats();
  for (int i = 0; i < 50; ++i) step();
  const CpuAllocatorStats later = CachingCpuAllocatorStats();
  EXPECT_EQ(later.system_bytes, warm.system_bytes);
  EXPECT_EQ(later.misses, warm.misses);
  EXPECT_GT(later.hits, warm.hits + 50 * 10);
}

TEST_F(ExecCpuAllocator, LiveBytesAndPeakReachTheProbe) {
  const AllocatorProbe probe;
  const int64_t before = probe.allocated();
  const CpuAllocatorStats stats_before = CachingCpuAllocatorStats();
  {
    torch::Tensor a = torch::empty({1000});  // 4,000 bytes as requested
    EXPECT_EQ(probe.allocated() - before, 4000);
    EXPECT_EQ(CachingCpuAllocatorStats().live_bytes - stats_before.live_bytes, 4000);
    torch::Tensor b = torch::empty({250});
    EXPECT_EQ(probe.allocated() - before, 5000);
    EXPECT_GE(probe.peak(), before + 5000);
  }
  EXPECT_EQ(probe.allocated(), before);
  EXPECT_EQ(CachingCpuAllocatorStats().live_bytes, stats_before.live_bytes);
}

TEST_F(ExecCpuAllocator, TheCacheGivesBlocksBackAboveItsLimit) {
  // 300 tensors of distinct sizes (1 MiB + k x 4 KiB, ~1.6 MiB on average), each freed before the
  // next: ~480 MiB of blocks freed, with a live peak of a few MiB. The cache keeps 256 MiB (or the
  // live peak, if more) and gives the rest back.
  int64_t freed = 0;
  for (int k = 0; k < 300; ++k) {
    torch::Tensor t = torch::empty({(1 << 18) + k * 1024});
    freed += static_cast<int64_t>(CachingCpuAllocatorBlockBytes(t.nbytes()));
  }
  const CpuAllocatorStats s = CachingCpuAllocatorStats();
  const int64_t limit = std::max<int64_t>(int64_t{256} << 20, s.peak_live_bytes);
  ASSERT_GT(freed, limit);
  EXPECT_LE(s.cached_bytes, limit);
  EXPECT_LE(s.system_bytes - s.live_bytes, limit + (int64_t{1} << 20));  // + live rounding
}

}  // namespace
}  // namespace pipetwin::exec
