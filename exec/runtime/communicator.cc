#define USE_C10D_GLOO 1
#include "exec/runtime/communicator.h"
#include "exec/launch/worker.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <cstdio>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
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
  const std::string agreed = std::to_string(env.world_size) + " " + fingerprint;
  try {
    if (env.rank == 0) store_->set("pipetwin/run", Bytes(agreed));
    const std::string theirs = Bytes(store_->get("pipetwin/run"));
    if (theirs != agreed) {
      const std::string their_world = theirs.substr(0, theirs.find(' '));
      if (their_world != std::to_string(env.world_size))
        throw RunError("rank " + std::to_string(env.rank) + " was started with WORLD_SIZE=" +
                       std::to_string(env.world_size) + " but rank 0 with WORLD_SIZE=" +
                       their_world);
      throw RunError("rank " + std::to_string(env.rank) + " runs another scenario, plan or "
                     "options than rank 0 (every worker must be started with the same ones)");
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
      replicas_ = MakeGroup(prefixed, static_cast<int>(it - group.begin()),
                            static_cast<int>(group.size()), env, timeout_s);
    }
  } catch (const std::exception& e) {
    throw RunError("rank " + std::to_string(env.rank) + ": the workers did not all meet " +
                   within(e.what()) + " (a worker missing, or a wrong WORLD_SIZE?): " +
                   OneLine(e.what()));
  }
}


Communicator::Communicator(const ProcessEnv& env, double timeout_s,
                           const std::vector<std::vector<int>>& replica_groups,
                           const std::string& fingerprint, bool verbose)
    : env_(env), timeout_s_(timeout_s) {
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
    work->wait(ToMilliseconds(timeout_s_));
  } catch (const std::exception& e) {
    Lost(peer, what, e.what());
  }
}

void Communicator::PruneSends() {
  // c10d's Gloo send work reports isCompleted() only once wait() has run, so polling it never
  // frees anything: every sent buffer would stay alive until FinishSends, and a worker's memory
  // grow with every message. Sends complete in the order they were posted and a peer takes them in schedule
  // order, so the oldest beyond the window are done (or about to be): wait on them.
  const size_t excess = sends_.size() - std::min(sends_.size(), kSendWindow);
  for (size_t i = 0; i < excess; ++i) Wait(sends_[i].work, sends_[i].peer, sends_[i].what);
  sends_.erase(sends_.begin(), sends_.begin() + static_cast<std::ptrdiff_t>(excess));
}

void Communicator::Send(const torch::Tensor& buffer, int peer, int tag, const std::string& what) {
  std::vector<at::Tensor> tensors = {buffer};
  try {
    sends_.push_back({world_->send(tensors, peer, tag), peer, what});
  } catch (const std::exception& e) {
    Lost(peer, what, e.what());
  }
  if (sends_.size() > kSendWindow) PruneSends();
}

void Communicator::Recv(torch::Tensor& buffer, int peer, int tag, const std::string& what) {
  std::vector<at::Tensor> tensors = {buffer};
  c10::intrusive_ptr<c10d::Work> work;
  try {
    work = world_->recv(tensors, peer, tag);
  } catch (const std::exception& e) {
    Lost(peer, what, e.what());
  }
  Wait(work, peer, what);
}

int Communicator::PostRecv(torch::Tensor& buffer, int peer, int tag, const std::string& what) {
  std::vector<at::Tensor> tensors = {buffer};
  try {
    recvs_[next_recv_] = {world_->recv(tensors, peer, tag), peer, what};
  } catch (const std::exception& e) {
    Lost(peer, what, e.what());
  }
  return next_recv_++;
}

void Communicator::WaitRecv(int id) {
  auto it = recvs_.find(id);
  TORCH_CHECK(it != recvs_.end(), "WaitRecv of a receive never posted");
  PendingSend r = std::move(it->second);
  recvs_.erase(it);
  Wait(r.work, r.peer, r.what);
}

void Communicator::AllReduceSum(torch::Tensor& buffer, const std::string& what) {
  if (!replicas_) return;
  std::vector<at::Tensor> tensors = {buffer};
  c10::intrusive_ptr<c10d::Work> work;
  try {
    work = replicas_->allreduce(tensors);
  } catch (const std::exception& e) {
    Lost(-1, what, e.what());
  }
  Wait(work, -1, what);
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
