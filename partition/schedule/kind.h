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
  kDualPipe,       // DualPipe: bidirectional, two copies of the weights (DeepSeek-V3, 3.2.1)
  kImported,       // read from a torch.distributed.pipelining action CSV
};

// "gpipe", "flush", "pipedream", "2bw", "interleaved", "zb-h1", "zb-h2", "looped-bfs",
// "interleaved-zb", "zb-v", "dualpipe-v", "dualpipe", "imported".
std::string ScheduleKindName(ScheduleKind kind);
// PipeDream and 2BW never flush: one list runs the whole run, and its last iteration drains the
// pipeline. The others (GPipe, Flush, interleaved, ZB-H1, ZB-H2, imported) flush at every
// iteration: their list is one iteration's, repeated.
bool IsAsynchronous(ScheduleKind kind);
// Where a worker's model chunks sit. Looped (interleaved 1F1B, looped BFS, interleaved ZB): the
// worker at position r of P holds model stages r, r + P, r + 2P, ... A V (ZB-V, DualPipeV): it
// holds r and 2P - 1 - r, so the first and the last model stage share worker 0 (torch
// generate_stage_to_rank_mapping, style "v").
//
// DualPipe is a V too, held twice: its PP ranks form PP/2 positions of two workers each (a
// mirror pair). Rank r and rank PP - 1 - r both hold model stages h = min(r, PP - 1 - r) and
// PP - 1 - h, the two copies of each stage's weights (DeepSeek-V3 report, section 3.2.1). Each
// runs DualPipeV's order for PP/2 ranks over its half of the micro-batches (deepseek-ai/DualPipe
// dualpipe.py step(): steps 1-8 in half_rank and half_num_chunks are dualpipev.py's): chunk 0
// (the arm of the V it starts) takes the micro-batches that enter at its end of the pipeline,
// chunk 1 those of its partner, which enter at the other end. The two copies are all-reduced
// like replicas.
bool IsVShaped(ScheduleKind kind);
// The model stage that chunk `chunk` of the worker at `position` holds, in a pipeline of
// `positions` workers (the placement above). The one rule of placement: the builders and the
// scenario's layer assignment call it.
int ModelStageOf(ScheduleKind kind, int positions, int position, int chunk);
// DualPipe's mirror pairs (IsVShaped): a position's replicas come in pairs, replica q's partner
// being q + R/2 (mod R) of the position's R.
int DualPipePartner(int replicas_of_position, int replica);
// The plan stage and the replica of it that worker (position, replica) fills: the plan's device
// lists and its depth-within-width placement (device = replica x PlanStagesWithWorkers +
// stage) are read there. The worker itself for every kind but DualPipe, whose plan lists its
// PP ranks' stages: replicas 0 .. R/2 - 1 of position h fill stage h, the others stage
// PP - 1 - h, so that the default placement puts the ranks in DualPipe's order.
struct PlanSlot {
  int stage = 0;
  int replica = 0;
};
PlanSlot PlanSlotOf(ScheduleKind kind, int positions, int replicas_of_position, int position,
                    int replica);
// The plan stages that hold workers: the positions, or all PP of DualPipe's.
int PlanStagesWithWorkers(ScheduleKind kind, int positions);
// Whether the kind takes a count of model chunks per worker (interleaved, looped-bfs,
// interleaved-zb); the V kinds always have two.
bool TakesChunkCount(ScheduleKind kind);
// The inverse of ScheduleKindName for the buildable kinds; throws InputError naming the choices.
ScheduleKind ParseScheduleKind(const std::string& name);
// The names of the buildable kinds, in the order above (for option help and JSON choices).
const std::vector<std::string>& ScheduleKindNames();

}  // namespace pipetwin
