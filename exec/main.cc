// pipetwin-exec: the LibTorch back end behind `pipetwin run` and `pipetwin profile` (the front end
// execs it with the same words, so that `pipetwin` itself never loads LibTorch).
//
//   pipetwin-exec run SCENARIO [options]      launch one process per worker here, or, with
//                                             RANK/WORLD_SIZE (torchrun, Slurm) set, be one
//   pipetwin-exec profile WORKLOAD [options]  measure a workload's layers
//   pipetwin-exec calibrate [options]         measure this machine as a cluster file
//
// Exit status: 0 success, 2 bad input (one line naming file and field), 1 a failed run (a lost
// worker, an unreachable store), 3 an internal error.
#include <iostream>
#include <string>
#include <vector>

#include <c10/util/Exception.h>

#include "exec/calibrate/calibrate.h"
#include "exec/job.h"
#include "exec/launch/launcher.h"
#include "partition/util/host.h"
#include "exec/run_options.h"
#include "exec/launch/worker.h"
#include "partition/cli/options.h"
#include "partition/util/error.h"

namespace {

using namespace pipetwin;
using namespace pipetwin::exec;

int Run(const std::vector<std::string>& args) {
  const auto vm = cli::ParseCommandLine("run", WithPositional(RunOptionsDescription(), "scenario"),
                                        RunPositional(), args);
  if (vm.count("help")) {
    cli::PrintUsage(std::cout, "run", RunUsage(), RunDescription(), RunOptionsDescription());
    return 0;
  }
  const RunOptions options = ReadRunOptions(vm);
  if (auto env = ProcessEnvFromEnvironment()) return RunWorker(options, *env);
  // Launcher: refuse what the executor cannot run before any worker starts.
  const ExecutorJob job = PrepareJob(options);
  if (options.check_only) return 0;
  std::vector<std::string> worker_args = {"run"};
  worker_args.insert(worker_args.end(), args.begin(), args.end());
  return LaunchLocalWorkers(job.WorkerCount(), SelfExecutable(), worker_args);
}

int Profile(const std::vector<std::string>& args) {
  const auto vm = cli::ParseCommandLine(
      "profile", WithPositional(ProfileOptionsDescription(), "workload"), ProfilePositional(), args);
  if (vm.count("help")) {
    cli::PrintUsage(std::cout, "profile", ProfileUsage(), ProfileDescription(),
                    ProfileOptionsDescription());
    return 0;
  }
  return RunProfile(ReadProfileOptions(vm));
}

int Calibrate(const std::vector<std::string>& args) {
  const auto vm = cli::ParseCommandLine("calibrate", CalibrateOptionsDescription(), {}, args);
  if (vm.count("help")) {
    cli::PrintUsage(std::cout, "calibrate", CalibrateUsage(), CalibrateDescription(),
                    CalibrateOptionsDescription());
    return 0;
  }
  const CalibrateOptions options = ReadCalibrateOptions(vm);
  if (IsCalibrationWorker()) {
    if (auto env = ProcessEnvFromEnvironment()) return RunCalibrateWorker(options, *env);
  }
  std::vector<std::string> worker_args = {"calibrate"};
  worker_args.insert(worker_args.end(), args.begin(), args.end());
  return RunCalibrate(options, SelfExecutable(), worker_args);
}

// "pipetwin run: " or "pipetwin run: rank 2: " before a runtime error.
std::string Prefix(const std::string& command) {
  std::string prefix = "pipetwin " + command + ": ";
  if (const char* rank = std::getenv("RANK")) prefix += "rank " + std::string(rank) + ": ";
  return prefix;
}

}  // namespace

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  if (argc < 2) {
    std::cerr << "usage: pipetwin-exec run|profile|calibrate ARGS (see pipetwin run --help)\n";
    return 2;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (command == "run") return Run(args);
    if (command == "profile") return Profile(args);
    if (command == "calibrate") return Calibrate(args);
    std::cerr << "pipetwin-exec: unknown command '" << command
              << "' (run, profile or calibrate)\n";
    return 2;
  } catch (const InputError& e) {
    std::cout.flush();
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const RunError& e) {
    std::cout.flush();
    std::cerr << "pipetwin " << command << ": " << e.what() << "\n";
    return 1;
  } catch (const c10::Error& e) {
    std::cout.flush();
    std::cerr << Prefix(command) << "internal error: " << e.what_without_backtrace() << "\n";
    return 3;
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << Prefix(command) << "internal error: " << e.what() << "\n";
    return 3;
  }
}
