// The one main routine of pipetwin's three programs (the front end `pipetwin`, and the back ends
// `pipetwin-sim` and `pipetwin-exec` it hands commands to): dispatch to a command, and the one
// mapping of what escapes it to an exit status and one line on standard error:
//   bad input (InputError: a file, a setting, a word)                exit 2
//   a failed run or a system fault (RunError, out of memory)         exit 1
//   anything else: an internal error, a bug to report                exit 3
//
//   int main(int argc, char** argv) {
//     return cli::RunMain({"pipetwin-sim", "simulate|sweep [OPTIONS]", SimCommands()}, argc, argv);
//   }
#pragma once

#include <string>
#include <vector>

#include "partition/cli/parse.h"

namespace pipetwin::cli {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(const Args& args);  // the exit status; throws as above
};

struct Program {
  std::string name;                    // "pipetwin", "pipetwin-sim", "pipetwin-exec"
  std::string about;                   // the paragraph of `NAME --help`
  std::vector<Command> commands;
  // Put before an internal error's text ("rank 2: "), or null.
  std::string (*context)() = nullptr;
};

// Runs argv[1]'s command with the words after it. No command, or an unknown one: the help on
// standard error and exit 2; `--help`: the help on standard output and exit 0.
int RunMain(const Program& program, int argc, char** argv);

}  // namespace pipetwin::cli
