// The actors that run the op lists: one SimGrid actor per worker runs its op list on its device's
// host, in order, creating each activity as it goes (pre-building the whole activity graph
// scales super-linearly in SimGrid 3.32).
//
// How each op runs (the contract of partition/schedule.h, buffered sends):
//  - Forward/Backward/Recompute: an execution of the op's seconds (plus the cluster's
//    launch_overhead_us) on the host; it first waits until the weight version it names exists
//    (the all-reduce and update that make it are done).
//  - Send: spends the cluster's communication_overhead_us on its worker (host-side work: the
//    planners' cost model charges it once per message), then posts the bytes to the receiver
//    and goes on. Where receives are posted ahead (ReceivePostingOf, partition/schedule/op.h)
//    the bytes start flowing at once (the receiver is the mailbox's permanent receiver: eager
//    sends, as NCCL/Gloo with a posted receive); where each is posted at its op, once the Recv
//    is posted (a rendezvous, SimGrid's plain mailbox), one latency later if the Send came
//    first. Recv: waits until the bytes have arrived; where receives are posted at their ops, a
//    message that moved while its sender computed then waits the cluster's
//    busy_sender_message_us more (c10d Gloo's thread of the sender shares its core).
//  - AllReduce: hands the stage's gradients to the worker's communication stream (a second actor
//    on the same host, NCCL's stream) as ring all-reduces over the stage's replicas
//    (sim/collective.h; each ring step pays communication_overhead_us), in buckets launched
//    during the backward that precedes it, as PyTorch
//    DDP does, so the all-reduce overlaps that backward. Update(v) completes on that stream once
//    the all-reduce is done; the worker only waits where an op needs version v, so 2BW's and
//    PipeDream's all-reduce overlaps the micro-batches that follow.
//  - Stash/Release: memory events (sim/worker_state.h).
//
//   SimulationRecord record = RunSimulation(setup);   // once per process: SimGrid's engine is
//                                                     // a process-wide singleton
#pragma once

#include <map>
#include <string>
#include <vector>

#include "partition/report/report.h"
#include "sim/setup.h"
#include "sim/memory_tracker.h"

namespace pipetwin::sim {

// One bucket of an all-reduce on a worker's communication stream.
struct AllReduceTiming {
  double start_s = 0;
  double end_s = 0;
  double bytes = 0;
};

struct WorkerRecord {
  // Per op of the worker's list. An Update's end waits for the all-reduce it applies.
  std::vector<double> op_start_s, op_end_s;
  std::vector<double> delivered_s;  // per op: a Send's message delivered (transfer's end), else 0
  std::vector<double> step_end_s;   // per Update op, in order: the end of its optimizer step
  // Per op: the core a compute op or an optimizer step ran on where its server's workers
  // outnumber its cores (numbered across the servers), else -1.
  std::vector<int> op_core;
  // Of busy_s, the share on the core the worker computed on last (kept_core.h); -1: no cores.
  double kept_core_share = -1;
  double busy_s = 0;                         // in executions
  std::map<OpKind, double> busy_by_op_s;     // busy_s by the kind of op that executed
  // busy_s by iteration (WorkerReport::busy_by_iteration's rule), then op kind.
  std::vector<std::map<OpKind, double>> busy_by_iteration;
  // Adds `seconds` of an op of `kind` in `iteration` to busy_s and its splits.
  void AddBusy(OpKind kind, int iteration, double seconds);
  double exposed_communication_s = 0;
  double finish_s = 0;
  std::vector<AllReduceTiming> allreduces;
};

struct SimulationRecord {
  std::vector<WorkerRecord> workers;
  std::vector<MemoryTracker> states;             // memory, versions, staleness per worker
  std::vector<CommunicationLevel> communication;  // per topology level
  double makespan_s = 0;
  long long activities = 0;    // executions, communications and sleeps SimGrid ran
  // Data-parallel replicas per stage, and how many of them ran (sim/symmetry.h: the others'
  // records are copies).
  int replicas = 1, simulated_replicas = 1;
  double platform_wall_s = 0;  // building the platform and the actors
  double run_wall_s = 0;       // Engine::run
};

// Runs the setup on a fresh SimGrid engine (the lists pass ValidateSchedule). Throws
// std::runtime_error on an internal fault.
SimulationRecord RunSimulation(const SimulationSetup& setup);

}  // namespace pipetwin::sim
