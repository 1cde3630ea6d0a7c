// The Chrome traces of both back ends, checked by one set of rules written here from the Trace
// Event Format document (Google, "Trace Event Format", the JSON object form) and from what a
// Perfetto user expects of a pipeline's trace, not from pipetwin's writer:
//  - a "traceEvents" array; metadata ("M": process_name, process_sort_index, thread_name) first,
//    then every timed event in order of ts;
//  - complete events ("X") with ts and dur >= 0 that never overlap on one thread (pid, tid);
//    every thread and process they use is named;
//  - one flow per message: an "s" inside its Send's event and an "f" ("bp": "e") inside its
//    Recv's, one id each, on the processes the events' peer_pid names, with the peer's process
//    name in `peer`; the send starts before its receive ends; every Send and Recv has its flow;
//  - a message of some bytes takes time to send (dur > 0);
//  - one optimizer step ("update") per Update op of the lists, on a compute thread.
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "exec/job.h"
#include "partition/schedule/op.h"
#include "test_support.h"

namespace pipetwin {
namespace {

bool IsNumber(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number();
}

// What is wrong with `doc` under the rules above, one line each; `updates` is the number of
// Update ops the lists hold.
std::vector<std::string> TraceProblems(const nlohmann::json& doc, size_t updates) {
  std::vector<std::string> problems;
  auto fail = [&](const std::string& what, const nlohmann::json& e) {
    if (problems.size() < 20) problems.push_back(what + ": " + e.dump().substr(0, 300));
  };
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array())
    return {"no traceEvents array"};
  std::map<int, std::string> process_name;
  std::set<std::pair<int, int>> named_threads;
  std::map<std::pair<int, int>, std::string> thread_name;
  // Complete events per thread, and the flows' two ends.
  std::map<std::pair<int, int>, std::vector<const nlohmann::json*>> on_thread;
  std::map<long, std::vector<const nlohmann::json*>> flow_ends;
  bool timed_seen = false;
  double last_ts = -1e300;
  size_t steps = 0, sends = 0, receives = 0;
  for (const nlohmann::json& e : doc["traceEvents"]) {
    if (!e.is_object() || !e.contains("ph") || !e["ph"].is_string() ||
        !e.contains("pid") || !e["pid"].is_number_integer() || !e.contains("name") ||
        !e["name"].is_string()) {
      fail("an event without ph, an integer pid or a name", e);
      continue;
    }
    const std::string ph = e["ph"];
    const int pid = e["pid"];
    if (ph == "M") {
      if (timed_seen) fail("metadata after a timed event", e);
      const std::string what = e["name"];
      if (what == "process_name") {
        process_name[pid] = e["args"].value("name", "");
      } else if (what == "thread_name") {
        if (!e.contains("tid")) fail("a thread name without tid", e);
        else thread_name[{pid, e["tid"].get<int>()}] = e["args"].value("name", "");
      } else if (what != "process_sort_index") {
        fail("unknown metadata", e);
      }
      continue;
    }
    timed_seen = true;
    if (!IsNumber(e, "ts")) {
      fail("a timed event without a numeric ts", e);
      continue;
    }
    if (e["ts"].get<double>() < last_ts) fail("not in order of ts", e);
    last_ts = e["ts"].get<double>();
    if (ph == "C") continue;
    if (!e.contains("tid") || !e["tid"].is_number_integer()) {
      fail("an event without an integer tid", e);
      continue;
    }
    const int tid = e["tid"];
    if (ph == "X") {
      if (!IsNumber(e, "dur") || e["dur"].get<double>() < 0) fail("dur missing or < 0", e);
      on_thread[{pid, tid}].push_back(&e);
      const std::string cat = e.value("cat", "");
      steps += cat == "update";
      sends += cat.rfind("send_", 0) == 0;
      receives += cat.rfind("recv_", 0) == 0;
      if (cat.rfind("send_", 0) == 0 && e["args"].value("bytes", 0.0) > 0 &&
          e["dur"].get<double>() <= 0)
        fail("a message of some bytes sent in no time", e);
    } else if (ph == "s" || ph == "f") {
      if (!e.contains("id")) fail("a flow without id", e);
      else flow_ends[e["id"].get<long>()].push_back(&e);
      if (ph == "f" && e.value("bp", "") != "e") fail("a flow end not bound to its slice", e);
    } else {
      fail("an unexpected phase", e);
    }
  }
  for (const auto& [pid, name] : process_name) {
    int device = -1, worker = -1, stage = -1;
    if (std::sscanf(name.c_str(), "device %d: worker %d, stage %d", &device, &worker, &stage) !=
            3 || device != pid)
      problems.push_back("process " + std::to_string(pid) + " is named \"" + name + "\"");
  }
  auto inside = [](const nlohmann::json& slice, double ts) {
    const double start = slice["ts"], end = start + slice["dur"].get<double>();
    return start <= ts && ts <= end;
  };
  // Complete events of one thread: one after the other, never overlapping.
  for (auto& [thread, events] : on_thread) {
    if (!process_name.count(thread.first)) fail("an unnamed process", *events.front());
    if (!thread_name.count(thread)) fail("an unnamed thread", *events.front());
    std::stable_sort(events.begin(), events.end(), [](const nlohmann::json* a,
                                                           const nlohmann::json* b) {
      return (*a)["ts"].get<double>() < (*b)["ts"].get<double>();
    });
    for (size_t i = 1; i < events.size(); ++i) {
      const nlohmann::json& before = *events[i - 1];
      const double end = before["ts"].get<double>() + before["dur"].get<double>();
      if ((*events[i])["ts"].get<double>() < end - 1e-6)
        fail("overlaps the event before it on its thread", *events[i]);
    }
    for (const nlohmann::json* e : events)
      if ((*e)["cat"] == "update" &&
          thread_name[thread].rfind("compute", 0) != 0)
        fail("an optimizer step off the compute threads", *e);
  }
  // The slice of a thread that holds `ts`.
  auto slice_at = [&](const nlohmann::json& end) -> const nlohmann::json* {
    auto it = on_thread.find({end["pid"].get<int>(), end["tid"].get<int>()});
    if (it == on_thread.end()) return nullptr;
    for (const nlohmann::json* e : it->second)
      if (inside(*e, end["ts"].get<double>())) return e;
    return nullptr;
  };
  size_t flows = 0;
  for (const auto& [id, ends] : flow_ends) {
    if (ends.size() != 2 || (*ends[0])["ph"] != "s" || (*ends[1])["ph"] != "f") {
      fail("a flow id without exactly one start and then one end", *ends.front());
      continue;
    }
    ++flows;
    const nlohmann::json* send = slice_at(*ends[0]);
    const nlohmann::json* recv = slice_at(*ends[1]);
    if (!send || (*send)["cat"].get<std::string>().rfind("send_", 0) != 0) {
      fail("a flow that starts outside a send", *ends[0]);
      continue;
    }
    if (!recv || (*recv)["cat"].get<std::string>().rfind("recv_", 0) != 0) {
      fail("a flow that ends outside a receive", *ends[1]);
      continue;
    }
    const int from = (*send)["pid"], to = (*recv)["pid"];
    if ((*send)["args"].value("peer_pid", -1) != to || (*recv)["args"].value("peer_pid", -1) != from)
      fail("peer_pid does not name the flow's other end", *send);
    if ((*send)["args"].value("peer", "") != process_name[to] ||
        (*recv)["args"].value("peer", "") != process_name[from])
      fail("peer is not the other end's process name", *send);
    if ((*send)["args"]["microbatch"] != (*recv)["args"]["microbatch"])
      fail("a flow between two micro-batches", *send);
    if ((*send)["ts"].get<double>() >
        (*recv)["ts"].get<double>() + (*recv)["dur"].get<double>() + 1e-6)
      fail("a message received before it was sent", *send);
  }
  if (flows != sends || flows != receives)
    problems.push_back(std::to_string(sends) + " sends and " + std::to_string(receives) +
                       " receives, " + std::to_string(flows) + " flows");
  if (steps != updates)
    problems.push_back(std::to_string(steps) + " optimizer steps, the lists hold " +
                       std::to_string(updates) + " updates");
  return problems;
}

nlohmann::json Read(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// Three workers (a replicated second stage: sends, receives, all-reduces and updates), two
// iterations, under `schedule` and the planner that plans for it.
std::string WriteScenario(const std::string& dir, const std::string& schedule) {
  const std::string path = dir + "/" + schedule + ".json";
  testing::WriteFile(path, R"({
    "name": "trace format",
    "workload": {"generator": "mlp", "layers": 4, "input": 64, "width": 64, "classes": 10,
                 "batch": 8},
    "cluster": {"name": "local", "device": {"name": "CPU", "memory_bytes": 8e9},
                "levels": [{"name": "host", "count": 3, "bandwidth_gbps": 40, "latency_us": 20}]},
    "plan": {"planner": "manual", "schedule": ")" + schedule + R"(", "microbatch_size": 8,
             "microbatches_per_update": 4,
             "stages": [{"first_layer": 0, "last_layer": 1, "replicas": 1, "devices": [0]},
                        {"first_layer": 2, "last_layer": 3, "replicas": 2, "devices": [1, 2]}]},
    "schedule": ")" + schedule + R"(",
    "training": {"microbatch_size": 8, "microbatches": 4, "iterations": 2, "optimizer": "sgd",
                 "learning_rate": 0.01}})");
  return path;
}

size_t UpdatesOf(const std::string& scenario) {
  exec::RunOptions options;
  options.scenario = scenario;
  size_t updates = 0;
  for (const WorkerProgram& p : exec::PrepareJob(options).schedule.workers)
    for (const Op& op : p.ops) updates += op.kind == OpKind::kUpdate;
  return updates;
}

std::string Lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

TEST(BackEnds, BothTracesFollowTheTraceEventFormatAndTheSameRules) {
  const std::string dir = testing::TemporaryDirectory();
  for (const std::string schedule : {"flush", "2bw"}) {
    SCOPED_TRACE(schedule);
    const std::string scenario = WriteScenario(dir, schedule);
    const size_t updates = UpdatesOf(scenario);
    ASSERT_GT(updates, 0u);
    const std::string sim = dir + "/sim-" + schedule + ".json";
    const std::string run = dir + "/run-" + schedule + ".json";
    const auto simulated = testing::RunPipetwin("simulate " + scenario + " --trace " + sim);
    ASSERT_EQ(simulated.exit_code, 0) << simulated.err;
    const auto ran = testing::RunPipetwin("run " + scenario + " --trace " + run);
    ASSERT_EQ(ran.exit_code, 0) << ran.err;
    EXPECT_EQ(Lines(TraceProblems(Read(sim), updates)), "") << "simulated";
    EXPECT_EQ(Lines(TraceProblems(Read(run), updates)), "") << "measured";
  }
}

TEST(BackEnds, TheTraceRulesRejectWhatTheFormatForbids) {
  const std::string dir = testing::TemporaryDirectory();
  const std::string scenario = WriteScenario(dir, "flush");
  const size_t updates = UpdatesOf(scenario);
  const auto simulated = testing::RunPipetwin("simulate " + scenario + " --trace " + dir + "/t.json");
  ASSERT_EQ(simulated.exit_code, 0) << simulated.err;
  const nlohmann::json good = Read(dir + "/t.json");
  ASSERT_EQ(Lines(TraceProblems(good, updates)), "");
  auto index_of = [&](const std::string& ph, const std::string& cat_prefix) {
    const auto& list = good["traceEvents"];
    for (size_t i = 0; i < list.size(); ++i)
      if (list[i]["ph"] == ph && list[i].value("cat", "").rfind(cat_prefix, 0) == 0) return i;
    return list.size();
  };
  auto problems_with = [&](auto change) {
    nlohmann::json doc = good;
    change(doc["traceEvents"]);
    return TraceProblems(doc, updates);
  };
  const size_t send = index_of("X", "send_"), flow = index_of("s", "message");
  ASSERT_LT(send, good["traceEvents"].size());
  ASSERT_LT(flow, good["traceEvents"].size());
  // Out of order; a send in no time; a flow's start lost; a wrong peer; a step too few.
  EXPECT_FALSE(problems_with([&](nlohmann::json& e) {
    std::swap(e[send], e[e.size() - 1]);
  }).empty());
  EXPECT_FALSE(problems_with([&](nlohmann::json& e) { e[send]["dur"] = 0; }).empty());
  EXPECT_FALSE(problems_with([&](nlohmann::json& e) { e.erase(flow); }).empty());
  EXPECT_FALSE(problems_with([&](nlohmann::json& e) {
    e[send]["args"]["peer_pid"] = e[send]["pid"];
  }).empty());
  EXPECT_FALSE(TraceProblems(good, updates + 1).empty());
  // Two events of one thread that overlap.
  EXPECT_FALSE(problems_with([&](nlohmann::json& e) {
    const size_t compute = index_of("X", "forward");
    nlohmann::json copy = e[compute];
    copy["ts"] = copy["ts"].get<double>() + copy["dur"].get<double>() / 2;
    copy["dur"] = copy["dur"].get<double>() + 1;
    e.insert(e.begin() + static_cast<long>(compute) + 1, copy);
  }).empty());
}

}  // namespace
}  // namespace pipetwin
