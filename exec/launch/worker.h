// The process-level entry points of pipetwin-exec, free of LibTorch types so that the launcher
// and main() compile without it.
//
//   pipetwin-exec run SCENARIO ...   without RANK/WORLD_SIZE: LaunchLocalWorkers (launcher.h)
//                                    with them: RunWorker, one worker of the run
//   pipetwin-exec profile WORKLOAD   RunProfile
#pragma once

#include <memory>

#include "exec/launch/process_env.h"
#include "partition/util/error.h"
#include "partition/cli/options/profile.h"
#include "partition/cli/options/run.h"

namespace pipetwin::exec {

using cli::ProfileOptions;
using cli::RunOptions;

// Runs this process's worker: builds its stage, meets the others through the store, runs its op
// list (once per program), hands its measurement to rank 0; rank 0 prints the report and writes
// the trace. Returns the exit status. Throws InputError (bad input: exit 2) or RunError (a lost
// peer, an unreachable store: exit 1).
int RunWorker(const RunOptions& options, const ProcessEnv& env);

// `pipetwin profile`: measures a workload's layers and prints or writes the workload file.
int RunProfile(const ProfileOptions& options);

// Sets the threads of the BLAS library behind LibTorch (OpenBLAS keeps its own pool).
void SetBlasThreads(int threads);


// A TCPStore served by the local launcher on 127.0.0.1 (any free port), so that no worker has to
// find a free port; the workers connect as clients.
class StoreHost {
 public:
  StoreHost();
  ~StoreHost();
  StoreHost(const StoreHost&) = delete;
  StoreHost& operator=(const StoreHost&) = delete;
  int port() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pipetwin::exec
