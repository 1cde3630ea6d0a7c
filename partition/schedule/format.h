// Schedules in and out: torch.distributed.pipelining's action CSV (both ways), JSON and text.
// (The SVG picture is timeline/schedule_svg.h's.)
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "partition/schedule/op.h"
#include "partition/schedule/replay.h"
#include "partition/schedule/spec.h"

namespace pipetwin {

// The two forms of torch.distributed.pipelining's action CSV (`_dump_csv` / `_load_csv`'s
// `format`).
enum class CsvForm {
  kComputeOnly,        // "compute_only": F, B, I, W cells
  kWithCommunication,  // "compute_comms": also SEND_F, RECV_F, SEND_B, RECV_B and REDUCE_GRAD
};
// One row per worker, one action per cell, in list order. Compute-only rows carry no
// REDUCE_GRAD (torch's lowering adds it after a stage's last backward), except where a list
// updates more than once (PipeDream, 2BW: there the cells say where, and torch cannot load it).
std::string ScheduleToCsv(const PipelineSchedule& schedule,
                          CsvForm form = CsvForm::kComputeOnly);
// Reads such a CSV (either form; OVERLAP_F_B pairs as their two actions), infers stages,
// replicas and routing, places communication when none is given, and validates. `file` names
// the input in errors.
PipelineSchedule ScheduleFromCsv(const std::string& text, const std::string& file);
nlohmann::json ScheduleToJson(const PipelineSchedule& schedule, const ReplayResult& replay,
                              const OpCosts& costs);
std::string ScheduleToText(const PipelineSchedule& schedule, const ReplayResult& replay,
                           const OpCosts& costs);

}  // namespace pipetwin
