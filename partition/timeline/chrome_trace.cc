// Timelines as Chrome traces (Trace Event Format), written and read back.
#include "partition/timeline/chrome_trace.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <utility>

#include "partition/util/error.h"

namespace pipetwin {

namespace {

const char* const kLaneNames[] = {"compute", "send", "receive", "all-reduce"};

nlohmann::json Metadata(const char* what, int pid, int tid, const std::string& name) {
  nlohmann::json e = {{"name", what}, {"ph", "M"}, {"pid", pid}, {"args", {{"name", name}}}};
  if (tid >= 0) e["tid"] = tid;
  return e;
}

int MaxDevice(const Timeline& t) {
  int most = -1;
  for (const auto& p : t.processes) most = std::max(most, p.device);
  for (const auto& e : t.events) most = std::max(most, e.device);
  return most;
}

int MaxWorker(const Timeline& t) {
  int most = -1;
  for (const auto& p : t.processes) most = std::max(most, p.worker);
  return most;
}

// Appends the timeline's events with pids shifted by `pid_base`, sort indices by `sort_base`
// and process names prefixed by `prefix`.
void AppendTrace(const Timeline& t, int pid_base, int sort_base, const std::string& prefix,
                 nlohmann::json& out) {
  auto by_worker = EventsByWorker(t.events);
  for (const TimelineProcess& p : t.processes) {
    const int pid = pid_base + p.device;
    out.push_back(Metadata("process_name", pid, -1, prefix + ProcessName(p)));
    out.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid},
                   {"args", {{"sort_index", sort_base + p.worker}}}});
    for (int lane = 0; lane < 4; ++lane)
      out.push_back(Metadata("thread_name", pid, lane, kLaneNames[lane]));
    for (const TimelineEvent* e : by_worker[p.worker])
      out.push_back({{"name", e->name},
                     {"cat", e->category},
                     {"ph", "X"},
                     {"pid", pid_base + e->device},
                     {"tid", e->lane},
                     {"ts", e->start_s * 1e6},
                     {"dur", (e->end_s - e->start_s) * 1e6},
                     {"args", e->args}});
    for (const MemorySample& m : p.memory)
      out.push_back({{"name", "memory"},
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
}

nlohmann::json TraceDocument(nlohmann::json events, nlohmann::json other_data) {
  return {{"traceEvents", std::move(events)},
          {"displayTimeUnit", "ms"},
          {"otherData", std::move(other_data)}};
}


OpKind KindOfCategory(const std::string& category, const std::string& file) {
  for (int k = 0; k <= static_cast<int>(OpKind::kUpdate); ++k)
    if (category == OpKindName(static_cast<OpKind>(k))) return static_cast<OpKind>(k);
  throw InputError(file, "traceEvents", "unknown event category \"" + category + "\"");
}

int IntArg(const nlohmann::json& args, const char* key, int fallback) {
  return args.is_object() && args.contains(key) && args[key].is_number_integer()
             ? args[key].get<int>()
             : fallback;
}

}  // namespace

nlohmann::json ChromeTrace(const Timeline& timeline) {
  nlohmann::json events = nlohmann::json::array();
  AppendTrace(timeline, 0, 0, "", events);
  return TraceDocument(std::move(events), timeline.other_data);
}

nlohmann::json ChromeTrace(const std::vector<Timeline>& timelines) {
  nlohmann::json events = nlohmann::json::array();
  nlohmann::json about = nlohmann::json::array();
  int pid_base = 0, sort_base = 0;
  for (size_t i = 0; i < timelines.size(); ++i) {
    const Timeline& t = timelines[i];
    const std::string label = TimelineLabel(t, i);
    AppendTrace(t, pid_base, sort_base, label + ": ", events);
    pid_base += MaxDevice(t) + 1;
    sort_base += MaxWorker(t) + 1;
    nlohmann::json entry = t.other_data.is_object() ? t.other_data : nlohmann::json::object();
    entry["label"] = label;
    about.push_back(entry);
  }
  return TraceDocument(std::move(events), {{"timelines", about}});
}

Timeline TimelineFromChromeTrace(const nlohmann::json& trace, const std::string& file) {
  if (!trace.is_object() || !trace.contains("traceEvents") || !trace["traceEvents"].is_array())
    throw InputError(file, "traceEvents", "expected an array of trace events");
  Timeline t;
  if (trace.contains("otherData")) t.other_data = trace["otherData"];
  std::map<int, size_t> process_of_pid;  // pid -> index in t.processes
  for (const nlohmann::json& e : trace["traceEvents"]) {
    if (e.value("ph", "") != "M" || e.value("name", "") != "process_name") continue;
    const std::string name = e["args"].value("name", "");
    TimelineProcess p;
    if (std::sscanf(name.c_str(), "device %d: worker %d, stage %d", &p.device, &p.worker,
                    &p.stage) != 3)
      throw InputError(file, "traceEvents", "expected process names \"device D: worker W, "
                       "stage S\", got \"" + name + "\"");
    process_of_pid[e["pid"].get<int>()] = t.processes.size();
    t.processes.push_back(p);
  }
  for (const nlohmann::json& e : trace["traceEvents"]) {
    const std::string ph = e.value("ph", "");
    if (ph != "X" && ph != "C") continue;
    const auto it = process_of_pid.find(e.value("pid", -1));
    if (it == process_of_pid.end())
      throw InputError(file, "traceEvents", "an event of a process with no name");
    TimelineProcess& p = t.processes[it->second];
    const double start_s = e.value("ts", 0.0) * 1e-6;
    if (ph == "C") {
      MemorySample m;
      m.time_s = start_s;
      const nlohmann::json& a = e["args"];
      m.bytes.weights = a.value("weights", 0.0);
      m.bytes.optimizer = a.value("optimizer", 0.0);
      m.bytes.gradients = a.value("gradients", 0.0);
      m.bytes.activations = a.value("activations", 0.0);
      m.bytes.recompute = a.value("recompute", 0.0);
      p.memory.push_back(m);
      continue;
    }
    const double end_s = start_s + e.value("dur", 0.0) * 1e-6;
    const nlohmann::json args = e.value("args", nlohmann::json::object());
    const std::string category = e.value("cat", "");
    if (category == "all_reduce") {
      t.events.push_back(AllReduceEvent(p.device, p.worker, p.stage, IntArg(args, "bucket", 0),
                                        args.value("bytes", 0.0), start_s, end_s));
      continue;
    }
    Op op;
    op.kind = KindOfCategory(category, file);
    op.stage = IntArg(args, "stage", p.stage);
    op.microbatch = IntArg(args, "microbatch", -1);
    op.weight_version = IntArg(args, "weight_version", -1);
    op.peer_worker = IntArg(args, "peer_worker", -1);
    TimelineEvent ev = OpEvent(op, p.device, p.worker, start_s, end_s, args.value("bytes", 0.0));
    ev.name = e.value("name", ev.name);
    ev.args = args;
    t.events.push_back(std::move(ev));
  }
  return t;
}

}  // namespace pipetwin
