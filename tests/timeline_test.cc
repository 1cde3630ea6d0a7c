// Timelines and their writers: the Chrome trace layout the simulator and the executor share,
// several timelines as process groups of one trace, and the SVG of timelines one above the other.
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "partition/schedule/op.h"
#include "partition/timeline/timeline.h"
#include "partition/schedule/build.h"
#include "partition/schedule/replay.h"
#include "partition/schedule/spec.h"
#include "partition/timeline/chrome_trace.h"
#include "partition/timeline/svg.h"
#include "partition/timeline/svg_style.h"

namespace pipetwin {
namespace {

// A replayed 2-stage schedule as a timeline: replay units as milliseconds, stretched by
// `stretch`, worker w on device `first_device` + w, one all-reduce bucket and two memory samples
// per worker.
Timeline FromReplay(const std::string& label, double stretch = 1, int first_device = 0,
                    ScheduleKind kind = ScheduleKind::kFlush) {
  ScheduleSpec spec;
  spec.kind = kind;
  spec.stages = 2;
  spec.microbatches = 3;
  const PipelineSchedule s = BuildSchedule(spec);
  OpCosts costs;
  costs.transfer = 0.5;
  const ReplayResult replay = ReplaySchedule(s, costs);
  Timeline t;
  t.label = label;
  t.other_data = {{"scenario", "two stages"}, {"schedule", ScheduleKindName(kind)}};
  for (const WorkerProgram& p : s.workers) {
    const int device = first_device + p.worker;
    TimelineProcess process{device, p.worker, p.stage, p.replica, {}};
    process.memory.push_back({0, {100, 200, 0, 0, 0}});
    process.memory.push_back({stretch * 1e-3, {100, 200, 100, 50, 0}});
    t.processes.push_back(process);
    const WorkerTiming& timing = replay.workers[p.worker];
    for (size_t i = 0; i < p.ops.size(); ++i) {
      const Op& op = p.ops[i];
      const TimelineEvent e = OpEvent(op, device, p.worker, timing.op_start[i] * stretch * 1e-3,
                                      timing.op_end[i] * stretch * 1e-3, 4096);
      if (IsComputeOp(op.kind) || IsCommunicationOp(op.kind)) t.events.push_back(e);
      if (op.kind == OpKind::kUpdate) t.updates.push_back(e);
    }
    t.events.push_back(AllReduceEvent(device, p.worker, p.stage, 0, 8192, 0, 1e-4));
  }
  return t;
}

int CountOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Timeline, LanesAreComputeSendReceiveAllReduce) {
  EXPECT_EQ(LaneOf(OpKind::kForward), kComputeLane);
  EXPECT_EQ(LaneOf(OpKind::kBackwardWeight), kComputeLane);
  EXPECT_EQ(LaneOf(OpKind::kRecompute), kComputeLane);
  EXPECT_EQ(LaneOf(OpKind::kSendActivation), kSendLane);
  EXPECT_EQ(LaneOf(OpKind::kSendGradient), kSendLane);
  EXPECT_EQ(LaneOf(OpKind::kRecvActivation), kReceiveLane);
  EXPECT_EQ(LaneOf(OpKind::kRecvGradient), kReceiveLane);
  EXPECT_EQ(LaneOf(OpKind::kAllReduce), kAllReduceLane);
}

TEST(Timeline, OpEventsAreNamedByTheirActionAndCarryTheirFacts) {
  Op forward;
  forward.kind = OpKind::kForward;
  forward.stage = 1;
  forward.microbatch = 3;
  forward.weight_version = 2;
  const TimelineEvent f = OpEvent(forward, 5, 1, 0.001, 0.003);
  EXPECT_EQ(f.name, "1F3");
  EXPECT_EQ(f.category, "forward");
  EXPECT_EQ(f.lane, kComputeLane);
  EXPECT_EQ(f.args, (nlohmann::json{{"stage", 1}, {"microbatch", 3}, {"weight_version", 2}}));

  Op send;
  send.kind = OpKind::kSendGradient;
  send.stage = 1;
  send.microbatch = 3;
  send.peer_worker = 0;
  const TimelineEvent s = OpEvent(send, 5, 1, 0.003, 0.004, 1024);
  EXPECT_EQ(s.name, "1SEND_B3");
  EXPECT_EQ(s.category, "send_gradient");
  EXPECT_EQ(s.lane, kSendLane);
  EXPECT_EQ(s.args, (nlohmann::json{{"stage", 1}, {"microbatch", 3}, {"peer_worker", 0},
                                    {"bytes", 1024}}));

  const TimelineEvent a = AllReduceEvent(5, 1, 1, 2, 512, 0.004, 0.005);
  EXPECT_EQ(a.name, "all-reduce");
  EXPECT_EQ(a.category, "all_reduce");
  EXPECT_EQ(a.lane, kAllReduceLane);
  EXPECT_EQ(a.args, (nlohmann::json{{"bytes", 512}, {"bucket", 2}}));
}

TEST(Timeline, ChromeTraceHasOneProcessPerDeviceWithFourThreads) {
  const Timeline t = FromReplay("predicted", 1, 4);
  const nlohmann::json doc = ChromeTrace(t);
  EXPECT_EQ(doc["displayTimeUnit"], "ms");
  EXPECT_EQ(doc["otherData"], t.other_data);
  std::map<int, std::string> process_names;
  std::map<int, int> sort_index;
  std::map<int, std::map<int, std::string>> thread_names;
  size_t complete = 0, counters = 0;
  std::map<std::tuple<int, std::string, double>, const TimelineEvent*> expected;
  for (const auto* list : {&t.events, &t.updates})
    for (const TimelineEvent& e : *list) expected[{e.device, e.name, e.start_s * 1e6}] = &e;
  ASSERT_EQ(expected.size(), t.events.size() + t.updates.size());
  ASSERT_FALSE(t.updates.empty());
  bool after_metadata = false;
  double last_ts = 0;
  for (const auto& e : doc["traceEvents"]) {
    const int pid = e["pid"].get<int>();
    const bool metadata = e["ph"] == "M";
    if (metadata && e["name"] == "process_name")
      process_names[pid] = e["args"]["name"].get<std::string>();
    if (metadata && e["name"] == "process_sort_index")
      sort_index[pid] = e["args"]["sort_index"].get<int>();
    if (metadata && e["name"] == "thread_name")
      thread_names[pid][e["tid"].get<int>()] = e["args"]["name"].get<std::string>();
    if (e["ph"] == "C") {
      ++counters;
      EXPECT_EQ(e["name"], "memory");
      for (const char* category :
           {"weights", "optimizer", "gradients", "activations", "recompute"})
        EXPECT_TRUE(e["args"].contains(category)) << e.dump();
    }
    if (e["ph"] == "M") {
      EXPECT_FALSE(after_metadata) << "metadata after a timed event: " << e.dump();
      continue;
    }
    after_metadata = true;
    EXPECT_GE(e["ts"].get<double>(), last_ts) << "not in order of time: " << e.dump();
    last_ts = e["ts"].get<double>();
    if (e["ph"] != "X") continue;
    // Each complete event is one of the timeline's events or updates, found by its place and
    // time; a Send/Recv names its peer's process and pid.
    ++complete;
    nlohmann::json args = e["args"];
    if (args.contains("peer_worker")) {
      const int peer = args["peer_worker"].get<int>();
      EXPECT_EQ(args["peer_pid"], 4 + peer);
      EXPECT_EQ(args["peer"], "device " + std::to_string(4 + peer) + ": worker " +
                                  std::to_string(peer) + ", stage " + std::to_string(peer));
      args.erase("peer_pid");
      args.erase("peer");
    }
    const auto key = std::make_tuple(pid, e["name"].get<std::string>(), e["ts"].get<double>());
    ASSERT_TRUE(expected.count(key)) << e.dump();
    const TimelineEvent& source = *expected[key];
    expected.erase(key);
    EXPECT_EQ(e["cat"], source.category);
    EXPECT_EQ(e["tid"], source.lane) << e.dump();  // nothing overlaps on one lane here
    EXPECT_DOUBLE_EQ(e["dur"].get<double>(), (source.end_s - source.start_s) * 1e6);
    EXPECT_EQ(args, source.args);
  }
  EXPECT_EQ(complete, t.events.size() + t.updates.size());
  EXPECT_TRUE(expected.empty());
  EXPECT_EQ(counters, 4u);  // two samples on each of two devices
  EXPECT_EQ(process_names,
            (std::map<int, std::string>{{4, "device 4: worker 0, stage 0"},
                                        {5, "device 5: worker 1, stage 1"}}));
  EXPECT_EQ(sort_index, (std::map<int, int>{{4, 0}, {5, 1}}));
  const std::map<int, std::string> threads = {
      {0, "compute"}, {1, "send"}, {2, "receive"}, {3, "all-reduce"}};
  for (int pid : {4, 5}) EXPECT_EQ(thread_names[pid], threads) << pid;
}

TEST(Timeline, TwoTimelinesBecomeDisjointProcessGroupsInOrder) {
  const Timeline predicted = FromReplay("predicted");
  const Timeline measured = FromReplay("measured", 1.5);
  const nlohmann::json doc = ChromeTrace(std::vector<Timeline>{predicted, measured});
  std::map<int, std::string> names;
  std::map<int, int> sort_index;
  std::set<std::tuple<int, int, std::string>> first_group, second_group;  // (pid, tid, name)
  for (const auto& e : doc["traceEvents"]) {
    const int pid = e["pid"].get<int>();
    if (e["ph"] == "M" && e["name"] == "process_name")
      names[pid] = e["args"]["name"].get<std::string>();
    if (e["ph"] == "M" && e["name"] == "process_sort_index")
      sort_index[pid] = e["args"]["sort_index"].get<int>();
  }
  ASSERT_EQ(names.size(), 4u);  // disjoint: no pid named twice
  EXPECT_EQ(names[0], "predicted: device 0: worker 0, stage 0");
  EXPECT_EQ(names[1], "predicted: device 1: worker 1, stage 1");
  EXPECT_EQ(names[2], "measured: device 0: worker 0, stage 0");
  EXPECT_EQ(names[3], "measured: device 1: worker 1, stage 1");
  EXPECT_LT(std::max(sort_index[0], sort_index[1]), std::min(sort_index[2], sort_index[3]));
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const int pid = e["pid"].get<int>();
    ASSERT_TRUE(names.count(pid)) << e.dump();
    auto& group = pid < 2 ? first_group : second_group;
    group.insert({pid % 2, e["tid"].get<int>(), e["name"].get<std::string>()});
  }
  EXPECT_EQ(first_group, second_group);  // the same ops, each in its own group
  EXPECT_EQ(doc["otherData"]["timelines"][0]["label"], "predicted");
  EXPECT_EQ(doc["otherData"]["timelines"][1]["label"], "measured");
  EXPECT_EQ(doc["otherData"]["timelines"][1]["scenario"], "two stages");
}

TEST(Timeline, AnUnlabelledTimelineIsNamedByItsPosition) {
  const nlohmann::json doc = ChromeTrace(std::vector<Timeline>{FromReplay(""), FromReplay("")});
  std::set<std::string> names;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "process_name")
      names.insert(e["args"]["name"].get<std::string>());
  EXPECT_TRUE(names.count("timeline 1: device 0: worker 0, stage 0"));
  EXPECT_TRUE(names.count("timeline 2: device 1: worker 1, stage 1"));
}

TEST(Timeline, SvgDrawsTimelinesOneAboveTheOtherWithOneBoxPerComputeOp) {
  const Timeline predicted = FromReplay("predicted");
  const Timeline measured = FromReplay("measured", 1.5);
  const std::string svg = TimelineSvg({predicted, measured});
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  const size_t first = svg.find(">predicted: makespan");
  const size_t second = svg.find(">measured: makespan");
  ASSERT_NE(first, std::string::npos);
  ASSERT_NE(second, std::string::npos);
  EXPECT_LT(first, second);
  EXPECT_EQ(CountOf(svg, ">worker 0 (stage 0)<"), 2);
  EXPECT_EQ(CountOf(svg, ">worker 1 (stage 1)<"), 2);
  int compute = 0;
  for (const Timeline* t : {&predicted, &measured})
    for (const auto& e : t->events) compute += IsComputeOp(e.op.kind);
  EXPECT_EQ(compute, 2 * 2 * 6);  // two timelines, two workers, 3 forwards and 3 backwards
  EXPECT_EQ(CountOf(svg, "<title>forward ") + CountOf(svg, "<title>backward "), compute);
  EXPECT_EQ(CountOf(svg, "<title>update to version"),
            static_cast<int>(predicted.updates.size() + measured.updates.size()));
  // The colours of `pipetwin schedule --format svg`: forward blue, backward green.
  EXPECT_NE(svg.find("fill=\"#1f5fa8\" stroke=\"#ffffff\""), std::string::npos);
  EXPECT_NE(svg.find("fill=\"#2e7d32\" stroke=\"#ffffff\""), std::string::npos);
  EXPECT_NE(svg.find("two stages, schedule flush"), std::string::npos);
}

TEST(Timeline, SvgFoldsReplicasThatRunTheSameOpsAndEscapesLabels) {
  Timeline t = FromReplay("a<b");
  // Stage 1 gets three more replicas running worker 1's ops, one of them 0.25 ms later.
  std::vector<TimelineEvent> copies;
  for (int copy = 1; copy <= 3; ++copy) {
    t.processes.push_back({1 + copy * 2, 1 + copy * 2, 1, copy, {}});
    for (const TimelineEvent& e : t.events) {
      if (e.worker != 1) continue;
      TimelineEvent c = e;
      c.worker = c.device = 1 + copy * 2;
      if (copy == 2) c.start_s += 0.25e-3, c.end_s += 0.25e-3;
      copies.push_back(c);
    }
  }
  t.events.insert(t.events.end(), copies.begin(), copies.end());
  const std::string svg = TimelineSvg({t});
  EXPECT_NE(svg.find(">a&lt;b: makespan"), std::string::npos);
  EXPECT_NE(svg.find(">stage 1 x4 (workers 1, 3, ..., 7)<title>4 replicas of stage 1 run the same "
                     "ops, each on micro-batches of its own, drawn from worker 1; their op ends "
                     "differ by up to 0.25 ms</title>"),
            std::string::npos)
      << svg;
  EXPECT_NE(svg.find(">worker 0 (stage 0)<"), std::string::npos);
  EXPECT_NE(svg.find("5 workers in 2 rows"), std::string::npos);
  // One row of boxes per stage: the folded replicas are not drawn again.
  EXPECT_EQ(CountOf(svg, "<title>forward "), 2 * 3);
}

TEST(Timeline, SvgKeepsReplicasThatRunDifferentMicrobatchesApart) {
  ScheduleSpec spec;
  spec.kind = ScheduleKind::kPipeDream;
  spec.stages = 2;
  spec.replicas = {1, 2};
  spec.microbatches = 4;
  const PipelineSchedule s = BuildSchedule(spec);
  const std::string svg = ScheduleToSvg(s, ReplaySchedule(s, OpCosts()));
  EXPECT_NE(svg.find(">worker 1 (stage 1, r0)<"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">worker 2 (stage 1, r1)<"), std::string::npos);
  EXPECT_EQ(svg.find(" x2 ("), std::string::npos);
}

// Phases by hand: 1F1B on two workers, forward 1 and backward 2 time units, two micro-batches
// per iteration, a flush between iterations at t = 10.
//   worker 0: F0 0-1, F1 1-2, B0 4-6, B1 7-9
//   worker 1: F0 1-2, B0 2-4, F1 4-5, B1 5-7
// The first backward starts at 2 (worker 1), the last forward ends at 5 (worker 1), the last
// backward at 9 (worker 0).
Timeline HandMadeOneFOneB(int iterations) {
  Timeline t;
  t.processes = {{0, 0, 0, 0, {}}, {1, 1, 1, 0, {}}};
  struct Box {
    int worker;
    OpKind kind;
    int microbatch;
    double start, end;
  };
  const std::vector<Box> boxes = {
      {0, OpKind::kForward, 0, 0, 1},  {0, OpKind::kForward, 1, 1, 2},
      {0, OpKind::kBackward, 0, 4, 6}, {0, OpKind::kBackward, 1, 7, 9},
      {1, OpKind::kForward, 0, 1, 2},  {1, OpKind::kBackward, 0, 2, 4},
      {1, OpKind::kForward, 1, 4, 5},  {1, OpKind::kBackward, 1, 5, 7}};
  for (int it = 0; it < iterations; ++it)
    for (const Box& b : boxes) {
      Op op;
      op.kind = b.kind;
      op.stage = b.worker;
      op.microbatch = b.microbatch + 2 * it;
      op.weight_version = it;
      t.AddOp(OpEvent(op, b.worker, b.worker, b.start + 10 * it, b.end + 10 * it));
    }
  return t;
}

TEST(Timeline, PhasesAreWarmUpSteadyAndCoolDownOfEachFlushedIteration) {
  const auto phases = PipelinePhases(HandMadeOneFOneB(2));
  ASSERT_EQ(phases.size(), 6u);
  const std::vector<std::tuple<std::string, double, double>> expected = {
      {"warm-up", 0, 2},   {"steady", 2, 5},   {"cool-down", 5, 9},
      {"warm-up", 10, 12}, {"steady", 12, 15}, {"cool-down", 15, 19}};
  for (size_t i = 0; i < phases.size(); ++i) {
    EXPECT_EQ(phases[i].name, std::get<0>(expected[i])) << i;
    EXPECT_DOUBLE_EQ(phases[i].start_s, std::get<1>(expected[i])) << i;
    EXPECT_DOUBLE_EQ(phases[i].end_s, std::get<2>(expected[i])) << i;
  }
}

TEST(Timeline, GPipeHasNoSteadyPhaseAndPipeDreamOnlyOneWarmUp) {
  ScheduleSpec spec;
  spec.kind = ScheduleKind::kGPipe;
  spec.stages = 4;
  spec.microbatches = 8;
  PipelineSchedule s = BuildSchedule(spec);
  auto phases = PipelinePhases(ReplayTimeline(s, ReplaySchedule(s, OpCosts())));
  ASSERT_EQ(phases.size(), 2u);
  EXPECT_STREQ(phases[0].name, "warm-up");
  EXPECT_STREQ(phases[1].name, "cool-down");
  // All 8 forwards pass all 4 stages before the first backward: (8 + 3) x 1 time units.
  EXPECT_DOUBLE_EQ(phases[0].end_s, 11);

  spec.kind = ScheduleKind::kPipeDream;
  spec.microbatches = 16;
  s = BuildSchedule(spec);
  phases = PipelinePhases(ReplayTimeline(s, ReplaySchedule(s, OpCosts())));
  ASSERT_EQ(phases.size(), 3u);  // never flushed: one period
  EXPECT_STREQ(phases[0].name, "warm-up");
  EXPECT_DOUBLE_EQ(phases[0].end_s, 4);  // the first forward reaches the last stage at 4
  EXPECT_STREQ(phases[1].name, "steady");
  EXPECT_STREQ(phases[2].name, "cool-down");
}

TEST(Timeline, SvgScalesAndPutsLegendAxisUnitPhasesLanesAndMemoryOnThePage) {
  const Timeline t = FromReplay("predicted");
  const std::string svg = TimelineSvg({t});
  // Scales: a viewBox, as wide as where it is shown, a plot of the same width for any run.
  std::smatch view;
  ASSERT_TRUE(std::regex_search(svg, view, std::regex("<svg[^>]* width=\"100%\" viewBox=\"0 0 "
                                                      "([0-9.]+) ([0-9.]+)\"")));
  EXPECT_LT(std::stod(view[1]), 2000);
  const std::string longer = TimelineSvg({FromReplay("predicted", 40)});
  std::smatch view2;
  ASSERT_TRUE(std::regex_search(longer, view2, std::regex("viewBox=\"0 0 ([0-9.]+) ")));
  EXPECT_EQ(view[1], view2[1]);
  // The legend before the first row; every tick label says its unit.
  const size_t legend = svg.find(">idle (bubble)<"), row = svg.find(">worker 0 (stage 0)<");
  ASSERT_NE(legend, std::string::npos);
  ASSERT_NE(row, std::string::npos);
  EXPECT_LT(legend, row);
  EXPECT_NE(svg.find(">0 ms<"), std::string::npos);
  EXPECT_NE(svg.find(" - time in ms<"), std::string::npos);
  // Phases, send/receive and all-reduce lanes, a memory strip per row, bubbles with durations.
  EXPECT_NE(svg.find("<title>warm-up: 0-"), std::string::npos);
  EXPECT_NE(svg.find("<title>cool-down: "), std::string::npos);
  EXPECT_EQ(CountOf(svg, "<title>send_activation micro-batch "), 3);
  EXPECT_EQ(CountOf(svg, "<title>recv_gradient micro-batch "), 3);
  EXPECT_EQ(CountOf(svg, "<title>all-reduce: "), 2);
  EXPECT_EQ(CountOf(svg, "<title>device memory, peak 450 B"), 2);
  EXPECT_GT(CountOf(svg, "<title>bubble: "), 0);
}

// The fit verdict in the picture: the row says its peak of the device's capacity, or by how much
// it is over; a strip over capacity is red, with the capacity as a dashed line across it.
TEST(Timeline, SvgMemoryStripsShowTheCapacityAndWhoIsOverIt) {
  Timeline t = FromReplay("predicted");
  t.processes[0].capacity_bytes = 400;   // the peak is 450 bytes: over
  t.processes[1].capacity_bytes = 1000;  // within
  const std::string svg = TimelineSvg({t});
  EXPECT_NE(svg.find(", peak 450 B OVER 400 B (1.1x)<"), std::string::npos) << svg;
  EXPECT_NE(svg.find(", peak 450 B of 1000 B<"), std::string::npos);
  EXPECT_EQ(CountOf(svg, "<title>device capacity "), 1);  // 1000 B is off the strip's scale
  EXPECT_EQ(CountOf(svg, "fill=\"#ef9a9a\" stroke=\"#546e7a\""), 1);  // one strip in red
  EXPECT_NE(svg.find(">memory of a device over capacity<"), std::string::npos);
  // Without a capacity, no verdict is made up.
  const std::string unknown = TimelineSvg({FromReplay("predicted")});
  EXPECT_EQ(unknown.find("device capacity"), std::string::npos);
  EXPECT_EQ(unknown.find(" OVER "), std::string::npos);
}

TEST(Timeline, SvgRowsSayTheIdleShareTheReplayMeasures) {
  ScheduleSpec spec;
  spec.kind = ScheduleKind::kFlush;
  spec.stages = 4;
  spec.microbatches = 8;
  const PipelineSchedule s = BuildSchedule(spec);
  const ReplayResult r = ReplaySchedule(s, OpCosts());
  const std::string svg = ScheduleToSvg(s, r);
  EXPECT_NE(svg.find(" - time in time units<"), std::string::npos);
  for (const WorkerTiming& w : r.workers) {
    const std::string idle = ">idle " + SvgNumber(100 * w.idle / r.makespan) + "%<";
    EXPECT_GE(CountOf(svg, idle), 1) << idle;
  }
}

TEST(Timeline, SvgShowsWeightVersionsOnlyWhereTheyDifferAndChunksUnderInterleaving) {
  const std::string two_bw = TimelineSvg({FromReplay("", 1, 0, ScheduleKind::kTwoBW)});
  EXPECT_NE(two_bw.find("weight version (4 colours cycle)"), std::string::npos);
  EXPECT_NE(two_bw.find(" v1<"), std::string::npos);
  const std::string flush = TimelineSvg({FromReplay("")});  // one iteration: one version
  EXPECT_EQ(flush.find("weight version"), std::string::npos);

  ScheduleSpec spec;
  spec.kind = ScheduleKind::kInterleaved;
  spec.stages = 2;
  spec.chunks = 2;
  spec.microbatches = 4;
  const PipelineSchedule s = BuildSchedule(spec);
  const std::string svg = ScheduleToSvg(s, ReplaySchedule(s, OpCosts()));
  EXPECT_NE(svg.find(">c1:3<"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">c0:0<"), std::string::npos);
  EXPECT_NE(svg.find("chunk 1 micro-batch 3"), std::string::npos);
}

}  // namespace
}  // namespace pipetwin
