// pipetwin-exec: the LibTorch back end behind `pipetwin run` and `pipetwin profile` (the front end
// execs it with the same words, so that `pipetwin` itself never loads LibTorch).
//
//   pipetwin-exec run SCENARIO [options]      launch one process per worker here, or, with
//                                             RANK/WORLD_SIZE (torchrun, Slurm) set, be one
//   pipetwin-exec profile WORKLOAD [options]  measure a workload's layers
//   pipetwin-exec calibrate [options]         measure this machine as a cluster file
//
// Exit status (partition/cli/run_main.h): 0 success, 2 bad input (one line naming file and
// field), 1 a failed run (a lost worker, an unreachable store), 3 an internal error.
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "exec/calibrate/calibrate.h"
#include "exec/job.h"
#include "exec/launch/launcher.h"
#include "exec/launch/machine_check.h"
#include "partition/util/host.h"
#include "partition/cli/options/calibrate.h"
#include "partition/cli/options/profile.h"
#include "partition/cli/options/run.h"
#include "partition/cli/run_main.h"
#include "exec/launch/worker.h"
#include "exec/runtime/device.h"
#include "partition/util/error.h"
#include "partition/util/machine.h"

namespace {

using namespace pipetwin;
using namespace pipetwin::exec;
using namespace pipetwin::cli;

int Run(const std::vector<std::string>& args) {
  const auto vm = ParseRunWords(args);
  if (vm.count("help")) {
    cli::PrintUsage(std::cout, "run", RunUsage(), RunDescription(), RunOptionsDescription());
    return 0;
  }
  const RunOptions options = ReadRunOptions(vm);
  if (auto env = ProcessEnvFromEnvironment()) return RunWorker(options, *env);
  // Launcher: refuse what the executor cannot run before any worker starts.
  CheckDeviceAvailable(options.device, "pipetwin run: --device");
  const ExecutorJob job = PrepareJob(options);
  for (const std::string& note : job.scenario.notes)
    std::cerr << "pipetwin run: warning: " << note << "\n";
  // Every worker starts on this machine unless a rank prefix places them (launcher.h).
  if (options.rank_prefix.empty()) CheckMachineHoldsRun(job);
  if (options.check_only) return 0;
  // The load before the run, for rank 0's report (partition/util/machine.h): a quarter of a
  // second is 25 clock ticks per CPU, fine enough for kDisturbingLoadShare.
  ::setenv("PIPETWIN_LOAD_BEFORE", LoadShareToText(SampleLoad(AllowedCpus(), 0.25)).c_str(), 1);
  std::vector<std::string> worker_args = {"run"};
  worker_args.insert(worker_args.end(), args.begin(), args.end());
  return LaunchLocalWorkers(job.WorkerCount(), SelfExecutable(), worker_args, options.rank_prefix);
}

int Profile(const std::vector<std::string>& args) {
  const auto vm = ParseProfileWords(args);
  if (vm.count("help")) {
    cli::PrintUsage(std::cout, "profile", ProfileUsage(), ProfileDescription(),
                    ProfileOptionsDescription());
    return 0;
  }
  const ProfileOptions options = ReadProfileOptions(vm);
  CheckDeviceAvailable(options.device, "pipetwin profile: --device");
  return RunProfile(options);
}

int Calibrate(const std::vector<std::string>& args) {
  const auto vm = cli::ParseCommandLine("calibrate", CalibrateOptionsDescription(), {}, args);
  if (vm.count("help")) {
    cli::PrintUsage(std::cout, "calibrate", CalibrateUsage(), CalibrateDescription(),
                    CalibrateOptionsDescription());
    return 0;
  }
  const CalibrateOptions options = ReadCalibrateOptions(vm);
  CheckDeviceAvailable(options.device, "pipetwin calibrate: --device");
  if (IsCalibrationWorker()) {
    if (auto env = ProcessEnvFromEnvironment()) return RunCalibrateWorker(options, *env);
  }
  std::vector<std::string> worker_args = {"calibrate"};
  worker_args.insert(worker_args.end(), args.begin(), args.end());
  return RunCalibrate(options, SelfExecutable(), worker_args);
}

// "rank 2: " before an internal error of a worker, "" in the launcher.
std::string RankContext() {
  const char* rank = std::getenv("RANK");
  return rank ? "rank " + std::string(rank) + ": " : "";
}

}  // namespace

int main(int argc, char** argv) {
  const cli::Program program{
      "pipetwin-exec",
      "The LibTorch back end of pipetwin: `pipetwin run`, `profile` and `calibrate` run here.",
      {{"run", "train the plan for real with LibTorch and measure it", Run},
       {"profile", "measure a workload's per-layer times and sizes on this machine", Profile},
       {"calibrate", "measure this machine (cores, loopback, Gloo) as a cluster file",
        Calibrate}},
      RankContext};
  return cli::RunMain(program, argc, argv);
}
