// The pipeline schedules pipetwin builds, by name.
#pragma once

#include <string>
#include <vector>

namespace pipetwin {

enum class ScheduleKind {
  kGPipe,          // all forwards, all backwards, flush (GPipe)
  kFlush,          // PipeDream-Flush: 1F1B with a flush (Megatron's non-interleaved schedule)
  kPipeDream,      // asynchronous 1F1B with weight stashing (PipeDream, SOSP'19)
  kTwoBW,          // PipeDream-2BW: double-buffered weights (ICML'21)
  kInterleaved,    // interleaved 1F1B, v model chunks per worker (Megatron-LM, SC'21)
  kZeroBubbleH1,   // ZB-H1: 1F1B with split backward (Qi et al., ICLR 2024)
  kZeroBubbleH2,   // ZB-H2: ZB-H1 with twice the warm-up, no bubble (Qi et al., section 2.2)
  kLoopedBFS,      // breadth-first looped: all forwards chunk by chunk (Lamy-Poirier, 2022)
  kInterleavedZeroBubble,  // interleaved 1F1B with split backward (torch ZB1P, Qi et al.)
  kZeroBubbleV,    // ZB-V: two chunks per worker in a V, split backward (Qi et al., section 6)
  kDualPipeV,      // DualPipeV: DeepSeek-V3's DualPipe cut in half, two chunks in a V
  kImported,       // read from a torch.distributed.pipelining action CSV
};

// "gpipe", "flush", "pipedream", "2bw", "interleaved", "zb-h1", "zb-h2", "looped-bfs",
// "interleaved-zb", "zb-v", "dualpipe-v", "imported".
std::string ScheduleKindName(ScheduleKind kind);
// PipeDream and 2BW never flush: one list runs the whole run, and its last iteration drains the
// pipeline. The others (GPipe, Flush, interleaved, ZB-H1, ZB-H2, imported) flush at every
// iteration: their list is one iteration's, repeated.
bool IsAsynchronous(ScheduleKind kind);
// Where a worker's model chunks sit. Looped (interleaved 1F1B, looped BFS, interleaved ZB): the
// worker at position r of P holds model stages r, r + P, r + 2P, ... A V (ZB-V, DualPipeV): it
// holds r and 2P - 1 - r, so the first and the last model stage share worker 0 (torch
// generate_stage_to_rank_mapping, style "v").
bool IsVShaped(ScheduleKind kind);
// The model stage that chunk `chunk` of the worker at `position` holds, in a pipeline of
// `positions` workers (the placement above). The one rule of placement: the builders and the
// scenario's layer assignment call it.
int ModelStageOf(ScheduleKind kind, int positions, int position, int chunk);
// Whether the kind takes a count of model chunks per worker (interleaved, looped-bfs,
// interleaved-zb); the V kinds always have two.
bool TakesChunkCount(ScheduleKind kind);
// The inverse of ScheduleKindName for the buildable kinds; throws InputError naming the choices.
ScheduleKind ParseScheduleKind(const std::string& name);
// The names of the buildable kinds, in the order above (for option help and JSON choices).
const std::vector<std::string>& ScheduleKindNames();

}  // namespace pipetwin
