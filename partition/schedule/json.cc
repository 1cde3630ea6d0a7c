// A schedule and its replay as JSON (`pipetwin schedule --format json`).
#include "partition/schedule/format.h"
#include "partition/schedule/replay.h"
#include "partition/schedule/spec.h"

namespace pipetwin {

nlohmann::json ScheduleToJson(const PipelineSchedule& s, const ReplayResult& replay,
                              const OpCosts& costs) {
  nlohmann::json doc;
  doc["kind"] = ScheduleKindName(s.kind);
  doc["stages"] = s.stages;
  doc["replicas"] = s.replicas;
  doc["microbatches"] = s.microbatches;
  doc["microbatches_per_batch"] = s.microbatches_per_batch;
  doc["chunks"] = s.chunks;
  doc["vertical_sync"] = s.vertical_sync;
  doc["weight_stashing"] = s.weight_stashing;
  doc["recompute"] = s.recompute;
  if (s.recompute) doc["recompute_timing"] = RecomputeTimingName(s.recompute_timing);
  doc["send_mode"] = SendModeName(s.send_mode);
  doc["workers"] = nlohmann::json::array();
  for (const auto& w : s.workers) {
    nlohmann::json ops = nlohmann::json::array();
    for (const Op& op : w.ops) {
      nlohmann::json o = {{"op", OpKindName(op.kind)}, {"stage", op.stage}};
      if (s.chunks > 1) o["chunk"] = op.chunk;
      if (op.microbatch >= 0) o["microbatch"] = op.microbatch;
      if (op.peer_worker >= 0) o["peer"] = op.peer_worker;
      if (op.weight_version >= 0) o["version"] = op.weight_version;
      if (op.input_only) o["input_only"] = true;
      if (op.buckets > 1) o["buckets"] = op.buckets;
      ops.push_back(o);
    }
    doc["workers"].push_back({{"worker", w.worker}, {"stage", w.stage}, {"replica", w.replica},
                              {"model_stages", w.model_stages}, {"ops", ops}});
  }
  nlohmann::json summary;
  summary["forward_time"] = costs.forward;
  summary["backward_time"] = costs.backward;
  summary["makespan"] = replay.makespan;
  summary["bubble_fraction"] = replay.bubble_fraction;
  summary["bubble_over_compute"] = replay.bubble_over_compute;
  summary["workers"] = nlohmann::json::array();
  for (const auto& w : replay.workers)
    summary["workers"].push_back({{"worker", w.worker}, {"busy", w.busy}, {"idle", w.idle}});
  summary["stages"] = nlohmann::json::array();
  for (const auto& r : replay.stages)
    summary["stages"].push_back({{"stage", r.stage},
                                 {"max_in_flight_activations", r.max_in_flight_activations},
                                 {"max_weight_versions", r.max_weight_versions},
                                 {"updates", r.updates},
                                 {"staleness", r.staleness_max},
                                 {"staleness_min", r.staleness_min},
                                 {"staleness_mean", r.staleness_mean}});
  doc["summary"] = summary;
  return doc;
}

}  // namespace pipetwin
