// The local launcher of `pipetwin run` (what torchrun does on one machine): it hosts the
// TCPStore, starts one process per worker (this program again, with RANK, WORLD_SIZE,
// LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT set), and watches them. When a worker
// exits with an error or is killed, it stops the others at once and says which rank was lost.
//
// A per-rank command prefix (`pipetwin run --rank-prefix "CMD ARGS"`) starts each worker as
// `CMD ARGS PROGRAM ARGS...` instead, with the same environment: the prefix places the rank (a
// network namespace and cores of its own, scripts/netns.sh; a container; a remote shell) and may
// set LOCAL_RANK, LOCAL_WORLD_SIZE and MASTER_ADDR for it. The workers may then not reach this
// process, so rank 0 hosts the store, at MASTER_ADDR.
//
//   int status = LaunchLocalWorkers(job.WorkerCount(), "/path/pipetwin-exec", {"run", "s.json"});
//
// Free of LibTorch apart from the store (worker.h).
#pragma once

#include <string>
#include <vector>

namespace pipetwin::exec {

// Runs `program args...` as `workers` worker processes and waits for them. Returns 0 when all
// succeed; otherwise prints one line naming the first rank that failed and how, and returns that
// worker's exit status (1 for a signal).
int LaunchLocalWorkers(int workers, const std::string& program,
                       const std::vector<std::string>& args,
                       const std::vector<std::string>& rank_prefix = {});


}  // namespace pipetwin::exec
