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

#include <unistd.h>

#include "exec/data.h"
#include "exec/job.h"
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

}  // namespace

int RunProfile(const ProfileOptions& options) {
  const Source source = ReadSource(options.workload);
  const int batch = options.batch > 0 ? options.batch : source.reference_batch;
  at::set_num_threads(options.threads);
  SetBlasThreads(options.threads);
  const Model model = BuildModel(source.model);
  auto data = MakeDataSource("synthetic", "", model, 1);
  const Batch sample = data->Train(0, batch);

  // One forward of the whole model gives every layer's inputs.
  std::vector<std::vector<torch::Tensor>> parameters;
  std::vector<torch::Tensor> outputs;
  {
    torch::NoGradGuard no_grad;
    for (int i = 0; i < model.LayerCount(); ++i) {
      at::Generator g = at::detail::createCPUGenerator(1000003ULL + i);
      parameters.push_back(model.layers[i]->InitialParameters(g));
      std::vector<torch::Tensor> in;
      for (int j : model.layer_inputs[i]) in.push_back(j < 0 ? sample.input : outputs[j]);
      outputs.push_back(model.layers[i]->Forward(in, parameters.back()));
    }
  }

  Workload w;
  w.name = model.name + "-measured";
  w.reference.batch_size = batch;
  w.reference.device = HostDescription(options.threads);
  w.reference.source = "measured";
  w.parameter_dtype_bytes = 4;
  for (int i = 0; i < model.LayerCount(); ++i) {
    std::vector<torch::Tensor> inputs, targets;
    for (int j : model.layer_inputs[i]) {
      torch::Tensor x = j < 0 ? sample.input : outputs[j];
      if (x.is_floating_point()) x = x.detach().requires_grad_(true), targets.push_back(x);
      inputs.push_back(x);
    }
    std::vector<torch::Tensor> p;
    for (auto& t : parameters[i]) p.push_back(t.detach().requires_grad_(true)), targets.push_back(p.back());
    const LayerFunction& layer = *model.layers[i];
    Layer l;
    l.id = model.layer_ids[i];
    l.description = "measured with LibTorch";
    l.forward_ms = MedianMs(options.warmup, options.repeats, [&] { layer.Forward(inputs, p); });
    const torch::Tensor grad_out = torch::ones_like(outputs[i]);
    // Backward alone: each repeat builds a fresh graph, then only the gradients are timed.
    std::vector<double> backward_ms;
    for (int r = 0; r < options.warmup + options.repeats; ++r) {
      torch::Tensor y = layer.Forward(inputs, p);
      const auto start = Clock::now();
      if (!targets.empty())
        torch::autograd::grad({y}, targets, {grad_out}, false, false, /*allow_unused=*/true);
      const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
      if (r >= options.warmup) backward_ms.push_back(ms);
    }
    l.backward_ms = Median(backward_ms);
    l.activation_bytes = static_cast<double>(outputs[i].numel() * outputs[i].element_size());
    l.parameter_bytes = static_cast<double>(TensorBytes(parameters[i]));
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
