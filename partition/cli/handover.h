// The back-end programs beside the front end: pipetwin-sim (SimGrid) and pipetwin-exec
// (LibTorch). A command is handed over to one of them (the front end links neither, so it
// starts in milliseconds), or, for commands that chain several steps (`pipetwin compare`), one
// is run as a child process.
//
//   HandOver("pipetwin-sim", "simulate", args);   // never returns
//   std::string out;
//   int status = RunBackEnd("pipetwin-sim", {"simulate", "s.json", "--json"}, &out);
#pragma once

#include <string>
#include <vector>

namespace pipetwin::cli {

// Replaces this process with `PROGRAM COMMAND ARGS...` (bin/PROGRAM beside this one). Throws
// RunError when the program is not built or cannot be started.
[[noreturn]] void HandOver(const std::string& program, const std::string& command,
                           const std::vector<std::string>& args);

// Runs bin/PROGRAM ARGS... and waits. Its standard output is collected into `out` (when not
// null), its standard error passes through, or goes to the file `error_file` when one is named
// (created or replaced: a file of the caller's own work folder). Returns its exit status
// (128 + N when killed by signal N). Throws RunError when the program is not built or cannot
// be started.
int RunBackEnd(const std::string& program, const std::vector<std::string>& args,
               std::string* out, const std::string& error_file = "");

}  // namespace pipetwin::cli
