// What one GPU of a Megatron-LM run holds at its peak: the first pipeline stage's rank, the
// fullest (it keeps the most micro-batches in flight, and the embedding).
//
//   MegatronMemory m = FirstStageMemory(model, parallel, /*pipeline=*/8, /*chunks=*/3,
//                                       /*microbatches=*/64, ScheduleKind::kInterleaved);
//   m.Total() <= 80 GiB;
//
// Model state per parameter (Megatron-LM, docs "Distributed Optimizer"): bf16 or fp16 weights
// 2 bytes, fp32 main gradients 4 (2 in a 16-bit buffer: MegatronParallel::gradient_precision),
// the optimizer's fp32 main weights and Adam's two moments 12 (18 in all); with the distributed
// optimizer the 12 are sharded over the data-parallel ranks, 6 + 12 / d. fp32 training:
// 4 + 4 + 8. Activations: the schedule's micro-batches in flight on stage 0
// (StashedMicrobatches: p for 1F1B; interleaving its own count, each a chunk of 1 / v of the
// stage's layers), times a layer's stash (layer_work.h, Korthikanti et al. 2022 section 4);
// under full recomputation a layer keeps only its input, D N', and one micro-batch's layer
// stash is rebuilt at a time.
#pragma once

#include "partition/schedule/kind.h"
#include "workloads/megatron/layer_work.h"

namespace pipetwin {

struct MegatronMemory {
  double weights = 0, gradients = 0, optimizer = 0, activations = 0;
  int microbatches_in_flight = 0;  // chunk micro-batches under interleaving
  double Total() const { return weights + gradients + optimizer + activations; }
};

MegatronMemory FirstStageMemory(const MegatronModel& model, const MegatronParallel& parallel,
                                int pipeline, int chunks, int microbatches, ScheduleKind schedule);

}  // namespace pipetwin
