// DualPipe (DeepSeek-V3 technical report, section 3.2.1): bidirectional, two copies of the
// weights. pipetwin's lists against an oracle written here from deepseek-ai/DualPipe's
// dualpipe.py (DualPipe.step(): eight steps per rank in half_rank and half_num_chunks, phase 0
// the forward direction on the first half of the ranks and the reverse one on the second), not
// from the builder; and its bubble, activations and weight copies against the report's table 2.
//
// Conventions the oracle states: pipeline j of d (data parallelism) sends its direction-0
// micro-batches j, j + 2d, j + 4d, ... in at rank 0 and its direction-1 micro-batches
// j + d, j + 3d, ... in at rank PP - 1; rank r runs model stage r for direction 0 and stage
// PP - 1 - r for direction 1.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "partition/schedule/build.h"
#include "partition/schedule/check.h"
#include "partition/schedule/kind.h"
#include "partition/schedule/op.h"
#include "partition/schedule/replay.h"
#include "partition/schedule/spec.h"

namespace pipetwin {
namespace {

using Order = std::vector<std::string>;

// DualPipe.step() for rank `rank` of `ranks` with `chunks` micro-batches (both directions):
// (phase, action) with action F, B (full backward), I (backward with zero bubble: its weight
// pass queued) or W (the oldest queued weight pass; phase -1).
std::vector<std::pair<int, char>> DualPipeSteps(int ranks, int rank, int chunks) {
  const int half_ranks = ranks / 2, h = std::min(rank, ranks - 1 - rank);
  const int half_chunks = chunks / 2;
  std::vector<std::pair<int, char>> out;
  auto F = [&](int phase) { out.push_back({phase, 'F'}); };
  auto B = [&](int phase, bool zb) { out.push_back({phase, zb ? 'I' : 'B'}); };
  auto W = [&]() { out.push_back({-1, 'W'}); };
  for (int i = 0; i < (half_ranks - h - 1) * 2; ++i) F(0);                    // step 1
  for (int i = 0; i < h + 1; ++i) F(0), F(1);                                 // step 2
  for (int i = 0; i < half_ranks - h - 1; ++i) B(1, true), W(), F(1);        // step 3
  for (int i = 0; i < half_chunks - ranks + h + 1; ++i)                       // step 4
    F(0), B(1, false), F(1), B(0, false);
  for (int i = 0; i < half_ranks - h - 1; ++i) B(1, false), F(1), B(0, false);  // step 5
  bool zb = false;                                                            // step 6
  for (int i = 0; i < h + 1; ++i) {
    if (i == (h + 1) / 2 && h % 2 == 1) zb = true;
    B(1, zb);
    if (i == (h + 1) / 2 && h % 2 == 0) zb = true;
    B(0, zb);
  }
  for (int i = 0; i < half_ranks - h - 1; ++i) W(), B(0, true);              // step 7
  for (int i = 0; i < h + 1; ++i) W();                                        // step 8
  return out;
}

// The direction of global micro-batch k in a run of d pipelines.
int DirectionOf(int k, int d) { return (k % (2 * d)) >= d ? 1 : 0; }

// Rank `rank` of pipeline j's compute actions in torch notation ("3F5", "0I2", "0W2").
Order Oracle(int ranks, int chunks, int rank, int j, int d) {
  Order order;
  int next[2] = {0, 0}, back[2] = {0, 0};
  std::deque<std::pair<int, int>> queued;  // (stage, micro-batch) of the I passes, oldest first
  for (const auto& [phase, action] : DualPipeSteps(ranks, rank, chunks)) {
    if (action == 'W') {
      order.push_back(std::to_string(queued.front().first) + "W" +
                      std::to_string(queued.front().second));
      queued.pop_front();
      continue;
    }
    const int direction = phase ^ (rank >= ranks / 2 ? 1 : 0);
    const int stage = direction == 0 ? rank : ranks - 1 - rank;
    int& index = action == 'F' ? next[direction] : back[direction];
    const int k = j + direction * d + 2 * d * index++;
    if (action == 'I') queued.push_back({stage, k});
    order.push_back(std::to_string(stage) + action + std::to_string(k));
  }
  return order;
}

Order ComputeOrder(const WorkerProgram& w) {
  Order order;
  for (const Op& op : w.ops)
    if (IsComputeOp(op.kind)) order.push_back(ActionName(op));
  return order;
}

// DualPipe on `ranks` ranks, `chunks` micro-batches per pipeline, d pipelines.
PipelineSchedule DualPipe(int ranks, int chunks, int d = 1) {
  ScheduleSpec spec;
  spec.kind = ScheduleKind::kDualPipe;
  spec.stages = ranks / 2;
  spec.chunks = 2;
  spec.microbatches = chunks * d;
  spec.replicas.assign(ranks / 2, 2 * d);
  return BuildSchedule(spec);
}

// (pipeline, rank) of a worker: the plan slot it fills (kind.h: rank r fills stage r).
std::pair<int, int> RankOf(const PipelineSchedule& s, const WorkerProgram& w) {
  const PlanSlot slot = PlanSlotOf(s.kind, s.stages, s.replicas[w.stage], w.stage, w.replica);
  return {slot.replica, slot.stage};
}

TEST(DualPipeTest, EveryRankRunsDeepSeeksStepOrder) {
  int checked = 0;
  for (int ranks = 2; ranks <= 10; ranks += 2)
    for (int d = 1; d <= 2; ++d)
      for (int chunks : {2 * ranks, 2 * ranks + 2, 3 * ranks + (3 * ranks) % 2, 4 * ranks}) {
        const PipelineSchedule s = DualPipe(ranks, chunks, d);
        ASSERT_NO_THROW(CheckSchedule(s)) << "PP=" << ranks << " M=" << chunks << " d=" << d;
        ASSERT_EQ(s.WorkerCount(), ranks * d);
        for (const WorkerProgram& w : s.workers) {
          const auto [j, rank] = RankOf(s, w);
          ASSERT_EQ(ComputeOrder(w), Oracle(ranks, chunks, rank, j, d))
              << "PP=" << ranks << " M=" << chunks << " d=" << d << " pipeline " << j
              << " rank " << rank;
          ++checked;
        }
      }
  EXPECT_GT(checked, 100);
}

// Each message goes to the neighbouring rank of its own pipeline: direction 0's activations
// from rank r to r + 1 and its gradients back, direction 1's the other way; so the two middle
// ranks exchange both directions' messages. Both copies of a stage reduce their gradients
// before the update (an AllReduce on every worker).
TEST(DualPipeTest, MessagesGoToTheNeighbouringRankOfTheirDirection) {
  for (int ranks = 2; ranks <= 8; ranks += 2)
    for (int d = 1; d <= 2; ++d) {
      const PipelineSchedule s = DualPipe(ranks, 2 * ranks, d);
      int across_the_middle = 0;
      for (const WorkerProgram& w : s.workers) {
        const auto [j, rank] = RankOf(s, w);
        int all_reduces = 0;
        for (const Op& op : w.ops) {
          all_reduces += op.kind == OpKind::kAllReduce;
          if (!IsSendOp(op.kind)) continue;
          const auto [peer_j, peer_rank] = RankOf(s, s.workers[op.peer_worker]);
          const int step = (DirectionOf(op.microbatch, d) == 0) ==
                                   (op.kind == OpKind::kSendActivation)
                               ? 1
                               : -1;
          EXPECT_EQ(peer_j, j);
          EXPECT_EQ(peer_rank, rank + step) << ActionName(op) << " on rank " << rank;
          across_the_middle += std::min(rank, peer_rank) == ranks / 2 - 1 &&
                               std::max(rank, peer_rank) == ranks / 2;
        }
        EXPECT_EQ(all_reduces, 1) << "rank " << rank;
      }
      EXPECT_GT(across_the_middle, 0) << "PP=" << ranks;
    }
}

// Table 2's bubble, (PP/2 - 1)(F&B + B - 3W), does not grow with the micro-batches and is
// DualPipeV's for PP/2 ranks: with F = I = W (chunk times 0.5, 0.5, 0.5) every rank idles the
// same time for 2PP and 6PP micro-batches, as the rank of the same half_rank of DualPipeV over
// PP/2 ranks with half the micro-batches does, and the iteration takes as long. What the replay
// leaves, the fill, is PP/2 - 1 chunk forwards: half of what a V of PP ranks would leave.
TEST(DualPipeTest, ItsBubbleIsDualPipeVsForHalfTheRanks) {
  OpCosts costs;
  costs.forward = 1;
  costs.backward = 2;
  for (int ranks = 2; ranks <= 16; ranks += 2) {
    const int p = ranks / 2;
    ScheduleSpec v;
    v.kind = ScheduleKind::kDualPipeV;
    v.stages = p;
    v.chunks = 2;
    for (int chunks : {2 * ranks, 6 * ranks}) {
      const ReplayResult dual = ReplaySchedule(DualPipe(ranks, chunks), costs);
      v.microbatches = chunks / 2;
      const ReplayResult half = ReplaySchedule(BuildSchedule(v), costs);
      ASSERT_TRUE(dual.completed && half.completed);
      EXPECT_NEAR(dual.makespan, half.makespan, 1e-9) << "PP=" << ranks << " M=" << chunks;
      const PipelineSchedule s = DualPipe(ranks, chunks);
      for (const WorkerProgram& w : s.workers) {
        EXPECT_NEAR(dual.workers[w.worker].idle, half.workers[w.stage].idle, 1e-9)
            << "PP=" << ranks << " M=" << chunks << " worker " << w.worker;
        EXPECT_NEAR(dual.workers[w.worker].idle, (p - 1) * 0.5, 1e-9)
            << "PP=" << ranks << " M=" << chunks << " worker " << w.worker;
      }
    }
  }
}

// Table 2's memory: PP + 1 chunk activations on every rank (a chunk is one of the PP stages)
// and 2x the parameters: every rank holds two stages, every stage sits on two ranks per
// pipeline; one weight version each (no stashing).
TEST(DualPipeTest, EveryRankHoldsPPPlusOneActivationsAndTwoStages) {
  for (int ranks = 2; ranks <= 12; ranks += 2)
    for (int chunks : {2 * ranks, 5 * ranks}) {
      const PipelineSchedule s = DualPipe(ranks, chunks);
      for (const StageSummary& stage : AnalyzeSchedule(s)) {
        EXPECT_EQ(stage.max_in_flight_activations, ranks + 1) << "PP=" << ranks;
        EXPECT_EQ(stage.max_weight_versions, 1);
      }
      std::vector<int> holders(ranks, 0);
      for (const WorkerProgram& w : s.workers) {
        ASSERT_EQ(w.model_stages.size(), 2u);
        const auto [j, rank] = RankOf(s, w);
        const int h = std::min(rank, ranks - 1 - rank);
        EXPECT_EQ(w.model_stages[0], h);
        EXPECT_EQ(w.model_stages[1], ranks - 1 - h);
        for (int g : w.model_stages) ++holders[g];
      }
      for (int g = 0; g < ranks; ++g) EXPECT_EQ(holders[g], 2) << "stage " << g;
    }
}

std::string SpecError(const ScheduleSpec& spec) {
  try {
    BuildSchedule(spec);
  } catch (const ScheduleSpecError& e) {
    return std::string(e.field()) + ": " + e.what();
  }
  return "";
}

TEST(DualPipeTest, ImpossibleLayoutsNameTheRule) {
  ScheduleSpec spec;
  spec.kind = ScheduleKind::kDualPipe;
  spec.stages = 2;  // PP = 4
  spec.chunks = 2;
  spec.microbatches = 6;  // M >= 2PP = 8 (dualpipe.py asserts num_chunks >= num_ranks * 2)
  EXPECT_NE(SpecError(spec).find("M >= 2PP = 8"), std::string::npos) << SpecError(spec);
  spec.microbatches = 8;
  EXPECT_EQ(SpecError(spec), "");
  spec.replicas = {3, 3};
  spec.microbatches = 24;
  EXPECT_NE(SpecError(spec).find("mirror pairs"), std::string::npos) << SpecError(spec);
  try {
    PositionReplicas(ScheduleKind::kDualPipe, 2, {1, 1, 1});
    ADD_FAILURE() << "an odd rank count was taken";
  } catch (const ScheduleSpecError& e) {
    EXPECT_EQ(e.field(), "stages");
  }
  try {
    PositionReplicas(ScheduleKind::kDualPipe, 2, {1, 2, 1, 1});
    ADD_FAILURE() << "unequal mirror replicas were taken";
  } catch (const ScheduleSpecError& e) {
    EXPECT_NE(std::string(e.what()).find("stage 1 and its mirror stage 2"), std::string::npos);
  }
  EXPECT_EQ(PositionReplicas(ScheduleKind::kDualPipe, 2, {2, 3, 3, 2}), (std::vector<int>{4, 6}));
  EXPECT_EQ(PositionReplicas(ScheduleKind::kZeroBubbleV, 2, {2, 3, 3, 2}), (std::vector<int>{2, 3}));
}

}  // namespace
}  // namespace pipetwin
