#include "exec/runtime/stage_executor.h"

#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <set>
#include <tuple>

#include "exec/runtime/cpu_allocator.h"
#include "partition/util/machine.h"

namespace pipetwin::exec {

namespace {

// Micro-batch numbers of the test pass, clear of the training tags.
constexpr int kEvaluationMicrobatchBase = 1 << 24;

int64_t Bytes(const std::vector<torch::Tensor>& tensors) { return TensorBytes(tensors); }

// PIPETWIN_EXEC_FAIL_AT=RANK:OP makes worker RANK kill itself (SIGKILL) at its OP-th op, and
// RANK:OP:stop stop itself (SIGSTOP: alive, making no progress), RANK:OP:hang wait forever (a
// running process that never answers), RANK:OP:error fail inside LibTorch on its device (an
// index out of range: on a GPU a device-side assert, a CUDA error that loses the context as a
// kernel fault does): the fault tests' way to lose a worker mid-run.
constexpr int kDeviceError = -1;
int FailAtOp(int rank, int* signal) {
  const char* spec = std::getenv("PIPETWIN_EXEC_FAIL_AT");
  if (!spec) return -1;
  int r = -1, op = -1;
  char how[8] = "";
  if (std::sscanf(spec, "%d:%d:%7s", &r, &op, how) < 2 || r != rank) return -1;
  const std::string kind = how;
  *signal = kind == "stop" ? SIGSTOP : kind == "hang" ? 0 : kind == "error" ? kDeviceError : SIGKILL;
  return op;
}

}  // namespace

// --- AllocatorProbe ---

AllocatorProbe::AllocatorProbe(const ExecDevice& device) : device_(device) {
  UseCachingCpuAllocator();
}
int64_t AllocatorProbe::allocated() const { return AllocatedBytes(device_); }
int64_t AllocatorProbe::peak() const {
  if (auto view = CudaAllocatorView(device_))
    return static_cast<int64_t>(view->allocated_peak_bytes);
  return CachingCpuAllocatorStats().peak_live_bytes;
}

// Timer keys of the waits for blocking sends, clear of the op indices.
constexpr size_t kSendWaitKey = size_t{1} << 40;

// --- StageExecutor ---

StageExecutor::StageExecutor(const ExecutorJob& job, const WorkerProgram& program,
                             const StageModel& stage, DataSource* data, Communicator& comm,
                             const AllocatorProbe& allocator, WorkerMeasurement& measurement,
                             const ExecDevice& device, int model_stage)
    : job_(job), program_(program), stage_(stage),
      model_stage_(model_stage >= 0 ? model_stage : program.stage), siblings_{this},
      data_(data), comm_(comm),
      allocator_(allocator), out_(measurement), device_(device),
      // Every worker draws its initial weights on the CPU (one generator per layer and seed):
      // a stage's weights are the same on every device.
      weights_(device.ToDevice(stage.InitialParameters(job.options.seed)),
               OptimizerFromName(job.scenario.training.optimizer,
                                 job.scenario.training.learning_rate)),
      stashing_(job.schedule.weight_stashing), recompute_(job.schedule.recompute) {
  bool replicated = false;
  for (const Op& op : program.ops) replicated = replicated || op.kind == OpKind::kAllReduce;
  if (replicated) {
    // A replicated stage's sums are views of one flat buffer, its last element the micro-batch
    // count: the all-reduce then runs on it in place (no copy of every gradient into a buffer and
    // back), and the simulator's measured all-reduce is all it costs.
    int64_t elements = 1;
    for (const auto& p : weights_.Current()) elements += p.numel();
    gradient_flat_ = torch::zeros({elements}, device_.options());
    int64_t offset = 0;
    for (const auto& p : weights_.Current()) {
      gradient_sum_.push_back(gradient_flat_.narrow(0, offset, p.numel()).view_as(p));
      offset += p.numel();
    }
  } else {
    for (const auto& p : weights_.Current()) gradient_sum_.push_back(torch::zeros_like(p));
  }
  fail_at_op_ = FailAtOp(comm.rank(), &fail_signal_);
  DumpWeights();
}

// The c10d tag of a message: unique per (direction, sender's stage, micro-batch) within the run,
// which is what MessageOf tells a Send and its Recv by.
int StageExecutor::Tag(const MessageKey& message) const {
  const int64_t tag =
      (static_cast<int64_t>(message.microbatch) * 2 + (message.activation ? 1 : 0)) *
          job_.schedule.ModelStageCount() +
      message.sender_stage;
  return static_cast<int>(tag % (int64_t{1} << 30));
}

void StageExecutor::SetSiblings(const std::vector<StageExecutor*>& chunks) { siblings_ = chunks; }

void StageExecutor::Begin(Clock::time_point origin) {
  origin_ = origin;
  posted_until_ = 0;
  if (device_.cuda()) {
    timer_ = std::make_unique<GpuTimer>(device_);  // the stream is idle: its origin is now
    timer_offset_s_ = std::chrono::duration<double>(Clock::now() - origin_).count();
  }
}

namespace {

// Ops that concern the worker's weights as a whole: their `stage` is the worker's position.
bool IsWorkerWide(OpKind kind) {
  return kind == OpKind::kAllReduce || kind == OpKind::kUpdate ||
         kind == OpKind::kStashWeights || kind == OpKind::kReleaseWeights;
}

}  // namespace

void RunProgram(const WorkerProgram& program, const std::vector<StageExecutor*>& chunks,
                StageExecutor::Clock::time_point origin, size_t receive_lookahead) {
  std::map<int, StageExecutor*> by_stage;
  for (StageExecutor* e : chunks) {
    e->SetSiblings(chunks);
    e->Begin(origin);
    by_stage[e->model_stage()] = e;
  }
  auto holder = [&](int stage) -> StageExecutor* {
    auto it = by_stage.find(stage);
    return it == by_stage.end() ? nullptr : it->second;
  };
  // The messages the lists send: a worker may hold the next stage and still send a micro-batch
  // on (DualPipe: its partner holds that micro-batch's copy of the stage).
  std::set<std::tuple<bool, int, int>> sent;  // (activation, sender's stage, micro-batch)
  for (const Op& op : program.ops)
    if (IsSendOp(op.kind))
      sent.insert({op.kind == OpKind::kSendActivation, op.stage, op.microbatch});
  auto local = [&](bool activation, int stage, int microbatch) {
    return sent.count({activation, stage, microbatch}) == 0;
  };
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const Op& op = program.ops[i];
    for (StageExecutor* e : chunks) e->PostReceivesAhead(i, receive_lookahead);
    StageExecutor* runs = IsWorkerWide(op.kind) ? chunks.front() : holder(op.stage);
    TORCH_CHECK(runs != nullptr, "worker ", program.worker, " holds no model stage ", op.stage,
                " for its op ", ActionName(op));
    runs->Execute(op);
    // A message between two chunks of this worker: the lists send none.
    if (op.kind == OpKind::kForward) {
      StageExecutor* next = holder(op.stage + 1);
      if (next && local(true, op.stage, op.microbatch)) runs->HandOff(op, *next);
    } else if (op.kind == OpKind::kBackward || op.kind == OpKind::kBackwardInput) {
      StageExecutor* previous = holder(op.stage - 1);
      if (previous && local(false, op.stage, op.microbatch)) runs->HandOff(op, *previous);
    }
  }
}

void StageExecutor::HandOff(const Op& op, StageExecutor& to) {
  const int mb = op.microbatch;
  if (op.kind == OpKind::kForward) {
    auto it = activations_to_send_.find(mb);
    if (it == activations_to_send_.end()) return;
    to.received_activations_[mb] = std::move(it->second);
    activations_to_send_.erase(it);
  } else {
    auto it = gradients_to_send_.find(mb);
    if (it == gradients_to_send_.end()) return;
    to.received_gradients_[mb] = std::move(it->second);
    gradients_to_send_.erase(it);
  }
}

void StageExecutor::Finish() {
  for (const auto& [mb, loss] : losses_) out_.losses.push_back({mb, loss.item<double>()});
  losses_.clear();
  if (!timer_) return;
  for (const auto& [key, span] : timer_->Read()) {
    const double start = timer_offset_s_ + span.first, end = timer_offset_s_ + span.second;
    if (key >= kSendWaitKey) {
      // The wait for blocking sends lengthens the latest send (as on the CPU).
      OpRecord& send = out_.ops.at(send_waits_.at(key));
      send.end_s = std::max(send.end_s, send.start_s) + (end - start);
      continue;
    }
    out_.ops.at(key).start_s = start;
    out_.ops.at(key).end_s = end;
  }
  for (size_t k = 0; k < sample_ops_.size() && k < out_.memory_timeline.size(); ++k)
    out_.memory_timeline[k].time_s = out_.ops.at(sample_ops_[k]).end_s;
  timer_.reset();
}

void StageExecutor::PostReceivesAhead(size_t from, size_t lookahead) {
  // How far ahead: RunProgram's rule (stage_executor.h). Posting a receive never blocks, so the
  // list's order (and its freedom from deadlock) is kept; the Recv op then waits for it.
  posted_until_ = std::max(posted_until_, from);
  for (; posted_until_ < std::min(program_.ops.size(), from + lookahead); ++posted_until_) {
    const Op& op = program_.ops[posted_until_];
    if (op.kind != OpKind::kRecvActivation && op.kind != OpKind::kRecvGradient) continue;
    if (op.stage != model_stage_) continue;  // another chunk's (its receiver stage)
    const bool activation = op.kind == OpKind::kRecvActivation;
    const int mb = op.microbatch;
    torch::Tensor buffer = torch::empty(
        {TotalElements(activation ? stage_.InputShapes() : stage_.OutputShapes())},
        device_.options());
    const int id = comm_.PostRecv(
        buffer, op.peer_worker, Tag(MessageOf(op, program_.worker)),
        std::string(activation ? "receiving the activation" : "receiving the gradient") +
            " of micro-batch " + std::to_string(mb),
        activation ? Communicator::Direction::kActivations : Communicator::Direction::kGradients);
    posted_[{activation, mb}] = {buffer, id};
  }
}

void StageExecutor::Execute(const Op& op) {
  if (op_counter_++ == fail_at_op_) {
    while (fail_signal_ == 0) ::pause();  // hung: alive and running, making no progress
    if (fail_signal_ == kDeviceError) {
      const torch::Tensor index = torch::full({1}, 99, device_.options().dtype(torch::kLong));
      torch::zeros({4}, device_.options()).index_select(0, index).cpu();  // throws c10::Error
    }
    ::kill(::getpid(), fail_signal_);
  }
  if (IsComputeOp(op.kind) && job_.schedule.send_mode == SendMode::kBlocking) WaitForSends();
  const int mb = op.microbatch;
  const int version = op.weight_version;
  OpRecord record;
  record.kind = op.kind;
  record.stage = op.stage;
  record.microbatch = mb;
  record.weight_version = version;
  record.peer = op.peer_worker;
  record.iteration = mb >= 0 ? job_.IterationOf(mb) : current_iteration_;
  // The CPU it starts on and the thread's CPU time over it (measurement.h, OpRecord::cpu and
  // cpu_s); a GPU's ops are the GPU's.
  const bool on_cpu = (IsComputeOp(op.kind) || op.kind == OpKind::kUpdate) && !device_.cuda();
  if (on_cpu) record.cpu = ::sched_getcpu();
  const double cpu_start = on_cpu ? ThreadCpuSeconds() : 0;
  const auto start = Clock::now();
  if (timer_) timer_->Start(out_.ops.size());
  switch (op.kind) {
    case OpKind::kForward:
      Forward(op, mb, version);
      record.weight_version = versions_[mb].forward;
      break;
    case OpKind::kRecompute: Recompute(mb, version); break;
    case OpKind::kBackward:
    case OpKind::kBackwardInput:
    case OpKind::kBackwardWeight:
      Backward(op, mb, version);
      if (versions_[mb].backward >= 0) record.weight_version = versions_[mb].backward;
      current_iteration_ = record.iteration;
      break;
    case OpKind::kSendActivation:
    case OpKind::kSendGradient: Send(op, mb, record); break;
    case OpKind::kRecvActivation:
    case OpKind::kRecvGradient: Recv(op, mb, record); break;
    // The worker-wide ops run on every chunk (siblings_ is this one alone for one stage).
    case OpKind::kAllReduce:
      for (StageExecutor* e : siblings_) e->AllReduce(record);
      break;
    case OpKind::kUpdate:
      for (StageExecutor* e : siblings_) e->Update(version, e == this);
      break;
    case OpKind::kStashActivation:
      // Idempotent per micro-batch: the bytes were measured by its forward.
      if (!stashed_.count(mb)) {
        stashed_[mb] = in_flight_.at(mb).stash_bytes;
        activation_bytes_ += stashed_[mb];
        int in_flight = 0;  // the worker's, over its chunks
        for (const StageExecutor* e : siblings_) in_flight += static_cast<int>(e->stashed_.size());
        out_.max_in_flight_microbatches = std::max(out_.max_in_flight_microbatches, in_flight);
      }
      break;
    case OpKind::kReleaseActivation: {
      // The backward has dropped the tensors; the bytes were noted at the stash.
      auto it = stashed_.find(mb);
      if (it != stashed_.end()) activation_bytes_ -= it->second, stashed_.erase(it);
      break;
    }
    case OpKind::kStashWeights:
      for (StageExecutor* e : siblings_) e->weights_.Stash(version);
      break;
    case OpKind::kReleaseWeights:
      for (StageExecutor* e : siblings_) e->weights_.Release(version);
      break;
  }
  if (timer_) timer_->End(out_.ops.size());
  const auto end = Clock::now();
  if (on_cpu) record.cpu_s = ThreadCpuSeconds() - cpu_start;
  record.start_s = std::chrono::duration<double>(start - origin_).count();
  record.end_s = std::chrono::duration<double>(end - origin_).count();
  out_.ops.push_back(record);
  out_.max_weight_versions = std::max(out_.max_weight_versions, weights_.VersionsAlive());
  if (!IsCommunicationOp(op.kind)) SampleMemory();
}

Batch& StageExecutor::DataFor(int microbatch) {
  auto it = batches_.find(microbatch);
  if (it == batches_.end()) {
    // Past the first stage only the labels are used (by the last stage's loss): the samples
    // would stay allocated until the micro-batch's backward for nothing (GPipe's last stage
    // held m of them, 131 KB each for the MLP at batch 32).
    Batch b = stage_.is_first()
                  ? data_->Train(microbatch, job_.microbatch_size)
                  : Batch{torch::Tensor(), data_->TrainLabels(microbatch, job_.microbatch_size)};
    if (b.input.defined()) b.input = b.input.to(device_.device);
    b.labels = b.labels.to(device_.device);
    it = batches_.emplace(microbatch, std::move(b)).first;
  }
  return it->second;
}

std::vector<torch::Tensor> StageExecutor::StageInputs(int microbatch) {
  if (stage_.is_first()) return {DataFor(microbatch).input};
  auto it = received_activations_.find(microbatch);
  TORCH_CHECK(it != received_activations_.end(), "Forward of micro-batch ", microbatch,
              " before its activation was received");
  std::vector<torch::Tensor> inputs;
  for (auto& t : Unpack(it->second, stage_.InputShapes()))
    inputs.push_back(t.detach().requires_grad_(true));
  received_activations_.erase(it);
  return inputs;
}

std::vector<torch::Tensor> StageExecutor::RunStage(int version,
                                                   const std::vector<torch::Tensor>& inputs,
                                                   int microbatch) {
  AutocastScope autocast(device_);  // --precision bf16/fp16: the forward (and loss) under autocast
  std::vector<torch::Tensor> out = stage_.Forward(weights_.Version(version), inputs);
  if (!stage_.is_last()) return out;
  return {stage_.model().Loss(out[0], DataFor(microbatch).labels)};
}

void StageExecutor::Forward(const Op& op, int mb, int version) {
  const int used = version;
  if (!weights_.IsAlive(used))
    throw WeightVersionError("Forward(stage " + std::to_string(op.stage) + ", micro-batch " +
                             std::to_string(mb) + ") names weight version " +
                             std::to_string(version) + ", which this worker does not hold (" +
                             "current " + std::to_string(weights_.current_version()) + ")");
  InFlight f;
  f.inputs = StageInputs(mb);
  f.version = used;
  f.has_graph = !recompute_;
  const int64_t before = allocator_.allocated();
  {
    std::optional<torch::NoGradGuard> no_graph;
    if (!f.has_graph) no_graph.emplace();
    f.outputs = RunStage(used, f.inputs, mb);
  }
  f.stash_bytes = allocator_.allocated() - before + Bytes(f.inputs);
  // The loss is read once the run has finished (reading it now would stall the host on a GPU).
  if (stage_.is_last()) losses_.push_back({mb, f.outputs[0].detach()});
  else activations_to_send_[mb] = Pack(f.outputs);
  if (!f.has_graph) f.outputs.clear();
  versions_[mb].microbatch = mb;
  versions_[mb].forward = used;
  in_flight_[mb] = std::move(f);
}

void StageExecutor::Recompute(int mb, int version) {
  InFlight& f = in_flight_.at(mb);
  // With stashing the forward is rebuilt on its own version; without, on the latest weights, the
  // version the schedule names (spec.h, weight_stashing).
  if (stashing_ ? f.version != version : version != weights_.current_version())
    throw WeightVersionError("Recompute of micro-batch " + std::to_string(mb) + " names version " +
                             std::to_string(version) + " but its forward used " +
                             std::to_string(f.version) + ", current is " +
                             std::to_string(weights_.current_version()));
  f.version = version;
  const int64_t before = allocator_.allocated();
  f.outputs = RunStage(f.version, f.inputs, mb);
  f.has_graph = true;
  f.recompute_bytes = allocator_.allocated() - before;
  recompute_bytes_ += f.recompute_bytes;
}

void StageExecutor::GraphForBackward(const Op& op, int mb, int version, InFlight& f) {
  // The backward must use the version its graph was built on (its forward's, or under
  // recomputation its Recompute's: without weight stashing the latest), and it must be alive.
  if (f.version != version || !weights_.IsAlive(version))
    throw WeightVersionError("Backward(stage " + std::to_string(op.stage) + ", micro-batch " +
                             std::to_string(mb) + ") names weight version " +
                             std::to_string(version) + "; its forward used " +
                             std::to_string(f.version) + ", current is " +
                             std::to_string(weights_.current_version()));
  TORCH_CHECK(f.has_graph, "Backward of micro-batch ", mb, " has no graph (no Recompute?)");
}

std::vector<torch::Tensor> StageExecutor::Differentiate(
    const InFlight& f, const std::vector<torch::Tensor>& targets,
    const std::vector<torch::Tensor>& grad_outputs, bool input_part, bool weight_part) {
  const bool keep_graph = input_part && !weight_part;
  if (!weight_part)
    return torch::autograd::grad(f.outputs, targets, grad_outputs, keep_graph,
                                 /*create_graph=*/false, /*allow_unused=*/true);
  // The parameters' gradients go straight into the sums: autograd's AccumulateGrad adds each
  // layer's weight gradient in place as soon as it is computed and frees it, so a stage holds
  // one layer's gradient at a time, not all of them until the backward ends (holding all of them
  // makes the backward slower than the profile, which times layer by layer). The first gradient
  // after an update is taken as it is (no pass over a buffer), unless the sums are views of the
  // all-reduce's flat buffer: that is zeroed and added to (op.h, AddsToGradientSums).
  const auto& parameters = weights_.Version(f.version);
  const bool into_sums =
      AddsToGradientSums(static_cast<int>(gradient_count_), gradient_flat_.defined());
  if (gradient_count_ == 0 && gradient_flat_.defined()) gradient_flat_.zero_();
  for (size_t i = 0; i < parameters.size(); ++i)
    parameters[i].mutable_grad() = into_sums ? gradient_sum_[i] : torch::Tensor();
  torch::autograd::backward(f.outputs, grad_outputs, keep_graph, /*create_graph=*/false, targets);
  std::vector<torch::Tensor> grads;
  for (const auto& t : targets) {
    grads.push_back(t.grad());
    t.mutable_grad() = torch::Tensor();  // stashed versions and inputs keep no gradient
  }
  return grads;
}

void StageExecutor::Backward(const Op& op, int mb, int version) {
  auto it = in_flight_.find(mb);
  TORCH_CHECK(it != in_flight_.end(), "Backward of micro-batch ", mb, " without its forward");
  InFlight& f = it->second;
  const bool input_part = op.kind != OpKind::kBackwardWeight;
  const bool weight_part = op.kind != OpKind::kBackwardInput;
  GraphForBackward(op, mb, version, f);

  std::vector<torch::Tensor> targets;
  const bool want_inputs = input_part && !stage_.is_first();
  if (want_inputs) targets = f.inputs;
  const size_t parameters_at = targets.size();
  const auto& parameters = weights_.Version(f.version);
  if (weight_part) targets.insert(targets.end(), parameters.begin(), parameters.end());
  if (!targets.empty()) {
    std::vector<torch::Tensor> grad_outputs;
    if (!stage_.is_last()) {
      // Messages are fp32; under autocast an output may be bf16 or fp16.
      grad_outputs = Unpack(received_gradients_.at(mb), stage_.OutputShapes());
      for (size_t i = 0; i < grad_outputs.size(); ++i)
        grad_outputs[i] = grad_outputs[i].to(f.outputs[i].scalar_type());
    }
    const std::vector<torch::Tensor> grads =
        Differentiate(f, targets, grad_outputs, input_part, weight_part);
    torch::NoGradGuard no_grad;
    if (want_inputs) {
      std::vector<torch::Tensor> input_grads;
      for (size_t i = 0; i < parameters_at; ++i)
        input_grads.push_back(grads[i].defined() ? grads[i] : torch::zeros_like(f.inputs[i]));
      gradients_to_send_[mb] = Pack(input_grads);
    }
    if (weight_part &&
        !AddsToGradientSums(static_cast<int>(gradient_count_), gradient_flat_.defined()))
      for (size_t i = 0; i < parameters.size(); ++i) {
        const torch::Tensor& g = grads[parameters_at + i];
        if (!g.defined()) gradient_sum_[i].zero_();  // unused: a zero gradient
        else gradient_sum_[i] = g.is_contiguous() ? g : g.contiguous();
      }
  }
  if (weight_part) FinishBackward(mb, f.version);
}

// The micro-batch's backward is complete: count its gradient and forget its state.
void StageExecutor::FinishBackward(int mb, int version) {
  gradient_count_ += 1;
  if (oldest_gradient_version_ < 0 || version < oldest_gradient_version_)
    oldest_gradient_version_ = version;
  versions_[mb].backward = version;
  if (this == siblings_.front()) out_.versions.push_back(versions_[mb]);  // one per micro-batch
  versions_.erase(mb);
  recompute_bytes_ -= in_flight_.at(mb).recompute_bytes;
  in_flight_.erase(mb);
  received_gradients_.erase(mb);
  batches_.erase(mb);
}

void StageExecutor::AllReduce(OpRecord& record) {
  torch::NoGradGuard no_grad;
  if (gradient_count_ == 0)  // no micro-batch here this batch: contribute zeros
    for (auto& g : gradient_sum_) g.zero_();
  torch::Tensor& flat = gradient_flat_;
  const int64_t count_at = flat.numel() - 1;
  flat[count_at].fill_(gradient_count_);
  record.bytes += static_cast<double>(flat.numel() * flat.element_size());
  comm_.AllReduceSum(flat, "all-reduce of stage " + std::to_string(program_.stage) +
                               "'s gradients");
  gradient_count_ = flat[count_at].item<double>();
}

void StageExecutor::Update(int version, bool first) {
  torch::NoGradGuard no_grad;
  // Before the first backward of the batch the buffers still hold the last batch's sums.
  if (gradient_count_ == 0)
    for (auto& g : gradient_sum_) g.zero_();
  // Staleness (AnalyzeSchedule's definition): current version - oldest version the gradients
  // were computed with.
  if (oldest_gradient_version_ >= 0 && first)
    out_.update_staleness.push_back(weights_.current_version() - oldest_gradient_version_);
  // The mean gradient: the sum over the micro-batches (all replicas', after the all-reduce).
  weights_.Update(version, gradient_sum_, 1 / std::max(gradient_count_, 1.0));
  gradient_count_ = 0;  // the next backward overwrites the buffers instead of adding
  oldest_gradient_version_ = -1;
  DumpWeights();
}

// Blocking sends (op.h): the worker's posted sends are delivered before its next compute op. The
// wait is the sends' exposed time: it lengthens the latest send's record.
void StageExecutor::WaitForSends() {
  auto latest = out_.ops.rend();
  for (auto it = out_.ops.rbegin(); it != out_.ops.rend() && !IsComputeOp(it->kind); ++it)
    if (IsSendOp(it->kind)) {
      latest = it;
      break;
    }
  const size_t key = kSendWaitKey + out_.ops.size();
  if (timer_ && latest != out_.ops.rend()) {
    // On a GPU the wait is the compute stream's (NCCL: it waits on the sends' events).
    send_waits_[key] = static_cast<size_t>(out_.ops.rend() - latest) - 1;
    timer_->Start(key);
  }
  const auto from = Clock::now();
  comm_.FinishSends();
  if (timer_) {
    if (latest != out_.ops.rend()) timer_->End(key);
    return;
  }
  const double waited = std::chrono::duration<double>(Clock::now() - from).count();
  if (latest != out_.ops.rend()) latest->end_s += waited;
}

void StageExecutor::Send(const Op& op, int mb, OpRecord& record) {
  const bool activation = op.kind == OpKind::kSendActivation;
  auto& pending = activation ? activations_to_send_ : gradients_to_send_;
  auto it = pending.find(mb);
  TORCH_CHECK(it != pending.end(), "Send of micro-batch ", mb, " before it was computed");
  record.bytes = static_cast<double>(it->second.numel() * it->second.element_size());
  comm_.Send(it->second, op.peer_worker, Tag(MessageOf(op, program_.worker)),
             std::string(activation ? "sending the activation" : "sending the gradient") +
                 " of micro-batch " + std::to_string(mb),
             activation ? Communicator::Direction::kActivations
                        : Communicator::Direction::kGradients);
  pending.erase(it);
}

void StageExecutor::Recv(const Op& op, int mb, OpRecord& record) {
  const bool activation = op.kind == OpKind::kRecvActivation;
  auto it = posted_.find({activation, mb});
  TORCH_CHECK(it != posted_.end(), "Recv of micro-batch ", mb, " was never posted");
  const PostedRecv posted = it->second;
  posted_.erase(it);
  record.bytes = static_cast<double>(posted.buffer.numel() * posted.buffer.element_size());
  comm_.WaitRecv(posted.id);
  (activation ? received_activations_ : received_gradients_)[mb] = posted.buffer;
}

void StageExecutor::Evaluate(int previous, int next, int64_t batches) {
  torch::NoGradGuard no_grad;
  const int64_t size = job_.microbatch_size;
  int64_t correct = 0;
  for (int64_t i = 0; i < batches; ++i) {
    const int mb = kEvaluationMicrobatchBase + static_cast<int>(i);
    std::vector<torch::Tensor> inputs;
    Batch batch;
    if (stage_.is_first() || stage_.is_last()) {
      batch = data_->Test(i, size);
      if (batch.input.defined()) batch.input = batch.input.to(device_.device);
      batch.labels = batch.labels.to(device_.device);
    }
    if (stage_.is_first()) {
      inputs = {batch.input};
    } else {
      torch::Tensor buffer = torch::empty({TotalElements(stage_.InputShapes())}, device_.options());
      comm_.Recv(buffer, previous, Tag({true, program_.stage - 1, mb, previous, program_.worker}),
                 "receiving test batch " + std::to_string(i));
      inputs = Unpack(buffer, stage_.InputShapes());
    }
    std::vector<torch::Tensor> outputs;
    {
      AutocastScope autocast(device_);
      outputs = stage_.Forward(weights_.Current(), inputs);
    }
    if (stage_.is_last()) correct += stage_.model().Correct(outputs[0], batch.labels);
    else comm_.Send(Pack(outputs), next, Tag({true, program_.stage, mb, program_.worker, next}),
                    "sending test batch " + std::to_string(i));
  }
  comm_.FinishSends();
  if (stage_.is_last() && batches > 0) {
    out_.test_samples = batches * size;
    out_.test_accuracy = static_cast<double>(correct) / static_cast<double>(out_.test_samples);
  }
}

void StageExecutor::SampleMemory() {
  MemorySample s;
  s.time_s = std::chrono::duration<double>(Clock::now() - origin_).count();
  for (const StageExecutor* e : siblings_) {  // the worker's, over its chunks
    s.bytes.weights += static_cast<double>(e->weights_.WeightBytes());
    s.bytes.optimizer += static_cast<double>(e->weights_.OptimizerBytes());
    s.bytes.gradients += static_cast<double>(Bytes(e->gradient_sum_));
    s.bytes.activations += static_cast<double>(std::max<int64_t>(0, e->activation_bytes_));
    s.bytes.recompute += static_cast<double>(std::max<int64_t>(0, e->recompute_bytes_));
  }
  auto& timeline = out_.memory_timeline;
  if (!timeline.empty()) {
    const MemoryCategories& last = timeline.back().bytes;
    if (last.weights == s.bytes.weights && last.optimizer == s.bytes.optimizer &&
        last.gradients == s.bytes.gradients && last.activations == s.bytes.activations &&
        last.recompute == s.bytes.recompute)
      return;
  }
  timeline.push_back(s);
  sample_ops_.push_back(out_.ops.empty() ? 0 : out_.ops.size() - 1);
}

void StageExecutor::DumpWeights() const {
  const std::string& dir = job_.options.dump_weights_dir;
  if (dir.empty()) return;
  std::vector<torch::Tensor> copy;
  for (const auto& p : weights_.Current()) copy.push_back(p.detach().to(torch::kCPU).clone());
  torch::save(copy, dir + "/stage" + std::to_string(model_stage_) + "_replica" +
                        std::to_string(program_.replica) + "_v" +
                        std::to_string(weights_.current_version()) + ".pt");
}

}  // namespace pipetwin::exec
