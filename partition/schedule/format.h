// Schedules in and out: torch.distributed.pipelining's action CSV (both ways), JSON and text.
// (The SVG picture is timeline/schedule_svg.h's.)
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "partition/schedule/op.h"
#include "partition/schedule/replay.h"
#include "partition/schedule/spec.h"

namespace pipetwin {

// One row per worker, one compute action per cell (torch.distributed.pipelining's compute-only
// CSV, as `_dump_csv` writes and `_load_csv` reads); updates appear as "<stage>REDUCE_GRAD".
std::string ScheduleToCsv(const PipelineSchedule& schedule);
// Reads such a CSV (compute-only, or with SEND_F/RECV_F/SEND_B/RECV_B actions), infers stages,
// replicas and routing, places communication when none is given, and validates. `file` names
// the input in errors.
PipelineSchedule ScheduleFromCsv(const std::string& text, const std::string& file);
nlohmann::json ScheduleToJson(const PipelineSchedule& schedule, const ReplayResult& replay,
                              const OpCosts& costs);
std::string ScheduleToText(const PipelineSchedule& schedule, const ReplayResult& replay,
                           const OpCosts& costs);

}  // namespace pipetwin
