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

// A trace being written: metadata, then the timed events (sorted by ts when done), and the
// next flow id, shared by all timelines in it.
struct TraceBuilder {
  nlohmann::json metadata = nlohmann::json::array();
  std::vector<nlohmann::json> timed;
  long next_flow = 0;

  nlohmann::json Document(nlohmann::json other_data) {
    std::stable_sort(timed.begin(), timed.end(), [](const nlohmann::json& a,
                                                    const nlohmann::json& b) {
      return a["ts"].get<double>() < b["ts"].get<double>();
    });
    for (nlohmann::json& e : timed) metadata.push_back(std::move(e));
    return {{"traceEvents", std::move(metadata)},
            {"displayTimeUnit", "ms"},
            {"otherData", std::move(other_data)}};
  }
};

// Threads of one process: the first sub-lane of a lane is the lane's own tid; events that
// overlap one already on it go to further sub-lanes (tids from kFirstExtraTid up), named after
// the lane with a number ("send 2").
constexpr int kFirstExtraTid = 4;

class ThreadsOfProcess {
 public:
  // The tid for an event spanning [start_s, end_s) on `lane`; events come in order of start.
  int Place(int lane, double start_s, double end_s) {
    std::vector<SubLane>& subs = lanes_[lane];
    for (SubLane& sub : subs)
      if (sub.end_s <= start_s) {
        sub.end_s = std::max(end_s, start_s);
        return sub.tid;
      }
    const int tid = subs.empty() ? lane : next_extra_++;
    subs.push_back({tid, std::max(end_s, start_s)});
    names_.push_back({tid, subs.size() == 1 ? std::string(kLaneNames[lane])
                                            : std::string(kLaneNames[lane]) + " " +
                                                  std::to_string(subs.size())});
    return tid;
  }
  const std::vector<std::pair<int, std::string>>& Names() const { return names_; }

 private:
  struct SubLane {
    int tid = 0;
    double end_s = 0;
  };
  std::map<int, std::vector<SubLane>> lanes_;
  std::vector<std::pair<int, std::string>> names_;
  int next_extra_ = kFirstExtraTid;
};

// Adds the timeline's processes and events with pids shifted by `pid_base`, sort indices by
// `sort_base` and process names prefixed by `prefix`.
void AppendTrace(const Timeline& t, int pid_base, int sort_base, const std::string& prefix,
                 TraceBuilder& out) {
  std::map<int, const TimelineProcess*> process_of_worker;
  for (const TimelineProcess& p : t.processes) process_of_worker[p.worker] = &p;
  // Every event the trace shows, in order of start (of end among those starting together, so
  // that an instant update goes before the op that starts when it ends): the compute lane's
  // optimizer steps too.
  std::vector<const TimelineEvent*> shown;
  for (const TimelineEvent& e : t.events) shown.push_back(&e);
  for (const TimelineEvent& e : t.updates) shown.push_back(&e);
  std::stable_sort(shown.begin(), shown.end(), [](const TimelineEvent* a, const TimelineEvent* b) {
    return std::make_pair(a->start_s, a->end_s) < std::make_pair(b->start_s, b->end_s);
  });
  std::map<int, ThreadsOfProcess> threads;  // by worker
  std::map<const TimelineEvent*, int> tid_of;
  for (const TimelineEvent* e : shown) {
    if (!process_of_worker.count(e->worker)) continue;
    const int tid = threads[e->worker].Place(e->lane, e->start_s, e->end_s);
    tid_of[e] = tid;
    nlohmann::json args = e->args;
    if (IsCommunicationOp(e->op.kind) && process_of_worker.count(e->op.peer_worker)) {
      const TimelineProcess& peer = *process_of_worker.at(e->op.peer_worker);
      args["peer"] = prefix + ProcessName(peer);
      args["peer_pid"] = pid_base + peer.device;
    }
    out.timed.push_back({{"name", e->name},
                         {"cat", e->category},
                         {"ph", "X"},
                         {"pid", pid_base + e->device},
                         {"tid", tid},
                         {"ts", e->start_s * 1e6},
                         {"dur", std::max(0.0, e->end_s - e->start_s) * 1e6},
                         {"args", std::move(args)}});
  }
  // One flow per message: from its Send's start to the first moment its Recv's event shares
  // with the send (the receive's start, or the send's when the receiver asked first), so that
  // each end lies inside its event and the end never precedes the start.
  for (const MessageEvents& m : MatchMessages(t.events)) {
    const TimelineEvent& send = t.events[m.send];
    const TimelineEvent& recv = t.events[m.recv];
    if (!tid_of.count(&send) || !tid_of.count(&recv)) continue;
    const long id = out.next_flow++;
    const std::string name = send.op.kind == OpKind::kSendActivation ? "activation" : "gradient";
    out.timed.push_back({{"name", name}, {"cat", "message"}, {"ph", "s"}, {"id", id},
                         {"pid", pid_base + send.device}, {"tid", tid_of.at(&send)},
                         {"ts", send.start_s * 1e6}});
    out.timed.push_back({{"name", name}, {"cat", "message"}, {"ph", "f"}, {"bp", "e"},
                         {"id", id}, {"pid", pid_base + recv.device},
                         {"tid", tid_of.at(&recv)},
                         {"ts", std::min(recv.end_s, std::max(recv.start_s, send.start_s)) * 1e6}});
  }
  for (const TimelineProcess& p : t.processes) {
    const int pid = pid_base + p.device;
    out.metadata.push_back(Metadata("process_name", pid, -1, prefix + ProcessName(p)));
    out.metadata.push_back({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid},
                            {"args", {{"sort_index", sort_base + p.worker}}}});
    // The four lanes always, and the extra send (or other) lanes this worker needed.
    std::map<int, std::string> names;
    for (int lane = 0; lane < 4; ++lane) names[lane] = kLaneNames[lane];
    for (const auto& [tid, name] : threads[p.worker].Names()) names[tid] = name;
    for (const auto& [tid, name] : names)
      out.metadata.push_back(Metadata("thread_name", pid, tid, name));
    for (const MemorySample& m : p.memory)
      out.timed.push_back({{"name", "memory"},
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
  TraceBuilder events;
  AppendTrace(timeline, 0, 0, "", events);
  return events.Document(timeline.other_data);
}

nlohmann::json ChromeTrace(const std::vector<Timeline>& timelines) {
  TraceBuilder events;
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
  return events.Document({{"timelines", about}});
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
    if (op.kind == OpKind::kUpdate) {  // an optimizer step
      op.stage = IntArg(args, "stage", p.stage);
      op.weight_version = IntArg(args, "weight_version", -1);
      TimelineEvent ev = OpEvent(op, p.device, p.worker, start_s, end_s);
      ev.name = e.value("name", ev.name);
      ev.args = args;
      t.updates.push_back(std::move(ev));
      continue;
    }
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
