// Schedule formats: the torch.distributed.pipelining action CSV both ways, JSON and SVG.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "partition/util/error.h"
#include "partition/schedule/op.h"
#include "partition/schedule/build.h"
#include "partition/schedule/check.h"
#include "partition/schedule/format.h"
#include "partition/schedule/replay.h"
#include "partition/schedule/spec.h"
#include "partition/timeline/svg.h"

namespace pipetwin {
namespace {

PipelineSchedule Build(ScheduleKind kind, int p, int m, std::vector<int> replicas = {},
                       int chunks = 1) {
  ScheduleSpec spec;
  spec.kind = kind;
  spec.stages = p;
  spec.microbatches = m;
  spec.replicas = std::move(replicas);
  spec.chunks = chunks;
  if (kind == ScheduleKind::kTwoBW) spec.batches = 2;
  return BuildSchedule(spec);
}

std::vector<std::string> Compute(const PipelineSchedule& s, int worker) {
  std::vector<std::string> out;
  for (const Op& op : s.workers[worker].ops)
    if (IsComputeOp(op.kind) || op.kind == OpKind::kUpdate)
      out.push_back(op.kind == OpKind::kUpdate ? "U" + std::to_string(op.weight_version)
                                               : ActionName(op) + "@" +
                                                     std::to_string(op.weight_version));
  return out;
}

std::string ImportError(const std::string& csv) {
  try {
    ScheduleFromCsv(csv, "in.csv");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

// Compute-only rows carry no REDUCE_GRAD for one iteration's list (torch's compute-only loader
// refuses them; its lowering adds them), the lowered form carries sends, receives and
// REDUCE_GRAD, and a list that updates several times says where.
TEST(ScheduleCsvTest, FlushCsvIsTorchNotation) {
  EXPECT_EQ(ScheduleToCsv(Build(ScheduleKind::kFlush, 2, 3)),
            "0F0,0F1,0B0,0F2,0B1,0B2\n"
            "1F0,1B0,1F1,1B1,1F2,1B2\n");
  EXPECT_EQ(ScheduleToCsv(Build(ScheduleKind::kZeroBubbleH1, 2, 2)),
            "0F0,0F1,0I0,0W0,0I1,0W1\n"
            "1F0,1I0,1F1,1I1,1W0,1W1\n");
  EXPECT_EQ(ScheduleToCsv(Build(ScheduleKind::kFlush, 2, 2), CsvForm::kWithCommunication),
            "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1,0REDUCE_GRAD\n"
            "1RECV_F0,1F0,1B0,1SEND_B0,1RECV_F1,1F1,1B1,1SEND_B1,1REDUCE_GRAD\n");
  EXPECT_EQ(ScheduleToCsv(Build(ScheduleKind::kPipeDream, 1, 2)),
            "0F0,0B0,0REDUCE_GRAD,0F1,0B1,0REDUCE_GRAD\n");
}

// torch's DualPipeV writes an overlapped forward and backward as one cell; it is read as its
// two actions in turn, and a malformed pair is refused naming the line.
TEST(ScheduleCsvTest, OverlappedPairsAreTheirTwoActions) {
  const PipelineSchedule s =
      ScheduleFromCsv("0F0,1F0,(0F1;1B0)OVERLAP_F_B,1F1,1B1,0B0,0B1\n", "dual.csv");
  std::vector<std::string> row;
  for (const Op& op : s.workers[0].ops)
    if (IsComputeOp(op.kind)) row.push_back(ActionName(op));
  EXPECT_EQ(row, (std::vector<std::string>{"0F0", "1F0", "0F1", "1B0", "1F1", "1B1", "0B0",
                                            "0B1"}));
  EXPECT_NE(ImportError("0F0,(0F1;1B0)OVERLAP_X,0B1\n").find("in.csv: line 1: unknown action"),
            std::string::npos);
  EXPECT_NE(ImportError("0F0,()OVERLAP_F_B\n").find("overlaps no actions"), std::string::npos);
}

// Export, import, and get the same compute orders, weight versions and updates back.
TEST(ScheduleCsvTest, RoundTripKeepsOrdersVersionsAndUpdates) {
  const std::vector<PipelineSchedule> all = {
      Build(ScheduleKind::kGPipe, 4, 6),        Build(ScheduleKind::kFlush, 4, 8),
      Build(ScheduleKind::kPipeDream, 4, 10),   Build(ScheduleKind::kTwoBW, 3, 4),
      Build(ScheduleKind::kInterleaved, 2, 4, {}, 3), Build(ScheduleKind::kZeroBubbleH1, 4, 8),
      Build(ScheduleKind::kPipeDream, 3, 9, {2, 1, 1}), Build(ScheduleKind::kFlush, 2, 6, {1, 3}),
      // Rows that share their stages: multi-chunk schedules with data parallelism, and
      // DualPipe's mirror pairs (ranks r and P-1-r both hold stages r and P-1-r; the spec counts
      // P/2 positions of 2 workers each) on 4 and 6 ranks, and twice over on 4.
      Build(ScheduleKind::kInterleaved, 2, 4, {2, 2}, 2),
      Build(ScheduleKind::kZeroBubbleV, 2, 4, {2, 2}, 2), Build(ScheduleKind::kDualPipe, 2, 8, {}, 2),
      Build(ScheduleKind::kDualPipe, 3, 12, {}, 2), Build(ScheduleKind::kDualPipe, 2, 16, {4, 4}, 2)};
  for (const auto& s : all) {
    const std::string csv = ScheduleToCsv(s);
    PipelineSchedule back = ScheduleFromCsv(csv, "round.csv");
    EXPECT_NO_THROW(CheckSchedule(back));
    ASSERT_EQ(back.WorkerCount(), s.WorkerCount()) << csv;
    EXPECT_EQ(back.replicas, s.replicas);
    for (int w = 0; w < s.WorkerCount(); ++w) {
      // 2BW's versions follow its own formula, not "latest"; compare orders there.
      if (s.kind == ScheduleKind::kTwoBW) continue;
      EXPECT_EQ(Compute(back, w), Compute(s, w)) << ScheduleKindName(s.kind) << " worker " << w;
    }
    EXPECT_EQ(ScheduleToCsv(back), csv);
    // The lowered form too: the same sends and receives back, and the same replay.
    const std::string lowered = ScheduleToCsv(s, CsvForm::kWithCommunication);
    const PipelineSchedule again = ScheduleFromCsv(lowered, "lowered.csv");
    EXPECT_EQ(ScheduleToCsv(again, CsvForm::kWithCommunication), lowered)
        << ScheduleKindName(s.kind);
    const ReplayResult original = ReplaySchedule(s, OpCosts()), read = ReplaySchedule(again, OpCosts());
    ASSERT_TRUE(read.completed) << ScheduleKindName(s.kind);
    EXPECT_DOUBLE_EQ(read.makespan, original.makespan) << ScheduleKindName(s.kind);
  }
}

// What torch's _dump_csv writes for its own 1F1B IR: idle steps are empty cells.
TEST(ScheduleCsvTest, ReadsTorchDumpWithIdleCells) {
  PipelineSchedule s = ScheduleFromCsv("0F0,0F1,,,0B0,,0B1,0REDUCE_GRAD\n"
                                       ",1F0,1B0,1F1,1B1,1REDUCE_GRAD\n",
                                       "torch.csv");
  EXPECT_EQ(s.kind, ScheduleKind::kImported);
  EXPECT_EQ(s.stages, 2);
  EXPECT_EQ(s.microbatches, 2);
  EXPECT_NO_THROW(CheckSchedule(s));
  ReplayResult r = ReplaySchedule(s, OpCosts());
  EXPECT_TRUE(r.completed);
  EXPECT_NEAR(r.bubble_fraction, 1.0 / 3.0, 1e-9);  // (p-1)/(m+p-1)
}

TEST(ScheduleCsvTest, ReadsExplicitCommunication) {
  const std::string csv =
      "0F0,0SEND_F0,0RECV_B0,0B0\n"
      "1RECV_F0,1F0,1B0,1SEND_B0\n";
  PipelineSchedule s = ScheduleFromCsv(csv, "lowered.csv");
  EXPECT_NO_THROW(CheckSchedule(s));
  for (const Op& op : s.workers[0].ops)
    if (IsCommunicationOp(op.kind)) {
      EXPECT_EQ(op.peer_worker, 1) << ActionName(op);
    }
  // The receive of stage 1 never gets its send.
  EXPECT_NE(ImportError("0F0,0RECV_B0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n")
                .find("1RECV_F0 from worker 0 never gets its send"),
            std::string::npos)
      << ImportError("0F0,0RECV_B0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n");
  // A receive whose sender does not exist at all.
  EXPECT_NE(ImportError("0F0,0B0\n1RECV_F7,1F0,1B0\n").find("'1RECV_F7' never gets its send"),
            std::string::npos);
}

// Between two workers messages arrive in the order they were sent (every c10d and SimGrid
// channel delivers them first in, first out), so a list that receives them in another order is
// refused by the core's checker, not by one back end only.
TEST(ScheduleCsvTest, ReceivesInAnotherOrderThanTheSendsAreRefused) {
  const std::string in_order =
      "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1\n"
      "1RECV_F0,1RECV_F1,1F0,1B0,1SEND_B0,1F1,1B1,1SEND_B1\n";
  EXPECT_NO_THROW(CheckSchedule(ScheduleFromCsv(in_order, "in.csv")));
  const std::string swapped =
      "0F0,0SEND_F0,0F1,0SEND_F1,0RECV_B0,0B0,0RECV_B1,0B1\n"
      "1RECV_F1,1RECV_F0,1F0,1B0,1SEND_B0,1F1,1B1,1SEND_B1\n";
  EXPECT_NE(ImportError(swapped).find("worker 0 sends activations to worker 1 in another order "
                                      "than that worker receives them"),
            std::string::npos)
      << ImportError(swapped);
}

TEST(ScheduleCsvTest, BadInputNamesTheRule) {
  EXPECT_NE(ImportError("0F0,0X0\n").find("in.csv: line 1: unknown action '0X0'"),
            std::string::npos)
      << ImportError("0F0,0X0\n");
  EXPECT_NE(ImportError("0F0,F1\n").find("unknown action 'F1'"), std::string::npos);
  EXPECT_NE(ImportError("0F0,0B0,0F0,0B0\n").find("runs its forward 2 times"), std::string::npos);
  EXPECT_NE(ImportError("0F0\n").find("needs one backward"), std::string::npos);
  EXPECT_NE(ImportError("0F0,0B0\n2F0,2B0\n").find("no rank runs stage 1"), std::string::npos);
  // Ranks that share a stage are its replicas and must hold the same stages.
  EXPECT_NE(ImportError("0F0,1F0,1B0,0B0\n1F1,2F1,2B1,1B1\n2F0,0F1,0B1,2B0\n")
                .find("rank 1: stage 1 is also on rank 0, which holds other stages"),
            std::string::npos);
  EXPECT_NE(ImportError("").find("no actions"), std::string::npos);
  // Stage 1 waits for micro-batch 1 before stage 0 ever runs it: the order cannot complete.
  EXPECT_NE(ImportError("0B0,0F0\n1F0,1B0\n").find("cannot complete"), std::string::npos);
}

TEST(ScheduleJsonTest, OpListsAndSummary) {
  ScheduleSpec spec;
  spec.kind = ScheduleKind::kPipeDream;
  spec.stages = 3;
  spec.microbatches = 6;
  PipelineSchedule s = BuildSchedule(spec);
  ReplayResult r = ReplaySchedule(s, OpCosts());
  nlohmann::json j = ScheduleToJson(s, r, OpCosts());
  EXPECT_EQ(j["kind"], "pipedream");
  ASSERT_EQ(j["workers"].size(), 3u);
  EXPECT_EQ(j["workers"][0]["ops"][0]["op"], "forward");
  EXPECT_EQ(j["workers"][0]["ops"][0]["version"], 0);
  bool saw_send = false, saw_stash = false;
  for (const auto& op : j["workers"][0]["ops"]) {
    saw_send = saw_send || (op["op"] == "send_activation" && op["peer"] == 1);
    saw_stash = saw_stash || op["op"] == "stash_weights";
  }
  EXPECT_TRUE(saw_send);
  EXPECT_TRUE(saw_stash);
  const auto& summary = j["summary"];
  EXPECT_DOUBLE_EQ(summary["bubble_fraction"].get<double>(), r.bubble_fraction);
  ASSERT_EQ(summary["stages"].size(), 3u);
  EXPECT_EQ(summary["stages"][0]["max_in_flight_activations"], 3);
  EXPECT_EQ(summary["stages"][0]["max_weight_versions"], 3);
  EXPECT_EQ(summary["stages"][0]["staleness"], 2);
  EXPECT_EQ(summary["stages"][2]["staleness"], 0);
}

// The paper figure: legible for 8 workers x 32 micro-batches.
TEST(ScheduleSvgTest, EightWorkersThirtyTwoMicrobatches) {
  PipelineSchedule s = Build(ScheduleKind::kFlush, 8, 32);
  ReplayResult r = ReplaySchedule(s, OpCosts());
  const std::string svg = ScheduleToSvg(s, r);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  std::smatch width;
  ASSERT_TRUE(std::regex_search(svg, width, std::regex("viewBox=\"0 0 ([0-9.]+) ")));
  EXPECT_LT(std::stod(width[1]), 3200);  // fits a screen or two, not a poster
  // Every compute op is a box with its micro-batch number in it.
  size_t boxes = 0, labels = 0;
  for (size_t at = svg.find("<title>forward"); at != std::string::npos;
       at = svg.find("<title>forward", at + 1))
    ++boxes;
  EXPECT_EQ(boxes, 8u * 32u);
  for (int mb = 0; mb < 32; ++mb) {
    const std::string label = "\">" + std::to_string(mb) + "</text>";
    for (size_t at = svg.find(label); at != std::string::npos; at = svg.find(label, at + 1)) ++labels;
  }
  EXPECT_GE(labels, 2u * 8u * 32u);  // forward and backward of each micro-batch on each worker
  EXPECT_NE(svg.find("#1f5fa8"), std::string::npos);  // forward colour
  EXPECT_NE(svg.find("#2e7d32"), std::string::npos);  // backward colour
  EXPECT_NE(svg.find("idle (bubble)"), std::string::npos);
}

TEST(ScheduleTextTest, OneLinePerWorkerAndAStageSummary) {
  PipelineSchedule s = Build(ScheduleKind::kTwoBW, 2, 2);
  const std::string text = ScheduleToText(s, ReplaySchedule(s, OpCosts()), OpCosts());
  EXPECT_NE(text.find("worker 0 (stage 0, replica 0): 0F0 0F1 0B0 0F2 0B1 U1"), std::string::npos)
      << text;
  EXPECT_NE(text.find("stage 1: max activations 1, max weight versions 2"), std::string::npos);
}

}  // namespace
}  // namespace pipetwin
