// `pipetwin profile`: each layer's forward and backward time on this machine (median of repeated
// runs after warm-up), its output activation bytes and parameter bytes, written as a workload
// file (partition/workload.h) that the planners and the simulator take.
//
// A layer is timed alone, on inputs taken from one forward pass of the whole model: the forward
// with autograd recording (as in training), the backward as the gradients of the layer's output
// with respect to its inputs and parameters.
#include <algorithm>
#include <chrono>
#include <iomanip>
#include <iostream>
#include <sstream>

#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "exec/data.h"
#include "exec/job.h"
#include "exec/launcher.h"
#include "exec/model.h"
#include "exec/weights.h"
#include "exec/worker.h"
#include "partition/error.h"
#include "partition/json_reader.h"
#include "partition/workload.h"

namespace pipetwin::exec {

namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

template <typename F>
double MedianMs(int warmup, int repeats, F&& run) {
  for (int i = 0; i < warmup; ++i) run();
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i) {
    const auto start = Clock::now();
    run();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
  }
  return Median(ms);
}

struct Source {
  ModelSpec model;
  std::string file;
  std::optional<Plan> plan;  // a scenario's explicit plan, for the pipeline bound
  int reference_batch = 1;
};

Source ReadSource(const std::string& path) {
  const nlohmann::json doc = ParseJsonFile(path);
  Source s;
  s.file = path;
  if (doc.is_object() && doc.contains("workload")) {
    Scenario scenario = LoadScenarioFile(path);
    s.model = ModelSpecFromSource(scenario.source["workload"], path, "workload");
    s.plan = scenario.plan;
    s.reference_batch = scenario.training.microbatch_size;
  } else {
    s.model = ModelSpecFromSource(doc, path, "");
    s.reference_batch = s.model.generator == "mlp"   ? s.model.mlp.batch
                        : s.model.cnn.batch > 0 && (s.model.generator == "vgg16" ||
                                                    s.model.generator == "resnet50")
                            ? s.model.cnn.batch
                            : s.model.transformer.microbatch;
  }
  return s;
}

std::string HostDescription(int threads) {
  char name[256] = {0};
  ::gethostname(name, sizeof name - 1);
  return std::string(name) + " CPU, " + std::to_string(threads) + " thread" +
         (threads > 1 ? "s" : "");
}

// Prints 1 / (slowest stage's forward + backward time) for each plan stage.
void PrintPipelineBound(std::ostream& out, const Workload& w, const Plan& plan, int batch) {
  double slowest_ms = 0;
  out << "\npipeline bound of the scenario's plan at micro-batch " << batch << ":\n";
  for (int s = 0; s < plan.StageCount(); ++s) {
    double ms = 0;
    for (int i = plan.stages[s].first_layer; i <= plan.stages[s].last_layer; ++i)
      ms += w.layers[i].forward_ms + w.layers[i].backward_ms;
    ms /= plan.stages[s].replicas;
    out << "  stage " << s << ": " << std::fixed << std::setprecision(3) << ms
        << " ms per micro-batch (forward + backward)\n";
    slowest_ms = std::max(slowest_ms, ms);
  }
  out << "  bound: " << std::setprecision(2) << 1e3 / slowest_ms * batch
      << " samples/s (1 / slowest stage)\n" << std::defaultfloat;
}


// What timing one layer needs: its inputs (taken from one forward pass of the whole model), its
// parameters, and the tensors its backward differentiates against.
struct LayerRun {
  std::vector<torch::Tensor> inputs, parameters, targets;
  torch::Tensor output;
};

std::vector<LayerRun> PrepareLayers(const Model& model, int batch) {
  auto data = MakeDataSource("synthetic", "", model, 1);
  const Batch sample = data->Train(0, batch);
  std::vector<LayerRun> runs(model.LayerCount());
  std::vector<torch::Tensor> outputs;
  {
    torch::NoGradGuard no_grad;
    for (int i = 0; i < model.LayerCount(); ++i) {
      at::Generator g = at::detail::createCPUGenerator(1000003ULL + i);
      runs[i].parameters = model.layers[i]->InitialParameters(g);
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

// One forward of layer i with autograd recording and, when `backward`, its backward; returns the
// backward's time in ms (the forward's graph is built outside the timed part).
double ForwardBackward(const Model& model, const LayerRun& r, int i, bool backward) {
  torch::Tensor y = model.layers[i]->Forward(r.inputs, r.parameters);
  if (!backward || r.targets.empty()) return 0;
  const torch::Tensor grad_out = torch::ones_like(y);
  const auto start = Clock::now();
  torch::autograd::grad({y}, r.targets, {grad_out}, false, false, /*allow_unused=*/true);
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

int CoresAvailable() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

// The k-th core of this process's affinity mask.
void PinToCore(int k) {
  cpu_set_t allowed, one;
  CPU_ZERO(&allowed);
  CPU_ZERO(&one);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
  for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &allowed) && seen++ == k) {
      CPU_SET(cpu, &one);
      sched_setaffinity(0, sizeof one, &one);
      return;
    }
}

// `--concurrent N`: the other N-1 workers of a pipeline sharing this machine. Two processes on
// two cores of this VM each run a GEMM ~40% slower than one alone (shared caches and memory
// bandwidth), so a layer timed on an idle machine overstates what a pipeline's workers get. Each
// load process is this program again (`profile ... --load-cpu K`), pinned to core K, computing
// the same layers' forwards and backwards in a loop until we kill it; it dies with us
// (PR_SET_PDEATHSIG) and says "ready" on a pipe after its first pass, so the timing starts under
// full load.
class LoadProcesses {
 public:
  LoadProcesses(const ProfileOptions& o, int batch) {
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
            std::to_string(o.threads), "--load-cpu", std::to_string(k)};
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
  LoadProcesses(const LoadProcesses&) = delete;
  LoadProcesses& operator=(const LoadProcesses&) = delete;

 private:
  std::vector<pid_t> pids_;
};

// A load process: the layers' forwards and backwards in a loop, forever.
[[noreturn]] void RunLoad(const Model& model, const std::vector<LayerRun>& runs, int cpu) {
  PinToCore(cpu);
  for (bool ready = false;; ready = true) {
    for (int i = 0; i < model.LayerCount(); ++i) ForwardBackward(model, runs[i], i, true);
    if (!ready) {
      std::cout << "ready" << std::endl;
    }
  }
}

}  // namespace

int RunProfile(const ProfileOptions& options) {
  const Source source = ReadSource(options.workload);
  const int batch = options.batch > 0 ? options.batch : source.reference_batch;
  at::set_num_threads(options.threads);
  SetBlasThreads(options.threads);
  const Model model = BuildModel(source.model);
  const std::vector<LayerRun> runs = PrepareLayers(model, batch);
  if (options.load_cpu >= 0) RunLoad(model, runs, options.load_cpu);
  const int cores = CoresAvailable();
  if (options.concurrent * options.threads > cores)
    throw InputError(options.workload, "",
                     "--concurrent " + std::to_string(options.concurrent) + " x --threads " +
                         std::to_string(options.threads) + " needs more than the " +
                         std::to_string(cores) + " cores this process may use");
  if (options.concurrent > 1) PinToCore(0);
  LoadProcesses load(options, batch);

  Workload w;
  w.name = model.name + "-measured";
  w.reference.batch_size = batch;
  w.reference.device = HostDescription(options.threads);
  if (options.concurrent > 1)
    w.reference.device += ", " + std::to_string(options.concurrent) + " processes computing at once";
  w.reference.source = "measured";
  w.parameter_dtype_bytes = 4;
  for (int i = 0; i < model.LayerCount(); ++i) {
    const LayerRun& r = runs[i];
    Layer l;
    l.id = model.layer_ids[i];
    l.description = "measured with LibTorch";
    l.forward_ms = MedianMs(options.warmup, options.repeats,
                            [&] { ForwardBackward(model, r, i, /*backward=*/false); });
    // Backward alone: each repeat builds a fresh graph, then only the gradients are timed.
    std::vector<double> backward_ms;
    for (int k = 0; k < options.warmup + options.repeats; ++k) {
      const double ms = ForwardBackward(model, r, i, /*backward=*/true);
      if (k >= options.warmup) backward_ms.push_back(ms);
    }
    l.backward_ms = Median(backward_ms);
    l.activation_bytes = static_cast<double>(r.output.numel() * r.output.element_size());
    l.parameter_bytes = static_cast<double>(TensorBytes(r.parameters));
    l.parameters = l.parameter_bytes / 4;
    for (int j : model.layer_inputs[i])
      if (j >= 0) l.inputs.push_back(j);
    w.layers.push_back(std::move(l));
  }
  ValidateAndSortWorkload(w, options.workload);

  if (!options.output_file.empty()) SaveWorkloadFile(w, options.output_file);
  if (options.json) {
    std::cout << WorkloadToJson(w).dump(1) << "\n";
    return 0;
  }
  std::ostringstream out;
  out << w.name << ": " << w.LayerCount() << " layers measured at batch " << batch << " on "
      << w.reference.device << " (median of " << options.repeats << " after " << options.warmup
      << " warm-up)\n\n";
  out << std::left << std::setw(6) << "#" << std::setw(20) << "id" << std::right << std::setw(12)
      << "fwd ms" << std::setw(12) << "bwd ms" << std::setw(16) << "activation B"
      << std::setw(14) << "parameters\n";
  for (int i = 0; i < w.LayerCount(); ++i) {
    const Layer& l = w.layers[i];
    out << std::left << std::setw(6) << i << std::setw(20) << l.id << std::right << std::fixed
        << std::setprecision(3) << std::setw(12) << l.forward_ms << std::setw(12) << l.backward_ms
        << std::setprecision(0) << std::setw(16) << l.activation_bytes << std::setw(13)
        << l.parameters << "\n" << std::defaultfloat;
  }
  out << "\ntotal: forward " << w.TotalForwardMs() << " ms, backward " << w.TotalBackwardMs()
      << " ms\n";
  if (source.plan) PrintPipelineBound(out, w, *source.plan, batch);
  if (!options.output_file.empty()) out << "\nwrote " << options.output_file << "\n";
  std::cout << out.str();
  return 0;
}

}  // namespace pipetwin::exec
