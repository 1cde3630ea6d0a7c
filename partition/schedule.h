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
//   ScheduleSpec spec;
//   spec.kind = ScheduleKind::kFlush;  spec.stages = 4;  spec.microbatches = 8;
//   PipelineSchedule schedule = BuildSchedule(spec);    // throws InputError on a broken rule
//   CheckSchedule(schedule);                            // matched sends, no deadlock
//   ReplayResult r = ReplaySchedule(schedule, spec.costs);
//   r.bubble_fraction;                                  // (p-1)/(m+p-1) = 3/11
//
// How the lists execute (the contract both back ends follow):
//   - A worker runs its ops strictly in list order, one at a time.
//   - A Send and its Recv match by (direction, sender's model stage, micro-batch, sender,
//     receiver). Under rendezvous semantics (NCCL-like, the stricter one) a Send completes only
//     when the peer has reached the matching Recv, and both complete together; under buffered
//     semantics (Gloo, small messages) a Send completes at once and the Recv waits for it.
//     Every list BuildSchedule makes is deadlock-free under both: each Send/Recv pair was placed
//     at one instant of a global order, so executing that global order is always possible. A
//     pair is placed where both workers are between ops at the times of ScheduleSpec::costs, so
//     with those times no Send ever waits and both semantics give the same timeline; with other
//     times a rendezvous Send may wait, never forever.
//   - AllReduce(stage, version) is a collective over the stage's replicas; it completes when all
//     of them have reached it. Update(v) follows it and makes version v current.
//   - A forward uses the weight version it names; its backward uses the same one (weight
//     stashing, PipeDream SOSP'19 section 3.3). StashWeights(v) comes just before an Update when
//     version v is still needed after it; ReleaseWeights(v) frees a stashed version after its last
//     use. Versions alive on a worker = 1 (current) + stashed ones.
//   - StashActivation follows each Forward (input_only under recomputation); ReleaseActivation
//     follows the Backward (or the BackwardWeight of a split backward).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pipetwin {

enum class ScheduleKind {
  kGPipe,          // all forwards, all backwards, flush (GPipe)
  kFlush,          // PipeDream-Flush: 1F1B with a flush (Megatron's non-interleaved schedule)
  kPipeDream,      // asynchronous 1F1B with weight stashing (PipeDream, SOSP'19)
  kTwoBW,          // PipeDream-2BW: double-buffered weights (ICML'21)
  kInterleaved,    // interleaved 1F1B, v model chunks per worker (Megatron-LM, SC'21)
  kZeroBubbleH1,   // ZB-H1: 1F1B with split backward (Qi et al., ICLR 2024)
  kImported,       // read from a torch.distributed.pipelining action CSV
};

// "gpipe", "flush", "pipedream", "2bw", "interleaved", "zb-h1", "imported".
std::string ScheduleKindName(ScheduleKind kind);
// The inverse of ScheduleKindName for the buildable kinds; throws InputError naming the choices.
ScheduleKind ParseScheduleKind(const std::string& name);

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
// Forward, Backward, BackwardInput, BackwardWeight, Recompute.
inline bool IsComputeOp(OpKind kind) { return kind <= OpKind::kRecompute; }
// The four Send/Recv kinds.
inline bool IsCommunicationOp(OpKind kind) {
  return kind >= OpKind::kSendActivation && kind <= OpKind::kRecvGradient;
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

  bool operator==(const Op& other) const;
};

// torch.distributed.pipelining's action notation: "0F3", "1B0", "2I5", "2W5", "1SEND_F3",
// "2RECV_F3", "0REDUCE_GRAD" (AllReduce and Update are both shown as REDUCE_GRAD); ops with no
// torch equivalent get a readable name ("stash_activation 1:3").
std::string ActionName(const Op& op);

struct WorkerProgram {
  int worker = 0;
  int stage = 0;                  // pipeline position (0 = input stage)
  int replica = 0;                // index among the stage's replicas
  std::vector<int> model_stages;  // model stages this worker holds, by chunk
  std::vector<Op> ops;
};

struct PipelineSchedule {
  ScheduleKind kind = ScheduleKind::kFlush;
  int stages = 1;                  // pipeline depth P (positions)
  std::vector<int> replicas;       // workers per position
  int microbatches = 1;            // micro-batches (PipeDream: minibatches) run in total
  int microbatches_per_batch = 1;  // micro-batches whose gradients form one update
  int chunks = 1;                  // model chunks per worker (interleaved)
  bool vertical_sync = false;
  bool recompute = false;
  std::vector<WorkerProgram> workers;  // stage 0's replicas first, then stage 1's, ...

  int WorkerCount() const { return static_cast<int>(workers.size()); }
  int ModelStageCount() const { return stages * chunks; }
};

// Time of each op in a replay. Compute ops scale by 1/chunks under interleaving (F and B are a
// worker's time per micro-batch over all its chunks).
struct OpCosts {
  double forward = 1;
  double backward = 2;
  double backward_input = -1;   // < 0: backward / 2
  double backward_weight = -1;  // < 0: backward / 2
  double recompute = -1;        // < 0: forward
  double all_reduce = 0;
  double update = 0;
  double transfer = 0;          // per Send/Recv pair

  double Of(const Op& op, int chunks) const;
};

struct ScheduleSpec {
  ScheduleKind kind = ScheduleKind::kFlush;
  int stages = 1;
  // Micro-batches per batch (gpipe, flush, interleaved, zb-h1, 2bw's m); minibatches to run
  // (pipedream).
  int microbatches = 1;
  std::vector<int> replicas;  // per stage; empty = one each
  int chunks = 1;             // interleaved only
  int batches = 0;            // 2bw only: batches to run (0: 4)
  bool vertical_sync = false; // pipedream only
  bool recompute = false;
  int layer_count = 0;        // when known (> 0): stages * chunks must not exceed it
  int worker_count = 0;       // when known (> 0): the replicas must add up to it
  OpCosts costs;              // the times the comm ops are placed for (any times stay valid)
};

// Checks the spec's rules (InputError, one line naming the rule) and builds the lists.
PipelineSchedule BuildSchedule(const ScheduleSpec& spec);

// NOAM (PipeDream SOSP'19 section 3.2): ceil(workers / replicas of the input stage).
int OptimalActiveMinibatches(const std::vector<int>& replicas);
// Micro-batches a worker of position `stage` has in flight in 1F1B: ceil(workers at positions
// >= stage / replicas of stage). Without replication: P - stage.
int InFlightTarget(const std::vector<int>& replicas, int stage);

// --- checking (schedule_check.cc) and replay (schedule_replay.cc) ---

enum class SendSemantics { kBuffered, kRendezvous };

struct WorkerTiming {
  int worker = 0;
  double busy = 0;    // compute time
  double idle = 0;    // makespan - busy
  double finish = 0;
  std::vector<double> op_start, op_end;  // per op of the worker's list
};

struct StageReport {
  int stage = 0;  // pipeline position
  int max_in_flight_activations = 0;
  int max_weight_versions = 0;
  int updates = 0;
  // Version delay of the gradients an update applies: current version - version they used.
  double staleness_min = 0, staleness_mean = 0, staleness_max = 0;
};

struct ReplayResult {
  bool completed = false;
  std::string deadlock;  // when not completed: who waits on what
  double makespan = 0;
  double bubble_fraction = 0;      // idle / (workers * makespan)
  double bubble_over_compute = 0;  // idle / busy (Megatron's convention)
  std::vector<WorkerTiming> workers;
  std::vector<StageReport> stages;
};

// Structural rules: every (stage, micro-batch) forward and backward exactly once, backward after
// forward, inputs received before use, every Send with exactly one matching Recv, versions alive
// when used. Throws InputError naming the first broken rule.
void ValidateSchedule(const PipelineSchedule& schedule);
// Runs the lists as a discrete-event executor (Recv blocks until its Send; AllReduce until all
// replicas) and measures time, memory and staleness. Never throws for a deadlock: it reports it.
ReplayResult ReplaySchedule(const PipelineSchedule& schedule, const OpCosts& costs,
                            SendSemantics semantics = SendSemantics::kRendezvous);
// ValidateSchedule, then a rendezvous replay with unit times; throws InputError on a deadlock.
void CheckSchedule(const PipelineSchedule& schedule);
// Memory and staleness per pipeline position, from the lists alone (no timing).
std::vector<StageReport> AnalyzeSchedule(const PipelineSchedule& schedule);

// --- formats (schedule_io.cc, schedule_svg.cc) ---

// One row per worker, one compute action per cell (torch.distributed.pipelining's compute-only
// CSV, as `_dump_csv` writes and `_load_csv` reads); updates appear as "<stage>REDUCE_GRAD".
std::string ScheduleToCsv(const PipelineSchedule& schedule);
// Reads such a CSV (compute-only, or with SEND_F/RECV_F/SEND_B/RECV_B actions), infers stages,
// replicas and routing, places communication when none is given, and validates. `file` names
// the input in errors.
PipelineSchedule ScheduleFromCsv(const std::string& text, const std::string& file,
                                 const OpCosts& costs = OpCosts());
nlohmann::json ScheduleToJson(const PipelineSchedule& schedule, const ReplayResult& replay,
                              const OpCosts& costs);
std::string ScheduleToText(const PipelineSchedule& schedule, const ReplayResult& replay,
                           const OpCosts& costs);
// Workers as rows, time as columns, micro-batch numbers in boxes.
std::string ScheduleToSvg(const PipelineSchedule& schedule, const ReplayResult& replay);

}  // namespace pipetwin
