// `pipetwin simulate` and `pipetwin sweep`: handed over to pipetwin-sim, the SimGrid back end,
// which sits beside this program (the front end links no SimGrid, so it starts in milliseconds).
// The words after the command go over unchanged; pipetwin-sim's exit status is this one's.
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "partition/cli/options.h"
#include "partition/util/error.h"

namespace pipetwin::cli {

namespace {

// The directory of the running program (/proc/self/exe), with a trailing slash.
std::string ProgramDirectory() {
  std::vector<char> buffer(4096);
  const ssize_t n = readlink("/proc/self/exe", buffer.data(), buffer.size() - 1);
  if (n <= 0) return "";
  const std::string self(buffer.data(), static_cast<size_t>(n));
  return self.substr(0, self.find_last_of('/') + 1);
}

bool WantsHelp(const Args& args) {
  for (const auto& a : args)
    if (a == "--help" || a == "-h") return true;
  return false;
}

// Replaces this process with `pipetwin-sim COMMAND ARGS...`; returns only on failure.
int HandOver(const std::string& command, const std::string& usage, const Args& args) {
  const std::string program = ProgramDirectory() + "pipetwin-sim";
  if (access(program.c_str(), X_OK) != 0) {
    if (WantsHelp(args)) {
      std::cout << "usage: pipetwin " << command << " " << usage
                << "\n\n(pipetwin-sim, the SimGrid back end, is not built: SimGrid missing?)\n";
      return 0;
    }
    throw InputError("pipetwin " + command + ": pipetwin-sim not built (SimGrid missing?)");
  }
  std::vector<std::string> words = {program, command};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::cout.flush();
  std::cerr.flush();
  execv(program.c_str(), argv.data());
  throw InputError("pipetwin " + command + ": cannot run " + program + ": " + strerror(errno));
}

}  // namespace

int RunSimulateCommand(const Args& args) {
  return HandOver("simulate", "[SCENARIO] [--plan PLAN] [--json] [--trace F] [--svg F]", args);
}

int RunSweepCommand(const Args& args) {
  return HandOver("sweep", "SCENARIO --vary PATH=V1,V2,... [--vary ...] [--csv F] [--json]",
                  args);
}

}  // namespace pipetwin::cli
