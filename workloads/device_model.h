// A roofline device model for analytic workloads: a layer takes the longer of its FLOPs at the
// achieved FLOP rate and its memory traffic at the memory bandwidth (Williams et al., "Roofline",
// CACM 2009).
#pragma once

#include <algorithm>
#include <string>

namespace pipetwin {

struct DeviceModel {
  std::string name = "V100";
  double peak_flops = 125e12;                   // FLOP/s at the workload's dtype
  double flops_efficiency = 0.5;                // achieved fraction of peak
  double memory_bandwidth_bytes_per_s = 900e9;  // HBM bytes/s

  // Time in ms of an operation doing `flops` FLOPs and moving `bytes` bytes of memory.
  double TimeMs(double flops, double bytes) const {
    return 1e3 * std::max(flops / (peak_flops * flops_efficiency),
                          bytes / memory_bandwidth_bytes_per_s);
  }
};

}  // namespace pipetwin
