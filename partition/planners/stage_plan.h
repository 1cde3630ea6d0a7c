// From the cost model's estimates to a Plan's stages, the per-device memory and the per-stage
// details every planner reports.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "partition/cost/pipeline_cost_model.h"
#include "partition/model/plan.h"

namespace pipetwin {

// A plan's stage from an estimate, the per-device memory vector (0 for idle devices) and the
// per-stage details JSON.
StagePlan MakeStagePlan(const StageEstimate& estimate);
std::vector<double> DeviceMemory(const std::vector<StageEstimate>& stages, int device_count);
nlohmann::json StageDetails(const std::vector<StageEstimate>& stages);

}  // namespace pipetwin
