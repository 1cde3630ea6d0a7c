// Pipeline schedules as data: for every worker, the ordered list of operations it runs.
//
// A PipelineSchedule is what the simulator (sim/) and the executor (exec/) both run; neither
// invents its own order. Each worker's list holds
//   - compute: Forward, Backward (or the split BackwardInput / BackwardWeight of zero-bubble
//     schedules) and Recompute, each naming its model stage, micro-batch and weight version;
//   - communication: SendActivation / RecvActivation, SendGradient / RecvGradient with the peer
//     worker, and AllReduce over the replicas of a stage;
//   - state: Update(new version), StashActivation / ReleaseActivation, StashWeights /
//     ReleaseWeights, which make memory accounting a walk over the list.
//
//   ScheduleSpec spec;                                  // schedule/spec.h
//   spec.kind = ScheduleKind::kFlush;  spec.stages = 4;  spec.microbatches = 8;
//   PipelineSchedule schedule = BuildSchedule(spec);    // schedule/build.h
//   CheckSchedule(schedule);                            // schedule/check.h
//   ReplayResult r = ReplaySchedule(schedule, spec.costs);   // schedule/replay.h
//   r.bubble_fraction;                                  // (p-1)/(m+p-1) = 3/11
//
// How the lists execute (the contract both back ends follow):
//   - A worker runs its ops strictly in list order, one at a time.
//   - A Send and its Recv match by their MessageKey (MessageOf: direction, sender's model stage,
//     micro-batch, sender, receiver). Messages travel on channels, one per (sender, receiver,
//     direction: activations or gradients), and within a channel they arrive in the order they
//     are sent (first in, first out), as a c10d or SimGrid channel delivers them; a receiver
//     takes them in that order (ValidateSchedule checks it).
//   - A Send posts the message and never waits in line: the worker goes on at once and the data
//     flows as soon as it can (c10d isend, a SimGrid put to an eager mailbox). With blocking
//     sends (PipelineSchedule::send_mode, SendMode::kBlocking) a worker starts its next compute
//     op only once every message it has posted has been delivered, as Megatron-LM's pipeline
//     waits on its batched sends and receives before the step goes on; the receiver has posted
//     its receive already, so a delivery never waits on the receiver and the lists stay free of
//     deadlock. A worker posts
//     its receives early (c10d irecv ahead of time, a SimGrid mailbox with a permanent
//     receiver), and a Recv op is the wait for that message's arrival. BuildSchedule puts every
//     Send right after the op that produces its data and every Recv right before the op that
//     consumes it, so each op starts as soon as its worker is free and its inputs have arrived:
//     the list schedule of the compute order (torch.distributed.pipelining's runtime likewise
//     posts a send after its forward and waits on a receive just before the op using it).
//   - Deadlock freedom: the only waits are a Recv for its Send and an AllReduce for the stage's
//     replicas. BuildSchedule first runs the compute orders without times (each op once its
//     inputs exist) and refuses them unless every worker finishes; that run is a global order
//     in which each wait's Send, or each replica, comes before it, so any execution times
//     complete: a worker can only wait for an op earlier in that order. A Send is posted when
//     the worker reaches it, never blocked by the receiver, so send/receive timing cannot
//     create a cycle. CheckSchedule replays any list (an imported one too) to make sure.
//   - AllReduce(stage, version) is a collective over the stage's replicas; it completes when all
//     of them have reached it. Update(v) follows it and makes version v current. Its gradients
//     go in `buckets` buckets of about equal bytes, in the order the backward produces them
//     (PyTorch DDP): each may start once the backward right before the AllReduce has produced
//     its gradients, so with several buckets the all-reduce overlaps that backward.
//   - A forward uses the weight version it names; its backward uses the same one (weight
//     stashing, PipeDream SOSP'19 section 3.3). StashWeights(v) comes just before an Update when
//     version v is still needed after it; ReleaseWeights(v) frees a stashed version after its last
//     use. Versions alive on a worker = 1 (current) + stashed ones.
//   - StashActivation follows each Forward (input_only under recomputation); ReleaseActivation
//     follows the Backward (or the BackwardWeight of a split backward).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "partition/schedule/kind.h"

namespace pipetwin {

enum class OpKind {  // the order matters: compute kinds first, then the Send/Recv kinds
  kForward,
  kBackward,
  kBackwardInput,     // zero-bubble "B": gradient with respect to the stage input
  kBackwardWeight,    // zero-bubble "W": gradient with respect to the weights
  kRecompute,         // re-run the forward from the stashed stage input before the backward
  kSendActivation,
  kRecvActivation,
  kSendGradient,
  kRecvGradient,
  kAllReduce,         // gradients over the stage's replicas
  kUpdate,            // optimizer step; weight_version is the version it creates
  kStashActivation,
  kReleaseActivation,
  kStashWeights,
  kReleaseWeights,
};

// "forward", "backward", "backward_input", ... (snake case, as in the JSON export).
const char* OpKindName(OpKind kind);
// The kind OpKindName gives `name`; nullopt for any other string.
std::optional<OpKind> ParseOpKind(const std::string& name);
// Every kind, in the enum's order.
const std::vector<OpKind>& AllOpKinds();
// Forward, Backward, BackwardInput, BackwardWeight, Recompute.
inline bool IsComputeOp(OpKind kind) { return kind <= OpKind::kRecompute; }
// The four Send/Recv kinds.
inline bool IsCommunicationOp(OpKind kind) {
  return kind >= OpKind::kSendActivation && kind <= OpKind::kRecvGradient;
}
// SendActivation, SendGradient.
inline bool IsSendOp(OpKind kind) {
  return kind == OpKind::kSendActivation || kind == OpKind::kSendGradient;
}
// Backward, BackwardInput, BackwardWeight.
inline bool IsBackwardOp(OpKind kind) {
  return kind >= OpKind::kBackward && kind <= OpKind::kBackwardWeight;
}

// One operation of one worker. Fields that do not apply to a kind hold -1.
struct Op {
  OpKind kind = OpKind::kForward;
  // Model stage: the global index of the part of the model (interleaved: chunk * P + position);
  // for Send the sender's stage, for Recv the receiver's; for AllReduce/Update the worker's first.
  int stage = 0;
  int chunk = 0;            // local model chunk on the worker (0 unless interleaved)
  int microbatch = -1;      // micro-batch (PipeDream: minibatch) index, from 0
  int peer_worker = -1;     // Send/Recv: the other worker
  // Compute ops: the version used. Update/AllReduce: the version created. Stash/ReleaseWeights:
  // the version kept or freed.
  int weight_version = -1;
  bool input_only = false;  // StashActivation under recomputation: only the stage input is kept
  int buckets = -1;         // AllReduce: the buckets its gradients are reduced in (>= 1)

  bool operator==(const Op& other) const;
};

// torch.distributed.pipelining's action notation: "0F3", "1B0", "2I5", "2W5", "1SEND_F3",
// "2RECV_F3", "0REDUCE_GRAD" (AllReduce and Update are both shown as REDUCE_GRAD); ops with no
// torch equivalent get a readable name ("stash_activation 1:3").
std::string ActionName(const Op& op);

// What a Send and its Recv agree on: one message per (direction, sender's model stage,
// micro-batch), from a sender to a receiver worker.
struct MessageKey {
  bool activation = true;  // a forward's activation (else a backward's gradient)
  int sender_stage = 0;    // the sender's model stage
  int microbatch = 0;
  int sender = -1;         // workers
  int receiver = -1;

  // The receiver's model stage: the next one for an activation, the previous for a gradient.
  int ReceiverStage() const { return activation ? sender_stage + 1 : sender_stage - 1; }
  // The message crosses the cut after this model stage (the activation's producer, or the stage
  // its gradient returns to).
  int UpstreamStage() const { return activation ? sender_stage : sender_stage - 1; }
  bool operator==(const MessageKey& other) const;
  bool operator!=(const MessageKey& other) const { return !(*this == other); }
  bool operator<(const MessageKey& other) const;
};

// The message a Send or Recv op of worker `worker` sends or waits for (the op must be one of the
// four Send/Recv kinds). The one rule of which Send matches which Recv: both back ends and the
// checker call it.
MessageKey MessageOf(const Op& op, int worker);
// The two ops of a message: the Send on key.sender and the Recv on key.receiver (chunk 0).
Op SendOf(const MessageKey& key);
Op RecvOf(const MessageKey& key);

struct WorkerProgram {
  int worker = 0;
  int stage = 0;                  // pipeline position (0 = input stage)
  int replica = 0;                // index among the stage's replicas
  std::vector<int> model_stages;  // model stages this worker holds, by chunk
  std::vector<Op> ops;

  bool operator==(const WorkerProgram& other) const;
};

// When a Recompute runs (PipelineSchedule::recompute_timing).
enum class RecomputeTiming {
  kInBackward,  // after the gradient has arrived, as part of the backward (Megatron-LM, torch)
  kEarly,       // as soon as the worker is free before the backward, while the gradient travels
};
const char* RecomputeTimingName(RecomputeTiming timing);  // "in_backward", "early"
// The timing a name gives; nullopt for another name.
std::optional<RecomputeTiming> ParseRecomputeTiming(const std::string& name);

// How a Send completes (PipelineSchedule::send_mode, the contract above).
enum class SendMode {
  kEager,     // posted and left: the worker goes on at once (c10d isend with the receive
              // posted early, as pipetwin's executor runs). torch.distributed.pipelining is
              // neither mode: it posts each receive where it needs the data, and c10d Gloo
              // moves a message only once its receive is posted (a rendezvous: gloo/transport/
              // tcp/pair.h, NOTIFY_SEND_READY / NOTIFY_RECV_READY), so each message's transfer
              // starts no earlier than its Recv op; Schedule1F1B also waits on its sends
              // together with the next receive.
  kBlocking,  // delivered before the worker's next compute op (Megatron-LM's p2p_communication:
              // batch_isend_irecv, then a wait on every request, before the next forward or
              // backward; megatron/core/pipeline_parallel/p2p_communication.py)
};
const char* SendModeName(SendMode mode);  // "eager", "blocking"
// The mode a name gives; nullopt for another name.
std::optional<SendMode> ParseSendMode(const std::string& name);

// When a worker posts its receives: the executor's RunProgram posts them so, and the simulator
// moves a message's bytes accordingly.
//  - kAhead: those among the worker's next few ops, so that a message flows while its receiver
//    computes: on GPUs, and where a server's CPU worker processes outnumber its cores (they run
//    under SCHED_RR there, exec/cpu_policy.h).
//  - kAtTheirOp: each at its Recv op, as torch's runtime posts them: CPU worker processes with a
//    core each, where c10d Gloo's transport thread shares that core with the computing thread
//    and receives posted ahead slowed the runs (docs/executor.md). There a message sent before
//    its receive is posted moves only once the receiver's "ready" notification has reached the
//    sender (c10d Gloo's TCP transport sends by rendezvous: gloo/transport/tcp/pair.cc,
//    Pair::send and NOTIFY_RECV_READY): one latency, then its bytes.
enum class ReceivePosting { kAhead, kAtTheirOp };
ReceivePosting ReceivePostingOf(bool cpu_processes, bool oversubscribed);

// Whether a weight-gradient op (Backward, BackwardWeight) of a stage adds its parameters'
// gradients into the sums its next optimizer step reads, or takes them as they are. The first
// gradient after an update (none counted since, for that model stage) replaces the sums at no
// cost; every later one is added in place, a pass that reads the sum and the new gradient and
// writes the sum (Layer::gradient_add_ms). A replicated stage's sums are views of the flat buffer
// its all-reduce runs on (`all_reduced`): it is zeroed and always added to. So a schedule that
// updates after every micro-batch (PipeDream's 1F1B) never adds, and one with m micro-batches
// per update adds m - 1 times. pipetwin's executor sums this way (stage_executor.cc,
// Differentiate), and the simulator charges the addition where it happens.
inline bool AddsToGradientSums(int gradients_since_update, bool all_reduced) {
  return gradients_since_update > 0 || all_reduced;
}
// For every op of `program`, whether it is a weight-gradient op that adds (AddsToGradientSums):
// counted per model stage from the start and from each Update (which steps every stage of the
// worker); all-reduced when the program has an AllReduce.
std::vector<bool> GradientSumAdds(const WorkerProgram& program);

// For every op of `program`, whether it is an Update that writes the new weights to new tensors
// (a copy of the current version, then stepped) because the current version is stashed for a
// backward still to come; an Update of a version nobody needs any more steps it in place. The
// lists say which: StashWeights and ReleaseWeights name the versions kept (weight stashing,
// PipeDream SOSP'19 section 3.3; 2BW's second buffer). pipetwin's executor copies this way
// (weights.cc, StageWeights::Update) and the simulator charges the copy (Layer::update_copy_ms)
// where it happens: in PipeDream's 1F1B the last stage, whose backward follows its forward, never
// copies.
std::vector<bool> UpdatesCopyingWeights(const WorkerProgram& program);

struct PipelineSchedule {
  ScheduleKind kind = ScheduleKind::kFlush;
  int stages = 1;                  // pipeline depth P (positions)
  std::vector<int> replicas;       // workers per position
  int microbatches = 1;            // micro-batches (PipeDream: minibatches) run in total
  int microbatches_per_batch = 1;  // micro-batches whose gradients form one update
  int chunks = 1;                  // model chunks per worker (interleaved)
  bool vertical_sync = false;
  bool weight_stashing = true;     // false: backwards on the latest weights (spec.h)
  bool recompute = false;
  RecomputeTiming recompute_timing = RecomputeTiming::kInBackward;  // with recompute
  SendMode send_mode = SendMode::kEager;
  std::vector<WorkerProgram> workers;  // stage 0's replicas first, then stage 1's, ...

  int WorkerCount() const { return static_cast<int>(workers.size()); }
  int ModelStageCount() const { return stages * chunks; }
  bool operator==(const PipelineSchedule& other) const;
};

}  // namespace pipetwin
