#include "partition/planners/stage_plan.h"

namespace pipetwin {

StagePlan MakeStagePlan(const StageEstimate& e) {
  StagePlan s;
  s.first_layer = e.first_layer;
  s.last_layer = e.last_layer;
  s.replicas = static_cast<int>(e.devices.size());
  s.devices = e.devices;
  s.compute_ms = e.times.compute_ms;
  s.communication_ms = e.times.transfer_ms;
  s.memory_bytes = e.memory.Total();
  return s;
}

std::vector<double> DeviceMemory(const std::vector<StageEstimate>& stages, int device_count) {
  std::vector<double> out(device_count, 0);
  for (const StageEstimate& e : stages)
    for (int d : e.devices) out[d] = e.memory.Total();
  return out;
}

nlohmann::json StageDetails(const std::vector<StageEstimate>& stages) {
  nlohmann::json out = nlohmann::json::array();
  for (size_t s = 0; s < stages.size(); ++s) {
    const StageEstimate& e = stages[s];
    out.push_back({{"stage", s},
                   {"first_layer", e.first_layer},
                   {"last_layer", e.last_layer},
                   {"devices", e.devices},
                   {"compute_ms_per_microbatch", e.times.compute_ms},
                   {"transfer_ms_per_microbatch", e.times.transfer_ms},
                   {"allreduce_ms_per_update", e.times.allreduce_ms},
                   {"memory", MemoryCategoriesToJson(e.memory)}});
  }
  return out;
}

}  // namespace pipetwin
