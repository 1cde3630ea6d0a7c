// c10d communication of one worker: the TCPStore the workers meet through, a ProcessGroupGloo
// over all workers for point-to-point messages, and one over each replicated stage's workers for
// the gradient all-reduce.
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
#include <vector>

#include <torch/torch.h>

#include "exec/launch/process_env.h"
#include "exec/launch/worker.h"

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
               bool verbose = false);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }

  void Send(const torch::Tensor& buffer, int peer, int tag, const std::string& what);
  void Recv(torch::Tensor& buffer, int peer, int tag, const std::string& what);
  // A receive posted ahead of its turn in the list (so that the sender's data can flow while
  // this worker computes); WaitRecv(id) blocks until it has arrived.
  int PostRecv(torch::Tensor& buffer, int peer, int tag, const std::string& what);
  void WaitRecv(int id);
  // Sums `buffer` over the replicas of this worker's stage (a no-op without replicas).
  void AllReduceSum(torch::Tensor& buffer, const std::string& what);
  // Waits for every send posted so far.
  void FinishSends();
  void Barrier();

  // Small strings through the store (results to rank 0).
  void Publish(const std::string& key, const std::string& value);
  std::string Fetch(const std::string& key);

 private:
  void Wait(const c10::intrusive_ptr<c10d::Work>& work, int peer, const std::string& what);
  [[noreturn]] void Lost(int peer, const std::string& what, const std::string& cause);
  void PruneSends();

  ProcessEnv env_;
  double timeout_s_;
  void Connect(const std::vector<std::vector<int>>& replica_groups, const std::string& fingerprint);
  c10::intrusive_ptr<c10d::Store> store_;
  // c10d's backends (torch 2.x: a ProcessGroup dispatches to one per device type; these are the
  // backends themselves).
  c10::intrusive_ptr<c10d::Backend> world_;
  c10::intrusive_ptr<c10d::Backend> replicas_;  // null when the stage has one replica
  std::vector<int> replica_ranks_;
  struct PendingSend {
    c10::intrusive_ptr<c10d::Work> work;
    int peer;
    std::string what;
  };
  std::vector<PendingSend> sends_;
  std::map<int, PendingSend> recvs_;
  int next_recv_ = 0;
};

}  // namespace pipetwin::exec
