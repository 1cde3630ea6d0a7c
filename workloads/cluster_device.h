// The device model (roofline) of a cluster's device, for timing analytic workloads.
#pragma once

#include <string>

#include "partition/model/cluster.h"
#include "workloads/device_model.h"

namespace pipetwin {

inline DeviceModel DeviceModelOf(const Cluster& c) {
  return {c.device.name, c.device.peak_flops, c.device.flops_efficiency,
          c.device.memory_bandwidth_bytes_per_s};
}

// The device of a cluster preset ("cluster-a", "dgx-h100", ...); throws InputError if unknown.
inline DeviceModel DeviceModelOfPreset(const std::string& preset) {
  return DeviceModelOf(ClusterPreset(preset, 1));
}

}  // namespace pipetwin
