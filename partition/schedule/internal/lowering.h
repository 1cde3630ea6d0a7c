// Pieces shared by the schedule builders, the CSV importer and the checker. Not a public API.
//
// Building a schedule has three steps:
//   1. a per-kind builder writes each worker's compute order: Forward/Backward/... plus
//      AllReduce and Update markers (schedule_builders.cc);
//   2. AssignWeightVersions names the version each compute op uses;
//   3. PlaceCommunication checks that the compute order completes and inserts each Send right
//      after the op producing its data, each Recv right before the op consuming it, and the
//      stash and release ops (lowering.cc).
#pragma once

#include <string>
#include <vector>

#include "partition/schedule/op.h"
#include "partition/schedule/spec.h"

namespace pipetwin::schedule_internal {

enum class VersionPolicy {
  kLatest,        // a forward uses the worker's current version (GPipe, Flush, PipeDream, ...)
  kTwoBuffer,     // 2BW: micro-batch k (from 1) uses max(floor((k-1)/m) - 1, 0)
  kVerticalSync,  // every stage uses the version the input stage used for that minibatch
  kLatestEverywhere,  // no weight stashing: every compute op, backwards too, on the current one
};

// Which worker runs each forward and each backward, from the lists.
class Routing {
 public:
  explicit Routing(const PipelineSchedule& schedule);
  // -1 when no worker runs it.
  int ForwardWorker(int stage, int microbatch) const;
  int BackwardWorker(int stage, int microbatch) const;  // the Backward or BackwardInput
  int model_stages() const { return model_stages_; }
  int microbatches() const { return microbatches_; }
  // Messages are numbered by (direction, sender's stage, micro-batch): MessageSlots() of them.
  // A key whose stages or micro-batch lie outside the schedule gets -1.
  long MessageSlot(const MessageKey& key) const;
  size_t MessageSlots() const { return 2 * static_cast<size_t>(model_stages_) * microbatches_; }

 private:
  int Index(int stage, int microbatch) const { return stage * microbatches_ + microbatch; }
  int model_stages_ = 0;
  int microbatches_ = 0;
  std::vector<int> forward_;
  std::vector<int> backward_;
};

// Step 2. Sets weight_version on compute ops, AllReduce and Update (numbered 1, 2, ... per
// worker). Throws InputError when a version would be used before it exists.
void AssignWeightVersions(PipelineSchedule& schedule, VersionPolicy policy);
// Step 3 for compute-only lists: inserts the Send/Recv pairs and the stash ops. Throws
// InputError when the compute order cannot complete (a dependency cycle).
void PlaceCommunication(PipelineSchedule& schedule);
// Step 3 for lists that already hold their communication: inserts StashActivation /
// ReleaseActivation and StashWeights / ReleaseWeights only.
void AnnotateStashes(PipelineSchedule& schedule);

// Every (stage, micro-batch) has exactly one forward and one backward (or one backward-input and
// one backward-weight); throws InputError otherwise. Part of ValidateSchedule, usable before the
// communication is placed.
void CheckComputeCoverage(const PipelineSchedule& schedule);

// Builds an op.
Op MakeOp(OpKind kind, int stage, int chunk, int microbatch);
// "Forward(stage 2, mb 5)" for messages.
std::string DescribeOp(const Op& op);

}  // namespace pipetwin::schedule_internal
