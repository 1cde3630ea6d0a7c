#include "sim/trace.h"

#include <algorithm>

#include "partition/timeline/chrome_trace.h"
#include "partition/timeline/svg.h"

namespace pipetwin::sim {

Timeline SimulatedTimeline(const SimulationSetup& setup, const SimulationRecord& record) {
  Timeline t;
  t.label = "predicted";
  t.other_data = {{"scenario", setup.scenario_name},
                  {"schedule", ScheduleKindName(setup.schedule.kind)},
                  {"source", "pipetwin simulate (SimGrid)"}};
  for (const WorkerProgram& p : setup.schedule.workers) {
    const int device = setup.worker_device[p.worker];
    const WorkerRecord& rec = record.workers[p.worker];
    t.processes.push_back({device, p.worker, p.stage, p.replica,
                           record.states[p.worker].timeline(), setup.cluster.device.memory_bytes});
    size_t updates = 0;
    for (size_t i = 0; i < p.ops.size(); ++i) {
      const Op& op = p.ops[i];
      const double bytes =
          IsCommunicationOp(op.kind) ? setup.MessageBytes(MessageOf(op, p.worker)) : 0;
      double end_s = rec.op_end_s[i];
      // A send lasts until its message is delivered; an update, its optimizer step.
      if (IsSendOp(op.kind)) end_s = std::max(end_s, rec.delivered_s[i]);
      if (op.kind == OpKind::kUpdate && updates < rec.step_end_s.size())
        end_s = rec.step_end_s[updates++];
      TimelineEvent e = OpEvent(op, device, p.worker, rec.op_start_s[i], end_s, bytes);
      if (i < rec.op_core.size() && rec.op_core[i] >= 0) e.args["core"] = rec.op_core[i];
      t.AddOp(e);
    }
    for (size_t j = 0; j < rec.allreduces.size(); ++j) {
      const AllReduceTiming& a = rec.allreduces[j];
      t.events.push_back(AllReduceEvent(device, p.worker, p.stage, static_cast<int>(j), a.bytes,
                                        a.start_s, a.end_s));
    }
  }
  return t;
}

nlohmann::json ChromeTrace(const SimulationSetup& setup, const SimulationRecord& record) {
  return pipetwin::ChromeTrace(SimulatedTimeline(setup, record));
}

std::string TimelineSvg(const SimulationSetup& setup, const SimulationRecord& record) {
  return pipetwin::TimelineSvg({SimulatedTimeline(setup, record)});
}

}  // namespace pipetwin::sim
