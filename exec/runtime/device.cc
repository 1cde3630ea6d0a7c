#include "exec/runtime/device.h"

#include <cstdio>
#include <map>
#include <memory>

#include <ATen/autocast_mode.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>

#include "exec/runtime/cpu_allocator.h"
#include "partition/util/error.h"

namespace pipetwin::exec {

std::vector<torch::Tensor> ExecDevice::ToDevice(const std::vector<torch::Tensor>& tensors) const {
  std::vector<torch::Tensor> out;
  out.reserve(tensors.size());
  for (const auto& t : tensors) out.push_back(t.to(device));
  return out;
}

std::string ExecDevice::Describe() const {
  if (!cuda()) return "cpu";
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, device.index()) != cudaSuccess) return device.str();
  char memory[32];
  std::snprintf(memory, sizeof memory, "%.1f GiB",
                static_cast<double>(p.totalGlobalMem) / (1 << 30));
  return device.str() + " (" + p.name + ", " + memory +
         (shared() ? ", shared by " + std::to_string(sharers) + " workers" : "") + ")";
}

double ExecDevice::CapacityBytes() const {
  if (!cuda()) return 0;
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, device.index()) != cudaSuccess) return 0;
  return static_cast<double>(p.totalGlobalMem) / sharers;
}

void CheckDeviceAvailable(const std::string& kind, const std::string& option) {
  if (kind == "cuda" && c10::cuda::device_count() == 0)
    throw InputError(option + " cuda, but this machine has no CUDA device "
                     "(c10::cuda::device_count() is 0)");
}

ExecDevice SelectDevice(const std::string& kind, const std::string& precision,
                        const ProcessEnv& env) {
  // The words were checked with the options (partition/cli/options/run.h).
  ExecDevice d;
  if (precision == "bf16") d.autocast = at::kBFloat16;
  if (precision == "fp16") d.autocast = at::kHalf;
  if (kind != "cuda") return d;
  CheckDeviceAvailable(kind, "--device");
  const int gpus = c10::cuda::device_count();
  const int index = env.local_rank % gpus;
  d.device = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
  // Local workers on this GPU: ranks index, index + gpus, ... below local_world_size.
  d.sharers = (env.local_world_size - 1 - index) / gpus + 1;
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(index));
  return d;
}

AutocastScope::AutocastScope(const ExecDevice& device) {
  if (!device.cuda() || device.autocast == at::kFloat) return;
  active_ = true;
  at::autocast::set_autocast_enabled(at::kCUDA, true);
  at::autocast::set_autocast_dtype(at::kCUDA, device.autocast);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  // torch.autocast's exit: the cast weights' cache lives while the outermost region does.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(at::kCUDA, false);
}

std::optional<AllocatorView> CudaAllocatorView(const ExecDevice& device) {
  if (!device.cuda()) return std::nullopt;
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.device.index());
  const auto aggregate = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
  AllocatorView v;
  v.allocated_bytes = static_cast<double>(stats.allocated_bytes[aggregate].current);
  v.allocated_peak_bytes = static_cast<double>(stats.allocated_bytes[aggregate].peak);
  v.reserved_bytes = static_cast<double>(stats.reserved_bytes[aggregate].current);
  v.reserved_peak_bytes = static_cast<double>(stats.reserved_bytes[aggregate].peak);
  return v;
}

int64_t AllocatedBytes(const ExecDevice& device) {
  if (!device.cuda()) return CachingCpuAllocatorStats().live_bytes;
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.device.index());
  return stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)]
      .current;
}

struct GpuTimer::Impl {
  c10::DeviceIndex device = 0;
  c10::cuda::CUDAEvent origin{cudaEventDefault};
  std::map<size_t, std::pair<std::unique_ptr<c10::cuda::CUDAEvent>,
                             std::unique_ptr<c10::cuda::CUDAEvent>>> ops;
};

GpuTimer::GpuTimer(const ExecDevice& device) : impl_(nullptr) {
  if (!device.cuda()) return;
  impl_ = new Impl;
  impl_->device = device.device.index();
  c10::cuda::device_synchronize();
  impl_->origin.record(c10::cuda::getCurrentCUDAStream(impl_->device));
}

GpuTimer::~GpuTimer() { delete impl_; }

void GpuTimer::Start(size_t index) {
  if (!impl_) return;
  auto& pair = impl_->ops[index];
  pair.first = std::make_unique<c10::cuda::CUDAEvent>(cudaEventDefault);
  pair.first->record(c10::cuda::getCurrentCUDAStream(impl_->device));
}

void GpuTimer::End(size_t index) {
  if (!impl_) return;
  auto& pair = impl_->ops[index];
  pair.second = std::make_unique<c10::cuda::CUDAEvent>(cudaEventDefault);
  pair.second->record(c10::cuda::getCurrentCUDAStream(impl_->device));
}

std::vector<std::pair<size_t, std::pair<double, double>>> GpuTimer::Read() {
  std::vector<std::pair<size_t, std::pair<double, double>>> out;
  if (!impl_) return out;
  c10::cuda::device_synchronize();
  for (const auto& [index, pair] : impl_->ops) {
    if (!pair.first || !pair.second) continue;
    out.push_back({index, {impl_->origin.elapsed_time(*pair.first) * 1e-3,
                           impl_->origin.elapsed_time(*pair.second) * 1e-3}});
  }
  return out;
}

}  // namespace pipetwin::exec
