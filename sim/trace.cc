#include "sim/trace.h"

#include "sim/report_builder.h"

namespace pipetwin::sim {

namespace {

enum Thread { kCompute = 0, kSend = 1, kReceive = 2, kAllReduce = 3 };

int ThreadOf(OpKind kind) {
  if (IsComputeOp(kind)) return kCompute;
  if (kind == OpKind::kSendActivation || kind == OpKind::kSendGradient) return kSend;
  return kReceive;
}

nlohmann::json Metadata(const char* what, int pid, int tid, const std::string& name) {
  nlohmann::json e = {{"name", what}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", name}}}};
  if (tid >= 0) e["tid"] = tid;
  return e;
}

}  // namespace

nlohmann::json ChromeTrace(const SimulationSetup& setup, const SimulationRecord& record) {
  nlohmann::json events = nlohmann::json::array();
  const char* threads[] = {"compute", "send", "receive", "all-reduce"};
  for (const WorkerProgram& p : setup.schedule.workers) {
    const int pid = setup.worker_device[p.worker];
    const WorkerRecord& rec = record.workers[p.worker];
    events.push_back(Metadata("process_name", pid, -1,
                              "device " + std::to_string(pid) + ": worker " +
                                  std::to_string(p.worker) + ", stage " +
                                  std::to_string(p.stage)));
    events.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid},
                      {"args", {{"sort_index", p.worker}}}});
    for (int t = 0; t < 4; ++t) events.push_back(Metadata("thread_name", pid, t, threads[t]));
    for (size_t i = 0; i < p.ops.size(); ++i) {
      const Op& op = p.ops[i];
      if (!IsComputeOp(op.kind) && !IsCommunicationOp(op.kind)) continue;
      nlohmann::json args = {{"stage", op.stage}, {"microbatch", op.microbatch}};
      if (IsComputeOp(op.kind)) args["weight_version"] = op.weight_version;
      if (IsCommunicationOp(op.kind)) {
        args["peer_worker"] = op.peer_worker;
        args["bytes"] = setup.MessageBytes(op);
      }
      events.push_back({{"name", ActionName(op)},
                        {"cat", OpKindName(op.kind)},
                        {"ph", "X"},
                        {"pid", pid},
                        {"tid", ThreadOf(op.kind)},
                        {"ts", rec.op_start_s[i] * 1e6},
                        {"dur", (rec.op_end_s[i] - rec.op_start_s[i]) * 1e6},
                        {"args", args}});
    }
    for (size_t j = 0; j < rec.allreduces.size(); ++j) {
      const AllReduceTiming& a = rec.allreduces[j];
      events.push_back({{"name", "all-reduce"},
                        {"cat", "all_reduce"},
                        {"ph", "X"},
                        {"pid", pid},
                        {"tid", kAllReduce},
                        {"ts", a.start_s * 1e6},
                        {"dur", (a.end_s - a.start_s) * 1e6},
                        {"args", {{"bytes", a.bytes}, {"bucket", j}}}});
    }
    for (const MemorySample& m : record.states[p.worker].timeline())
      events.push_back({{"name", "memory"},
                        {"ph", "C"},
                        {"pid", pid},
                        {"ts", m.time_s * 1e6},
                        {"args",
                         {{"weights", m.bytes.weights},
                          {"optimizer", m.bytes.optimizer},
                          {"gradients", m.bytes.gradients},
                          {"activations", m.bytes.activations},
                          {"recompute", m.bytes.recompute}}}});
  }
  return {{"traceEvents", events},
          {"displayTimeUnit", "ms"},
          {"otherData",
           {{"scenario", setup.scenario_name},
            {"schedule", ScheduleKindName(setup.schedule.kind)},
            {"source", "pipetwin simulate (SimGrid)"}}}};
}

std::string TimelineSvg(const SimulationSetup& setup, const SimulationRecord& record) {
  return ScheduleToSvg(setup.schedule, AsReplay(setup, record));
}

}  // namespace pipetwin::sim
