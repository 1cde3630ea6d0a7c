// Where a worker computes (`pipetwin run --device`): this process's CPU, or a GPU of its machine,
// one per local rank (LOCAL_RANK) while there are as many GPUs as local workers. With more local
// workers than GPUs, workers share a GPU (docs/executor.md, "One GPU, several stages"): NCCL
// refuses two ranks of one communicator on one device, so such workers talk c10d Gloo through
// host memory, and their kernels take turns on the GPU.
//
//   ExecDevice d = SelectDevice("cuda", env);   // cuda:LOCAL_RANK % GPUs, made current
//   torch::Tensor x = torch::zeros({4}, d.options());
//   d.ToDevice(cpu_tensors);
//
// Everything CUDA here is compiled into every build; on a machine without a GPU, SelectDevice
// refuses "cuda" in one line and nothing else of it runs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "exec/launch/process_env.h"
#include "partition/report/report.h"

namespace pipetwin::exec {

struct ExecDevice {
  torch::Device device = torch::kCPU;
  int sharers = 1;  // local workers computing on this device (> 1: a shared GPU)
  // Mixed precision on a GPU (`--precision`): the forward under autocast to this type, the
  // weights, their gradients and the optimizer in fp32. kFloat: none.
  at::ScalarType autocast = at::kFloat;

  bool cuda() const { return device.is_cuda(); }
  bool shared() const { return sharers > 1; }
  torch::TensorOptions options() const { return torch::TensorOptions().device(device); }
  std::vector<torch::Tensor> ToDevice(const std::vector<torch::Tensor>& tensors) const;
  // "cpu", "cuda:0 (NVIDIA H200, 139.8 GiB)"
  std::string Describe() const;
  // Bytes this worker may use: the GPU's memory over the workers sharing it; 0 on the CPU (the
  // caller's share of the machine's memory applies).
  double CapacityBytes() const;
};

// The device `kind` ("cpu" or "cuda") gives this worker; "cuda" picks GPU LOCAL_RANK % GPUs and
// makes it the current device; `precision` ("fp32", "bf16", "fp16") sets the autocast type.
// Throws InputError naming --device when the machine has no GPU.
ExecDevice SelectDevice(const std::string& kind, const std::string& precision,
                        const ProcessEnv& env);

// Throws InputError naming `option` when `kind` is "cuda" and this machine has no CUDA device
// (checked before any worker starts; makes no CUDA context).
void CheckDeviceAvailable(const std::string& kind, const std::string& option);

// Runs a forward under autocast when the device asks for it (at::autocast's state, nested and
// cleared as torch.autocast does).
class AutocastScope {
 public:
  explicit AutocastScope(const ExecDevice& device);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  bool active_ = false;
};

// The CUDA caching allocator's statistics of the device (allocated and reserved bytes, now and
// at their peaks); nullopt on the CPU.
std::optional<AllocatorView> CudaAllocatorView(const ExecDevice& device);
// Bytes in live tensors on the device now, by its caching allocator (CUDA) or the executor's
// CPU allocator (cpu_allocator.h).
int64_t AllocatedBytes(const ExecDevice& device);

// GPU time of the ops a worker runs, by CUDA events on its compute stream (a host clock around
// an asynchronous launch measures the launch, not the kernel): an op's start and end are
// recorded on the stream, and read, once the stream has finished, as seconds since an origin
// recorded when the worker started (its host time origin: the stream was idle then).
class GpuTimer {
 public:
  explicit GpuTimer(const ExecDevice& device);  // records the origin
  ~GpuTimer();
  GpuTimer(const GpuTimer&) = delete;
  GpuTimer& operator=(const GpuTimer&) = delete;
  // Marks the start / end of op `index` on the current stream.
  void Start(size_t index);
  void End(size_t index);
  // Waits for the device, then (start_s, end_s) of every op marked, in order of index.
  std::vector<std::pair<size_t, std::pair<double, double>>> Read();

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace pipetwin::exec
