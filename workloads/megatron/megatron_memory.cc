#include "workloads/megatron/megatron_memory.h"

#include <algorithm>

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
  out.gradients = parameters * 4;
  const double state = fp32 ? 8 : 12;
  out.optimizer = parameters * (p.distributed_optimizer ? state / p.data_parallel : state);

  out.microbatches_in_flight = StashedMicrobatches(schedule, 0, pipeline, microbatches, chunks);
  const double per_chunk_blocks = blocks / chunks;
  const bool full = p.recompute == Recompute::kFull;
  // Under the block method the first recompute_block_layers blocks of a chunk keep their
  // checkpoint, the others their whole stash.
  const double checkpointed =
      !full ? 0
      : p.recompute_block_layers > 0 ? std::min<double>(p.recompute_block_layers, per_chunk_blocks)
                                     : per_chunk_blocks;
  const double per_chunk = checkpointed * BlockCheckpointBytes(m, p) +
                           (per_chunk_blocks - checkpointed) * block.stash_bytes;
  // Chunk 0's micro-batches also hold the embedding's stash; at most every micro-batch in flight.
  out.activations = out.microbatches_in_flight * per_chunk +
                    std::min(out.microbatches_in_flight, microbatches) * embedding.stash_bytes;
  if (full && checkpointed > 0) out.activations += block.stash_bytes;
  if (pipeline == 1) out.activations += output.stash_bytes;
  return out;
}

}  // namespace pipetwin
