// RunWorker: one worker process of a run, from its environment to its measurement; rank 0 also
// gathers every worker's measurement and prints the report.
#include <dlfcn.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <set>
#include <iostream>
#include <thread>

#include "exec/runtime/cpu_allocator.h"
#include "exec/runtime/cpu_policy.h"
#include "exec/runtime/stage_executor.h"
#include "exec/launch/worker.h"
#include "exec/measure/machine_speed.h"
#include "partition/util/error.h"
#include "partition/util/host.h"
#include "partition/util/machine.h"
#include "partition/util/json_reader.h"
#include "partition/report/text.h"
#include "partition/schedule/format.h"
#include "partition/timeline/chrome_trace.h"
#include "partition/util/json_writer.h"

namespace pipetwin::exec {

void SetBlasThreads(int threads) {
  // OpenBLAS (Debian's libopenblas0-pthread) keeps a thread pool of its own, as large as the
  // machine, beside LibTorch's OpenMP threads: two workers on two cores would each run two BLAS
  // threads and spin against each other, several times slower than one thread each. Looked up at
  // run time: the BLAS behind LibTorch may be another one.
  using SetThreads = void (*)(int);
  for (const char* name : {"openblas_set_num_threads", "goto_set_num_threads"})
    if (auto f = reinterpret_cast<SetThreads>(::dlsym(RTLD_DEFAULT, name))) {
      f(threads);
      return;
    }
}

namespace {

// Intra-op threads: the cores this process is allowed (its affinity mask) shared among the
// workers on this host, each worker pinned to its own cores within that mask when there are
// enough (no oversubscription, no migration). Workers started one per network namespace each see
// LOCAL_RANK=0; started under `taskset -c K` each gets core K, not all core 0.
int ConfigureThreads(int requested, const ProcessEnv& env) {
  const std::vector<int> allowed = AllowedCpus();
  const int cores = static_cast<int>(allowed.size());
  const int threads = requested > 0 ? requested : std::max(1, cores / env.local_world_size);
  at::set_num_threads(threads);
  SetBlasThreads(threads);
  try {
    at::set_num_interop_threads(1);
  } catch (const c10::Error&) {
    // already set in this process
  }
  if (threads * env.local_world_size <= cores) {
    std::vector<int> mine;
    for (int t = 0; t < threads; ++t) mine.push_back(allowed[(env.local_rank * threads + t) % cores]);
    AllowCpus(mine);
  }
  return threads;
}

// Every channel of the run (sender, receiver, direction; op.h), in one order on every worker.
std::vector<Communicator::ChannelKey> Channels(const PipelineSchedule& schedule) {
  std::set<Communicator::ChannelKey> channels;
  for (const auto& w : schedule.workers)
    for (const Op& op : w.ops)
      if (op.kind == OpKind::kSendActivation || op.kind == OpKind::kSendGradient)
        channels.insert({w.worker, op.peer_worker,
                         op.kind == OpKind::kSendActivation
                             ? Communicator::Direction::kActivations
                             : Communicator::Direction::kGradients});
  return {channels.begin(), channels.end()};
}

// A failure inside LibTorch's compute (on a GPU, a CUDA error) ends this worker's run as a failed
// run (exit 1) naming the rank and the device, in one line; the launcher (or torchrun) then stops
// the others.
[[noreturn]] void DeviceFailure(const ProcessEnv& env, const ExecDevice& device,
                                const c10::Error& e) {
  std::string what = e.what_without_backtrace();
  if (auto newline = what.find('\n'); newline != std::string::npos) what.resize(newline);
  throw RunError("rank " + std::to_string(env.rank) + " on " + device.Describe() + ": " + what);
}

// What every worker must agree on (checked through the store): the op lists and the options
// that change the numbers.
std::string Fingerprint(const ExecutorJob& job) {
  const RunOptions& o = job.options;
  const std::string text = ScheduleToCsv(job.schedule) + "|" + job.network.name + "|" +
                           std::to_string(o.seed) + "|" +
                           o.data + "|" + std::to_string(o.weight_stashing) + "|" +
                           std::to_string(job.microbatch_size) + "|" +
                           std::to_string(o.evaluate) + "|" + o.device + "|" + o.precision;
  return std::to_string(std::hash<std::string>()(text));
}

// This worker's share of the machine's memory.
double MemoryShareBytes(const ProcessEnv& env) {
  return PhysicalMemoryBytes() / env.local_world_size;
}

// The replica-0 rank of pipeline position `stage`, or -1 outside the pipeline.
int FirstReplica(const PipelineSchedule& s, int stage) {
  for (const auto& w : s.workers)
    if (w.stage == stage && w.replica == 0) return w.worker;
  return -1;
}

void PrintReport(const ExecutorJob& job, const Report& report) {
  if (job.options.json) {
    std::cout << JsonText(ReportToJson(report), 1) << "\n";
    return;
  }
  std::cout << ReportToText(report);
  const auto& d = report.details;
  double worst = 0;
  for (const auto& w : d["workers"]) worst = std::max(worst, w["overhead_fraction"].get<double>());
  std::cout << "\nexecutor     overhead up to " << 100 * worst << "% of a worker's time; data "
            << job.options.data << ", weight stashing " << (job.schedule.weight_stashing ? "on" : "off")
            << "\n";
  if (!d["mean_loss_per_iteration"].empty())
    std::cout << "loss         first iteration " << d["mean_loss_per_iteration"].front().get<double>()
              << ", last " << d["mean_loss_per_iteration"].back().get<double>() << "\n";
  if (d.contains("test_accuracy"))
    std::cout << "accuracy     " << 100 * d["test_accuracy"].get<double>() << "% on "
              << d["test_samples"].get<long long>() << " test samples\n";
}

}  // namespace

int RunWorker(const RunOptions& options, const ProcessEnv& env) {
  // A worker does not outlive what started it (a launcher, torchrun, a rank prefix's wrapper):
  // stopped, it takes its worker with it, and no worker is left holding a core or a port.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  ExecutorJob job = PrepareJob(options);
  if (env.world_size != job.WorkerCount())
    throw InputError("WORLD_SIZE=" + std::to_string(env.world_size) + " but the plan of " +
                     job.scenario.file + " has " + std::to_string(job.WorkerCount()) +
                     " workers (one process per worker)");
  WorkerMeasurement measurement;
  measurement.rank = env.rank;
  UseCachingCpuAllocator();  // before the first tensor (cpu_allocator.h)
  // NCCL's watchdog ends the process when an operation outlives the group's timeout or a
  // communicator fails (TORCH_NCCL_ASYNC_ERROR_HANDLING=3: abort, no clean-up), so that a rank
  // whose peer is lost never hangs. The user's own setting wins.
  ::setenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", "3", 0);
  const ExecDevice device = SelectDevice(options.device, options.precision, env);
  measurement.device = device.Describe();
  measurement.cpus = AllowedCpus();  // before ConfigureThreads pins this worker to some of them
  const bool oversubscribed = env.local_world_size > static_cast<int>(measurement.cpus.size());
  if (env.rank == 0) {
    measurement.load_average_1m = LoadAverage1m();
    LoadShare before;
    const char* text = std::getenv("PIPETWIN_LOAD_BEFORE");  // the launcher's (main.cc)
    if (text && LoadShareFromText(text, &before)) measurement.load_before = before;
  }
  measurement.threads = ConfigureThreads(options.threads, env);
  measurement.host = HostName();
  measurement.capacity_bytes = device.cuda() ? device.CapacityBytes() : MemoryShareBytes(env);
  AllocatorProbe allocator(device);

  Model model = BuildModel(job.network);
  ApplyLayerOrder(model, job.plan.layer_order);
  const WorkerProgram& program = job.schedule.workers[env.rank];
  measurement.stage = program.stage;
  measurement.replica = program.replica;
  // One stage model per model stage the worker holds (several under a multi-chunk schedule).
  std::vector<std::unique_ptr<StageModel>> stages;
  bool ends = false;  // the worker holds the first or the last stage: it reads data
  for (int g : program.model_stages) {
    const StagePlan& plan = job.plan.stages[g];
    stages.push_back(std::make_unique<StageModel>(model, plan.first_layer, plan.last_layer,
                                                  job.microbatch_size));
    ends = ends || stages.back()->is_first() || stages.back()->is_last();
  }
  std::unique_ptr<DataSource> data;
  if (ends) data = MakeDataSource(options.data, options.data_dir, model, options.seed);

  std::vector<std::vector<int>> replica_groups(job.schedule.stages);
  for (const auto& w : job.schedule.workers) replica_groups[w.stage].push_back(w.worker);
  Communicator comm(env, options.timeout_s, replica_groups, Fingerprint(job), options.verbose,
                    device);
  measurement.transport = comm.transport();
  // More workers than cores: every thread of the worker (c10d Gloo's too, started by now) under
  // SCHED_RR, so that no core idles while a worker waits to run (cpu_policy.h).
  if (oversubscribed && options.round_robin) {
    std::string why;
    measurement.cpu_policy = UseRoundRobin(&why) ? "SCHED_RR" : "SCHED_OTHER (" + why + ")";
  }
  try {
    comm.OpenChannels(Channels(job.schedule));
    std::vector<std::unique_ptr<StageExecutor>> executors;
    std::vector<StageExecutor*> chunks;
    for (size_t c = 0; c < stages.size(); ++c) {
      executors.push_back(std::make_unique<StageExecutor>(job, program, *stages[c], data.get(),
                                                          comm, allocator, measurement, device,
                                                          program.model_stages[c]));
      chunks.push_back(executors.back().get());
    }

    // The machine's speed before the op lists: rank 0 reads one core's GEMM rate while the
    // others wait in a barrier (machine_speed.h; compare sets it against the profile's).
    const bool read_speed = !device.cuda();
    if (read_speed) {
      comm.Barrier();
      if (env.rank == 0) measurement.gflops_before = OneCoreGflops();
    }
    comm.Barrier();
    const auto origin = StageExecutor::Clock::now();
    const double cpu_at_origin = ProcessCpuSeconds();
    const ThreadAccount threads_at_origin = ReadThreadAccount();
    if (env.rank == 0) measurement.host_cpu_start = ReadCpuTimes();
    measurement.boot_id = BootId();
    measurement.clock_origin_s = std::chrono::duration<double>(origin.time_since_epoch()).count();
    RunProgram(program, chunks, origin,
               ReceivePostingOf(!device.cuda(), oversubscribed) == ReceivePosting::kAhead
                   ? kReceivesAheadOps
                   : kReceivesAtTheirOp);
    comm.FinishSends();
    for (StageExecutor* e : chunks) e->Finish();
    measurement.end_s =
        std::chrono::duration<double>(StageExecutor::Clock::now() - origin).count();
    measurement.thread_account = Since(ReadThreadAccount(), threads_at_origin);
    if (options.evaluate && program.replica == 0)  // one chunk per worker (PrepareJob)
      chunks.front()->Evaluate(FirstReplica(job.schedule, program.stage - 1),
                        FirstReplica(job.schedule, program.stage + 1),
                        TestBatchCount(options.data, job.microbatch_size));
    // Every worker's CPU time counts up to one instant, at which rank 0 reads its host's: the
    // load of other processes is what is left (MachineLoadOf).
    comm.Barrier();
    measurement.cpu_time_s = ProcessCpuSeconds() - cpu_at_origin;
    if (env.rank == 0) {
      measurement.host_cpu_end = ReadCpuTimes();
      measurement.host_window_s =
          std::chrono::duration<double>(StageExecutor::Clock::now() - origin).count();
      if (read_speed) measurement.gflops_after = OneCoreGflops();
    }
    if (read_speed) comm.Barrier();  // the others wait while rank 0 reads the speed
  } catch (const c10::Error& e) {  // the communicator turns its own failures into RunErrors
    DeviceFailure(env, device, e);
  }
  measurement.allocator_peak_bytes = static_cast<double>(allocator.peak());
  measurement.allocator_reserved_bytes =
      static_cast<double>(CachingCpuAllocatorStats().system_bytes);
  measurement.cuda_allocator = CudaAllocatorView(device);
  if (measurement.cuda_allocator)
    measurement.allocator_reserved_bytes = measurement.cuda_allocator->reserved_peak_bytes;
  measurement.peak_rss_bytes = PeakRssBytes();
  comm.Publish("result/" + std::to_string(env.rank), JsonText(MeasurementToJson(measurement)));
  if (env.rank != 0) return 0;

  std::vector<WorkerMeasurement> all;
  for (int r = 0; r < env.world_size; ++r)
    all.push_back(r == 0 ? measurement
                         : MeasurementFromJson(nlohmann::json::parse(
                               comm.Fetch("result/" + std::to_string(r)))));
  AlignClocks(all);
  const Report report = MergeMeasurements(job, all);
  // The plan's warnings were said by the launcher; the machine's load is known only now.
  for (const std::string& w : MachineLoadOf(all).Warnings())
    std::cerr << "pipetwin run: warning: " << w << "\n";
  if (!options.trace_file.empty())
    WriteTextFileAtomically(options.trace_file, JsonText(ChromeTrace(job, all)));
  PrintReport(job, report);
  std::cout.flush();
  return 0;
}

}  // namespace pipetwin::exec
