// Timeline: what ran on which worker and when, in one shape for both back ends, and the two
// pictures drawn from it. The simulator builds one from its record (sim/trace.h, predicted),
// the executor from its workers' measurements (exec/measurement.h, measured); `compare` puts
// both in one trace and one SVG.
//
// Chrome trace layout (Trace Event Format; Perfetto and chrome://tracing open it):
//   - one process (pid) per device, named "device D: worker W, stage S", sorted by worker;
//   - threads (tid) 0 compute, 1 send, 2 receive, 3 all-reduce (the communication stream);
//   - one complete event ("ph": "X", ts and dur in microseconds) per compute or Send/Recv op,
//     named by its torch.distributed.pipelining action (ActionName: "0F3", "1SEND_B2"), category
//     OpKindName, args stage and microbatch, plus weight_version (compute: the version used) or
//     peer_worker, bytes, peer (the peer's process name) and peer_pid (Send/Recv); one event
//     "all-reduce" per all-reduce bucket, args bytes and bucket; one event "optimizer step" per
//     Update on the compute thread, args weight_version (the version it makes);
//   - a Send's event lasts from its post until its message is delivered (the sends a worker has
//     in flight at once overlap: the later ones go to threads "send 2", "send 3", ..., tids 4 and
//     up, so that no two events of one thread overlap, as the format requires of complete
//     events); a Recv's, while its worker waits for the message;
//   - a flow ("ph" "s" at the Send's start, "f" with "bp": "e" inside its Recv's event, no
//     earlier than the "s"; one id per message, category "message"): Perfetto and
//     chrome://tracing draw it as an arrow;
//   - a counter ("ph": "C") "memory" per device, one series per category, in bytes;
//   - metadata first, then every event in order of ts.
// When a message is delivered: the simulator knows (the end of SimGrid's transfer); the
// executor takes the end of the Recv that waited for it (EndSendsWhenReceived: Gloo and NCCL
// report a receive complete only when it is waited on), so a measured send's event may last
// longer than its transfer by as long as the message waited for its receiver.
// Several timelines in one trace: each is a group of processes, with pids past the previous
// group's, names prefixed by its label ("predicted: device 0: worker 0, stage 0"), and sort
// indices that keep the group together, in the order given.
//
//   Timeline predicted = sim::SimulatedTimeline(setup, record);
//   Timeline measured = exec::MeasuredTimeline(job, workers);
//   WriteTextFileAtomically("run.json", ChromeTrace(measured).dump());          // chrome_trace.h
//   WriteTextFileAtomically("both.json", ChromeTrace({predicted, measured}).dump());
//   WriteTextFileAtomically("both.svg", TimelineSvg({predicted, measured}));     // svg.h
//
// Free of SimGrid and LibTorch (the core's rule). Times in seconds from the start of the run.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "partition/report/report.h"
#include "partition/schedule/op.h"
#include "partition/schedule/replay.h"

namespace pipetwin {

// The threads of a device's process in the trace.
enum TimelineLane { kComputeLane = 0, kSendLane = 1, kReceiveLane = 2, kAllReduceLane = 3 };

// The lane an op's time belongs to: compute kinds and Update 0, sends 1, receives 2,
// AllReduce 3.
int LaneOf(OpKind kind);

// One span of time of one worker on one lane.
struct TimelineEvent {
  int device = 0;
  int worker = 0;
  Op op;                 // what ran: kind, model stage, chunk, micro-batch, weight version, peer
  std::string name;      // the trace event's name: ActionName(op), or "all-reduce"
  std::string category;  // OpKindName(op.kind), or "all_reduce"
  int lane = kComputeLane;
  double start_s = 0, end_s = 0;
  nlohmann::json args = nlohmann::json::object();
};

// The event of an op in the layout above. `bytes` is the payload of a Send/Recv (or an
// AllReduce), ignored for the other kinds. For an Update, args carry the version it creates.
TimelineEvent OpEvent(const Op& op, int device, int worker, double start_s, double end_s,
                      double bytes = 0);
// One bucket of an all-reduce on the worker's communication stream (lane 3); `stage` is the
// worker's first model stage, `bucket` the bucket's index on this worker.
TimelineEvent AllReduceEvent(int device, int worker, int stage, int bucket, double bytes,
                             double start_s, double end_s);

// One worker on its device: a process of the trace, a row of the SVG.
struct TimelineProcess {
  int device = 0;
  int worker = 0;
  int stage = 0;    // pipeline position
  int replica = 0;  // index among the stage's replicas
  std::vector<MemorySample> memory;  // the device's bytes by category after each change
  double capacity_bytes = 0;         // the device's memory, as its report states it; 0: unknown
};

// "device D: worker W, stage S".
std::string ProcessName(const TimelineProcess& process);

struct Timeline {
  std::string label;  // "predicted", "measured": names the group in a combined trace and SVG
  nlohmann::json other_data = nlohmann::json::object();  // the trace's "otherData"
  std::vector<TimelineProcess> processes;  // by worker
  // The trace's complete events, worker by worker (each worker's ops, then its all-reduces).
  // Every event's worker has a process.
  std::vector<TimelineEvent> events;
  // Update ops: ticks in the SVG at their start, optimizer-step events in the trace (start to
  // end: the step's own time, not the all-reduce it waited for).
  std::vector<TimelineEvent> updates;

  // Files an op's event (OpEvent): compute and Send/Recv ops among the events, an Update among
  // the updates; the memory ops (stash, release) and an AllReduce op (whose buckets are events
  // of their own, AllReduceEvent) are not drawn.
  void AddOp(const TimelineEvent& event);
  // The end of the last event or update; 0 when empty.
  double EndSeconds() const;
};

// A message's two events, indices into Timeline::events.
struct MessageEvents {
  size_t send = 0, recv = 0;
};
// Every Send event with the Recv event that takes its message: the same MessageOf key, a key's
// sends and receives paired in the order of their starts. A send or receive without its partner
// (a run cut short) is left out. In the order of the sends' events.
std::vector<MessageEvents> MatchMessages(const std::vector<TimelineEvent>& events);

// The executor's delivery rule (above): each Send event ends no earlier than the Recv event that
// takes its message.
void EndSendsWhenReceived(std::vector<TimelineEvent>& events);

// A span of the pipeline's time in one of the three phases of a pipelined iteration
// (Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters Using
// Megatron-LM", SC'21, section 2.2.1: warm-up, steady 1F1B, cool-down).
struct PipelinePhase {
  const char* name = "";  // "warm-up", "steady", "cool-down"
  double start_s = 0, end_s = 0;
};
// The phases of a timeline, pipeline-wide. A micro-batch is in flight from its first compute
// event's start to its last one's end; the unions of overlapping flights are the periods the
// pipeline is full or filling, separated by flushes (GPipe, 1F1B and interleaved: one period
// per iteration; PipeDream and 2BW, which never flush: one period). In each period, warm-up lasts
// until the first backward (or recompute) starts, cool-down from the end of the last forward, and
// steady is what lies between (none under GPipe, whose backwards all follow its forwards). A
// period without backwards is steady throughout. Empty phases are left out; in order of time.
std::vector<PipelinePhase> PipelinePhases(const Timeline& timeline);

// A schedule's replay as a timeline (times in the replay's units, read as seconds), one process
// per worker on device = worker, without memory samples: what `pipetwin schedule --format svg`
// draws.
Timeline ReplayTimeline(const PipelineSchedule& schedule, const ReplayResult& replay);

// The timeline's label, or "timeline N" (N = index + 1) when it has none.
std::string TimelineLabel(const Timeline& timeline, size_t index);

// The events of each worker, in the order given (pointers into `events`).
std::map<int, std::vector<const TimelineEvent*>> EventsByWorker(
    const std::vector<TimelineEvent>& events);

}  // namespace pipetwin
