// The closed forms of what a stage keeps (cost/memory.h: StashedMicrobatches, WeightVersions),
// which the planners size memory with, against what the op lists of every schedule kind imply
// (AnalyzeSchedule walks the stash and release ops), for depths 1 to 8 and many micro-batch
// counts.
#include <gtest/gtest.h>

#include "partition/cost/memory.h"
#include "partition/schedule/build.h"
#include "partition/schedule/replay.h"

namespace pipetwin {
namespace {

void ExpectClosedForms(ScheduleKind kind, int depth, int microbatches, int chunks = 1) {
  ScheduleSpec spec;
  spec.kind = kind;
  spec.stages = depth;
  spec.microbatches = microbatches;
  spec.chunks = chunks;
  const std::vector<StageSummary> stages = AnalyzeSchedule(BuildSchedule(spec));
  for (int s = 0; s < depth; ++s) {
    SCOPED_TRACE(ScheduleKindName(kind) + " d=" + std::to_string(depth) + " m=" +
                 std::to_string(microbatches) + " v=" + std::to_string(chunks) + " stage " +
                 std::to_string(s));
    EXPECT_EQ(stages[s].max_in_flight_activations,
              StashedMicrobatches(kind, s, depth, microbatches, chunks));
    EXPECT_EQ(stages[s].max_weight_versions, WeightVersions(kind, s, depth, microbatches));
  }
}

TEST(ScheduleMemory, ClosedFormsEqualWhatTheOpListsKeep) {
  for (int d = 1; d <= 8; ++d) {
    for (int m = 1; m <= 4 * d; ++m) {
      for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::kFlush,
                                ScheduleKind::kPipeDream, ScheduleKind::kZeroBubbleH1,
                                ScheduleKind::kZeroBubbleH2})
        ExpectClosedForms(kind, d, m);
      if (m >= d) ExpectClosedForms(ScheduleKind::kTwoBW, d, m);  // 2BW needs m >= d
    }
    for (int v = 1; v <= 3; ++v) {
      for (int m : {1, d, 2 * d + 1}) ExpectClosedForms(ScheduleKind::kLoopedBFS, d, m, v);
      for (int m = 1; m <= 4 * d; ++m) {
        if (m % MicrobatchesPerRound(d, m) != 0) continue;  // torch's rounds
        if (v > 1) ExpectClosedForms(ScheduleKind::kInterleaved, d, m, v);
        ExpectClosedForms(ScheduleKind::kInterleavedZeroBubble, d, m, v);
      }
    }
    for (int m = 1; m <= 4 * d; ++m) {
      ExpectClosedForms(ScheduleKind::kZeroBubbleV, d, m, 2);
      if (m >= 2 * d) ExpectClosedForms(ScheduleKind::kDualPipeV, d, m, 2);
      // d positions of mirror pairs, PP = 2d ranks; m over both directions
      if (m >= 4 * d && m % 2 == 0) ExpectClosedForms(ScheduleKind::kDualPipe, d, m, 2);
    }
  }
}

// What a stage keeps per micro-batch (KeptActivationBytes), by hand: an input of 3 and stashes
// of 10; the input besides the stashes when layers stash their outputs, inside them when their
// stashes hold their own inputs (Korthikanti's accounting), and the input alone when
// recomputing either way.
TEST(ScheduleMemory, KeptActivationsCountAStagesInputOnce) {
  EXPECT_DOUBLE_EQ(KeptActivationBytes(3, 10, false, false), 13);
  EXPECT_DOUBLE_EQ(KeptActivationBytes(3, 10, false, true), 10);
  EXPECT_DOUBLE_EQ(KeptActivationBytes(3, 10, true, false), 3);
  EXPECT_DOUBLE_EQ(KeptActivationBytes(3, 10, true, true), 3);
}

// Under recomputation, by hand. Four layers with inputs 3, 4, 5, 6, stashes 10, 20, 30, 40 and
// forwards 1, 2, 3, 4 ms. All recomputed with the stage: the stage's input kept (3), the whole
// stash rebuilt (100), every forward rerun (10). Layer 0 never recomputed, layers 1 and 2 their
// own checkpoints of 7 and 8 bytes, layer 3 a run of its own from its input: kept 10 + 7 + 8 +
// 6 (stashes holding inputs) or 3 + 10 + 7 + 8 + 6 (not); the largest rebuilt, 40; rerun 9 ms.
TEST(ScheduleMemory, RecomputationKeepsCheckpointsAndRebuildsTheLargestRun) {
  std::vector<RecomputedLayer> layers(4);
  for (int i = 0; i < 4; ++i) layers[i] = {3.0 + i, 10.0 * (i + 1), 1.0 + i, std::nullopt, true};
  const RecomputeFootprint whole = StageRecomputeFootprint(layers, true);
  EXPECT_DOUBLE_EQ(whole.kept_bytes, 3);
  EXPECT_DOUBLE_EQ(whole.rebuilt_bytes, 100);
  EXPECT_DOUBLE_EQ(whole.recompute_ms, 10);
  layers[0].recomputed = false;
  layers[1].checkpoint_bytes = 7;
  layers[2].checkpoint_bytes = 8;
  // Layer 3 has no checkpoint of its own: it joins layer 2's segment, rerun with it.
  const RecomputeFootprint held = StageRecomputeFootprint(layers, true);
  EXPECT_DOUBLE_EQ(held.kept_bytes, 10 + 7 + 8);
  EXPECT_DOUBLE_EQ(held.rebuilt_bytes, 30 + 40);
  EXPECT_DOUBLE_EQ(held.recompute_ms, 9);
  EXPECT_DOUBLE_EQ(StageRecomputeFootprint(layers, false).kept_bytes, 3 + 10 + 7 + 8);
  // Each its own checkpoint: one layer rebuilt at a time.
  layers[3].checkpoint_bytes = 9;
  const RecomputeFootprint each = StageRecomputeFootprint(layers, true);
  EXPECT_DOUBLE_EQ(each.kept_bytes, 10 + 7 + 8 + 9);
  EXPECT_DOUBLE_EQ(each.rebuilt_bytes, 40);
}

}  // namespace
}  // namespace pipetwin
