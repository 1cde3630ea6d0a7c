// A caching allocator for CPU tensors, the CPU counterpart of the CUDA caching allocator that
// PyTorch's GPU runs rely on.
//
// Why: a training step frees and allocates tensors of the same few sizes every micro-batch.
// LibTorch 1.13 takes each from glibc with posix_memalign(64, n); glibc before 2.38 does not look
// for an aligned free chunk, so the hole a freed tensor leaves is 64 bytes too small for the next
// tensor of its size, and the heap grows at its top instead: a worker's RSS grows steadily with
// its live tensors constant (malloc_stats shows the gap), every new page is a page fault, and the
// ops that meet them run far longer than the profile says (docs/executor.md).
//
// Freed blocks are kept in per-size free lists and handed out again; blocks above the cache
// limit go back to glibc. Live bytes and their peak are counted over every thread (AllocatorProbe
// reads them) and reported to LibTorch's memory profiler hook (c10::reportMemoryUsageToProfiler).
#pragma once

#include <cstddef>
#include <cstdint>

namespace pipetwin::exec {

struct CpuAllocatorStats {
  int64_t live_bytes = 0;       // bytes of the tensors alive now (as requested)
  int64_t peak_live_bytes = 0;  // the most live_bytes have been
  int64_t cached_bytes = 0;     // bytes held in free lists for reuse
  int64_t system_bytes = 0;     // bytes taken from glibc and not given back (live + cached + rounding)
  int64_t hits = 0;             // allocations served from a free list
  int64_t misses = 0;           // allocations that went to glibc
};

// Makes the caching allocator LibTorch's CPU allocator for the rest of the process (idempotent).
// Call before the first tensor that should be counted.
void UseCachingCpuAllocator();

// The allocator's counters (zeros before UseCachingCpuAllocator).
CpuAllocatorStats CachingCpuAllocatorStats();

// Block size a request of `bytes` is served with: a multiple of 64 B up to 4 KiB, of 4 KiB above
// (exposed for the tests).
size_t CachingCpuAllocatorBlockBytes(size_t bytes);

}  // namespace pipetwin::exec
