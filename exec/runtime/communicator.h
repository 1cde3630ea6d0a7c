// c10d communication of one worker: the TCPStore the workers meet through, a ProcessGroupGloo
// over all workers (barrier; point-to-point messages on CPUs), and one over each replicated
// stage's workers for the gradient all-reduce.
//
// On GPUs (ExecDevice), one of two transports, the same on every worker (the run's fingerprint
// includes it):
//  - NCCL, each worker on its own GPU: a ProcessGroupNCCL of two ranks per channel (sender,
//    receiver) carries that channel's messages, and one per replicated stage its all-reduce.
//    A channel's messages are then matched first-in first-out on its own communicator and CUDA
//    stream, which is the lists' order rule (partition/schedule/op.h: a channel's messages are
//    received in the order they are sent), so no valid schedule deadlocks; a message on another
//    channel never queues behind it. c10d runs each communicator on its own stream and makes the
//    compute stream wait on CUDA events: a Send returns once queued, a WaitRecv orders the
//    compute stream after the data without blocking the host.
//  - host-staged Gloo, workers sharing a GPU (NCCL refuses two ranks of one communicator on one
//    device): a message is copied to host memory, sent over Gloo, and copied onto the receiver's
//    GPU when it waits for it; the all-reduce likewise. PIPETWIN_EXEC_STAGED=1 forces it (the CPU
//    tests prove it with it).
//
//   Communicator comm(env, /*timeout_s=*/30, {{0, 1}, {2}});   // stage 0 on ranks 0 and 1
//   comm.Send(buffer, /*peer=*/2, tag);       // posted now, completes in the background
//   comm.Recv(buffer, /*peer=*/0, tag, "activation of micro-batch 3");   // blocks
//   comm.AllReduceSum(gradients);             // over this worker's stage replicas
//
// Sends are posted in list order and never waited for in line (the buffer is kept until the
// send completes), receives are posted ahead and waited on in list order: the lists' contract
// (partition/schedule/op.h), under which they are deadlock-free.
// A peer that dies or stays silent past the timeout makes the waiting call throw PeerError
// naming the peer's rank.
#pragma once

#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <torch/torch.h>

#include "exec/launch/process_env.h"
#include "exec/launch/worker.h"
#include "exec/runtime/device.h"

namespace c10d {
class Store;
class Backend;
class Work;
}  // namespace c10d

namespace pipetwin::exec {

class Communicator {
 public:
  // Connects to the store (hosting it when this is rank 0 and no launcher hosts it), checks that
  // every worker was started with the same WORLD_SIZE and run fingerprint, and builds the groups.
  // `replica_groups` lists, per stage, the ranks of its replicas (the same list on every worker).
  // What c10d prints to stderr while it connects (its socket retries, glog lines) is held back
  // and folded into the one RunError line; `verbose` prints it as well.
  Communicator(const ProcessEnv& env, double timeout_s,
               const std::vector<std::vector<int>>& replica_groups, const std::string& fingerprint,
               bool verbose = false, const ExecDevice& device = ExecDevice());
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }

  // What a message carries: its channel is (sender, receiver, direction) (op.h).
  enum class Direction { kActivations, kGradients };
  void Send(const torch::Tensor& buffer, int peer, int tag, const std::string& what,
            Direction direction = Direction::kActivations);
  void Recv(torch::Tensor& buffer, int peer, int tag, const std::string& what,
            Direction direction = Direction::kActivations);
  // A receive posted ahead of its turn in the list (so that the sender's data can flow while
  // this worker computes); WaitRecv(id) blocks until it has arrived (on a GPU: orders the
  // compute stream after it).
  int PostRecv(torch::Tensor& buffer, int peer, int tag, const std::string& what,
               Direction direction = Direction::kActivations);
  void WaitRecv(int id);
  // NCCL: opens every channel this worker is an end of, from the run's list of channels (the
  // same on every worker), and the replicas' group, before the run starts. A communicator is
  // made the first time its group communicates, and making one blocks until the other end takes
  // part: made lazily, a receive posted early could block this worker until the peer's first
  // send, which may wait for this worker (a deadlock). Walking one list in one order on every
  // worker, pair by pair, cannot deadlock. A no-op on the other transports.
  using ChannelKey = std::tuple<int, int, Direction>;  // sender, receiver, direction
  void OpenChannels(const std::vector<ChannelKey>& channels);
  // Sums `buffer` over the replicas of this worker's stage (a no-op without replicas).
  void AllReduceSum(torch::Tensor& buffer, const std::string& what);
  // Waits for every send posted so far.
  void FinishSends();
  void Barrier();
  // "gloo", "nccl" or "gloo, staged through host memory".
  std::string transport() const;

  // Small strings through the store (results to rank 0).
  void Publish(const std::string& key, const std::string& value);
  std::string Fetch(const std::string& key);

 private:
  void Wait(const c10::intrusive_ptr<c10d::Work>& work, int peer, const std::string& what);
  [[noreturn]] void Lost(int peer, const std::string& what, const std::string& cause);
  void PruneSends();
  // NCCL: the two-rank group of the channel from `sender` to `receiver`, made on first use (both
  // ends meet through the store under the channel's prefix).
  c10d::Backend& Channel(int sender, int receiver, Direction direction);
  // The tensor that travels for `buffer` (its host copy when messages are staged).
  torch::Tensor Outgoing(const torch::Tensor& buffer) const;
  torch::Tensor Incoming(const torch::Tensor& buffer) const;

  ProcessEnv env_;
  double timeout_s_;
  ExecDevice device_;
  bool nccl_ = false;    // point-to-point and all-reduce over NCCL
  bool staged_ = false;  // device tensors travel as host copies over Gloo
  void Connect(const std::vector<std::vector<int>>& replica_groups, const std::string& fingerprint);
  c10::intrusive_ptr<c10d::Store> store_;
  // c10d's backends (torch 2.x: a ProcessGroup dispatches to one per device type; these are the
  // backends themselves).
  c10::intrusive_ptr<c10d::Backend> world_;
  c10::intrusive_ptr<c10d::Backend> replicas_;  // null when the stage has one replica
  std::map<std::tuple<int, int, Direction>, c10::intrusive_ptr<c10d::Backend>> channels_;
  std::vector<int> replica_ranks_;
  struct PendingSend {
    c10::intrusive_ptr<c10d::Work> work;
    int peer;
    std::string what;
    torch::Tensor payload;  // what travels (kept alive until the work is done)
    torch::Tensor target;   // staged receives: the device buffer the payload is copied into
  };
  std::vector<PendingSend> sends_;
  std::map<int, PendingSend> recvs_;
  int next_recv_ = 0;
};

}  // namespace pipetwin::exec
