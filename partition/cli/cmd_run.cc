// `pipetwin run`, `pipetwin profile` and `pipetwin calibrate`: handed to pipetwin-exec, the
// LibTorch back end beside this program, so that `pipetwin` never loads LibTorch. Help and bad
// words are answered here (the options are defined once, in exec/run_options.h and
// exec/calibrate_options.h); everything else is pipetwin-exec's.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "exec/calibrate_options.h"
#include "exec/run_options.h"
#include "partition/cli/options.h"
#include "partition/util/error.h"

namespace pipetwin::cli {

namespace {

// bin/pipetwin-exec beside /proc/self/exe, or "" when it is not there.
std::string BackEnd() {
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "";
  self[n] = '\0';
  std::string path(self);
  path = path.substr(0, path.find_last_of('/') + 1) + "pipetwin-exec";
  return ::access(path.c_str(), X_OK) == 0 ? path : "";
}

// Replaces this process with `pipetwin-exec COMMAND ARGS`.
int ExecBackEnd(const std::string& command, const Args& args) {
  const std::string program = BackEnd();
  if (program.empty())
    throw InputError("pipetwin " + command + ": pipetwin-exec not built (LibTorch missing?)");
  std::vector<char*> argv = {const_cast<char*>(program.c_str()),
                             const_cast<char*>(command.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::cout.flush();
  ::execv(program.c_str(), argv.data());
  throw InputError("pipetwin " + command + ": cannot start " + program + ": " +
                   std::strerror(errno));
}

}  // namespace

int RunRunCommand(const Args& args) {
  const auto vm = ParseCommandLine("run", exec::WithPositional(exec::RunOptionsDescription(),
                                                               "scenario"),
                                   exec::RunPositional(), args);
  if (vm.count("help")) {
    PrintUsage(std::cout, "run", exec::RunUsage(), exec::RunDescription(),
               exec::RunOptionsDescription());
    return 0;
  }
  exec::ReadRunOptions(vm);  // bad values fail here, before anything starts
  return ExecBackEnd("run", args);
}

int RunProfileCommand(const Args& args) {
  const auto vm = ParseCommandLine("profile", exec::WithPositional(
                                                  exec::ProfileOptionsDescription(), "workload"),
                                   exec::ProfilePositional(), args);
  if (vm.count("help")) {
    PrintUsage(std::cout, "profile", exec::ProfileUsage(), exec::ProfileDescription(),
               exec::ProfileOptionsDescription());
    return 0;
  }
  exec::ReadProfileOptions(vm);
  return ExecBackEnd("profile", args);
}

int RunCalibrateCommand(const Args& args) {
  const auto vm = ParseCommandLine("calibrate", exec::CalibrateOptionsDescription(), {}, args);
  if (vm.count("help")) {
    PrintUsage(std::cout, "calibrate", exec::CalibrateUsage(), exec::CalibrateDescription(),
               exec::CalibrateOptionsDescription());
    return 0;
  }
  exec::CheckCalibrationOutput(exec::ReadCalibrateOptions(vm));
  return ExecBackEnd("calibrate", args);
}

}  // namespace pipetwin::cli
