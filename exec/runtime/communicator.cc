#define USE_C10D_GLOO 1
#define USE_C10D_NCCL 1  // every build: the wheel's LibTorch has c10d NCCL, and CI compiles it
#include "exec/runtime/communicator.h"
#include "exec/launch/worker.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <cstdio>

#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

namespace pipetwin::exec {

namespace {

using Milliseconds = std::chrono::milliseconds;

// Sends a worker may have posted and not yet waited on (see PruneSends).
constexpr size_t kSendWindow = 16;

Milliseconds ToMilliseconds(double seconds) {
  return Milliseconds(static_cast<int64_t>(seconds * 1000));
}

std::string OneLine(std::string text) {
  const auto newline = text.find('\n');
  if (newline != std::string::npos) text.resize(newline);
  return text;
}

std::string Bytes(const std::vector<uint8_t>& v) { return std::string(v.begin(), v.end()); }
std::vector<uint8_t> Bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

bool IsLoopback(const std::string& host) {
  return host == "127.0.0.1" || host == "localhost" || host == "::1";
}

// The Gloo transport device: loopback for a run on this machine, GLOO_SOCKET_IFNAME when set
// (as PyTorch reads it), else the interface this host name resolves to.
std::shared_ptr<::gloo::transport::Device> GlooDevice(const ProcessEnv& env) {
  if (const char* interface = std::getenv("GLOO_SOCKET_IFNAME"))
    return c10d::ProcessGroupGloo::createDeviceForInterface(interface);
  if (IsLoopback(env.master_addr))
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

c10::intrusive_ptr<c10d::Backend> MakeGroup(const c10::intrusive_ptr<c10d::Store>& store,
                                                 int rank, int size, const ProcessEnv& env,
                                                 double timeout_s) {
  auto options = c10d::ProcessGroupGloo::Options::create(ToMilliseconds(timeout_s));
  options->devices.push_back(GlooDevice(env));
  // c10d's default of 2 work threads. With 1, a collective between pinned processes waits for a
  // scheduler tick, which dwarfs a small all-reduce.
  options->threads = 2;
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, options);
}

// A ProcessGroupNCCL over `ranks` (global ranks, this worker at `rank` among them). Its timeout
// is the run's: NCCL's watchdog aborts a communicator whose operation has not completed within
// it, and with asynchronous error handling (TORCH_NCCL_ASYNC_ERROR_HANDLING, set by the worker)
// ends the process, which ends the run (a launcher stops the others: launcher.h).
c10::intrusive_ptr<c10d::Backend> MakeNcclGroup(const c10::intrusive_ptr<c10d::Store>& store,
                                                int rank, const std::vector<int>& ranks,
                                                double timeout_s) {
  auto options = c10d::ProcessGroupNCCL::Options::create();
  options->timeout = ToMilliseconds(timeout_s);
  options->global_ranks_in_group.assign(ranks.begin(), ranks.end());
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, static_cast<int>(ranks.size()),
                                                     options);
}

}  // namespace

void Communicator::Connect(const std::vector<std::vector<int>>& replica_groups,
                           const std::string& fingerprint) {
  const ProcessEnv& env = env_;
  const double timeout_s = timeout_s_;
  const auto started = std::chrono::steady_clock::now();
  // "within 30 s" only when the time ran out (c10d says so, or the clock does); a refusal
  // seconds in says when it came.
  auto within = [&](const std::string& cause) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const bool timed_out = cause.find("timed out") != std::string::npos ||
                           cause.find("Timed out") != std::string::npos ||
                           cause.find("timeout") != std::string::npos;
    if (timed_out || s >= 0.9 * timeout_s)
      return "within " + std::to_string(static_cast<int>(timeout_s)) + " s";
    char text[32];
    std::snprintf(text, sizeof text, "after %.1f s", s);
    return std::string(text);
  };
  const std::string where = env.master_addr + ":" + std::to_string(env.master_port);
  c10d::TCPStoreOptions options;
  options.port = static_cast<uint16_t>(env.master_port);
  options.isServer = env.rank == 0 && !env.store_hosted_elsewhere;
  options.numWorkers = env.world_size;
  options.waitWorkers = false;
  options.timeout = ToMilliseconds(timeout_s);
  try {
    store_ = c10::make_intrusive<c10d::TCPStore>(env.master_addr, options);
  } catch (const std::exception& e) {
    if (options.isServer)
      throw RunError("rank 0 cannot host the store at " + where + ": " + OneLine(e.what()));
    throw RunError("cannot reach the store at " + where + " " + within(e.what()) +
                   " (is rank 0 running, and are MASTER_ADDR and MASTER_PORT right?): " +
                   OneLine(e.what()));
  }
  // Every worker must agree on the world size and on what it runs.
  const std::string agreed = std::to_string(env.world_size) + " " + fingerprint + " " + transport();
  try {
    if (env.rank == 0) store_->set("pipetwin/run", Bytes(agreed));
    const std::string theirs = Bytes(store_->get("pipetwin/run"));
    if (theirs != agreed) {
      const std::string their_world = theirs.substr(0, theirs.find(' '));
      if (their_world != std::to_string(env.world_size))
        throw RunError("rank " + std::to_string(env.rank) + " was started with WORLD_SIZE=" +
                       std::to_string(env.world_size) + " but rank 0 with WORLD_SIZE=" +
                       their_world);
      throw RunError("rank " + std::to_string(env.rank) + " runs another scenario, plan, "
                     "options or transport (" + transport() + ") than rank 0 (every worker must "
                     "be started with the same ones, and all share GPUs or none)");
    }
  } catch (const RunError&) {
    throw;
  } catch (const std::exception& e) {
    throw RunError("rank " + std::to_string(env.rank) + ": rank 0 did not register at the store " +
                   where + " " + within(e.what()) + ": " + OneLine(e.what()));
  }
  try {
    world_ = MakeGroup(store_, env.rank, env.world_size, env, timeout_s);
    for (size_t s = 0; s < replica_groups.size(); ++s) {
      const auto& group = replica_groups[s];
      auto it = std::find(group.begin(), group.end(), env.rank);
      if (group.size() < 2 || it == group.end()) continue;
      replica_ranks_ = group;
      auto prefixed = c10::make_intrusive<c10d::PrefixStore>("stage" + std::to_string(s), store_);
      const int member = static_cast<int>(it - group.begin());
      replicas_ = nccl_ ? MakeNcclGroup(prefixed, member, group, timeout_s)
                        : MakeGroup(prefixed, member, static_cast<int>(group.size()), env,
                                    timeout_s);
    }
  } catch (const std::exception& e) {
    throw RunError("rank " + std::to_string(env.rank) + ": the workers did not all meet " +
                   within(e.what()) + " (a worker missing, or a wrong WORLD_SIZE?): " +
                   OneLine(e.what()));
  }
}


Communicator::Communicator(const ProcessEnv& env, double timeout_s,
                           const std::vector<std::vector<int>>& replica_groups,
                           const std::string& fingerprint, bool verbose,
                           const ExecDevice& device)
    : env_(env), timeout_s_(timeout_s), device_(device) {
  // PIPETWIN_EXEC_STAGED=1 stages every message through host memory whatever the device: the
  // CPU tests prove the shared-GPU transport's copies and posted receives with it, and a GPU
  // machine can compare it with NCCL.
  const char* force = std::getenv("PIPETWIN_EXEC_STAGED");
  staged_ = (device.cuda() && device.shared()) || (force && std::string(force) == "1");
  nccl_ = device.cuda() && !staged_;
  if (verbose) {
    Connect(replica_groups, fingerprint);
    return;
  }
  // c10d logs its socket retries and failures to stderr (3 to 33 lines for a port in use or a
  // wrong MASTER_ADDR), whatever LibTorch's logging library: fd 2 goes to an unlinked temporary
  // file while connecting; the RunError carries what matters in one line.
  std::fflush(stderr);
  std::cerr.flush();
  char name[] = "/tmp/pipetwin-c10d-XXXXXX";
  const int held = mkstemp(name);
  const int saved = held >= 0 ? dup(STDERR_FILENO) : -1;
  if (held >= 0) unlink(name);
  if (saved >= 0) dup2(held, STDERR_FILENO);
  auto restore = [&] {
    if (saved < 0) return;
    std::fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(held);
  };
  try {
    Connect(replica_groups, fingerprint);
  } catch (...) {
    restore();
    throw;
  }
  restore();
}

Communicator::~Communicator() = default;

void Communicator::Lost(int peer, const std::string& what, const std::string& cause) {
  std::string who = peer >= 0 ? "rank " + std::to_string(peer) : "a replica";
  if (peer < 0 && !replica_ranks_.empty()) {
    who = "a replica among ranks";
    for (size_t i = 0; i < replica_ranks_.size(); ++i)
      who += (i ? "," : " ") + std::to_string(replica_ranks_[i]);
  }
  throw RunError("rank " + std::to_string(env_.rank) + " lost " + who + " (" + what + "): " +
                 OneLine(cause));
}

void Communicator::Wait(const c10::intrusive_ptr<c10d::Work>& work, int peer,
                        const std::string& what) {
  try {
    // NCCL: wait() orders the current stream after the work, without blocking the host (a
    // timeout here would block it); the watchdog enforces the group's timeout instead.
    if (nccl_) work->wait();
    else work->wait(ToMilliseconds(timeout_s_));
  } catch (const std::exception& e) {
    Lost(peer, what, e.what());
  }
}

void Communicator::PruneSends() {
  if (nccl_) {
    // NCCL's work reports completion by its CUDA event, and keeps its tensor until then: drop
    // the finished ones without waiting on anything.
    sends_.erase(std::remove_if(sends_.begin(), sends_.end(),
                                [](const PendingSend& s) { return s.work->isCompleted(); }),
                 sends_.end());
    return;
  }
  // c10d's Gloo send work reports isCompleted() only once wait() has run, so polling it never
  // frees anything: every sent buffer would stay alive until FinishSends, and a worker's memory
  // grow with every message. Sends complete in the order they were posted and a peer takes them in schedule
  // order, so the oldest beyond the window are done (or about to be): wait on them.
  const size_t excess = sends_.size() - std::min(sends_.size(), kSendWindow);
  for (size_t i = 0; i < excess; ++i) Wait(sends_[i].work, sends_[i].peer, sends_[i].what);
  sends_.erase(sends_.begin(), sends_.begin() + static_cast<std::ptrdiff_t>(excess));
}

std::string Communicator::transport() const {
  return nccl_ ? "nccl" : staged_ ? "gloo, staged through host memory" : "gloo";
}

c10d::Backend& Communicator::Channel(int sender, int receiver, Direction direction) {
  auto& group = channels_[{sender, receiver, direction}];
  if (!group) {
    const std::string name = std::string(direction == Direction::kActivations ? "act" : "grad") +
                             "/" + std::to_string(sender) + "-" + std::to_string(receiver);
    auto prefixed = c10::make_intrusive<c10d::PrefixStore>("nccl/" + name, store_);
    group = MakeNcclGroup(prefixed, env_.rank == sender ? 0 : 1, {sender, receiver}, timeout_s_);
  }
  return *group;
}

void Communicator::OpenChannels(const std::vector<ChannelKey>& channels) {
  if (!nccl_) return;
  torch::Tensor token = torch::zeros({1}, device_.options());
  for (const auto& [sender, receiver, direction] : channels) {
    if (sender != env_.rank && receiver != env_.rank) continue;
    std::vector<at::Tensor> tensors = {token};
    const std::string what = "opening the NCCL channel from rank " + std::to_string(sender) +
                             " to rank " + std::to_string(receiver);
    const int peer = sender == env_.rank ? receiver : sender;
    try {
      auto& group = Channel(sender, receiver, direction);
      auto work = sender == env_.rank ? group.send(tensors, 1, 0) : group.recv(tensors, 0, 0);
      work->wait();
    } catch (const std::exception& e) {
      Lost(peer, what, e.what());
    }
    c10::cuda::device_synchronize();
  }
  if (replicas_) {
    torch::Tensor t = torch::zeros({1}, device_.options());
    AllReduceSum(t, "opening the replicas' NCCL group");
    c10::cuda::device_synchronize();
  }
}

torch::Tensor Communicator::Outgoing(const torch::Tensor& buffer) const {
  if (!staged_) return buffer;
  // A host copy (a copy on the CPU too): on a GPU the copy waits for the kernels that made the
  // buffer, on this worker's stream.
  return buffer.to(buffer.options().device(torch::kCPU), /*non_blocking=*/false, /*copy=*/true);
}

torch::Tensor Communicator::Incoming(const torch::Tensor& buffer) const {
  return staged_ ? torch::empty_like(buffer, buffer.options().device(torch::kCPU)) : buffer;
}

void Communicator::Send(const torch::Tensor& buffer, int peer, int tag, const std::string& what,
                        Direction direction) {
  PendingSend s{nullptr, peer, what, Outgoing(buffer), torch::Tensor()};
  std::vector<at::Tensor> tensors = {s.payload};
  try {
    // In a channel's two-rank group the receiver is rank 1.
    s.work = nccl_ ? Channel(env_.rank, peer, direction).send(tensors, 1, 0)
                   : world_->send(tensors, peer, tag);
  } catch (const std::exception& e) {
    Lost(peer, what, e.what());
  }
  sends_.push_back(std::move(s));
  if (sends_.size() > kSendWindow) PruneSends();
}

int Communicator::PostRecv(torch::Tensor& buffer, int peer, int tag, const std::string& what,
                           Direction direction) {
  PendingSend r{nullptr, peer, what, Incoming(buffer), staged_ ? buffer : torch::Tensor()};
  std::vector<at::Tensor> tensors = {r.payload};
  try {
    r.work = nccl_ ? Channel(peer, env_.rank, direction).recv(tensors, 0, 0)
                   : world_->recv(tensors, peer, tag);
  } catch (const std::exception& e) {
    Lost(peer, what, e.what());
  }
  recvs_[next_recv_] = std::move(r);
  return next_recv_++;
}

void Communicator::Recv(torch::Tensor& buffer, int peer, int tag, const std::string& what,
                        Direction direction) {
  WaitRecv(PostRecv(buffer, peer, tag, what, direction));
}

void Communicator::WaitRecv(int id) {
  auto it = recvs_.find(id);
  TORCH_CHECK(it != recvs_.end(), "WaitRecv of a receive never posted");
  PendingSend r = std::move(it->second);
  recvs_.erase(it);
  Wait(r.work, r.peer, r.what);
  if (r.target.defined()) r.target.copy_(r.payload);
}

void Communicator::AllReduceSum(torch::Tensor& buffer, const std::string& what) {
  if (!replicas_) return;
  torch::Tensor payload = Outgoing(buffer);
  std::vector<at::Tensor> tensors = {payload};
  c10::intrusive_ptr<c10d::Work> work;
  try {
    work = replicas_->allreduce(tensors);
  } catch (const std::exception& e) {
    Lost(-1, what, e.what());
  }
  Wait(work, -1, what);
  if (staged_) buffer.copy_(payload);
}

void Communicator::FinishSends() {
  for (auto& s : sends_) Wait(s.work, s.peer, s.what);
  sends_.clear();
}

void Communicator::Barrier() {
  c10::intrusive_ptr<c10d::Work> work;
  try {
    work = world_->barrier();
  } catch (const std::exception& e) {
    Lost(-1, "barrier", e.what());
  }
  try {
    work->wait(ToMilliseconds(timeout_s_));
  } catch (const std::exception& e) {
    throw RunError("rank " + std::to_string(env_.rank) + ": a worker never reached the barrier "
                   "(lost?): " + OneLine(e.what()));
  }
}

void Communicator::Publish(const std::string& key, const std::string& value) {
  store_->set("pipetwin/" + key, Bytes(value));
}

std::string Communicator::Fetch(const std::string& key) {
  try {
    return Bytes(store_->get("pipetwin/" + key));
  } catch (const std::exception& e) {
    throw RunError("rank " + std::to_string(env_.rank) + ": no \"" + key + "\" at the store "
                   "within " + std::to_string(static_cast<int>(timeout_s_)) + " s: " +
                   OneLine(e.what()));
  }
}

struct StoreHost::Impl {
  c10::intrusive_ptr<c10d::TCPStore> store;
};

StoreHost::StoreHost() : impl_(std::make_unique<Impl>()) {
  c10d::TCPStoreOptions options;
  options.port = 0;  // any free port
  options.isServer = true;
  options.waitWorkers = false;
  try {
    impl_->store = c10::make_intrusive<c10d::TCPStore>("127.0.0.1", options);
  } catch (const std::exception& e) {
    throw RunError("cannot host the store on 127.0.0.1: " + OneLine(e.what()));
  }
}

StoreHost::~StoreHost() = default;

int StoreHost::port() const { return impl_->store->getPort(); }

}  // namespace pipetwin::exec
