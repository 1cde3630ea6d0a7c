// StageExecutor: one worker's interpreter of its op list (partition/schedule.h), on real tensors.
//
// It runs the ops strictly in list order, one at a time (on a GPU: it queues them in list order
// on the device's compute stream, and the device runs them in that order):
//   Forward(stage, mb, v)   the stage's layers on weight version v (which must be alive: the
//                           current one or a stashed one); the graph is kept for the backward
//   Backward(stage, mb, v)  gradients of the stage's parameters (accumulated) and of its inputs
//                           (sent upstream), on the version the forward used
//   BackwardInput / BackwardWeight   the same split in two (zero-bubble schedules)
//   Recompute(stage, mb, v) rebuilds the forward's graph from the stashed stage input
//   Send / Recv             c10d point-to-point with the named peer
//   AllReduce               sums the gradient buffers over the stage's replicas
//   Update(v)               averages the accumulated gradients, steps the optimizer, makes v current
//   StashWeights(v) / ReleaseWeights(v)   keep / free a version (StageWeights)
//   StashActivation / ReleaseActivation  memory accounting of what a forward keeps
// and records each op's time, the version each micro-batch actually used, and the memory held by
// category, into a WorkerMeasurement.
//
// Without weight stashing (PipeDream only, for comparison) every backward runs on the latest
// version: the forward keeps its stage input only, and the backward recomputes the stage on the
// current weights before differentiating, so the gradient mixes the forward's inputs with newer
// weights (the inconsistency PipeDream SOSP'19 section 3.3 describes).
//
// A worker that holds several model stages (chunks: interleaved 1F1B, looped BFS, ZB-V,
// DualPipeV) has one StageExecutor per chunk, each with its stage's weights, optimizer, stashes
// and messages; RunProgram runs the worker's list in order, each op on its chunk's executor
// (Send: the sender's stage, Recv: the receiver's), the worker-wide ops (AllReduce, Update,
// StashWeights, ReleaseWeights) on every chunk under one record, and hands an activation or a
// gradient from one chunk to the next inside the worker where the lists send none (a V's turn,
// a one-worker pipeline). Memory, in-flight micro-batches and versions are the worker's.
//
//   StageExecutor executor(job, program, stage, data.get(), comm, allocator, measurement);
//   RunProgram(program, {&executor}, clock_origin);
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "exec/runtime/communicator.h"
#include "exec/runtime/data.h"
#include "exec/runtime/device.h"
#include "exec/job.h"
#include "exec/measure/measurement.h"
#include "exec/model/stage_model.h"
#include "exec/runtime/weights.h"

namespace pipetwin::exec {

// Tensor bytes of the worker's device: on the CPU as the executor's allocator counts them
// (cpu_allocator.h; the probe installs it): every thread's live tensors, in bytes as requested;
// on a GPU as its CUDA caching allocator does.
class AllocatorProbe {
 public:
  explicit AllocatorProbe(const ExecDevice& device = ExecDevice());
  int64_t allocated() const;  // live now
  int64_t peak() const;       // the most live since the allocator was installed

 private:
  ExecDevice device_;
};

class StageExecutor {
 public:
  using Clock = std::chrono::steady_clock;

  StageExecutor(const ExecutorJob& job, const WorkerProgram& program, const StageModel& stage,
                DataSource* data, Communicator& comm, const AllocatorProbe& allocator,
                WorkerMeasurement& measurement, const ExecDevice& device = ExecDevice(),
                int model_stage = -1);  // -1: the worker's position (one stage per worker)
  StageExecutor(const StageExecutor&) = delete;
  StageExecutor& operator=(const StageExecutor&) = delete;

  // The worker's other chunks (RunProgram sets them): memory and in-flight counts are summed
  // over all, and the first chunk runs the worker-wide ops on each.
  void SetSiblings(const std::vector<StageExecutor*>& chunks);
  // The model stage this executor runs.
  int model_stage() const { return model_stage_; }
  // Waits for the device to finish what Run queued; on a GPU, puts the CUDA events' op times
  // into the measurement (ops and memory samples). Call after Run and the last sends.
  void Finish();
  // Forward-only pass over the test set through the replica-0 workers of every stage; the last
  // stage records the accuracy. `next` / `previous`: the replica-0 ranks of the neighbours.
  // `batches` test micro-batches of the run's micro-batch size.
  void Evaluate(int previous, int next, int64_t batches);

  const StageWeights& weights() const { return weights_; }

 private:
  friend void RunProgram(const WorkerProgram& program, const std::vector<StageExecutor*>& chunks,
                         StageExecutor::Clock::time_point origin, size_t receive_lookahead);
  // Starts the clock (and on a GPU the CUDA-event timer) at `origin`.
  void Begin(Clock::time_point origin);
  // Moves what op (just run here) produced for `to`, the chunk of the same worker that holds
  // the next model stage (a forward's activation) or the previous one (a backward's gradient).
  void HandOff(const Op& op, StageExecutor& to);

  // What a forward left for its backward.
  struct InFlight {
    std::vector<torch::Tensor> inputs;   // leaves (gradients flow to them)
    std::vector<torch::Tensor> outputs;  // the graph's roots (the last stage: the loss)
    int version = -1;                    // the weight version the forward used
    bool has_graph = false;
    int64_t stash_bytes = 0;
    int64_t recompute_bytes = 0;
  };

  void Execute(const Op& op);
  void Forward(const Op& op, int microbatch, int version);
  void Recompute(int microbatch, int version);
  void Backward(const Op& op, int microbatch, int version);
  void GraphForBackward(const Op& op, int microbatch, int version, InFlight& f);
  std::vector<torch::Tensor> Differentiate(const InFlight& f,
                                           const std::vector<torch::Tensor>& targets,
                                           const std::vector<torch::Tensor>& grad_outputs,
                                           bool input_part, bool weight_part);
  void FinishBackward(int microbatch, int version);
  void AllReduce(OpRecord& record);
  // `first`: the chunk that records the worker's update (its staleness), as one per update.
  void Update(int version, bool first = true);
  void WaitForSends();
  void Send(const Op& op, int microbatch, OpRecord& record);
  void Recv(const Op& op, int microbatch, OpRecord& record);
  // Posts the receives among the next `lookahead` ops of the list, from op `from` on.
  void PostReceivesAhead(size_t from, size_t lookahead);

  std::vector<torch::Tensor> StageInputs(int microbatch);
  // Runs the stage on `version` from `inputs`; the last stage returns {loss}.
  std::vector<torch::Tensor> RunStage(int version, const std::vector<torch::Tensor>& inputs,
                                      int microbatch);
  Batch& DataFor(int microbatch);
  int Tag(const MessageKey& message) const;
  void SampleMemory();
  void DumpWeights() const;

  const ExecutorJob& job_;
  const WorkerProgram& program_;
  const StageModel& stage_;
  int model_stage_ = 0;                       // the model stage this executor runs
  std::vector<StageExecutor*> siblings_;      // the worker's chunk executors, this one included
  DataSource* data_;
  Communicator& comm_;
  const AllocatorProbe& allocator_;
  WorkerMeasurement& out_;
  ExecDevice device_;
  std::unique_ptr<GpuTimer> timer_;     // GPU: op times by CUDA events
  double timer_offset_s_ = 0;           // the timer's origin, in seconds from origin_
  std::vector<size_t> sample_ops_;      // GPU: the op after which each memory sample was taken
  std::map<size_t, size_t> send_waits_; // GPU: timer key of a blocking-send wait -> its send record
  std::vector<std::pair<int, torch::Tensor>> losses_;  // last stage, read in Finish
  StageWeights weights_;
  bool stashing_;   // the schedule's weight_stashing: a Recompute rebuilds its forward's version
  bool recompute_;
  Clock::time_point origin_;
  int op_counter_ = 0;
  int fail_at_op_ = -1;  // fault injection (tests): PIPETWIN_EXEC_FAIL_AT=rank:op[:how]
  int fail_signal_ = 9;  // SIGKILL, SIGSTOP, 0 (hang) or -1 (an error on the device)

  std::map<int, InFlight> in_flight_;
  std::map<int, torch::Tensor> received_activations_, received_gradients_;
  struct PostedRecv {
    torch::Tensor buffer;
    int id;
  };
  std::map<std::pair<bool, int>, PostedRecv> posted_;  // (activation?, micro-batch)
  size_t posted_until_ = 0;                             // ops of the program scanned so far
  std::map<int, torch::Tensor> activations_to_send_, gradients_to_send_;
  std::map<int, Batch> batches_;
  std::map<int, int64_t> stashed_;  // micro-batches stashed (StashActivation) and their bytes
  std::vector<torch::Tensor> gradient_sum_;
  torch::Tensor gradient_flat_;  // replicated stages: the sums' storage, + the count at the end
  double gradient_count_ = 0;
  int oldest_gradient_version_ = -1;
  std::map<int, VersionUse> versions_;
  int current_iteration_ = 0;
  int64_t activation_bytes_ = 0, recompute_bytes_ = 0;
};

// How early a worker posts its receives (RunProgram's `receive_lookahead`): those among its next
// kReceivesAheadOps ops, or only the receive of the op it is at (kReceivesAtTheirOp). Which of
// the two, and why, is the core's rule (ReceivePostingOf, partition/schedule/op.h), which the
// simulator follows too; the runs behind it: docs/executor.md.
constexpr size_t kReceivesAheadOps = 6;
constexpr size_t kReceivesAtTheirOp = 1;

// Runs the worker's op list over its chunks' executors (one per model stage it holds, in the
// order of program.model_stages; one for a worker of one stage). Times count from `origin`.
void RunProgram(const WorkerProgram& program, const std::vector<StageExecutor*>& chunks,
                StageExecutor::Clock::time_point origin,
                size_t receive_lookahead = kReceivesAheadOps);

}  // namespace pipetwin::exec
