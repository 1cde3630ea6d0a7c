// `pipetwin profile`: each layer's forward and backward time on this machine (the mean of repeated
// runs after warm-up), its output activation bytes and parameter
// bytes, written as a workload file (partition/workload.h) that the planners and the simulator
// take.
//
// Layers are timed in context (TrainingPass): repeated training steps of the whole model at the
// batch, or with a scenario's plan of each stage's layers apart as its worker runs them
// (SpansToTime), each layer's forward (autograd recording) and backward (gradients of its output
// with respect to its inputs and parameters, added into gradient sums) timed where it falls in
// the step; the mean over the steps after warm-up, slow ones included (util/spread.h, Mean). With more
// processes than cores, by the thread's CPU time (LayerClock).
#include <algorithm>
#include <array>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <chrono>
#include <ctime>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec/runtime/cpu_allocator.h"
#include "exec/runtime/data.h"
#include "exec/runtime/device.h"
#include "exec/job.h"
#include "exec/launch/launcher.h"
#include "exec/model/stage_model.h"
#include "exec/runtime/stage_executor.h"
#include "exec/runtime/weights.h"
#include "exec/launch/worker.h"
#include "exec/measure/machine_speed.h"
#include "partition/cost/stage_costs.h"
#include "partition/util/host.h"
#include "partition/util/error.h"
#include "partition/util/json_reader.h"
#include "partition/model/workload.h"
#include "partition/util/json_writer.h"
#include "partition/util/machine.h"
#include "partition/util/spread.h"

namespace pipetwin::exec {

namespace {

using Clock = std::chrono::steady_clock;

// What a layer's time is. With a core per process: the wall time. With more processes than
// cores, the OS time-shares them and a layer's wall time counts the slices the other processes
// got, which the simulator models itself (it shares a server's cores among its workers); what
// the layer costs is then its thread's CPU time, which still counts what time-sharing does to
// it (caches refilled after another process ran). On a GPU: the time between CUDA events
// recorded on the stream before and after the layer's kernels (the host only queues them; a host
// clock around the calls would time the launches).
class LayerClock {
 public:
  explicit LayerClock(bool thread_cpu_time = false, const ExecDevice& device = ExecDevice())
      : thread_cpu_time_(thread_cpu_time), device_(device) {}
  const ExecDevice& device() const { return device_; }
  void Start(size_t key) {
    if (device_.cuda()) return Gpu().Start(key);
    started_[key] = NowMs();
  }
  void End(size_t key) {
    if (device_.cuda()) return Gpu().End(key);
    spans_[key] = NowMs() - started_.at(key);
  }
  // The milliseconds of every span since the last Read (on a GPU, once the device is done).
  std::map<size_t, double> Read() {
    if (gpu_) {
      for (const auto& [key, span] : gpu_->Read()) spans_[key] = 1e3 * (span.second - span.first);
      gpu_.reset();
    }
    std::map<size_t, double> out;
    out.swap(spans_);
    started_.clear();
    return out;
  }

 private:
  GpuTimer& Gpu() {
    if (!gpu_) gpu_ = std::make_unique<GpuTimer>(device_);
    return *gpu_;
  }
  double NowMs() const {
    if (!thread_cpu_time_)
      return std::chrono::duration<double, std::milli>(Clock::now().time_since_epoch()).count();
    return ThreadCpuSeconds() * 1e3;
  }

  bool thread_cpu_time_;
  ExecDevice device_;
  std::map<size_t, double> started_, spans_;
  std::unique_ptr<GpuTimer> gpu_;
};

struct Source {
  Network network;
  std::string file;
  std::optional<Plan> plan;  // a scenario's explicit plan, for the pipeline bound
  int reference_batch = 1;
  std::string optimizer = "sgd";  // a scenario's, for the optimizer step's time
  double learning_rate = 1e-3;
  // Weight versions kept (PipeDream's stashing, 2BW's two buffers): each update then writes new
  // tensors (StageWeights::Update) instead of stepping in place.
  bool versioned_weights = false;
  // Training passes (micro-batches) between two optimizer steps, as the executor runs them: one
  // under PipeDream (a step per minibatch), else the scenario's micro-batches per update. A step
  // after every pass puts the step's memory in the caches before every backward, which the
  // executor does once in m micro-batches: the backwards then depend on the optimizer (an SGD
  // step leaves the gradient sums hot for the additions, Adam's evicts them), and the run's do
  // not (docs/validation.md, thirtieth session).
  int passes_per_update = 1;
};

Source ReadSource(const std::string& path) {
  const nlohmann::json doc = ParseJsonFile(path);
  Source s;
  s.file = path;
  if (doc.is_object() && doc.contains("workload")) {
    Scenario scenario = LoadScenarioFile(path);
    s.network = NetworkFromSource(scenario.source["workload"], path, "workload");
    s.plan = scenario.plan;
    s.reference_batch = scenario.training.microbatch_size;
    s.optimizer = scenario.training.optimizer;
    s.versioned_weights = scenario.schedule && IsAsynchronous(*scenario.schedule);
    const bool pipedream = scenario.schedule ? *scenario.schedule == ScheduleKind::kPipeDream
                                             : scenario.plan && scenario.plan->schedule ==
                                                                    ScheduleKind::kPipeDream;
    s.passes_per_update = pipedream ? 1 : scenario.training.microbatches;
    s.learning_rate = scenario.training.learning_rate;
  } else {
    s.network = NetworkFromSource(doc, path, "");
    s.reference_batch = s.network.batch;
  }
  return s;
}

std::string HostDescription(int threads, const ExecDevice& device, const std::string& precision) {
  if (device.cuda()) return HostName() + " " + device.Describe() + ", " + precision;
  return HostName() + " CPU, " + std::to_string(threads) + " thread" +
         (threads > 1 ? "s" : "");
}

// Prints 1 / (slowest stage's forward + backward time) for each plan stage, its layers counted
// in the plan's layer order (cost/stage_costs.h), its time shared by its replicas. The workload
// was timed on this machine at `batch`: no scaling.
void PrintPipelineBound(std::ostream& out, const Workload& w, const Plan& plan, int batch) {
  double slowest_ms = 0;
  out << "\npipeline bound of the scenario's plan at micro-batch " << batch << ":\n";
  const std::vector<StageCost> costs = PlanStageCosts(w, plan, batch, /*speed=*/1, 0);
  for (int s = 0; s < plan.StageCount(); ++s) {
    const double ms = (costs[s].forward_ms + costs[s].backward_ms) / plan.stages[s].replicas;
    out << "  stage " << s << ": " << std::fixed << std::setprecision(3) << ms
        << " ms per micro-batch (forward + backward)\n";
    slowest_ms = std::max(slowest_ms, ms);
  }
  out << "  bound: " << std::setprecision(2) << 1e3 / slowest_ms * batch
      << " samples/s (1 / slowest stage)\n" << std::defaultfloat;
}

Batch ToDevice(Batch b, const ExecDevice& device) {
  if (b.input.defined()) b.input = b.input.to(device.device);
  if (b.labels.defined()) b.labels = b.labels.to(device.device);
  return b;
}

// What timing one layer needs: its inputs (taken from one forward pass of the whole model), its
// parameters, and the tensors its backward differentiates against.
struct LayerRun {
  std::vector<torch::Tensor> inputs, parameters, targets;
  torch::Tensor output;
};

std::vector<LayerRun> PrepareLayers(const Model& model, Batch sample, const ExecDevice& device) {
  std::vector<LayerRun> runs(model.LayerCount());
  std::vector<torch::Tensor> outputs;
  sample = ToDevice(sample, device);
  {
    torch::NoGradGuard no_grad;
    AutocastScope autocast(device);
    for (int i = 0; i < model.LayerCount(); ++i) {
      at::Generator g = at::detail::createCPUGenerator(1000003ULL + i);
      runs[i].parameters = device.ToDevice(model.layers[i]->InitialParameters(g));
      std::vector<torch::Tensor> in;
      for (int j : model.layer_inputs[i]) in.push_back(j < 0 ? sample.input : outputs[j]);
      outputs.push_back(model.layers[i]->Forward(in, runs[i].parameters));
    }
  }
  for (int i = 0; i < model.LayerCount(); ++i) {
    LayerRun& r = runs[i];
    for (int j : model.layer_inputs[i]) {
      torch::Tensor x = j < 0 ? sample.input : outputs[j];
      if (x.is_floating_point()) x = x.detach().requires_grad_(true), r.targets.push_back(x);
      r.inputs.push_back(x);
    }
    for (auto& t : r.parameters) {
      t = t.detach().requires_grad_(true);
      r.targets.push_back(t);
    }
    r.output = outputs[i];
  }
  return runs;
}

// Layer times of one training step of the whole model, in context: each layer's forward
// (autograd recording) on the previous layers' fresh outputs, then each layer's backward in
// reverse order on the gradient its consumers sent back, its parameter gradients added into
// persistent sums as the executor accumulates micro-batches. The caches then hold what they
// hold in training: timing one layer over and over on the same inputs keeps its weights hot and
// makes its forward faster than the executor's.
// The layers a pass runs, first..last: all of them, or one plan stage's as its worker runs them
// (what enters from an earlier layer is the stage's received input).
struct LayerSpan {
  int first = 0, last = 0;
  static LayerSpan All(const Model& model) { return {0, model.LayerCount() - 1}; }
};

struct PassTimes {
  std::vector<double> forward_ms, backward_ms;
  // Of backward_ms, the additions into the gradient sums (Layer::gradient_add_ms).
  std::vector<double> gradient_add_ms;
};

// Micro-batch `k` of `batch` samples comes from `data` inside the first layer's forward, and the
// last layer's forward reads the labels and ends in the loss: what the executor's first and last
// stages do. With `allocator` (and `stash_bytes`), also the tensor bytes each layer's forward
// leaves allocated until its backward: its output and what autograd saved for the backward, as
// the executor counts a stage's stash (stage_executor.cc).
PassTimes TrainingPass(const Model& model, const std::vector<LayerRun>& runs, DataSource& data,
                       int64_t k, int64_t batch,
                       std::vector<std::vector<torch::Tensor>>& gradient_sums,
                       LayerClock& clock, LayerSpan span,
                       const AllocatorProbe* allocator = nullptr,
                       std::vector<double>* stash_bytes = nullptr) {
  const int n = model.LayerCount();
  PassTimes times{std::vector<double>(n), std::vector<double>(n), std::vector<double>(n)};
  std::vector<std::vector<torch::Tensor>> inputs(n);
  std::vector<torch::Tensor> graph_outputs(n), outputs(n), output_grads(n);
  Batch sample;
  const ExecDevice& device = clock.device();
  for (int i = span.first; i <= span.last; ++i) {
    clock.Start(2 * i);
    if (i == 0) sample = ToDevice(data.Train(k, batch), device);
    double data_bytes = 0;  // a data batch is new every micro-batch: the first layer keeps it
    for (size_t q = 0; q < model.layer_inputs[i].size(); ++q) {
      const int j = model.layer_inputs[i][q];
      // What enters the span from a layer before it: the stage's received input (PrepareLayers'
      // tensor, its gradient taken as the executor sends it back).
      inputs[i].push_back(j < 0 ? sample.input : j < span.first ? runs[i].inputs[q] : outputs[j]);
      if (j < 0) data_bytes += static_cast<double>(sample.input.nbytes());
    }
    const int64_t before = allocator ? allocator->allocated() : 0;
    {
      AutocastScope autocast(device);
      graph_outputs[i] = model.layers[i]->Forward(inputs[i], runs[i].parameters);
      if (i == n - 1)
        graph_outputs[i] = model.Loss(graph_outputs[i],
                                      n == 1 ? sample.labels
                                             : data.TrainLabels(k, batch).to(device.device));
    }
    clock.End(2 * i);
    if (allocator && stash_bytes)
      (*stash_bytes)[i] = static_cast<double>(allocator->allocated() - before) + data_bytes;
    outputs[i] = graph_outputs[i].detach();
    if (outputs[i].is_floating_point()) outputs[i].requires_grad_(true);
  }
  for (int i = span.last; i >= span.first; --i) {
    if (!graph_outputs[i].requires_grad()) continue;
    std::vector<torch::Tensor> targets;
    std::vector<int> producers;
    for (size_t k = 0; k < inputs[i].size(); ++k) {
      const int j = model.layer_inputs[i][k];
      if (j >= 0 && inputs[i][k].requires_grad()) {
        targets.push_back(inputs[i][k]);
        producers.push_back(j);
      }
    }
    const size_t first_parameter = targets.size();
    targets.insert(targets.end(), runs[i].parameters.begin(), runs[i].parameters.end());
    if (targets.empty()) continue;
    const torch::Tensor grad_out =
        output_grads[i].defined() ? output_grads[i] : torch::ones_like(graph_outputs[i]);  // loss: 1
    clock.Start(2 * i + 1);
    const auto grads = torch::autograd::grad({graph_outputs[i]}, targets, {grad_out}, false,
                                             false, /*allow_unused=*/true);
    if (grads.size() > first_parameter) {  // timed apart too: a backward after an update skips it
      torch::NoGradGuard no_grad;
      clock.Start(2 * n + i);
      for (size_t k = first_parameter; k < grads.size(); ++k)
        if (grads[k].defined()) gradient_sums[i][k - first_parameter].add_(grads[k]);
      clock.End(2 * n + i);
    }
    clock.End(2 * i + 1);
    for (size_t k = 0; k < first_parameter; ++k) {
      torch::Tensor& g = output_grads[producers[k]];
      g = g.defined() ? g + grads[k] : grads[k];
    }
  }
  for (const auto& [key, ms] : clock.Read()) {
    if (key >= static_cast<size_t>(2 * n)) times.gradient_add_ms[key - 2 * n] = ms;
    else (key % 2 ? times.backward_ms : times.forward_ms)[key / 2] = ms;
  }
  return times;
}

// The optimizer step of each layer, in context: right after a training pass, on the gradient
// sums it left and the weights the passes use, with optimizer state that persists from pass to
// pass, as the executor steps a stage after its last backward. (Timed over and over on its own,
// hot in the caches, a step takes far less than it does in a pipeline, where the gradients and
// the state come from memory; and a step of a copy of the weights, which the passes never touch,
// reads them from memory where the executor's step finds them as the backward left them.) With
// versioned weights (PipeDream, 2BW) the step writes a copy, as StageWeights::Update does while
// the old version is stashed, and the passes go on with the copy; the copy is timed apart too
// (Layer::update_copy_ms), since an update of a version nobody needs steps it in place.
class UpdatePass {
 public:
  UpdatePass(const std::vector<LayerRun>& runs, const OptimizerSettings& settings,
             bool versioned_weights, int passes_per_step)
      : versioned_(versioned_weights), scale_(1.0 / std::max(1, passes_per_step)) {
    torch::NoGradGuard no_grad;
    for (const LayerRun& r : runs) {
      weights_.push_back(r.parameters);  // the passes' own tensors (handles, not copies)
      parameters_.emplace_back();
      for (const auto& p : r.parameters) parameters_.back().push_back(p.detach());
      optimizers_.emplace_back(settings);
    }
  }
  // Per layer, the milliseconds of its step (0 for a layer without parameters); with `copy_ms`,
  // also those of its copy (part of the step; 0 without versioned weights).
  // The sums are zeroed after each layer's step, untimed: the next step applies the passes
  // since this one, scaled by 1 / their count, as the executor's applies its micro-batches'.
  std::vector<double> Run(std::vector<std::vector<torch::Tensor>>& gradients,
                          LayerClock& clock, LayerSpan span,
                          std::vector<double>* copy_ms = nullptr) {
    torch::NoGradGuard no_grad;
    const size_t n = parameters_.size();
    std::vector<double> ms(n, 0);
    for (size_t i = n; i-- > 0;) {  // in the backward's order
      const int layer = static_cast<int>(i);
      if (parameters_[i].empty() || layer < span.first || layer > span.last) continue;
      clock.Start(i);
      if (versioned_) {
        clock.Start(n + i);
        for (auto& p : parameters_[i]) p = p.clone();
        clock.End(n + i);
      }
      optimizers_[i].Step(parameters_[i], gradients[i], scale_);
      clock.End(i);
      for (auto& g : gradients[i]) g.zero_();
      if (versioned_)  // the next passes compute on the new version
        for (size_t j = 0; j < parameters_[i].size(); ++j) weights_[i][j].set_data(parameters_[i][j]);
    }
    if (copy_ms) copy_ms->assign(n, 0);
    for (const auto& [key, span] : clock.Read()) {
      if (key < n) ms[key] = span;
      else if (copy_ms) (*copy_ms)[key - n] = span;
    }
    return ms;
  }

 private:
  bool versioned_;
  double scale_;  // 1 / the passes whose gradients a step applies
  std::vector<std::vector<torch::Tensor>> weights_;     // per layer, the passes' parameters
  std::vector<std::vector<torch::Tensor>> parameters_;  // the same storage, without autograd
  std::vector<Optimizer> optimizers_;
};

std::vector<std::vector<torch::Tensor>> GradientSums(const std::vector<LayerRun>& runs) {
  torch::NoGradGuard no_grad;
  std::vector<std::vector<torch::Tensor>> sums;
  for (const LayerRun& r : runs) {
    sums.emplace_back();
    for (const auto& p : r.parameters) sums.back().push_back(torch::zeros_like(p));
  }
  return sums;
}

// Beyond this, a layer's time would mostly be the scheduler's.
constexpr int kMostProcessesPerCore = 4;

int CoresAvailable() { return static_cast<int>(AllowedCpus().size()); }

// The k-th CPU of this process's affinity mask.
void PinToCore(int k) {
  const std::vector<int> allowed = AllowedCpus();
  if (k < static_cast<int>(allowed.size())) AllowCpus({allowed[k]});
}

// `--concurrent N`: the other N-1 workers of a pipeline sharing this machine. Processes on
// neighbouring cores each run a GEMM slower than one alone (shared caches and memory
// bandwidth), so a layer timed on an idle machine overstates what a pipeline's workers get. Each
// load process is this program again (`profile ... --load-cpu K`), pinned to core K (process k
// on core k mod cores: with more processes than cores, this one shares core 0), computing
// the same layers' forwards and backwards in a loop until we kill it; it dies with us
// (PR_SET_PDEATHSIG) and says "ready" on a pipe after its first pass, so the timing starts under
// full load.
class LoadProcesses {
 public:
  LoadProcesses(const ProfileOptions& o, int batch, int cores) {
    for (int k = 1; k < o.concurrent; ++k) {
      int fds[2];
      if (::pipe(fds) != 0) throw RunError("pipetwin profile: cannot create a pipe");
      const pid_t pid = ::fork();
      if (pid == 0) {
        ::dup2(fds[1], STDOUT_FILENO);
        ::close(fds[0]);
        ::close(fds[1]);
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        const std::string self = SelfExecutable();
        const std::vector<std::string> args = {
            self, "profile", o.workload, "--batch", std::to_string(batch), "--threads",
            std::to_string(o.threads), "--load-cpu", std::to_string(k % cores)};
        std::vector<char*> argv;
        for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        ::execv(self.c_str(), argv.data());
        ::_exit(127);
      }
      ::close(fds[1]);
      if (pid < 0) {
        ::close(fds[0]);
        throw RunError("pipetwin profile: cannot start a load process");
      }
      pids_.push_back(pid);
      shares_this_core_.push_back(k % cores == 0);
      char c = 0;
      const ssize_t got = ::read(fds[0], &c, 1);
      ::close(fds[0]);
      if (got != 1)
        throw RunError("pipetwin profile: load process " + std::to_string(k) +
                       " exited before it was ready");
    }
  }
  ~LoadProcesses() {
    for (pid_t pid : pids_) ::kill(pid, SIGKILL);
    for (pid_t pid : pids_) ::waitpid(pid, nullptr, 0);
  }
  // The CPU seconds the load processes have used so far (their CPU-time clocks).
  double CpuSeconds() const {
    double total = 0;
    for (pid_t pid : pids_) {
      clockid_t clock;
      timespec t{};
      if (::clock_getcpuclockid(pid, &clock) == 0 && ::clock_gettime(clock, &t) == 0)
        total += static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
    }
    return total;
  }
  // Whether a load process computes on this process's core (more processes than cores).
  bool ShareThisCore() const {
    return std::find(shares_this_core_.begin(), shares_this_core_.end(), true) !=
           shares_this_core_.end();
  }
  // Stops (SIGSTOP) or resumes (SIGCONT) the load processes on this process's core, leaving it
  // a core of its own while the other cores stay loaded.
  void PauseThisCore(bool pause) {
    for (size_t k = 0; k < pids_.size(); ++k)
      if (shares_this_core_[k]) ::kill(pids_[k], pause ? SIGSTOP : SIGCONT);
  }
  LoadProcesses(const LoadProcesses&) = delete;
  LoadProcesses& operator=(const LoadProcesses&) = delete;

 private:
  std::vector<pid_t> pids_;
  std::vector<bool> shares_this_core_;
};

// A load process: the layers' forwards and backwards in a loop, forever.
[[noreturn]] void RunLoad(const Model& model, const std::vector<LayerRun>& runs,
                          DataSource& data, int64_t batch, int cpu) {
  PinToCore(cpu);
  auto sums = GradientSums(runs);
  LayerClock clock;
  for (int64_t k = 0;; ++k) {
    TrainingPass(model, runs, data, k, batch, sums, clock, LayerSpan::All(model));
    if (k == 0) std::cout << "ready" << std::endl;
  }
}

// More processes than cores: time-shared, timed by this thread's CPU time (LayerClock), which
// sees one thread's work only; and at most kMostProcessesPerCore of them.
bool CheckedTimeSharing(const ProfileOptions& options, int cores) {
  const bool time_shared = options.concurrent * options.threads > cores;
  if (time_shared && options.threads > 1)
    throw InputError(options.workload, "",
                     "--concurrent " + std::to_string(options.concurrent) + " x --threads " +
                         std::to_string(options.threads) + " needs more than the " +
                         std::to_string(cores) +
                         " cores this process may use (more processes than cores: --threads 1)");
  if (options.concurrent > kMostProcessesPerCore * cores)
    throw InputError(options.workload, "",
                     "--concurrent " + std::to_string(options.concurrent) + ": at most " +
                         std::to_string(kMostProcessesPerCore) + " processes per core, " +
                         std::to_string(kMostProcessesPerCore * cores) + " on the " +
                         std::to_string(cores) + " cores this process may use");
  return time_shared;
}

// The measured workload's header: where and how its times were taken.
Workload MeasuredWorkload(const Model& model, const ProfileOptions& options, int batch,
                          bool time_shared, int cores, const ExecDevice& device,
                          int passes_per_update, int stages_timed_apart) {
  Workload w;
  w.name = model.name + "-measured";
  w.reference.batch_size = batch;
  w.reference.device = HostDescription(options.threads, device, options.precision);
  if (options.concurrent > 1)
    w.reference.device += ", " + std::to_string(options.concurrent) + " processes computing at once";
  if (time_shared)
    w.reference.device += " on " + std::to_string(cores) + " cores (layers timed by thread CPU time)";
  w.reference.device += passes_per_update > 1 ? ", an optimizer step every " +
                                                    std::to_string(passes_per_update) +
                                                    " micro-batches"
                                              : ", an optimizer step after every micro-batch";
  if (stages_timed_apart > 1)
    w.reference.device += ", each of the plan's " + std::to_string(stages_timed_apart) +
                          " stages timed apart";
  w.reference.source = "measured";
  w.parameter_dtype_bytes = 4;
  return w;
}

// The untimed passes before the timed ones: --warmup, or more up to the first optimizer step,
// which allocates the optimizer's state (Adam's two moments, torch.optim.Adam's lazy state) and
// would otherwise land in the first timed round, a cost the executor's runs leave in their own
// warm-up iterations.
int WarmUpPasses(int warmup, int passes_per_update) {
  return std::max(warmup, std::max(1, passes_per_update));
}

// The timed passes, in rounds: after the warm-up (WarmUpPasses), rounds of passes of at least
// --round-seconds each, until there are --repeats passes, --min-seconds have gone by and, with
// --target-spread, the training step's mean over the rounds is known within that share (the
// half-width of its 95% interval, util/spread.h), or --max-seconds have gone by (without it, at
// the end of the round where the first two hold). A round is one
// sample of the machine's speed: a virtual machine's speed wanders over seconds (other guests on
// the host's cores and caches) without any steal time to show for it, so the passes of one
// round are not independent samples, while rounds spread over many seconds are closer to it.
struct TimedPasses {
  std::vector<PassTimes> passes;
  // Per timed pass, per layer: the optimizer step after it (empty: none after this pass), and
  // of it, the weights' copy.
  std::vector<std::vector<double>> updates;
  std::vector<std::vector<double>> update_copies;
  std::vector<size_t> round_starts;          // index of each round's first pass
  double seconds = 0;       // of the shared rounds
  RoundEstimate step;  // the training step's time over the rounds (ms)
  // With the load processes of this core paused after each round (`own_core`): the round
  // that followed, on a core of its own: every layer's forward, backward and update summed
  // (ms, the mean of its passes), one per round.
  std::vector<std::array<double, 3>> own_core_rounds;

  // The pass indices [begin, end) of round r.
  std::pair<size_t, size_t> Round(size_t r) const {
    return {round_starts[r], r + 1 < round_starts.size() ? round_starts[r + 1] : passes.size()};
  }
  // Layer i's figure (0 forward, 1 backward, 2 update; 3 the backward's additions into the
  // gradient sums, part of 1; 4 the update's copy, part of 2) in each round: the mean of its
  // passes there (of its updates, for 2 and 4).
  std::vector<double> RoundMeans(int i, int figure) const {
    std::vector<double> means;
    for (size_t r = 0; r < round_starts.size(); ++r) {
      const auto [begin, end] = Round(r);
      std::vector<double> v;
      for (size_t p = begin; p < end; ++p)
        if (!(figure == 2 || figure == 4) || !updates[p].empty())
          v.push_back(figure == 0   ? passes[p].forward_ms[i]
                      : figure == 1 ? passes[p].backward_ms[i]
                      : figure == 2 ? updates[p][i]
                      : figure == 3 ? passes[p].gradient_add_ms[i]
                                    : update_copies[p][i]);
      means.push_back(Mean(v));
    }
    return means;
  }
  // Each round's training step: every layer's forward, backward and update.
  std::vector<double> RoundSteps(int layers) const {
    std::vector<double> steps(round_starts.size(), 0);
    for (int i = 0; i < layers; ++i)
      for (int figure = 0; figure < 3; ++figure) {
        const std::vector<double> means = RoundMeans(i, figure);
        for (size_t r = 0; r < means.size(); ++r) steps[r] += means[r];
      }
    return steps;
  }
};

// The training step's time on a core of its own (`own_core` pauses and resumes the load
// processes sharing this core) over its time on the shared core, in rounds alternating with
// the shared ones, so that a machine whose speed wanders over seconds moves both alike. What
// the simulator charges an op whose worker kept its core since its last op (sim/actors.cc): the
// shared profile's times include the caches refilled after another process ran, which such an
// op does not meet.
class StageRounds {
 public:
  // `share`: this span's part of --min-seconds and --max-seconds (1 / the spans timed).
  StageRounds(const Model& model, const std::vector<LayerRun>& runs, DataSource& data,
              int64_t batch, const Source& source, const ProfileOptions& options,
              LayerClock& clock, LayerSpan span, double share)
      : model_(model), runs_(runs), data_(data), batch_(batch), options_(options), clock_(clock),
        span_(span), share_(share), sums_(GradientSums(runs)),
        update_(runs, OptimizerFromName(source.optimizer, source.learning_rate),
                source.versioned_weights, source.passes_per_update),
        per_update_(std::max(1, source.passes_per_update)) {}

  void WarmUp() {
    for (; k_ < WarmUpPasses(options_.warmup, static_cast<int>(per_update_)); ++k_) {
      Pass();
      if (StepsAfter(k_)) update_.Run(sums_, clock_, span_);
    }
  }

  // One round of passes (and with `own_core`, one on a core of its own after it). `rewarm`: the
  // process ran other spans since this one's last round, so one untimed pass first puts this
  // span's weights back in the caches, where its worker, which runs nothing else, keeps them.
  void Round(const std::function<void(bool)>& own_core, bool rewarm) {
    if (rewarm) Pass();
    timed_.round_starts.push_back(timed_.passes.size());
    const Clock::time_point round_from = Clock::now();
    bool stepped = false;  // a round ends after a step, so that each has one to time
    do {
      timed_.passes.push_back(Pass());
      timed_.update_copies.emplace_back();
      timed_.updates.emplace_back();
      if (StepsAfter(k_)) {
        timed_.updates.back() = update_.Run(sums_, clock_, span_, &timed_.update_copies.back());
        stepped = true;
      }
      ++k_;
    } while (Since(round_from) < options_.round_seconds || !StepsAfter(k_ - 1) || !stepped);
    timed_.seconds += Since(round_from);
    if (!own_core) return;
    own_core(true);
    const Clock::time_point own_from = Clock::now();
    std::array<double, 3> sum{};
    int passes = 0, steps = 0;
    do {
      const PassTimes pass = Pass();
      for (size_t i = 0; i < pass.forward_ms.size(); ++i)
        sum[0] += pass.forward_ms[i], sum[1] += pass.backward_ms[i];
      if (StepsAfter(k_)) {
        for (double ms : update_.Run(sums_, clock_, span_)) sum[2] += ms;
        ++steps;
      }
      ++k_;
      ++passes;
    } while (Since(own_from) < options_.round_seconds || !StepsAfter(k_ - 1));
    own_core(false);
    sum[0] /= passes, sum[1] /= passes;
    if (steps > 0) sum[2] /= steps;
    timed_.own_core_rounds.push_back(sum);
  }

  // Whether the limits are reached; they count the shared rounds only, which the profile's
  // times come from.
  bool Done() {
    const double elapsed = timed_.seconds;
    const int rounds = static_cast<int>(timed_.round_starts.size());
    if (rounds == 0 || static_cast<int>(timed_.passes.size()) < options_.repeats ||
        elapsed < share_ * options_.min_seconds)
      return false;
    if (options_.target_spread <= 0) return true;
    if (rounds < kLeastRounds && elapsed < share_ * options_.max_seconds) return false;
    timed_.step = EstimateFromRounds(timed_.RoundSteps(model_.LayerCount()));
    return timed_.step.RelativeHalfWidth() <= options_.target_spread ||
           elapsed >= share_ * options_.max_seconds;
  }

  TimedPasses Finish() {
    timed_.step = EstimateFromRounds(timed_.RoundSteps(model_.LayerCount()));
    return timed_;
  }

 private:
  PassTimes Pass() {
    return TrainingPass(model_, runs_, data_, 1 + k_, batch_, sums_, clock_, span_);
  }
  // A step after every source.passes_per_update-th pass, counted over warm-up and timing.
  bool StepsAfter(int64_t pass) const { return (pass + 1) % per_update_ == 0; }
  static double Since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  }

  const Model& model_;
  const std::vector<LayerRun>& runs_;
  DataSource& data_;
  int64_t batch_;
  const ProfileOptions& options_;
  LayerClock& clock_;
  LayerSpan span_;
  double share_;
  std::vector<std::vector<torch::Tensor>> sums_;
  UpdatePass update_;
  int64_t per_update_;
  int64_t k_ = 0;
  TimedPasses timed_;
};

// Each span timed in its own rounds, the spans taking turns round by round so that a machine
// whose speed wanders over seconds moves them all alike, until each has met the limits with its
// share of the time.
std::vector<TimedPasses> TimeSpans(const Model& model, const std::vector<LayerRun>& runs,
                                   DataSource& data, int64_t batch, const Source& source,
                                   const ProfileOptions& options, LayerClock& clock,
                                   const std::vector<LayerSpan>& spans,
                                   const std::function<void(bool)>& own_core = {}) {
  std::vector<std::unique_ptr<StageRounds>> stages;
  for (const LayerSpan& span : spans)
    stages.push_back(std::make_unique<StageRounds>(model, runs, data, batch, source, options,
                                                   clock, span, 1.0 / spans.size()));
  for (auto& stage : stages) stage->WarmUp();
  std::vector<bool> done(stages.size(), false);
  while (std::find(done.begin(), done.end(), false) != done.end())
    for (size_t s = 0; s < stages.size(); ++s)
      if (!done[s]) {
        stages[s]->Round(own_core, stages.size() > 1);
        done[s] = stages[s]->Done();
      }
  std::vector<TimedPasses> timed;
  for (auto& stage : stages) timed.push_back(stage->Finish());
  return timed;
}

// Each figure's time on a core of its own over its time on the shared core, summed over the
// layers and averaged over the rounds of each kind; a figure not measured (no optimizer step)
// stays 0, charged as profiled.
OwnCoreShare OwnCoreShareOf(const std::vector<TimedPasses>& timed, int layers) {
  std::array<double, 3> ratio{};
  for (int figure = 0; figure < 3; ++figure) {
    double shared = 0, own = 0;
    for (const TimedPasses& t : timed) {
      if (t.own_core_rounds.empty()) return {};
      for (int i = 0; i < layers; ++i) shared += Mean(t.RoundMeans(i, figure));
      double span_own = 0;
      for (const std::array<double, 3>& round : t.own_core_rounds) span_own += round[figure];
      own += span_own / static_cast<double>(t.own_core_rounds.size());
    }
    if (shared > 0 && own > 0) ratio[figure] = own / shared;
  }
  return {ratio[0], ratio[1], ratio[2]};
}

// Layer `i` as measured: the mean of its rounds' means, with the half-width of that
// mean's 95% interval when there are several rounds; its bytes.
Layer MeasuredLayer(const Model& model, const LayerRun& r, int i, const TimedPasses& timed,
                    double stash_bytes) {
  Layer l;
  l.id = model.layer_ids[i];
  l.description = "measured with LibTorch";
  const RoundEstimate forward = EstimateFromRounds(timed.RoundMeans(i, 0));
  const RoundEstimate backward = EstimateFromRounds(timed.RoundMeans(i, 1));
  const RoundEstimate step = EstimateFromRounds(timed.RoundMeans(i, 2));
  l.forward_ms = forward.mean;
  l.backward_ms = backward.mean;
  if (!r.parameters.empty()) {
    l.update_ms = step.mean;
    l.gradient_add_ms = std::min(l.backward_ms, Mean(timed.RoundMeans(i, 3)));
    const double copy_ms = Mean(timed.RoundMeans(i, 4));
    if (copy_ms > 0) l.update_copy_ms = std::min(*l.update_ms, copy_ms);
  }
  if (forward.rounds > 1) {
    l.forward_ms_spread = forward.half_width;
    l.backward_ms_spread = backward.half_width;
    if (l.update_ms) l.update_ms_spread = step.half_width;
  }
  if (stash_bytes > 0) l.stash_bytes = stash_bytes;
  l.activation_bytes = static_cast<double>(r.output.numel() * r.output.element_size());
  l.parameter_bytes = static_cast<double>(TensorBytes(r.parameters));
  l.parameters = l.parameter_bytes / 4;
  for (int j : model.layer_inputs[i])
    if (j >= 0) l.inputs.push_back(j);
  return l;
}

// The profile's stability and what disturbed it: the load before and during the timing (other
// processes' CPU time, steal time; partition/util/machine.h's one rule), rounds far off the
// median, a spread that did not settle within the time limit.
// With several spans (a plan's stages timed apart), the step is their steps' sum, its spread
// theirs combined as independent (the root of the squares), its rounds the fewest of any span's.
ProfileStability Stability(const std::vector<TimedPasses>& timed, int layers,
                           const ProfileOptions& options, const MachineLoad& load) {
  ProfileStability q;
  q.rounds = timed.front().step.rounds;
  double variance = 0;
  bool settled = options.target_spread > 0;
  for (const TimedPasses& t : timed) {
    q.rounds = std::min(q.rounds, t.step.rounds);
    q.seconds += t.seconds;
    q.step_ms += t.step.mean;
    variance += t.step.half_width * t.step.half_width;
    q.lowest_round_ms += t.step.lowest;
    q.highest_round_ms += t.step.highest;
    settled = settled && t.step.rounds >= 2 &&
              t.step.RelativeHalfWidth() <= options.target_spread;
  }
  q.step_spread_ms = std::sqrt(variance);
  q.target_spread = options.target_spread;
  q.settled = settled;
  q.disturbances = load.Warnings();
  q.one_core_gflops = load.Gflops();
  for (size_t s = 0; s < timed.size(); ++s) {
    const std::vector<double> steps = timed[s].RoundSteps(layers);
    const std::string of = timed.size() > 1 ? "stage " + std::to_string(s) + "'s " : "";
    for (const FarRound& far : RoundsFarOff(steps)) {
      std::ostringstream line;
      line << of << "round " << far.round + 1 << " of " << steps.size() << " took " << std::fixed
           << std::setprecision(2) << steps[far.round] << " ms a step, " << std::showpos
           << std::setprecision(0) << 100 * far.deviation << std::noshowpos
           << "% from the rounds' median " << std::setprecision(2) << far.median << " ms";
      q.disturbances.push_back(line.str());
    }
    const RoundEstimate& step = timed[s].step;
    if (options.target_spread > 0 && !(step.rounds >= 2 &&
                                       step.RelativeHalfWidth() <= options.target_spread)) {
      std::ostringstream line;
      line << "the " << (timed.size() > 1 ? "stage " + std::to_string(s) + " " : "")
           << "step did not settle: +-" << std::fixed << std::setprecision(1)
           << 100 * step.RelativeHalfWidth() << "% after " << step.rounds << " rounds in "
           << std::setprecision(1) << timed[s].seconds << " s (target +-"
           << 100 * options.target_spread << "%, --max-seconds " << options.max_seconds << ")";
      q.disturbances.push_back(line.str());
    }
  }
  return q;
}

void PrintProfile(std::ostream& out, const Workload& w, const ProfileOptions& options,
                  const Source& source, int batch, size_t passes) {
  const ProfileStability& q = *w.stability;
  out << w.name << ": " << w.LayerCount() << " layers measured at batch " << batch << " on "
      << w.reference.device << " (" << passes << " runs after "
      << WarmUpPasses(options.warmup, source.passes_per_update) << " warm-up, in " << q.rounds
      << " rounds; each figure the mean of its rounds' means, "
      << "+- the 95% interval of that mean)\n\n";
  const auto spread = [](const std::optional<double>& ms) {
    std::ostringstream s;
    if (ms) s << std::fixed << std::setprecision(3) << *ms;
    return ms ? "+-" + s.str() : std::string("");
  };
  out << std::left << std::setw(6) << "#" << std::setw(20) << "id" << std::right << std::setw(10)
      << "fwd ms" << std::setw(10) << "" << std::setw(10) << "bwd ms" << std::setw(10) << ""
      << std::setw(16) << "activation B" << std::setw(14) << "parameters\n";
  for (int i = 0; i < w.LayerCount(); ++i) {
    const Layer& l = w.layers[i];
    out << std::left << std::setw(6) << i << std::setw(20) << l.id << std::right << std::fixed
        << std::setprecision(3) << std::setw(10) << l.forward_ms << std::setw(10)
        << spread(l.forward_ms_spread) << std::setw(10) << l.backward_ms << std::setw(10)
        << spread(l.backward_ms_spread) << std::setprecision(0) << std::setw(16)
        << l.activation_bytes << std::setw(13) << l.parameters << "\n" << std::defaultfloat;
  }
  out << std::fixed << std::setprecision(3) << "\nstep (every layer's forward, backward and "
      << "optimizer step): " << q.step_ms << " ms +-" << q.step_spread_ms << " ("
      << std::setprecision(1) << (q.step_ms > 0 ? 100 * q.step_spread_ms / q.step_ms : 0)
      << "%), rounds from " << std::setprecision(3) << q.lowest_round_ms << " to "
      << q.highest_round_ms << " ms, " << q.rounds << " rounds in " << std::setprecision(1)
      << q.seconds << " s" << (q.settled ? ": settled" : "") << "\n" << std::defaultfloat;
  if (w.own_core.Measured())
    out << "on a core of its own (the load processes of this core paused in alternate rounds): "
        << std::setprecision(3) << w.own_core.forward << " x the forwards' time, "
        << w.own_core.backward << " x the backwards', " << w.own_core.update
        << " x the optimizer steps'\n";
  for (const std::string& d : q.disturbances) out << "warning: " << d << "\n";
  out << std::fixed << std::setprecision(3) << "\ntotal: forward " << w.TotalForwardMs()
      << " ms, backward " << w.TotalBackwardMs() << " ms\n" << std::defaultfloat;
  if (source.plan) PrintPipelineBound(out, w, *source.plan, batch);
  if (!options.output_file.empty()) out << "\nwrote " << options.output_file << "\n";
}

}  // namespace

// What the profile times in passes of their own: each stage of the scenario's plan, as its worker
// runs that stage's layers and nothing else (the stage's input as received, its input gradient
// computed as sent back, the loss on the last stage alone); else the whole model. A layer's time
// depends on what else the process runs: the caches hold the other layers' weights and
// activations too, and the allocator hands out other blocks, so passes of the whole model split
// a pipeline's compute among its stages otherwise than its workers do (docs/validation.md,
// thirty-first session). The planners' profiles, of a workload without a plan, time the whole
// model: their layers are not yet in stages.
std::vector<LayerSpan> SpansToTime(const Model& model, const Source& source,
                                   const ProfileOptions& options) {
  if (options.whole_model || !source.plan || source.plan->StageCount() < 2)
    return {LayerSpan::All(model)};
  const Plan& plan = *source.plan;
  for (size_t p = 0; p < plan.layer_order.size(); ++p)
    if (plan.layer_order[p] != static_cast<int>(p)) return {LayerSpan::All(model)};
  std::vector<LayerSpan> spans;
  for (const auto& stage : plan.stages) spans.push_back({stage.first_layer, stage.last_layer});
  return spans;
}

int RunProfile(const ProfileOptions& options) {
  const Source source = ReadSource(options.workload);
  const int batch = options.batch > 0 ? options.batch : source.reference_batch;
  at::set_num_threads(options.threads);
  SetBlasThreads(options.threads);
  UseCachingCpuAllocator();  // the executor's allocator (cpu_allocator.h)
  ProcessEnv env;  // the GPU of LOCAL_RANK when a launcher set it, else the first
  if (const char* local = std::getenv("LOCAL_RANK")) env.local_rank = std::atoi(local);
  const ExecDevice device = SelectDevice(options.device, options.precision, env);
  const Model model = BuildModel(source.network);
  auto data = MakeDataSource("synthetic", "", model, 1);
  const std::vector<LayerRun> runs = PrepareLayers(model, data->Train(0, batch), device);
  if (options.load_cpu >= 0) RunLoad(model, runs, *data, batch, options.load_cpu);
  const int cores = CoresAvailable();
  const bool time_shared = CheckedTimeSharing(options, cores);
  // The load before the timing starts (other programs, steal time) and during it, for the
  // profile's disturbances; the load processes' own CPU time is the profile's, not foreign.
  MachineLoad load;
  load.subject = "profile";
  load.cpus = cores;
  load.load_average_1m = LoadAverage1m();
  const std::vector<int> cpus = AllowedCpus();
  if (!device.cuda()) {
    load.before = SampleLoad(cpus, 0.3);
    load.sampled_before = true;
    load.gflops_before = OneCoreGflops();  // the machine's speed, before the load processes
  }
  LayerClock clock(time_shared, device);
  // The load processes pin themselves within the mask they inherit: pin this one after.
  std::optional<LoadProcesses> load_processes;
  load_processes.emplace(options, batch, cores);
  if (options.concurrent > 1) PinToCore(0);

  const std::vector<LayerSpan> spans = SpansToTime(model, source, options);
  Workload w = MeasuredWorkload(model, options, batch, time_shared, cores, device,
                                source.passes_per_update, static_cast<int>(spans.size()));
  std::vector<double> stash_bytes(model.LayerCount(), 0);
  {
    auto sums = GradientSums(runs);
    const AllocatorProbe allocator(device);
    TrainingPass(model, runs, *data, 0, batch, sums, clock, LayerSpan::All(model), &allocator,
                 &stash_bytes);
  }
  const CpuTimes cpu_from = ReadCpuTimes();
  const double own_from = ProcessCpuSeconds() + load_processes->CpuSeconds();
  std::function<void(bool)> own_core;
  if (load_processes->ShareThisCore())
    own_core = [&](bool pause) { load_processes->PauseThisCore(pause); };
  const auto timed_from = Clock::now();
  const std::vector<TimedPasses> timed =
      TimeSpans(model, runs, *data, batch, source, options, clock, spans, own_core);
  const double wall_seconds = std::chrono::duration<double>(Clock::now() - timed_from).count();
  if (!device.cuda()) {
    load.during = ShareBetween(cpu_from, ReadCpuTimes(), cpus, wall_seconds,
                               ProcessCpuSeconds() + load_processes->CpuSeconds() - own_from);
    load.measured_during = true;
    load_processes.reset();  // stopped, so that the speed is read as before the rounds
    load.gflops_after = OneCoreGflops();
  }
  for (int i = 0; i < model.LayerCount(); ++i)
    for (size_t s = 0; s < spans.size(); ++s)
      if (i >= spans[s].first && i <= spans[s].last)
        w.layers.push_back(MeasuredLayer(model, runs[i], i, timed[s], stash_bytes[i]));
  w.stability = Stability(timed, model.LayerCount(), options, load);
  w.own_core = OwnCoreShareOf(timed, model.LayerCount());
  ValidateAndSortWorkload(w, options.workload);

  if (!options.output_file.empty()) SaveWorkloadFile(w, options.output_file);
  if (options.json) {
    std::cout << JsonText(WorkloadToJson(w), 1) << "\n";
    return 0;
  }
  std::ostringstream out;
  size_t passes = 0;
  for (const TimedPasses& t : timed) passes += t.passes.size();
  PrintProfile(out, w, options, source, batch, passes);
  std::cout << out.str();
  return 0;
}

}  // namespace pipetwin::exec
