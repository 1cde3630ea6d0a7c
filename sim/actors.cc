#include "sim/actors.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Barrier.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <simgrid/s4u/Mailbox.hpp>
#include <simgrid/s4u/Mutex.hpp>
#include <simgrid/s4u/Semaphore.hpp>
#include <xbt/log.h>

#include "partition/report/kept_core.h"
#include "partition/util/error.h"
#include "sim/collective.h"
#include "sim/platform.h"
#include "sim/symmetry.h"

namespace pipetwin::sim {

namespace sg4 = simgrid::s4u;

namespace {

double Now() { return sg4::Engine::get_clock(); }

// The buckets the worker's all-reduces run in, as its op list says (1 without an AllReduce).
int AllReduceBuckets(const WorkerProgram& program) {
  for (const Op& op : program.ops)
    if (op.kind == OpKind::kAllReduce) return std::max(op.buckets, 1);
  return 1;
}

uint64_t Bytes(double bytes) { return static_cast<uint64_t>(std::llround(std::max(bytes, 0.0))); }

double Elapsed(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

void WorkerRecord::AddBusy(OpKind kind, int iteration, double seconds) {
  busy_s += seconds;
  busy_by_op_s[kind] += seconds;
  if (iteration < 0) return;
  if (iteration >= static_cast<int>(busy_by_iteration.size()))
    busy_by_iteration.resize(iteration + 1);
  busy_by_iteration[iteration][kind] += seconds;
}

namespace {

class WorkerActors {
 public:
  explicit WorkerActors(const SimulationSetup& setup)
      : setup_(setup), s_(setup.schedule), reduction_(ReduceReplicas(setup)) {}

  SimulationRecord Run();

 private:
  struct Message {
    const Op* op = nullptr;  // the Send
    double posted_s = 0;
  };
  // What a job of the communication stream runs of its ring (communication.h: the reduce-scatter
  // is the first half of an all-reduce's phases, the all-gather the second).
  enum class Job { kAllReduce, kReduceScatter, kAllGather };
  struct Phase {
    int steps = 0;
    double fraction = 0;
    int level = 0;
    double latency_s = 0;  // of the route to the successor (its links' latencies)
    sg4::Mailbox* to_next = nullptr;
    sg4::Mailbox* from_prev = nullptr;
  };
  // A thread that computes on its server's cores (CoreSlots): a worker's, or the thread of c10d
  // Gloo that reads its messages (ReadMessages).
  struct CoreUser {
    sg4::Host* host = nullptr;
    sg4::Host* cpu = nullptr;  // where it computes (platform.h: shared by a server's workers)
    int id = -1;               // its number in CoreSlots::holder and last
    // The core its current op started on (CoreSlots::first_id + its index; WorkerRecord::op_core),
    // -1 none.
    int op_core = -1;
    // Round robin (cluster.h, round_robin_slice_ms): the core it holds (index), -1 none, and
    // its running time since its slice was last refilled.
    int held = -1;
    double slice_used_s = 0;
  };
  // Messages of one channel that c10d Gloo's thread has read, in order, not yet taken by the
  // worker's receive.
  struct ReadChannel {
    struct Read {
      const Message* message;
      double arrived_s;  // its transfer's end
    };
    std::deque<Read> reads;
    sg4::SemaphorePtr ready;
  };
  // A worker's runtime: its mailboxes, its communication stream and what it waits for.
  struct Worker : CoreUser {
    sg4::Host* nvswitch = nullptr;  // its server's switch, for the group's collectives
    sg4::ActorPtr actor;
    std::vector<sg4::Mailbox*> op_mailbox;  // Send/Recv ops: the pair's mailbox
    std::vector<Message> messages;          // Send ops: the payload
    std::vector<sg4::CommPtr> undelivered;  // blocking sends (op.h): posted, not yet waited on
    // Its receives posted at their ops (ReceivePostingOf): messages wait for them (rendezvous).
    bool receives_at_op = false;
    // Its latest compute: from when, and until when (infinity while it runs), for a message
    // that moves while its sender computes (BusySenderWait).
    double computing_from_s = -1, computing_until_s = -1;
    // CPU that c10d Gloo's thread took from the compute in progress, for this worker's messages,
    // on its core (ChargeComputingPeer); the op runs that much longer.
    double message_cpu_s = 0;
    // Round robin on an oversubscribed server with a message CPU: c10d Gloo's thread of the
    // worker, which reads its messages off the sockets (ReadMessages), and what it has read, by
    // channel mailbox. Empty: the worker reads its own messages at its receives.
    CoreUser gloo;
    sg4::MutexPtr gloo_busy;  // one such thread per process: it reads one message at a time
    std::map<sg4::Mailbox*, ReadChannel> read;
    std::vector<int> feeds_allreduce;       // backward ops: the AllReduce they launch, or -1
    std::vector<bool> launched;             // AllReduce ops already launched
    std::vector<Phase> phases;              // ring all-reduce program (empty: no replicas)
    int optimizer_shards = 1;               // a sharded optimizer: the stage's replicas
    const AllReduceTable* table = nullptr;  // measured all-reduce times, instead of the ring
    sg4::BarrierPtr joined;                 // with a table: the group's members meet first
    std::vector<GradientBucket> buckets;  // launched by the backward before an AllReduce
    std::vector<double> job_bytes;
    std::vector<Job> job_kind;
    size_t jobs_done = 0, jobs_started = 0;
    std::vector<long> version_job;          // version -> the job that makes it, or -1
    // With overlap_param_gather: version -> the first of its weights' all-gather buckets, which
    // a forward waits for (version_job: the last, which everything else waits for).
    std::vector<long> version_first_job;
    long last_allreduce_job = -1;
    sg4::SemaphorePtr queued, finished;
    // Overlapped data loading (cost/data_loading.h): micro-batches loaded and not yet taken by
    // a forward, and the loader's free prefetch slots.
    sg4::SemaphorePtr loaded, load_slots;
    bool done = false;
  };

  void Prepare();
  void PrepareRing(const std::vector<int>& group);
  void WorkerMain(int w);
  void StreamMain(int w);
  void LoaderMain(int w);
  void Load(int w);  // before a forward of the input stage
  void Launch(int w, double bytes, Job kind = Job::kAllReduce);
  void LaunchAll(int w);
  void WaitForJob(int w, long job);
  void WaitForDeliveries(int w);  // a worker's blocking sends, posted and not yet waited on
  // One of a server's cores, taken by a worker (CoreSlots below); core -1: the server does
  // not share its cores.
  struct CoreSlot {
    int core = -1;
    bool kept = false;  // the worker was the last to run on it
  };
  CoreSlot TakeCore(CoreUser& me);
  void FreeCore(const CoreUser& me, CoreSlot slot);
  // Round robin: the thread is about to wait, and gives back the core it holds (if any).
  void ReleaseCore(CoreUser& me);
  // Round robin: c10d Gloo's thread of worker w reading the `count` messages of one channel as
  // they arrive, each at the receiver's half of a message's CPU on a core it waits for.
  void ReadMessages(int w, sg4::Mailbox* channel, int count);
  // What a compute op of `kind` on `slot` is charged, of its time as profiled (OwnCoreShare).
  double ComputeShare(CoreSlot slot, OpKind kind) const;
  // `seconds` of work on the worker's CPU, on one of its server's cores (below) unless the
  // caller holds one; `compute`: an op of that kind as profiled, charged ComputeShare of it.
  // Returns how long it waited for the core.
  double Execute(CoreUser& me, double seconds, bool holding_slot = false,
                 std::optional<OpKind> compute = std::nullopt);
  double Compute(int w, size_t i);  // returns how long it waited for a core slot
  std::vector<sg4::CommPtr> StartGroupCollectives(const Worker& me, double seconds);
  bool BusySenderWait(const Worker& me, const Worker& sender, double moved_from);
  void ChargeComputingPeer(const Worker& me, Worker& peer);
  bool ChargeMessageCpu(CoreUser& me);
  // Whether the shared CPU host `cpu` runs more workers than the server's cores.
  bool Oversubscribed(const sg4::Host* cpu) const;
  // Whether workers outnumbering a server's cores hold them as SCHED_RR threads do (cluster.h,
  // round_robin_slice_ms) rather than one piece of work at a time.
  bool RoundRobin() const;
  void Count(int level, double bytes, bool allreduce);
  void CopyReplicas();  // the records of the replicas left out (sim/symmetry.h)

  const SimulationSetup& setup_;
  const PipelineSchedule& s_;
  const ReplicaReduction reduction_;
  std::vector<Worker> workers_;
  std::unordered_map<const sg4::Host*, int> workers_on_;  // shared CPU hosts: their workers
  // Servers with more workers than cores: one token per core, taken first come, first served
  // (SimGrid's semaphore queues its waiters in order). A worker computes only while it holds
  // one, so each piece of work runs to its end at one core's speed, as a SCHED_RR thread does
  // (cluster.h, exec/cpu_policy.h); without them the multi-core host would share its cores
  // among every worker that has work. Which core: the one the worker last ran on if it is free,
  // else the first free one, as Linux places a woken real-time thread (its previous CPU when
  // that runs nothing of its priority, kernel/sched/rt.c, find_lowest_rq). With a round-robin
  // slice (cluster.h) a worker holds the core it took until it waits (ReleaseCore), and shares
  // it in slices with those waiting (Execute).
  struct CoreSlots {
    sg4::SemaphorePtr free;
    std::vector<int> holder;  // by core: the thread running on it (CoreUser::id), -1 none
    std::vector<int> last;    // by core: the worker that computed on it last, -1 none
    int waiting = 0;          // threads waiting for a core
    int first_id = 0;         // its first core's number among all servers' (WorkerRecord::op_core)
  };
  // Each worker's kept_core_share, from the cores its ops ran on (KeptCoreShares).
  void RecordKeptCores();
  std::unordered_map<const sg4::Host*, CoreSlots> core_slots_;
  SimulationRecord record_;
  char token_ = 0;
  std::string fault_;
};

void WorkerActors::Count(int level, double bytes, bool allreduce) {
  CommunicationLevel& c = record_.communication[level];
  (allreduce ? c.allreduce_bytes : c.pipeline_bytes) += bytes;
  ++c.messages;
}

void WorkerActors::PrepareRing(const std::vector<int>& group) {
  std::vector<int> devices;
  for (int w : group) devices.push_back(setup_.worker_device[w]);
  const RingPlan plan = PlanAllReduce(setup_.cluster, devices);
  auto mailbox = [&](int from, int to) {
    return sg4::Mailbox::by_name("ar" + std::to_string(group[from]) + "-" +
                                 std::to_string(group[to]));
  };
  // A group inside one unit of a level whose all-reduce was measured for its size: the table;
  // on a server its workers outnumber the cores of, the one measured as the executor runs them
  // there, under SCHED_RR (cluster.h), where there is one.
  const AllReduceTable* table = nullptr;
  if (!plan.phases.empty()) {
    const int level = plan.phases.front().level;
    bool one_level = true;
    for (const RingPhase& p : plan.phases) one_level = one_level && p.level == level;
    const ClusterLevel& l = setup_.cluster.levels[level];
    const AllReduceTable& t =
        Oversubscribed(workers_[group.front()].cpu) && !l.allreduce_round_robin.empty()
            ? l.allreduce_round_robin
            : l.allreduce;
    if (one_level && !t.empty() && t.ranks == static_cast<int>(group.size())) table = &t;
  }
  // The members simulated (all, or replicas 0..k-1: member index = replica, sim/symmetry.h);
  // a hop to a member left out goes to its representative over a route of the same level.
  const bool reduced = reduction_.Reduced();
  const size_t simulated = reduced ? static_cast<size_t>(reduction_.simulated) : group.size();
  auto fold = [&](int member) { return reduced ? member % reduction_.simulated : member; };
  const sg4::BarrierPtr joined = table ? sg4::Barrier::create(simulated) : nullptr;
  for (size_t m = 0; m < simulated; ++m) {
    workers_[group[m]].table = table;
    workers_[group[m]].joined = joined;
    for (const RingPhase& p : plan.phases) {
      const double latency_ms =
          TransferCost(setup_.cluster, devices[m], devices[p.next[m]]).fixed_ms -
          setup_.cluster.communication_overhead_us * 1e-3;
      workers_[group[m]].phases.push_back({p.steps, p.fraction, p.level, latency_ms * 1e-3,
                                           mailbox(m, fold(p.next[m])),
                                           mailbox(fold(p.prev[m]), m)});
    }
  }
}

void WorkerActors::Prepare() {
  // The devices the simulated workers use (the first ones, with a reduction) and no more.
  int devices = 0;
  for (int w = 0; w < s_.WorkerCount(); ++w)
    if (reduction_.Simulated(w)) devices = std::max(devices, setup_.worker_device[w] + 1);
  const Platform platform = BuildPlatform(setup_.cluster, setup_.gpus_per_worker > 1, devices);
  const int W = s_.WorkerCount();
  workers_.resize(W);
  record_.workers.resize(W);
  for (size_t l = 0; l < setup_.cluster.levels.size(); ++l) {
    CommunicationLevel c;
    c.level = static_cast<int>(l);
    c.name = setup_.cluster.levels[l].name;
    c.link = setup_.cluster.levels[l].link;
    record_.communication.push_back(c);
  }
  record_.states.reserve(W);
  std::vector<std::vector<int>> replicas(s_.stages);
  for (const WorkerProgram& p : s_.workers) {
    replicas[p.stage].push_back(p.worker);
    record_.states.emplace_back(setup_, p.worker, setup_.options.record_memory_timeline);
    if (!reduction_.Simulated(p.worker)) continue;
    Worker& w = workers_[p.worker];
    w.host = platform.hosts[setup_.worker_device[p.worker]];
    w.cpu = platform.cpus[setup_.worker_device[p.worker]];
    w.id = p.worker;
    if (!platform.switches.empty()) w.nvswitch = platform.switches[setup_.worker_device[p.worker]];
    ++workers_on_[w.cpu];
    const size_t n = p.ops.size();
    w.op_mailbox.assign(n, nullptr);
    w.messages.resize(n);
    w.feeds_allreduce.assign(n, -1);
    w.launched.assign(n, false);
    int versions = 1;
    for (size_t i = 0; i < n; ++i) {
      const Op& op = p.ops[i];
      versions = std::max(versions, op.weight_version + 1);
      if (IsCommunicationOp(op.kind)) {
        // One mailbox per channel (op.h: sender, receiver, direction), first in, first out.
        const MessageKey key = MessageOf(op, p.worker);
        w.op_mailbox[i] = sg4::Mailbox::by_name((key.activation ? "a" : "g") +
                                                std::to_string(key.sender) + "-" +
                                                std::to_string(key.receiver));
        w.messages[i].op = &op;
      }
      if (op.kind == OpKind::kAllReduce) {
        // The backward right before it (no other compute in between) launches its buckets.
        for (size_t j = i; j-- > 0;) {
          if (!IsComputeOp(p.ops[j].kind)) continue;
          if (p.ops[j].kind == OpKind::kBackward || p.ops[j].kind == OpKind::kBackwardWeight)
            w.feeds_allreduce[j] = static_cast<int>(i);
          break;
        }
      }
    }
    w.version_job.assign(versions + 1, -1);
    w.version_first_job.assign(versions + 1, -1);
    w.queued = sg4::Semaphore::create(0);
    w.finished = sg4::Semaphore::create(0);
  }
  for (const auto& [cpu, n] : workers_on_)
    if (Oversubscribed(cpu)) {
      const int cores = setup_.cluster.shared_cores;
      core_slots_[cpu] = {sg4::Semaphore::create(cores), std::vector<int>(cores, -1),
                          std::vector<int>(cores, -1),
                          static_cast<int>(core_slots_.size()) * cores};
    }
  for (const auto& group : replicas) {
    if (group.size() < 2) continue;
    PrepareRing(group);
    for (int w : group) {
      if (!reduction_.Simulated(w)) continue;
      if (setup_.sharded_optimizer) workers_[w].optimizer_shards = static_cast<int>(group.size());
      // Every model stage the worker holds has its gradients reduced (the executor: one
      // all-reduce per chunk, in chunk order; Megatron-LM: one DDP bucket set per model chunk).
      for (int g : s_.workers[w].model_stages) {
        const StageCost& c = setup_.model_stages[g];
        for (GradientBucket b : GradientBuckets(c.layer_gradient_bytes, c.layer_backward_ms,
                                                AllReduceBuckets(s_.workers[w]))) {
          b.model_stage = g;
          workers_[w].buckets.push_back(b);
        }
      }
    }
  }
  for (int w = 0; w < W; ++w) {
    if (!reduction_.Simulated(w)) continue;
    workers_[w].actor = sg4::Actor::create("worker" + std::to_string(w), workers_[w].host,
                                           [this, w] { WorkerMain(w); });
    if (!workers_[w].phases.empty())
      sg4::Actor::create("stream" + std::to_string(w), workers_[w].host,
                         [this, w] { StreamMain(w); })->daemonize();
    if (setup_.load_s > 0 && setup_.data_loading == DataLoading::kOverlapped &&
        s_.workers[w].stage == 0) {
      workers_[w].loaded = sg4::Semaphore::create(0);
      workers_[w].load_slots = sg4::Semaphore::create(kLoaderPrefetch);
      sg4::Actor::create("loader" + std::to_string(w), workers_[w].host,
                         [this, w] { LoaderMain(w); })->daemonize();
    }
  }
  // Receives posted ahead: every pipeline mailbox delivers to its receiver before it asks (eager
  // sends). Posted at their ops (CPU worker processes with a core each): a mailbox without a
  // permanent receiver, whose message moves once both its send and its receive are posted.
  for (const WorkerProgram& p : s_.workers) {
    if (!reduction_.Simulated(p.worker)) continue;
    Worker& w = workers_[p.worker];
    w.receives_at_op = ReceivePostingOf(setup_.cluster.shared_cores > 0, Oversubscribed(w.cpu)) ==
                       ReceivePosting::kAtTheirOp;
    // Round robin on an oversubscribed server: c10d Gloo's thread reads each message as it
    // arrives, itself a SCHED_RR thread of the worker's priority (exec/runtime/cpu_policy.cc)
    // that waits for a core like the workers. Else the worker reads it at its receive.
    const bool gloo_reads = !w.receives_at_op && RoundRobin() && Oversubscribed(w.cpu) &&
                            setup_.cluster.oversubscribed_message_us > 0;
    std::map<sg4::Mailbox*, int> counts;
    for (size_t i = 0; !w.receives_at_op && i < p.ops.size(); ++i)
      if (IsCommunicationOp(p.ops[i].kind) && !IsSendOp(p.ops[i].kind)) {
        w.op_mailbox[i]->set_receiver(w.actor);
        ++counts[w.op_mailbox[i]];
      }
    if (!gloo_reads || counts.empty()) continue;
    w.gloo.host = w.host;
    w.gloo.cpu = w.cpu;
    w.gloo.id = static_cast<int>(workers_.size()) + p.worker;
    w.gloo_busy = sg4::Mutex::create();
    for (const auto& [channel, count] : counts) {
      w.read[channel].ready = sg4::Semaphore::create(0);
      sg4::ActorPtr reader = sg4::Actor::create(
          "gloo" + std::to_string(p.worker) + "-" + channel->get_name(), w.host,
          [this, worker = p.worker, channel = channel, count = count] {
            ReadMessages(worker, channel, count);
          });
      reader->daemonize();
      channel->set_receiver(reader);
    }
  }
}

void WorkerActors::Launch(int w, double bytes, Job kind) {
  Worker& me = workers_[w];
  me.job_bytes.push_back(bytes);
  me.job_kind.push_back(kind);
  me.last_allreduce_job = static_cast<long>(me.job_bytes.size()) - 1;
  record_.workers[w].allreduces.push_back({0, 0, bytes});
  me.queued->release();
}

void WorkerActors::LaunchAll(int w) {
  for (const GradientBucket& b : workers_[w].buckets)
    Launch(w, b.bytes, setup_.sharded_optimizer ? Job::kReduceScatter : Job::kAllReduce);
}

void WorkerActors::WaitForDeliveries(int w) {
  Worker& me = workers_[w];
  if (me.undelivered.empty()) return;
  const double from = Now();
  for (const sg4::CommPtr& c : me.undelivered) {
    if (me.held >= 0 && c->test()) continue;  // delivered: the worker runs on
    ReleaseCore(me);
    c->wait();
  }
  me.undelivered.clear();
  record_.workers[w].exposed_communication_s += Now() - from;
}

void WorkerActors::WaitForJob(int w, long job) {
  Worker& me = workers_[w];
  if (job < 0 || static_cast<long>(me.jobs_done) > job) return;
  const double start = Now();
  ReleaseCore(me);
  while (static_cast<long>(me.jobs_done) <= job) me.finished->acquire();
  record_.workers[w].exposed_communication_s += Now() - start;
}

// The communication stream: runs the worker's all-reduce buckets in order, each a ring over
// the stage's replicas.
void WorkerActors::StreamMain(int w) {
  Worker& me = workers_[w];
  for (;;) {
    me.queued->acquire();
    const size_t job = me.jobs_started++;
    const double bytes = me.job_bytes[job];
    const double start = Now();
    // The phases this job runs: all of them, or the reduce-scatter's or the all-gather's half.
    const size_t half = me.phases.size() / 2;
    const size_t first = me.job_kind[job] == Job::kAllGather ? half : 0;
    const size_t end = me.job_kind[job] == Job::kReduceScatter ? half : me.phases.size();
    if (me.table) {
      // Measured on the machine for this group size (cluster.h): the whole collective, once
      // every member has joined (as its ring's first step would wait for them); a half of it
      // takes half the time.
      me.joined->wait();
      const double share = me.job_kind[job] == Job::kAllReduce ? 1.0 : 0.5;
      sg4::this_actor::sleep_for(share * me.table->Seconds(bytes));
      ++record_.activities;
      for (size_t k = first; k < end; ++k)
        for (int step = 0; step < me.phases[k].steps; ++step)
          Count(me.phases[k].level, bytes * me.phases[k].fraction, true);
    } else if (setup_.options.collectives == CollectiveModel::kPhases) {
      // One flow per phase (setup.h, CollectiveModel): a ring's step waits for its
      // predecessor's, so on links that carry the same load throughout, a phase lasts its steps'
      // latencies and overheads, which run one after another, plus its bytes over the share of
      // the slowest hop, as the steps' messages do (Patarasuk and Yuan, JPDC 2009). The
      // latencies are slept first: SimGrid charges one route latency per flow.
      for (size_t k = first; k < end; ++k) {
        const Phase& phase = me.phases[k];
        const double wait = phase.steps * setup_.communication_overhead_s +
                            (phase.steps - 1) * phase.latency_s;
        if (wait > 0) {
          sg4::this_actor::sleep_for(wait);
          ++record_.activities;
        }
        const double phase_bytes = bytes * phase.fraction * phase.steps;
        sg4::CommPtr put = phase.to_next->put_async(&token_, Bytes(phase_bytes));
        phase.from_prev->get<char>();
        put->wait();
        ++record_.activities;
        CommunicationLevel& c = record_.communication[phase.level];
        c.allreduce_bytes += phase_bytes;
        c.messages += phase.steps;
      }
    } else {
      for (size_t k = first; k < end; ++k) {
        const Phase& phase = me.phases[k];
        const double step_bytes = bytes * phase.fraction;
        for (int step = 0; step < phase.steps; ++step) {
          if (setup_.communication_overhead_s > 0) {
            sg4::this_actor::sleep_for(setup_.communication_overhead_s);
            ++record_.activities;
          }
          sg4::CommPtr put = phase.to_next->put_async(&token_, Bytes(step_bytes));
          phase.from_prev->get<char>();
          put->wait();
          ++record_.activities;
          Count(phase.level, step_bytes, true);
        }
      }
    }
    // By index: the worker may have launched more buckets (and grown the vector) meanwhile.
    record_.workers[w].allreduces[job].start_s = start;
    record_.workers[w].allreduces[job].end_s = Now();
    ++me.jobs_done;
    me.finished->release();
  }
}

// The data loader beside an input-stage worker (overlapped loading): loads the micro-batches of
// the worker's first-stage forwards in list order, at most kLoaderPrefetch ahead of them. Host
// work: it takes no device time.
void WorkerActors::LoaderMain(int w) {
  Worker& me = workers_[w];
  for (const Op& op : s_.workers[w].ops) {
    if (op.kind != OpKind::kForward || op.stage != 0) continue;
    me.load_slots->acquire();
    sg4::this_actor::sleep_for(setup_.load_s);
    ++record_.activities;
    me.loaded->release();
  }
}

void WorkerActors::Load(int w) {
  Worker& me = workers_[w];
  if (setup_.load_s <= 0) return;
  if (setup_.data_loading == DataLoading::kSerial) {
    sg4::this_actor::sleep_for(setup_.load_s);  // the worker loads, then computes
    ++record_.activities;
    return;
  }
  if (me.loaded->would_block()) ReleaseCore(me);
  me.loaded->acquire();      // its micro-batch is loaded
  me.load_slots->release();  // and the loader may fetch one more
}

WorkerActors::CoreSlot WorkerActors::TakeCore(CoreUser& me) {
  const auto it = core_slots_.find(me.cpu);
  if (it == core_slots_.end()) return {};
  CoreSlots& c = it->second;
  const int w = me.id;
  if (me.held >= 0) {
    if (me.op_core < 0) me.op_core = c.first_id + me.held;
    return {me.held, true};
  }
  // Counted while it asks: actors asking at the same instant all find the semaphore open before
  // any of them has taken it (SimGrid applies their acquisitions after the round).
  ++c.waiting;
  c.free->acquire();
  --c.waiting;
  int core = -1;
  for (size_t k = 0; k < c.holder.size(); ++k) {
    if (c.holder[k] != -1) continue;
    if (core == -1 || c.last[k] == w) core = static_cast<int>(k);
  }
  c.holder[core] = w;
  if (me.op_core < 0) me.op_core = c.first_id + core;
  if (RoundRobin()) me.held = core;
  return {core, c.last[core] == w};
}

void WorkerActors::ReleaseCore(CoreUser& me) {
  if (me.held < 0) return;
  CoreSlots& c = core_slots_.at(me.cpu);
  // A read by c10d Gloo's thread (ReadMessages) is microseconds of copying: the core's caches
  // stay the last computing worker's.
  if (me.id < static_cast<int>(workers_.size())) c.last[me.held] = c.holder[me.held];
  c.holder[me.held] = -1;
  me.held = -1;
  c.free->release();
}

void WorkerActors::ReadMessages(int w, sg4::Mailbox* channel, int count) {
  Worker& me = workers_[w];
  ReadChannel& read = me.read.at(channel);
  for (int k = 0; k < count; ++k) {
    Message* message = nullptr;
    sg4::CommPtr delivery = channel->get_async<Message>(&message);
    delivery->wait();
    const double arrived = delivery->get_finish_time();
    // The thread takes the socket's bytes on a core, then blocks for the next ones (epoll).
    me.gloo_busy->lock();
    Execute(me.gloo, setup_.cluster.oversubscribed_message_us * 1e-6 / 2);
    ReleaseCore(me.gloo);
    me.gloo_busy->unlock();
    ++record_.activities;
    read.reads.push_back({message, arrived});
    read.ready->release();
  }
}

void WorkerActors::FreeCore(const CoreUser& me, CoreSlot slot) {
  if (slot.core < 0 || RoundRobin()) return;  // round robin: given back at a wait
  CoreSlots& c = core_slots_.at(me.cpu);
  c.last[slot.core] = c.holder[slot.core];
  c.holder[slot.core] = -1;
  c.free->release();
}

// The profile timed every op on a core another process ran on between its slices (workload.h,
// OwnCoreShare); an op whose worker was the last on its core finds its caches as it left
// them, and takes the share of that time the profile measured on a core of its own.
double WorkerActors::ComputeShare(CoreSlot slot, OpKind kind) const {
  if (!slot.kept) return 1;
  const OwnCoreShare& own = setup_.own_core;
  double share = 0;
  switch (kind) {
    case OpKind::kForward:
    case OpKind::kRecompute: share = own.forward; break;
    case OpKind::kBackward:
    case OpKind::kBackwardInput:
    case OpKind::kBackwardWeight: share = own.backward; break;
    case OpKind::kUpdate: share = own.update; break;
    default: break;
  }
  return share > 0 ? share : 1;
}

double WorkerActors::Execute(CoreUser& me, double seconds, bool holding_slot,
                             std::optional<OpKind> compute) {
  if (me.cpu == me.host) {
    sg4::this_actor::execute(seconds * kHostSpeed);
    return 0;
  }
  const auto run_for = [&](double s) {
    sg4::ExecPtr exec = sg4::this_actor::exec_init(s * kHostSpeed);
    exec->set_host(me.cpu);
    exec->wait();
  };
  const double asked = Now();
  CoreSlot slot = holding_slot && !RoundRobin() ? CoreSlot{} : TakeCore(me);
  const double waited = Now() - asked;
  if (slot.core < 0 || !RoundRobin()) {
    if (compute) seconds *= ComputeShare(slot, *compute);
    run_for(seconds);
    FreeCore(me, slot);
    return waited;
  }
  // Round robin: the work in pieces up to the end of the thread's slice; at its end the slice is
  // refilled, and the thread goes behind the threads waiting for a core, if any (kernel/sched/
  // rt.c, task_tick_rt). The rest of an op resumed on a core another worker ran on meanwhile is
  // charged as profiled (ComputeShare of a slot not kept).
  const double slice = setup_.cluster.round_robin_slice_ms * 1e-3;
  double left = 1;  // of the work
  while (left > 1e-12) {
    if (me.slice_used_s >= slice * (1 - 1e-12)) {
      me.slice_used_s = 0;
      if (core_slots_.at(me.cpu).waiting > 0) {
        ReleaseCore(me);
        slot = TakeCore(me);
      }
    }
    const double whole = seconds * (compute ? ComputeShare(slot, *compute) : 1);
    if (whole <= 0) break;
    const double piece = std::min(left * whole, slice - me.slice_used_s);
    run_for(piece);
    me.slice_used_s += piece;
    left -= piece / whole;
  }
  return waited;
}

// Whether more workers share the server's CPU than it has cores (cluster.h, shared_cores).
bool WorkerActors::RoundRobin() const { return setup_.cluster.round_robin_slice_ms > 0; }

bool WorkerActors::Oversubscribed(const sg4::Host* cpu) const {
  const auto it = workers_on_.find(cpu);
  return cpu != nullptr && setup_.cluster.shared_cores > 0 && it != workers_on_.end() &&
         it->second > setup_.cluster.shared_cores;
}

// A message between workers of an oversubscribed server costs CPU there (cluster.h): c10d
// Gloo's send and receive paths and the kernel's copies, at both ends. The calibration's ring
// measures both ends together (cpu_per_message_us); each end is charged half, on one of the
// server's cores: the sender's before the message leaves, the receiver's once it has arrived.
// Neither computing nor communicating, it shows as the worker's idle time. With a round-robin
// slice the receiver's half is its c10d Gloo thread's instead (ReadMessages). Returns whether it
// charged anything.
bool WorkerActors::ChargeMessageCpu(CoreUser& me) {
  if (me.cpu == me.host || setup_.cluster.oversubscribed_message_us <= 0 ||
      !Oversubscribed(me.cpu))
    return false;
  Execute(me, setup_.cluster.oversubscribed_message_us * 1e-6 / 2);
  return true;
}

// A message that moved while its sender computed, between workers with a core each (cluster.h,
// busy_sender_message_us): its payload leaves with c10d Gloo's thread of the sender, which then
// shares the sender's core with the computing thread, and the scheduler may let that thread run
// out its slice first. The calibration measured the mean wait this adds to such a message (rare
// waits of milliseconds among many of none); the receiver waits it once the transfer is done.
// `moved_from` is when the transfer could begin (both ends posted); it moved while the sender
// computed if the sender's latest compute overlaps [moved_from, now). Returns whether it waited.
bool WorkerActors::BusySenderWait(const Worker& me, const Worker& sender, double moved_from) {
  const double wait_s = setup_.cluster.busy_sender_message_us * 1e-6;
  if (wait_s <= 0 || !me.receives_at_op || sender.computing_from_s < 0) return false;
  if (sender.computing_from_s >= Now() || sender.computing_until_s <= moved_from) return false;
  sg4::this_actor::sleep_for(wait_s);
  return true;
}

// A message's CPU between workers with a core each and receives posted at their ops (cluster.h,
// oversubscribed_message_us, half at each end): c10d Gloo's threads spend it on the cores the
// executor pins each worker process to, its threads with it (exec/launch/worker.cc,
// ConfigureThreads). Where the worker computes meanwhile, its op takes that much longer; a
// worker that waits loses nothing. The sender's half pushes the bytes once the receive is posted
// (charged by the receiver when they have arrived, to the sender's compute still running then).
// The receiver reads them while it waits in its receive; but a message sent before its receive
// is posted first announces itself (gloo/transport/tcp/pair.cc: Pair::send without a remote
// pending receive sends NOTIFY_SEND_READY), and the receiver's thread handles that as it comes,
// while the receiver computes: the receiver's half then (charged at the send, to the receiver's
// compute running then). Traced on a 2-vCPU guest (docs/validation.md, thirty-second session):
// the sender's ops 51-97 us longer, the receiver's 48-71 us, against halves of 47 us there.
void WorkerActors::ChargeComputingPeer(const Worker& me, Worker& peer) {
  const double half_s = setup_.cluster.oversubscribed_message_us * 1e-6 / 2;
  if (half_s <= 0 || !me.receives_at_op || peer.cpu == peer.host) return;
  if (peer.computing_from_s < 0 || !std::isinf(peer.computing_until_s)) return;
  peer.message_cpu_s += half_s;
}

// A tensor-parallel group's collectives on its rank's server link (NVLink to the NVSwitch), as
// flows that share the link with whatever else crosses it: a ring step sends to the next rank
// and receives from the previous one, so a collective is a flow up the link and one down it,
// side by side. Each is sized to take `seconds` alone (at the link's bandwidth), the time the
// collective takes alone (TensorParallelCollectiveMs), so on an idle link the op lasts what the
// planners charge. Returns the flows, started.
std::vector<sg4::CommPtr> WorkerActors::StartGroupCollectives(const Worker& me, double seconds) {
  if (seconds <= 0 || !me.nvswitch) return {};
  const ClusterLevel& level = setup_.cluster.levels[0];
  const double latency = level.latency_us * 1e-6 / 2;  // the device link's half of the level's
  const uint64_t bytes =
      Bytes(std::max(0.0, seconds - latency) * level.bandwidth_bytes_per_s());
  record_.activities += 2;
  return {sg4::Comm::sendto_async(me.host, me.nvswitch, bytes),
          sg4::Comm::sendto_async(me.nvswitch, me.host, bytes)};
}

double WorkerActors::Compute(int w, size_t i) {
  Worker& me = workers_[w];
  const Op& op = s_.workers[w].ops[i];
  const SimulationSetup::GroupCollectiveWork group = setup_.GroupCollectivesOf(op);
  record_.communication[0].tensor_parallel_bytes += group.bytes;
  // Without a switch host the collectives' link is the group's own: they are in the op's time.
  const bool collectives = me.nvswitch && group.exposed_s + group.overlapped_s > 0;
  // The op's compute: its time less the group's collectives that run alone (they follow it).
  const double seconds = setup_.ComputeSeconds(w, i) - (collectives ? group.exposed_s : 0);
  const int allreduce = me.feeds_allreduce[i];
  const bool buckets = allreduce >= 0 && !me.buckets.empty();
  if (!buckets && !collectives) {
    const double waited = Execute(me, seconds, false, op.kind);
    ++record_.activities;
    return waited;
  }
  // On one core slot throughout, as the executor's backward runs straight through.
  const double asked = Now();
  const CoreSlot slot = TakeCore(me);
  const double waited = Now() - asked;
  const double share = ComputeShare(slot, op.kind);
  // The group's collectives that run beside the op's kernels start with it; in the lists' op
  // granularity a stage's layers run together, so they are one pair of flows.
  const std::vector<sg4::CommPtr> beside = StartGroupCollectives(me, group.overlapped_s);
  if (buckets) {
    // The backward in pieces, one bucket of its stage's all-reduce launched after each; then the
    // buckets of the worker's other stages, whose backwards are over.
    const double work = seconds - setup_.launch_overhead_s;
    const Job job = setup_.sharded_optimizer ? Job::kReduceScatter : Job::kAllReduce;
    bool first = true;
    for (const GradientBucket& b : me.buckets) {
      if (b.model_stage != op.stage) continue;
      Execute(me, share * work * b.backward_fraction + (first ? setup_.launch_overhead_s : 0),
              true);
      ++record_.activities;
      first = false;
      Launch(w, b.bytes, job);
    }
    if (first) Execute(me, share * seconds, true);  // a backward of no stage with gradients here
    for (const GradientBucket& b : me.buckets)
      if (b.model_stage != op.stage) Launch(w, b.bytes, job);
    me.launched[allreduce] = true;
  } else {
    Execute(me, share * seconds, true);
    ++record_.activities;
  }
  for (const sg4::CommPtr& c : beside) c->wait();
  if (collectives)
    for (const sg4::CommPtr& c : StartGroupCollectives(me, group.exposed_s)) c->wait();
  FreeCore(me, slot);
  return waited;
}

void WorkerActors::WorkerMain(int w) {
  Worker& me = workers_[w];
  WorkerRecord& rec = record_.workers[w];
  MemoryTracker& state = record_.states[w];
  const auto& ops = s_.workers[w].ops;
  const int device = setup_.worker_device[w];
  rec.op_start_s.assign(ops.size(), 0);
  rec.op_end_s.assign(ops.size(), 0);
  rec.delivered_s.assign(ops.size(), 0);
  rec.op_core.assign(ops.size(), -1);
  // The iteration an op's busy time goes to (WorkerReport::busy_by_iteration): a compute op's
  // micro-batch's; an optimizer step's, that of the last backward before it, as the executor
  // counts it (stage_executor.cc).
  int step_iteration = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Op& op = ops[i];
    if (IsBackwardOp(op.kind) && op.microbatch >= 0)
      step_iteration = setup_.IterationOf(op.microbatch);
    const int iteration =
        IsComputeOp(op.kind) && op.microbatch >= 0 ? setup_.IterationOf(op.microbatch)
                                                   : step_iteration;
    double start = Now();
    if (IsComputeOp(op.kind)) {
      if (op.weight_version >= 0 && op.weight_version < static_cast<int>(me.version_job.size())) {
        // With the weights' all-gather overlapped (overlap_param_gather), the version's first
        // forward waits for its first bucket only; every other op for all of it.
        const int v = op.weight_version;
        const bool first_forward = op.kind == OpKind::kForward && me.version_first_job[v] >= 0;
        WaitForJob(w, first_forward ? me.version_first_job[v] : me.version_job[v]);
        if (first_forward) me.version_first_job[v] = -1;
      }
      WaitForDeliveries(w);  // blocking sends: delivered before the next compute
      if (op.kind == OpKind::kForward && op.stage == 0) Load(w);
      start = Now();
      if (op.kind == OpKind::kRecompute) state.Apply(op, start);
      me.computing_from_s = start;
      me.computing_until_s = std::numeric_limits<double>::infinity();
      // Waiting for a core is idle time, as a worker's wait for a core shows in the executor
      // (inside the receive it was woken from): the op starts when it has one.
      me.op_core = -1;
      start += Compute(w, i);
      // What c10d Gloo's thread took from the op meanwhile (ChargeComputingPeer), and took
      // from that.
      while (me.message_cpu_s > 0) {
        const double s = me.message_cpu_s;
        me.message_cpu_s = 0;
        Execute(me, s);
        ++record_.activities;
      }
      rec.op_core[i] = me.op_core;
      me.computing_until_s = Now();
      rec.AddBusy(op.kind, iteration, Now() - start);
    } else if (IsSendOp(op.kind)) {
      if (setup_.communication_overhead_s > 0) {
        sg4::this_actor::sleep_for(setup_.communication_overhead_s);
        ++record_.activities;
        rec.exposed_communication_s += setup_.communication_overhead_s;
      }
      const double bytes = setup_.MessageBytes(MessageOf(op, w));
      // The sender's half of a message's CPU on an oversubscribed server (ChargeMessageCpu).
      if (ChargeMessageCpu(me)) ++record_.activities;
      me.messages[i].posted_s = Now();
      ChargeComputingPeer(me, workers_[op.peer_worker]);  // the receiver's half
      if (s_.send_mode == SendMode::kBlocking)
        me.undelivered.push_back(me.op_mailbox[i]->put_async(&me.messages[i], Bytes(bytes)));
      else
        me.op_mailbox[i]->put_init(&me.messages[i], Bytes(bytes))->detach();
      ++record_.activities;
      Count(setup_.cluster.LinkLevel(device, setup_.worker_device[op.peer_worker]),
            bytes, false);
    } else if (IsCommunicationOp(op.kind) && !me.read.empty()) {
      // Read by c10d Gloo's thread (ReadMessages); the receive returns once the message has been
      // read and the worker's thread runs again, on a core it may wait for.
      ReadChannel& channel = me.read.at(me.op_mailbox[i]);
      if (channel.ready->would_block()) ReleaseCore(me);
      channel.ready->acquire();
      const auto [message, arrived] = channel.reads.front();
      channel.reads.pop_front();
      if (me.held < 0) {
        const int op_core = me.op_core;
        TakeCore(me);
        me.op_core = op_core;  // not a compute op's
      }
      if (MessageOf(*message->op, op.peer_worker) != MessageOf(op, w)) {
        fault_ = "worker " + std::to_string(w) + " received another message than " +
                 ActionName(op) + " expects";
        return;
      }
      const std::vector<Op>& sender_ops = s_.workers[op.peer_worker].ops;
      record_.workers[op.peer_worker].delivered_s[message->op - sender_ops.data()] = arrived;
      rec.exposed_communication_s += Now() - std::max(start, message->posted_s);
    } else if (IsCommunicationOp(op.kind)) {
      // A message already sent to a receive posted at its op moves once the receiver's "ready"
      // notification has crossed to its sender (ReceivePosting::kAtTheirOp): one latency first.
      if (me.receives_at_op && me.op_mailbox[i]->listen()) {
        const int level = setup_.cluster.LinkLevel(device, setup_.worker_device[op.peer_worker]);
        ReleaseCore(me);
        sg4::this_actor::sleep_for(setup_.cluster.levels[level].latency_us * 1e-6);
        ++record_.activities;
      }
      const double posted = Now();
      Message* message = nullptr;
      sg4::CommPtr delivery = me.op_mailbox[i]->get_async<Message>(&message);
      if (me.held < 0 || !delivery->test()) {
        ReleaseCore(me);
        delivery->wait();
      }
      ChargeComputingPeer(me, workers_[op.peer_worker]);  // the sender's half
      if (BusySenderWait(me, workers_[op.peer_worker], std::max(posted, message->posted_s)))
        ++record_.activities;
      // A channel's messages arrive in order (ValidateSchedule's rule): this never fails.
      if (MessageOf(*message->op, op.peer_worker) != MessageOf(op, w)) {
        fault_ = "worker " + std::to_string(w) + " received another message than " +
                 ActionName(op) + " expects";
        return;
      }
      // The transfer's end: with eager sends it may precede this Recv (the trace's send event).
      const std::vector<Op>& sender_ops = s_.workers[op.peer_worker].ops;
      record_.workers[op.peer_worker].delivered_s[message->op - sender_ops.data()] =
          std::max(delivery->get_finish_time(), Now());
      rec.exposed_communication_s += Now() - std::max(start, message->posted_s);
      // The receiver's half.
      if (ChargeMessageCpu(me)) ++record_.activities;
    } else if (op.kind == OpKind::kAllReduce) {
      if (!me.launched[i]) LaunchAll(w);
    } else if (op.kind == OpKind::kUpdate) {
      me.version_job[op.weight_version] = me.phases.empty() ? -1 : me.last_allreduce_job;
      // The optimizer step (Layer::update_ms: measured on CPUs, Megatron's kernels on GPUs; absent
      // for the papers' profiles) runs on the worker once its gradients are summed.
      const double update_s = setup_.UpdateSeconds(w, i, me.optimizer_shards);
      if (update_s > 0) {
        WaitForJob(w, me.version_job[op.weight_version]);
        start = Now();
        me.op_core = -1;
        start += Execute(me, update_s, false, OpKind::kUpdate);
        rec.op_core[i] = me.op_core;
        ++record_.activities;
        rec.AddBusy(op.kind, iteration, Now() - start);
      }
      if (setup_.sharded_optimizer && !me.phases.empty()) {
        // The stepped shard's weights all-gathered over the replicas: in the gradient buckets'
        // count when the next forward overlaps them, else at once.
        double weight_bytes = 0;
        for (int g : s_.workers[w].model_stages) weight_bytes += setup_.model_stages[g].weight_bytes;
        const int pieces = setup_.overlap_param_gather ? std::max<int>(1, me.buckets.size()) : 1;
        for (int k = 0; k < pieces; ++k) {
          Launch(w, weight_bytes / pieces, Job::kAllGather);
          if (k == 0 && setup_.overlap_param_gather)
            me.version_first_job[op.weight_version] = me.last_allreduce_job;
        }
        me.version_job[op.weight_version] = me.last_allreduce_job;
      }
    }
    rec.op_start_s[i] = start;
    rec.op_end_s[i] = Now();
    if (op.kind == OpKind::kUpdate) rec.step_end_s.push_back(rec.op_end_s[i]);
    if (op.kind != OpKind::kRecompute) state.Apply(op, rec.op_end_s[i]);
  }
  WaitForDeliveries(w);  // an actor that ended would cancel what it still sends
  WaitForJob(w, static_cast<long>(me.job_bytes.size()) - 1);
  // An update ends when the all-reduce it applies has.
  for (size_t i = 0; i < ops.size(); ++i)
    if (ops[i].kind == OpKind::kUpdate && me.version_job[ops[i].weight_version] >= 0)
      rec.op_end_s[i] = std::max(rec.op_end_s[i],
                                 rec.allreduces[me.version_job[ops[i].weight_version]].end_s);
  ReleaseCore(me);
  rec.finish_s = Now();
  me.done = true;
}

void WorkerActors::RecordKeptCores() {
  std::vector<CoreUse> uses;
  for (size_t w = 0; w < record_.workers.size(); ++w) {
    const WorkerRecord& rec = record_.workers[w];
    const std::vector<Op>& ops = s_.workers[w].ops;
    size_t updates = 0;
    for (size_t i = 0; i < rec.op_core.size(); ++i) {
      const bool update = ops[i].kind == OpKind::kUpdate;
      // An update's op ends with the all-reduce it applies; its step, at step_end_s.
      const double end_s = update && updates < rec.step_end_s.size() ? rec.step_end_s[updates]
                                                                       : rec.op_end_s[i];
      updates += update;
      if (rec.op_core[i] >= 0)
        uses.push_back({static_cast<int>(w), rec.op_start_s[i], end_s - rec.op_start_s[i],
                        rec.op_core[i]});
    }
  }
  for (const auto& [w, share] : KeptCoreShares(uses)) record_.workers[w].kept_core_share = share;
}

void WorkerActors::CopyReplicas() {
  record_.simulated_replicas = reduction_.simulated;
  record_.replicas = reduction_.replicas;
  if (!reduction_.Reduced()) return;
  std::vector<MemoryTracker> states;
  states.reserve(record_.states.size());
  for (size_t w = 0; w < workers_.size(); ++w) {
    const int from = reduction_.representative[w];
    states.push_back(record_.states[from]);
    if (from != static_cast<int>(w)) record_.workers[w] = record_.workers[from];
  }
  record_.states = std::move(states);
  // What each left-out replica would have sent, as its representative did.
  const double scale = static_cast<double>(reduction_.replicas) / reduction_.simulated;
  for (CommunicationLevel& c : record_.communication) {
    c.pipeline_bytes *= scale;
    c.allreduce_bytes *= scale;
    c.tensor_parallel_bytes *= scale;
    c.messages = std::llround(c.messages * scale);
  }
}

SimulationRecord WorkerActors::Run() {
  EngineArguments args("pipetwin-sim");
  sg4::Engine engine(&args.argc, args.argv.data());
  xbt_log_control_set("root.thresh:critical");
  ConfigureNetwork(setup_.cluster);
  // At most three actors per worker: its own, its communication stream and a data loader.
  ConfigureActorStacks(3L * s_.WorkerCount() / reduction_.replicas * reduction_.simulated);
  auto started = std::chrono::steady_clock::now();
  Prepare();
  record_.platform_wall_s = Elapsed(started);
  started = std::chrono::steady_clock::now();
  engine.run();
  record_.run_wall_s = Elapsed(started);
  if (!fault_.empty()) throw std::runtime_error(fault_);
  RecordKeptCores();
  CopyReplicas();
  for (size_t w = 0; w < workers_.size(); ++w) {
    if (!workers_[reduction_.representative[w]].done)
      throw std::runtime_error("the simulation stopped before worker " + std::to_string(w) +
                               " finished its list (deadlock)");
    record_.makespan_s = std::max(record_.makespan_s, record_.workers[w].finish_s);
  }
  return std::move(record_);
}

}  // namespace

SimulationRecord RunSimulation(const SimulationSetup& setup) { return WorkerActors(setup).Run(); }

}  // namespace pipetwin::sim
