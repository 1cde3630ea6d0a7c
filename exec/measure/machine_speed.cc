#include "exec/measure/machine_speed.h"

#include <chrono>
#include <vector>

#include <torch/torch.h>

#include "exec/calibrate/fit.h"

namespace pipetwin::exec {

double GemmSeconds(int n, int warmup, int repeats) {
  torch::NoGradGuard no_grad;
  const torch::Tensor a = torch::rand({n, n}), b = torch::rand({n, n});
  torch::Tensor c = torch::empty({n, n});
  std::vector<double> seconds;
  for (int i = 0; i < warmup + repeats; ++i) {
    const auto start = std::chrono::steady_clock::now();
    at::mm_out(c, a, b);
    if (i >= warmup)
      seconds.push_back(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return Median(seconds);
}

double OneCoreGflops() {
  // One thread whatever the process's own count (a worker's --threads), restored after.
  const int threads = at::get_num_threads();
  if (threads != 1) at::set_num_threads(1);
  const double s = GemmSeconds(kSpeedGemmN, 3, kSpeedGemmRepeats);
  if (threads != 1) at::set_num_threads(threads);
  return s > 0 ? GemmFlops(kSpeedGemmN) / s / 1e9 : 0;
}

}  // namespace pipetwin::exec
