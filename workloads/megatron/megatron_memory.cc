#include "workloads/megatron/megatron_memory.h"

#include <algorithm>
#include <cmath>

#include "partition/cost/memory.h"

namespace pipetwin {

MegatronMemory FirstStageMemory(const MegatronModel& m, const MegatronParallel& p, int pipeline,
                                int chunks, int microbatches, ScheduleKind schedule) {
  const LayerWork block = BlockWork(m, p), embedding = EmbeddingWork(m, p);
  const LayerWork output = OutputWork(m, p);
  const double blocks = static_cast<double>(m.layers) / pipeline;
  double parameters = blocks * block.parameters + embedding.parameters;
  if (pipeline == 1) parameters += output.parameters;
  MegatronMemory out;
  const bool fp32 = p.precision == "fp32";
  out.weights = parameters * (fp32 ? 4 : 2);
  out.gradients = parameters * p.GradientBytes();
  const double state = fp32 ? 8 : 12;
  out.optimizer = parameters * (p.distributed_optimizer ? state / p.data_parallel : state);

  out.microbatches_in_flight = StashedMicrobatches(schedule, 0, pipeline, microbatches, chunks);
  const double per_chunk_blocks = blocks / chunks;
  const bool full = p.recompute == Recompute::kFull;
  // Under full recomputation a chunk keeps a checkpoint per segment (uniform: every N blocks;
  // block: each of its first N) and the blocks the block method leaves alone their stash; one
  // segment of N (uniform) or one block is rebuilt at a time.
  const double n = p.recompute_num_layers;
  const bool block_method = p.recompute_method == "block";
  const double checkpoints = !full ? 0
                             : block_method ? std::min(n, per_chunk_blocks)
                                            : std::ceil(per_chunk_blocks / n);
  const double kept_whole = !full ? per_chunk_blocks
                            : block_method ? per_chunk_blocks - checkpoints
                                           : 0;
  const double rebuilt_blocks = !full || checkpoints == 0 ? 0
                                : block_method ? 1
                                               : std::min(n, per_chunk_blocks);
  const double per_chunk = checkpoints * BlockCheckpointBytes(m, p) + kept_whole * block.stash_bytes;
  // Chunk 0's micro-batches also hold the embedding's stash; at most every micro-batch in flight.
  out.activations = out.microbatches_in_flight * per_chunk +
                    std::min(out.microbatches_in_flight, microbatches) * embedding.stash_bytes;
  out.activations += rebuilt_blocks * block.stash_bytes;
  if (pipeline == 1) out.activations += output.stash_bytes;
  return out;
}

}  // namespace pipetwin
