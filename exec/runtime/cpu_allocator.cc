#include "exec/runtime/cpu_allocator.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <torch/version.h>

namespace pipetwin::exec {

namespace {

constexpr size_t kAlignment = 64;  // LibTorch's CPU alignment (c10::gAlignment)
// Free blocks are kept up to this many bytes, or up to the peak of live bytes when that is more:
// a training loop needs at most its peak again.
constexpr int64_t kMinCacheLimit = int64_t{256} << 20;

class CachingCpuAllocator final : public c10::Allocator {
 public:
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
  c10::DataPtr allocate(size_t n) override { return Allocate(n); }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
#else
  c10::DataPtr allocate(size_t n) const override { return Allocate(n); }
#endif
  c10::DeleterFnPtr raw_deleter() const override { return &Free; }

  static CachingCpuAllocator& Instance() {
    // Never destroyed: tensors may be freed during static destruction.
    static auto* instance = new CachingCpuAllocator;
    return *instance;
  }

  CpuAllocatorStats Stats() {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

 private:
  struct Block {
    size_t block_bytes;
    size_t requested;
  };

  c10::DataPtr Allocate(size_t n) const {
    const c10::Device cpu(c10::DeviceType::CPU);
    if (n == 0) return c10::DataPtr(nullptr, nullptr, &Free, cpu);
    void* p = Instance().Take(n);
    return c10::DataPtr(p, p, &Free, cpu);
  }

  static void Free(void* p) {
    if (p) Instance().Give(p);
  }

  void* Take(size_t n) {
    const size_t block = CachingCpuAllocatorBlockBytes(n);
    void* p = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto& free_list = free_[block];
      if (!free_list.empty()) {
        p = free_list.back();
        free_list.pop_back();
        stats_.cached_bytes -= static_cast<int64_t>(block);
        ++stats_.hits;
      }
    }
    const bool fresh = !p;
    if (fresh && (::posix_memalign(&p, kAlignment, block) != 0 || !p)) throw std::bad_alloc();
    CpuAllocatorStats after;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (fresh) {
        stats_.system_bytes += static_cast<int64_t>(block);
        ++stats_.misses;
      }
      blocks_[p] = {block, n};
      stats_.live_bytes += static_cast<int64_t>(n);
      if (stats_.live_bytes > stats_.peak_live_bytes) stats_.peak_live_bytes = stats_.live_bytes;
      after = stats_;
    }
    c10::reportMemoryUsageToProfiler(p, static_cast<int64_t>(n), after.live_bytes,
                                     after.system_bytes, c10::Device(c10::DeviceType::CPU));
    return p;
  }

  void Give(void* p) {
    bool release = false;
    int64_t requested = 0;
    CpuAllocatorStats after;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = blocks_.find(p);
      if (it == blocks_.end()) {  // not ours (cannot happen through DataPtr): leave it
        return;
      }
      const Block b = it->second;
      blocks_.erase(it);
      requested = static_cast<int64_t>(b.requested);
      stats_.live_bytes -= requested;
      const int64_t limit = std::max(kMinCacheLimit, stats_.peak_live_bytes);
      if (stats_.cached_bytes + static_cast<int64_t>(b.block_bytes) > limit) {
        release = true;
        stats_.system_bytes -= static_cast<int64_t>(b.block_bytes);
      } else {
        free_[b.block_bytes].push_back(p);
        stats_.cached_bytes += static_cast<int64_t>(b.block_bytes);
      }
      after = stats_;
    }
    if (release) std::free(p);
    c10::reportMemoryUsageToProfiler(p, -requested, after.live_bytes, after.system_bytes,
                                     c10::Device(c10::DeviceType::CPU));
  }

  std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // block bytes -> free blocks
  std::unordered_map<void*, Block> blocks_;              // live blocks
  CpuAllocatorStats stats_;
};

std::once_flag installed;
std::atomic<bool> is_installed{false};

}  // namespace

size_t CachingCpuAllocatorBlockBytes(size_t bytes) {
  const size_t unit = bytes <= 4096 ? 64 : 4096;
  return (std::max<size_t>(bytes, 1) + unit - 1) / unit * unit;
}

void UseCachingCpuAllocator() {
  std::call_once(installed, [] {
    // Priority above LibTorch's default CPU allocator (0), so that nothing later replaces it.
    c10::SetCPUAllocator(&CachingCpuAllocator::Instance(), 10);
    is_installed = true;
  });
}

CpuAllocatorStats CachingCpuAllocatorStats() {
  if (!is_installed) return {};
  return CachingCpuAllocator::Instance().Stats();
}

}  // namespace pipetwin::exec
