// `pipetwin calibrate`: measures this machine as worker processes of `pipetwin run` see it, and
// writes it as a cluster (calibration.h says what each number is and where it comes from).
//
//   pipetwin-exec calibrate [--quick] ...   without PIPETWIN_STORE_HOSTED: RunCalibrate, which
//                                           starts the probe workers (launcher.h)
//                                           with it (set by the launcher): RunCalibrateWorker
//
// The probes, in max(2, cores) worker processes started like those of `pipetwin run` (a
// TCPStore hosted by the launcher, c10d ProcessGroupGloo over loopback, each process pinned to a
// core with one intra-op thread):
//   1. a raw TCP ping-pong of 4 bytes between ranks 0 and 1           -> latency_us
//   2. a c10d Gloo send/recv ping-pong between ranks 0 and 1, 4 B to 16 MB, median of the
//      repeats per size, fitted as a + S / B                           -> bandwidth, overhead
//   3. an fp32 GEMM on rank 0 alone, then on one process per core at once, and a tensor copy
//                                                                      -> contention_slowdown
// Rank 0 builds the cluster, prints it and writes --output. Free of LibTorch types.
#pragma once

#include <string>
#include <vector>

#include "partition/cli/options/calibrate.h"
#include "exec/launch/process_env.h"

namespace pipetwin::exec {

using cli::CalibrateOptions;

// The launcher: refuses an existing --output (InputError) before anything starts, then runs
// `program args...` as the probe workers. Returns the exit status.
int RunCalibrate(const CalibrateOptions& options, const std::string& program,
                 const std::vector<std::string>& args);

// One probe worker. Throws InputError (exit 2) or RunError (a lost peer: exit 1).
int RunCalibrateWorker(const CalibrateOptions& options, const ProcessEnv& env);

// True in a process started by RunCalibrate's launcher. A calibration always measures this
// machine, so RANK or SLURM_PROCID inherited from a batch job do not make a process a worker.
bool IsCalibrationWorker();

}  // namespace pipetwin::exec
