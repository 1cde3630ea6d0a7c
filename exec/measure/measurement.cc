#include "exec/measure/measurement.h"

#include "partition/report/kept_core.h"
#include "partition/report/summarize.h"
#include "partition/timeline/chrome_trace.h"

#include <algorithm>
#include <set>
#include <map>
#include <tuple>

namespace pipetwin::exec {

namespace {

bool IsBusy(OpKind kind) { return IsComputeOp(kind) || kind == OpKind::kUpdate; }
// Past any CPU number of one host (Linux's NR_CPUS is at most 8192): CPU numbers of distinct
// hosts stay distinct.
constexpr int kCpusPerHost = 8192;
bool IsCommunication(OpKind kind) {
  return IsCommunicationOp(kind) || kind == OpKind::kAllReduce;
}

nlohmann::json CategoriesJson(const MemoryCategories& m) {
  return {m.weights, m.optimizer, m.gradients, m.activations, m.recompute};
}

MemoryCategories CategoriesFrom(const nlohmann::json& j) {
  MemoryCategories m;
  m.weights = j[0];
  m.optimizer = j[1];
  m.gradients = j[2];
  m.activations = j[3];
  m.recompute = j[4];
  return m;
}

// Iteration i ends when the last worker finishes its last op of iteration i.
std::vector<double> IterationEnds(int iterations, const std::vector<WorkerMeasurement>& workers) {
  std::vector<double> ends(iterations, 0);
  for (const auto& w : workers)
    for (const auto& op : w.ops)
      if (op.iteration >= 0 && op.iteration < iterations)
        ends[op.iteration] = std::max(ends[op.iteration], op.end_s);
  for (int i = 1; i < iterations; ++i) ends[i] = std::max(ends[i], ends[i - 1]);
  return ends;
}

// The message a recorded Send or Recv of worker `rank` carried (MessageOf's rule).
MessageKey MessageOfRecord(const OpRecord& record, int rank) {
  Op op;
  op.kind = record.kind;
  op.stage = record.stage;
  op.microbatch = record.microbatch;
  op.peer_worker = record.peer;
  return MessageOf(op, rank);
}

// Exposed communication of each worker: for a receive, the time from when its data was sent
// (or the receive was posted, if later) to when it arrived; for an all-reduce, the time from the
// last replica's arrival to the end; sends, their posting time. Waiting for a peer still
// computing is bubble, not communication (the Report's definition).
std::vector<double> ExposedCommunication(const std::vector<WorkerMeasurement>& workers) {
  std::map<MessageKey, double> sent_at;
  std::map<std::pair<int, int>, double> last_arrival;  // (stage, k-th all-reduce) -> latest start
  for (const auto& w : workers) {
    int reductions = 0;
    for (const auto& op : w.ops) {
      if (IsSendOp(op.kind)) sent_at[MessageOfRecord(op, w.rank)] = op.start_s;
      if (op.kind == OpKind::kAllReduce) {
        double& t = last_arrival[{w.stage, reductions++}];
        t = std::max(t, op.start_s);
      }
    }
  }
  std::vector<double> exposed;
  for (const auto& w : workers) {
    double total = 0;
    int reductions = 0;
    for (const auto& op : w.ops) {
      const double duration = op.end_s - op.start_s;
      if (IsSendOp(op.kind)) {
        total += duration;
      } else if (IsCommunicationOp(op.kind)) {
        auto it = sent_at.find(MessageOfRecord(op, w.rank));
        const double from = it == sent_at.end() ? op.start_s : std::max(op.start_s, it->second);
        total += std::max(0.0, op.end_s - from);
      } else if (op.kind == OpKind::kAllReduce) {
        const double from = std::max(op.start_s, last_arrival[{w.stage, reductions++}]);
        total += std::max(0.0, op.end_s - from);
      }
    }
    exposed.push_back(total);
  }
  return exposed;
}

}  // namespace

nlohmann::json MeasurementToJson(const WorkerMeasurement& m) {
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& o : m.ops)
    ops.push_back({static_cast<int>(o.kind), o.stage, o.microbatch, o.weight_version, o.peer,
                   o.bytes, o.iteration, o.start_s, o.end_s, o.cpu, o.cpu_s});
  nlohmann::json memory = nlohmann::json::array();
  for (const auto& s : m.memory_timeline) memory.push_back({s.time_s, CategoriesJson(s.bytes)});
  nlohmann::json versions = nlohmann::json::array();
  for (const auto& v : m.versions) versions.push_back({v.microbatch, v.forward, v.backward});
  nlohmann::json j = {
          {"rank", m.rank}, {"stage", m.stage}, {"replica", m.replica}, {"host", m.host},
          {"device", m.device}, {"transport", m.transport}, {"threads", m.threads},
          {"cpu_policy", m.cpu_policy}, {"ops", ops},
          {"end_s", m.end_s}, {"memory", memory},
          {"max_weight_versions", m.max_weight_versions},
          {"max_in_flight_microbatches", m.max_in_flight_microbatches},
          {"allocator_peak_bytes", m.allocator_peak_bytes},
          {"allocator_reserved_bytes", m.allocator_reserved_bytes},
          {"peak_rss_bytes", m.peak_rss_bytes},
          {"capacity_bytes", m.capacity_bytes}, {"versions", versions},
          {"update_staleness", m.update_staleness}, {"losses", m.losses},
          {"test_accuracy", m.test_accuracy}, {"test_samples", m.test_samples},
          {"boot_id", m.boot_id}, {"clock_origin_s", m.clock_origin_s},
          {"cpus", m.cpus}, {"cpu_time_s", m.cpu_time_s}};
  if (m.thread_account.available)
    j["thread_account"] = {m.thread_account.waiting_s, m.thread_account.preempted,
                            m.thread_account.others_running_s};
  if (m.cuda_allocator)
    j["cuda_allocator"] = {m.cuda_allocator->allocated_bytes,
                           m.cuda_allocator->allocated_peak_bytes,
                           m.cuda_allocator->reserved_bytes,
                           m.cuda_allocator->reserved_peak_bytes};
  return j;
}

WorkerMeasurement MeasurementFromJson(const nlohmann::json& j) {
  WorkerMeasurement m;
  m.rank = j.at("rank");
  m.stage = j.at("stage");
  m.replica = j.at("replica");
  m.host = j.at("host");
  m.device = j.value("device", std::string("cpu"));
  m.transport = j.value("transport", std::string("gloo"));
  if (j.contains("cuda_allocator")) {
    const auto& a = j.at("cuda_allocator");
    m.cuda_allocator = AllocatorView{a[0], a[1], a[2], a[3]};
  }
  m.threads = j.at("threads");
  m.cpu_policy = j.value("cpu_policy", std::string("SCHED_OTHER"));
  for (const auto& o : j.at("ops"))
    m.ops.push_back({static_cast<OpKind>(o[0].get<int>()), o[1], o[2], o[3], o[4], o[5], o[6],
                     o[7], o[8], o.size() > 9 ? o[9].get<int>() : -1,
                     o.size() > 10 ? o[10].get<double>() : -1.0});
  m.end_s = j.at("end_s");
  for (const auto& s : j.at("memory")) m.memory_timeline.push_back({s[0], CategoriesFrom(s[1])});
  m.max_weight_versions = j.at("max_weight_versions");
  m.max_in_flight_microbatches = j.at("max_in_flight_microbatches");
  m.allocator_peak_bytes = j.at("allocator_peak_bytes");
  m.allocator_reserved_bytes = j.value("allocator_reserved_bytes", 0.0);
  m.peak_rss_bytes = j.at("peak_rss_bytes");
  m.capacity_bytes = j.at("capacity_bytes");
  for (const auto& v : j.at("versions")) m.versions.push_back({v[0], v[1], v[2]});
  m.update_staleness = j.at("update_staleness").get<std::vector<double>>();
  m.losses = j.at("losses").get<std::vector<std::pair<int, double>>>();
  m.test_accuracy = j.at("test_accuracy");
  m.test_samples = j.at("test_samples");
  m.boot_id = j.at("boot_id");
  m.clock_origin_s = j.at("clock_origin_s");
  m.cpus = j.value("cpus", std::vector<int>{});
  m.cpu_time_s = j.value("cpu_time_s", 0.0);
  if (j.contains("thread_account")) {
    const auto& a = j.at("thread_account");
    m.thread_account = {true, a[0], a[1], a[2]};
  }
  return m;
}

int AlignClocks(std::vector<WorkerMeasurement>& workers) {
  if (workers.empty()) return 0;
  const std::string machine = workers[0].boot_id;
  const auto shared = [&](const WorkerMeasurement& w) {
    return !machine.empty() && w.boot_id == machine;
  };
  double earliest = workers[0].clock_origin_s;
  for (const auto& w : workers)
    if (shared(w)) earliest = std::min(earliest, w.clock_origin_s);
  int apart = 0;
  for (auto& w : workers) {
    if (!shared(w)) {
      ++apart;
      continue;
    }
    const double shift = w.clock_origin_s - earliest;
    for (auto& op : w.ops) op.start_s += shift, op.end_s += shift;
    for (auto& sample : w.memory_timeline) sample.time_s += shift;
    w.end_s += shift;
    w.clock_origin_s = earliest;
  }
  return apart;
}

namespace {

RunHeader HeaderOf(const ExecutorJob& job) {
  RunHeader header;
  header.source = "executor";
  header.scenario = job.scenario.name;
  header.schedule = job.schedule.kind;
  if (job.schedule.recompute) header.recompute = RecomputeTimingName(job.schedule.recompute_timing);
  header.p2p = SendModeName(job.schedule.send_mode);
  header.planner = job.plan.planner;
  header.network_model = job.scenario.cluster.network_model;
  header.pipeline_depth = PlanStagesWithWorkers(job.schedule.kind, job.schedule.stages);
  header.worker_count = job.WorkerCount();
  header.microbatch_size = job.microbatch_size;
  header.microbatches_per_iteration = job.microbatches_per_iteration;
  header.iterations = job.iterations;
  return header;
}

// Each worker's busy and exposed time and its device's memory into the report; returns the
// executor's own figures per worker (details.workers).
nlohmann::json AddWorkers(const std::vector<WorkerMeasurement>& workers, Report& r) {
  const std::vector<double> exposed = ExposedCommunication(workers);
  // Which core each compute op ran on, numbered across the hosts (kept_core.h).
  std::vector<CoreUse> uses;
  std::map<std::string, int> hosts;
  for (const WorkerMeasurement& w : workers) {
    const int host = hosts.emplace(w.host, static_cast<int>(hosts.size())).first->second;
    for (const OpRecord& op : w.ops)
      if (IsBusy(op.kind) && op.cpu >= 0)
        uses.push_back({w.rank, op.start_s, op.end_s - op.start_s, host * kCpusPerHost + op.cpu});
  }
  const std::map<int, double> kept = KeptCoreShares(uses);
  nlohmann::json overhead = nlohmann::json::array();
  for (size_t i = 0; i < workers.size(); ++i) {
    const WorkerMeasurement& w = workers[i];
    WorkerReport wr;
    wr.worker = w.rank;
    wr.device = w.rank;
    wr.stage = w.stage;
    wr.replica = w.replica;
    double communication = 0;
    double off_cpu = 0;  // in compute ops, the computing thread not running
    bool cpu_known = false;
    for (const auto& op : w.ops) {
      if (IsBusy(op.kind)) {
        wr.busy_s += op.end_s - op.start_s;
        wr.busy_by_op_s[OpKindName(op.kind)] += op.end_s - op.start_s;
        if (op.iteration >= 0) {
          if (op.iteration >= static_cast<int>(wr.busy_by_iteration.size()))
            wr.busy_by_iteration.resize(op.iteration + 1);
          wr.busy_by_iteration[op.iteration][OpKindName(op.kind)] += op.end_s - op.start_s;
        }
        if (op.cpu_s >= 0) {
          cpu_known = true;
          off_cpu += std::max(0.0, op.end_s - op.start_s - op.cpu_s);
        }
      }
      if (IsCommunication(op.kind)) communication += op.end_s - op.start_s;
    }
    wr.exposed_communication_s = exposed[i];
    if (const auto k = kept.find(w.rank); k != kept.end()) wr.kept_core_share = k->second;
    r.workers.push_back(wr);
    // The executor's own time: neither computing nor in a communication call.
    const double own = std::max(0.0, w.end_s - wr.busy_s - communication);
    overhead.push_back({{"worker", w.rank}, {"overhead_s", own},
                        {"overhead_fraction", w.end_s > 0 ? own / w.end_s : 0},
                        {"communication_calls_s", communication},
                        {"allocator_peak_bytes", w.allocator_peak_bytes},
                        {"allocator_reserved_bytes", w.allocator_reserved_bytes},
                        {"peak_rss_bytes", w.peak_rss_bytes}, {"threads", w.threads},
                        {"cpu_policy", w.cpu_policy}, {"host", w.host},
                        {"device", w.device}, {"transport", w.transport}});
    if (cpu_known) overhead.back()["off_cpu_in_compute_s"] = off_cpu;
    // Where the kernel keeps the account: what the worker's computing thread lost on its CPU.
    if (w.thread_account.available) {
      nlohmann::json& o = overhead.back();
      o["waited_for_cpu_s"] = w.thread_account.waiting_s;
      o["waited_for_cpu_fraction"] = w.end_s > 0 ? w.thread_account.waiting_s / w.end_s : 0;
      o["preemptions"] = w.thread_account.preempted;
      o["helper_threads_cpu_s"] = w.thread_account.others_running_s;
    }
    MemoryPeaks peaks;
    for (const MemorySample& s : w.memory_timeline) peaks.Add(s.time_s, s.bytes);
    r.devices.push_back(peaks.Report(w.rank, w.rank, w.capacity_bytes, w.memory_timeline));
    r.devices.back().cuda_allocator = w.cuda_allocator;
  }
  return overhead;
}

// Stages: staleness over updates and replicas, versions and activations alive, as measured;
// returns the versions each micro-batch used (details.weight_versions_used).
nlohmann::json AddStages(const ExecutorJob& job, const std::vector<WorkerMeasurement>& workers,
                         Report& r) {
  nlohmann::json versions_used = nlohmann::json::array();
  for (int s = 0; s < job.schedule.stages; ++s) {
    StageSummary st;
    st.stage = s;
    std::vector<double> delays;
    nlohmann::json per_microbatch = nlohmann::json::array();
    for (const auto& w : workers) {
      if (w.stage != s) continue;
      delays.insert(delays.end(), w.update_staleness.begin(), w.update_staleness.end());
      st.max_weight_versions = std::max(st.max_weight_versions, w.max_weight_versions);
      st.max_in_flight_activations =
          std::max(st.max_in_flight_activations, w.max_in_flight_microbatches);
      int updates = 0;
      for (const auto& op : w.ops) updates += op.kind == OpKind::kUpdate;
      st.updates = std::max(st.updates, updates);
      for (const auto& v : w.versions)
        per_microbatch.push_back({v.microbatch, v.forward, v.backward});
    }
    SummarizeStaleness(delays, st);
    r.stages.push_back(st);
    std::sort(per_microbatch.begin(), per_microbatch.end());
    versions_used.push_back({{"stage", s}, {"columns", {"microbatch", "forward", "backward"}},
                             {"versions", per_microbatch}});
  }
  return versions_used;
}

// Pipeline messages and all-reduce payloads, by whether the peers share a host.
std::vector<CommunicationLevel> Communication(const std::vector<WorkerMeasurement>& workers) {
  std::map<int, CommunicationLevel> levels;
  std::map<int, std::string> host_of;
  for (const auto& w : workers) host_of[w.rank] = w.host;
  for (const auto& w : workers) {
    for (const auto& op : w.ops) {
      const bool send = IsSendOp(op.kind);
      if (!send && op.kind != OpKind::kAllReduce) continue;
      const int level = send && host_of[op.peer] != w.host ? 1 : 0;
      CommunicationLevel& c = levels[level];
      c.level = level;
      c.name = level == 0 ? "host" : "network";
      c.link = level == 0 ? "loopback" : "tcp";
      if (send) c.pipeline_bytes += op.bytes;
      else c.allreduce_bytes += op.bytes;
      ++c.messages;
    }
  }
  std::vector<CommunicationLevel> out;
  for (auto& [level, c] : levels) out.push_back(c);
  return out;
}

// The last stage's mean loss per iteration (replica 0) and the test accuracy, into `details`.
void AddLearning(const ExecutorJob& job, const std::vector<WorkerMeasurement>& workers,
                 nlohmann::json& details) {
  nlohmann::json losses = nlohmann::json::array();
  for (const auto& w : workers) {
    if (w.losses.empty() && w.test_accuracy < 0) continue;
    std::vector<double> sum(job.iterations, 0);
    std::vector<int> count(job.iterations, 0);
    for (const auto& [mb, loss] : w.losses) {
      const int it = std::min(job.IterationOf(mb), job.iterations - 1);
      sum[it] += loss;
      ++count[it];
    }
    for (int i = 0; i < job.iterations; ++i)
      if (count[i] && w.replica == 0) losses.push_back(sum[i] / count[i]);
    if (w.test_accuracy >= 0) {
      details["test_accuracy"] = w.test_accuracy;
      details["test_samples"] = w.test_samples;
    }
  }
  details["mean_loss_per_iteration"] = losses;
}

// How the workers were run: the scheduling policies, each once in rank order, and the clocks.
void AddHostFacts(const std::vector<WorkerMeasurement>& workers, nlohmann::json& details) {
  std::vector<std::string> seen;
  std::string policies;
  for (const auto& w : workers)
    if (std::find(seen.begin(), seen.end(), w.cpu_policy) == seen.end()) {
      policies += (seen.empty() ? "" : "; ") + w.cpu_policy;
      seen.push_back(w.cpu_policy);
    }
  int apart = 0;
  for (const auto& w : workers)
    apart += w.boot_id.empty() || w.boot_id != workers[0].boot_id ||
             w.clock_origin_s != workers[0].clock_origin_s;
  details["host"] = workers.empty() ? "" : workers[0].host;
  details["clock"] = apart == 0 ? "one clock: every worker's times count from the same instant "
                                  "of rank 0's machine's monotonic clock"
                                : std::to_string(apart) + " of " + std::to_string(workers.size()) +
                                      " workers count from their own exit from the start barrier "
                                      "(another machine, or not aligned)";
  details["cpu_policy"] = policies;
}

}  // namespace

Report MergeMeasurements(const ExecutorJob& job, const std::vector<WorkerMeasurement>& workers) {
  Report r = StartReport(HeaderOf(job));
  r.warnings = job.scenario.notes;  // what the scenario's plan replaced (PlanWarnings)
  for (const auto& w : workers) r.makespan_s = std::max(r.makespan_s, w.end_s);
  const nlohmann::json overhead = AddWorkers(workers, r);
  FinishReport(SteadyStateWindow(IterationEnds(job.iterations, workers),
                                 job.options.warmup_iterations, IsAsynchronous(job.schedule.kind)),
               r);
  const nlohmann::json versions_used = AddStages(job, workers, r);
  r.communication = Communication(workers);
  r.details = nlohmann::json::object();
  AddHostFacts(workers, r.details);
  r.details["data"] = job.options.data;
  r.details["seed"] = job.options.seed;
  r.details["weight_stashing"] = job.schedule.weight_stashing;
  r.details["model"] = job.network.generator;
  r.details["workers"] = overhead;
  r.details["weight_versions_used"] = versions_used;
  AddLearning(job, workers, r.details);
  const MachineLoad load = MachineLoadOf(workers);
  r.details["machine_load"] = load.ToJson();
  for (std::string& w : load.Warnings()) r.warnings.push_back(std::move(w));
  return r;
}

MachineLoad MachineLoadOf(const std::vector<WorkerMeasurement>& workers) {
  MachineLoad load;
  if (workers.empty()) return load;
  const WorkerMeasurement& first = workers[0];
  std::set<int> cpus;
  double own_cpu_s = 0;
  for (const WorkerMeasurement& w : workers)
    if (&w == &first || (!w.boot_id.empty() && w.boot_id == first.boot_id)) {
      cpus.insert(w.cpus.begin(), w.cpus.end());
      own_cpu_s += w.cpu_time_s;
    }
  load.cpus = static_cast<int>(cpus.size());
  load.load_average_1m = first.load_average_1m;
  load.gflops_before = first.gflops_before;
  load.gflops_after = first.gflops_after;
  if (first.load_before) {
    load.sampled_before = true;
    load.before = *first.load_before;
  }
  if (first.host_cpu_start && first.host_cpu_end && first.host_window_s > 0 && !cpus.empty()) {
    load.measured_during = true;
    load.during = ShareBetween(*first.host_cpu_start, *first.host_cpu_end,
                               {cpus.begin(), cpus.end()}, first.host_window_s, own_cpu_s);
  }
  return load;
}

Timeline MeasuredTimeline(const ExecutorJob& job, const std::vector<WorkerMeasurement>& workers) {
  Timeline t;
  t.label = "measured";
  t.other_data = {{"scenario", job.scenario.name},
                  {"schedule", ScheduleKindName(job.schedule.kind)},
                  {"source", "pipetwin run (LibTorch executor)"}};
  for (const WorkerMeasurement& w : workers) {
    const int device = w.rank;  // one process per worker, as the Report counts devices
    t.processes.push_back({device, w.rank, w.stage, w.replica, w.memory_timeline, w.capacity_bytes});
    int buckets = 0;
    for (const OpRecord& record : w.ops) {
      if (record.kind == OpKind::kAllReduce) {
        t.events.push_back(AllReduceEvent(device, w.rank, record.stage, buckets++, record.bytes,
                                          record.start_s, record.end_s));
        continue;
      }
      Op op;
      op.kind = record.kind;
      op.stage = record.stage;
      op.microbatch = record.microbatch;
      op.peer_worker = record.peer;
      op.weight_version = record.weight_version;
      TimelineEvent e = OpEvent(op, device, w.rank, record.start_s, record.end_s, record.bytes);
      if (record.cpu >= 0) e.args["core"] = record.cpu;
      if (record.cpu_s >= 0) e.args["cpu_ms"] = record.cpu_s * 1e3;
      t.AddOp(e);
    }
  }
  EndSendsWhenReceived(t.events);  // when a message was delivered, as far as c10d tells
  return t;
}

nlohmann::json ChromeTrace(const ExecutorJob& job, const std::vector<WorkerMeasurement>& workers) {
  return pipetwin::ChromeTrace(MeasuredTimeline(job, workers));
}

}  // namespace pipetwin::exec
