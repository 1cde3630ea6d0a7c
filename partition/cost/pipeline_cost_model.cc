#include "partition/cost/pipeline_cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "partition/util/error.h"
#include "partition/util/format.h"
#include "partition/cost/communication.h"
#include "partition/cost/memory.h"
#include "partition/cost/stage_costs.h"

namespace pipetwin {

namespace {

void Require(bool rule_holds, const std::string& message) {
  if (!rule_holds) throw InputError("planner: " + message);
}

bool FiniteAtLeast(double x, double minimum) { return std::isfinite(x) && x >= minimum; }
bool FinitePositive(double x) { return std::isfinite(x) && x > 0; }

// "8 x 4" for a cluster of 4 servers of 8 devices.
std::string DescribeShape(const Cluster& c) {
  std::string out;
  for (const ClusterLevel& l : c.levels) out += (out.empty() ? "" : " x ") + std::to_string(l.count);
  return out;
}

void ValidateCluster(const Cluster& c) {
  Require(!c.levels.empty(), "the cluster has no levels, so no workers");
  for (size_t i = 0; i < c.levels.size(); ++i) {
    const ClusterLevel& l = c.levels[i];
    const std::string name = "cluster level " + std::to_string(i) + " (\"" + l.name + "\")";
    Require(l.count >= 1, name + " has count " + std::to_string(l.count) +
                              ": every level needs count >= 1 (zero workers)");
    Require(FinitePositive(l.bandwidth_gbps),
            name + " has bandwidth " + ShortNumber(l.bandwidth_gbps) + " Gbps: needs > 0");
    Require(FiniteAtLeast(l.latency_us, 0),
            name + " has latency " + ShortNumber(l.latency_us) + " us: needs >= 0");
  }
  Require(FinitePositive(c.device.memory_bytes),
          "device memory must be > 0 bytes, got " + ShortNumber(c.device.memory_bytes));
  Require(FinitePositive(c.device.relative_speed),
          "device relative_speed must be > 0, got " + ShortNumber(c.device.relative_speed));
  Require(FiniteAtLeast(c.launch_overhead_us, 0) && FiniteAtLeast(c.communication_overhead_us, 0),
          "cluster overheads must be >= 0");
}

void ValidateSettings(const CostSettings& s, const Cluster& c, int layers) {
  Require(s.workers >= 0, "workers must be >= 0 (0: all), got " + std::to_string(s.workers));
  Require(s.workers <= c.DeviceCount(),
          std::to_string(s.workers) + " workers requested but the cluster (" + DescribeShape(c) +
              ") holds " + std::to_string(c.DeviceCount()));
  Require(FiniteAtLeast(s.memory_bytes_per_device, 0), "memory_bytes_per_device must be >= 0");
  Require(FiniteAtLeast(s.parameter_dtype_bytes, 0) && FiniteAtLeast(s.gradient_dtype_bytes, 0),
          "parameter and gradient dtype bytes must be >= 0 (0: the workload's)");
  Require(FiniteAtLeast(s.optimizer_bytes_per_parameter, 0),
          "optimizer_bytes_per_parameter must be >= 0, got " +
              ShortNumber(s.optimizer_bytes_per_parameter));
  Require(s.stash_bytes_per_layer.empty() ||
              static_cast<int>(s.stash_bytes_per_layer.size()) == layers,
          "stash_bytes_per_layer has " + std::to_string(s.stash_bytes_per_layer.size()) +
              " entries but the workload has " + std::to_string(layers) + " layers");
  for (double x : s.stash_bytes_per_layer)
    Require(FiniteAtLeast(x, 0), "stash_bytes_per_layer entries must be >= 0, got " + ShortNumber(x));
}

std::vector<double> Prefix(const std::vector<double>& values) {
  std::vector<double> out(values.size() + 1, 0);
  for (size_t i = 0; i < values.size(); ++i) out[i + 1] = out[i] + values[i];
  return out;
}

}  // namespace

PipelineCostModel::PipelineCostModel(const Workload& workload, const Cluster& cluster,
                                     const CostSettings& settings)
    : cluster_(cluster), settings_(settings) {
  const int layers = workload.LayerCount();
  Require(layers >= 1, "the workload has no layers");
  Require(workload.reference.batch_size >= 1, "the workload's reference batch size must be >= 1");
  Require(FinitePositive(workload.parameter_dtype_bytes),
          "the workload's parameter_dtype_bytes must be > 0");
  ValidateCluster(cluster);
  ValidateSettings(settings, cluster, layers);
  workers_ = settings.workers > 0 ? settings.workers : cluster.DeviceCount();
  capacity_bytes_ = settings.memory_bytes_per_device > 0 ? settings.memory_bytes_per_device
                                                         : cluster.device.memory_bytes;
  parameter_dtype_bytes_ = settings.parameter_dtype_bytes > 0 ? settings.parameter_dtype_bytes
                                                              : workload.parameter_dtype_bytes;
  gradient_dtype_bytes_ =
      settings.gradient_dtype_bytes > 0   ? settings.gradient_dtype_bytes
      : workload.gradient_dtype_bytes > 0 ? workload.gradient_dtype_bytes
                                          : parameter_dtype_bytes_;
  samples_per_reference_ = workload.reference.batch_size;
  stash_holds_input_ = workload.stash_holds_input;
  load_ms_per_sample_ = LoadMs(workload, 1);

  // Per sample (cost/stage_costs.h's rule): the reference batch's times and bytes scale
  // linearly with the batch.
  const double per_sample = 1.0 / samples_per_reference_;
  const double per_sample_ms =
      TimeScale(workload, 1, SpeedOverReference(cluster, workload.reference.device));
  std::vector<double> forward(layers), backward(layers), parameters(layers), stash(layers);
  for (int i = 0; i < layers; ++i) {
    const Layer& l = workload.layers[i];
    forward[i] = l.forward_ms * per_sample_ms;
    backward[i] = l.backward_ms * per_sample_ms;
    parameters[i] = workload.LayerParameters(i);
    stash[i] = (settings.stash_bytes_per_layer.empty() ? l.activation_bytes
                                                       : settings.stash_bytes_per_layer[i]) *
               per_sample;
  }
  forward_ms_ = Prefix(forward);
  backward_ms_ = Prefix(backward);
  parameters_ = Prefix(parameters);
  stash_bytes_ = Prefix(stash);
  cut_bytes_ = CutBytesPerSample(workload, {});  // the planners cut the topological order
  const bool by_layer = std::any_of(workload.layers.begin(), workload.layers.end(), [](const Layer& l) {
    return l.checkpoint_bytes || !l.recomputed;
  });
  for (int i = 0; by_layer && i < layers; ++i) {
    const Layer& l = workload.layers[i];
    RecomputedLayer r;
    r.input_bytes = i > 0 ? cut_bytes_[i - 1] : 0;
    r.stash_bytes = stash[i];
    r.forward_ms = forward[i];
    if (l.checkpoint_bytes) r.checkpoint_bytes = *l.checkpoint_bytes * per_sample;
    r.recomputed = l.recomputed;
    recomputed_.push_back(r);
  }
}

RecomputeFootprint PipelineCostModel::Recompute(int first, int last, int b) const {
  if (recomputed_.empty())
    return {BoundaryBytes(first - 1, b), StashBytes(first, last, b),
            b * (forward_ms_[last + 1] - forward_ms_[first])};
  std::vector<RecomputedLayer> stage(recomputed_.begin() + first, recomputed_.begin() + last + 1);
  for (RecomputedLayer& r : stage) {
    r.input_bytes *= b, r.stash_bytes *= b, r.forward_ms *= b;
    if (r.checkpoint_bytes) *r.checkpoint_bytes *= b;
  }
  stage.front().input_bytes = BoundaryBytes(first - 1, b);
  return StageRecomputeFootprint(stage, stash_holds_input_);
}

double PipelineCostModel::ComputeMs(int first, int last, int b, bool recompute) const {
  const double forward = forward_ms_[last + 1] - forward_ms_[first];
  const double backward = backward_ms_[last + 1] - backward_ms_[first];
  // Recomputation runs the forward pass again before the backward (2BW section 4.1; appendix
  // A.1.1's c_extra = 4/3 when the backward takes twice the forward).
  const int operations_per_layer = recompute ? 3 : 2;
  const double compute =
      b * (forward + backward) + (recompute ? Recompute(first, last, b).recompute_ms : 0) +
      (last - first + 1) * operations_per_layer * cluster_.launch_overhead_us * 1e-3;
  if (first != 0 || load_ms_per_sample_ <= 0) return compute;
  return InputStageMs(compute, b * load_ms_per_sample_, settings_.data_loading);
}

double PipelineCostModel::BackwardMs(int first, int last, int b, bool recompute) const {
  const double backward = backward_ms_[last + 1] - backward_ms_[first];
  return b * backward + (recompute ? Recompute(first, last, b).recompute_ms : 0) +
         (last - first + 1) * (recompute ? 2 : 1) * cluster_.launch_overhead_us * 1e-3;
}

double PipelineCostModel::StashBytes(int first, int last, int b) const {
  return b * (stash_bytes_[last + 1] - stash_bytes_[first]);
}

double PipelineCostModel::BoundaryBytes(int last, int b) const {
  return last < 0 ? 0 : b * cut_bytes_[last];
}

// Ring all-reduce moves 2 (p-1)/p of the data over each link and takes 2 (p-1) steps (Patarasuk
// and Yuan, JPDC 2009). Hierarchically (Jia et al., arXiv:1807.11205, 2018): a ring among the g_0
// devices of each server reduce-scatters, a ring among the g_1 servers all-reduces the 1/g_0
// shard, and so on up; the all-gathers mirror the reduce-scatters. With one replica per server
// this is a single ring over the slowest level the replicas span. g_l = (units of level l-1
// touched) / (units of level l touched), exact for the symmetric sets our placement makes.
LinearCost PipelineCostModel::AllReduceCost(const std::vector<int>& devices) const {
  return RingAllReduceCost(cluster_, devices);
}

LinearCost PipelineCostModel::TransferCost(int device_a, int device_b) const {
  return pipetwin::TransferCost(cluster_, device_a, device_b);
}

PipelinePlacement PipelineCostModel::Place(int depth, int width) const {
  Require(depth >= 1 && width >= 1 && depth * width <= workers_,
          "a pipeline of depth " + std::to_string(depth) + " and width " + std::to_string(width) +
              " needs " + std::to_string(depth * width) + " workers, " +
              std::to_string(workers_) + " available");
  PipelinePlacement p;
  p.depth = depth;
  p.width = width;
  p.devices.resize(depth);
  p.send_next.resize(depth);
  p.allreduce.resize(depth);
  for (int s = 0; s < depth; ++s) {
    for (int k = 0; k < width; ++k) {
      const int device = k * depth + s;
      p.devices[s].push_back(device);
      if (s + 1 < depth) {  // the slowest replica's link sets the stage's pace
        const LinearCost link = TransferCost(device, device + 1);
        p.send_next[s].fixed_ms = std::max(p.send_next[s].fixed_ms, link.fixed_ms);
        p.send_next[s].ms_per_byte = std::max(p.send_next[s].ms_per_byte, link.ms_per_byte);
      }
    }
  }
  // Every stage all-reduces after its batch, at about the same time: their rings share each
  // server's uplink, as the simulator's links share it.
  p.allreduce = ConcurrentRingAllReduceCosts(cluster_, p.devices);
  std::map<LinkDirection, int> number;
  p.transfer_routes.resize(std::max(0, depth - 1));
  for (int s = 0; s + 1 < depth; ++s)
    for (int k = 0; k < width; ++k)
      p.transfer_routes[s].push_back(
          {NumberedRoute(cluster_, p.devices[s][k], p.devices[s + 1][k], &number),
           NumberedRoute(cluster_, p.devices[s + 1][k], p.devices[s][k], &number)});
  for (const auto& group : p.devices) {
    p.allreduce_alone.push_back(AllReduceCost(group));
    LinkWork work;
    AddRingWork(cluster_, group, 1, &work);
    const LinkFlows flows = RingFlows(cluster_, group);
    p.ring_per_byte.emplace_back();
    for (const auto& [link, ms] : work) {
      const auto it = flows.find(link);
      p.ring_per_byte.back().push_back(
          {number.emplace(link, static_cast<int>(number.size())).first->second, ms,
           it == flows.end() ? 1 : it->second});
    }
  }
  p.links.resize(number.size());
  for (const auto& [link, n] : number) p.links[n] = link;
  return p;
}

std::vector<double> PipelineCostModel::RingWork(const PipelinePlacement& p,
                                                const std::vector<double>& gradient_bytes) const {
  std::vector<double> work(p.links.size(), 0);
  for (size_t s = 0; s < gradient_bytes.size(); ++s)
    for (const RingLoad& load : p.ring_per_byte[s]) work[load.link] += load.ms * gradient_bytes[s];
  return work;
}

double PipelineCostModel::BusiestLinkMs(const PipelinePlacement& p,
                                        const std::vector<double>& gradient_bytes) const {
  if (cluster_.network_model == "contention_free") return 0;  // flows do not share
  const std::vector<double> work = RingWork(p, gradient_bytes);
  return work.empty() ? 0 : *std::max_element(work.begin(), work.end());
}

StageTimes PipelineCostModel::Times(const PipelinePlacement& p, int stage, int first, int last,
                                    int b, bool recompute) const {
  StageTimes t;
  t.compute_ms = ComputeMs(first, last, b, recompute);
  // PipeDream-2BW appendix A.1.1: T_comm(j -> i) = 2 |A(b)| / bandwidth for each neighbour j
  // (the activation one way, its gradient back), on top of the compute.
  if (stage + 1 < p.depth) t.transfer_ms += 2 * p.send_next[stage].Ms(BoundaryBytes(last, b));
  if (stage > 0) t.transfer_ms += 2 * p.send_next[stage - 1].Ms(BoundaryBytes(first - 1, b));
  t.allreduce_ms = p.allreduce[stage].Ms(Parameters(first, last) * gradient_dtype_bytes_);
  return t;
}

bool PipelineCostModel::RingsCrossServers(const PipelinePlacement& p) const {
  if (cluster_.levels.size() < 2) return false;
  const int server = cluster_.DevicesPerUnit(0);
  for (const auto& group : p.devices)
    for (int d : group)
      if (d / server != group.front() / server) return true;
  return false;
}

bool PipelineCostModel::TransfersCrossServers(const PipelinePlacement& p) const {
  for (int s = 0; s + 1 < p.depth; ++s)
    for (int k = 0; k < p.width; ++k)
      if (cluster_.LinkLevel(p.devices[s][k], p.devices[s + 1][k]) >= 1) return true;
  return false;
}

MemoryCategories PipelineCostModel::Memory(int first, int last, int b, int weight_versions,
                                          int stashed_microbatches, bool recompute) const {
  WorkerMemoryInputs in;
  in.parameters = Parameters(first, last);
  in.parameter_dtype_bytes = parameter_dtype_bytes_;
  in.gradient_dtype_bytes = gradient_dtype_bytes_;
  in.optimizer_bytes_per_parameter = settings_.optimizer_bytes_per_parameter;
  in.weight_versions = weight_versions;
  in.stash_bytes_per_microbatch = StashBytes(first, last, b);
  in.input_bytes_per_microbatch = BoundaryBytes(first - 1, b);
  in.stash_holds_input = stash_holds_input_;
  in.stashed_microbatches = stashed_microbatches;
  in.recompute = recompute;
  if (recompute) in.recompute_footprint = Recompute(first, last, b);
  return WorkerMemory(in);
}

StageEstimate PipelineCostModel::EstimateStage(const PipelinePlacement& p, int stage, int first,
                                               int last, int b, bool recompute,
                                               int weight_versions,
                                               int stashed_microbatches) const {
  StageEstimate e;
  e.first_layer = first;
  e.last_layer = last;
  e.devices = p.devices[stage];
  e.times = Times(p, stage, first, last, b, recompute);
  e.memory = Memory(first, last, b, weight_versions, stashed_microbatches, recompute);
  return e;
}

double PipelineCostModel::SyncBytes(int first, int last) const {
  return GradientSyncBytes(GradientBytes(first, last), Parameters(first, last) * parameter_dtype_bytes_,
                           settings_.sharded_optimizer);
}

}  // namespace pipetwin
