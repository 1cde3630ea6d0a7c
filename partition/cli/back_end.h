// The back-end programs beside the front end (pipetwin-sim, pipetwin-exec), started as child
// processes by commands that chain several of them (`pipetwin compare`).
//
//   std::string out;
//   int status = RunBackEnd("pipetwin-sim", {"simulate", "s.json", "--json"}, &out);
#pragma once

#include <string>
#include <vector>

namespace pipetwin::cli {

// Runs NAME ARGS... and waits. Its standard output is collected into `out` (when not null),
// its standard error passes through. Returns its exit status (128 + N when killed by signal N).
// Throws InputError when the program is not built or cannot be started.
int RunBackEnd(const std::string& name, const std::vector<std::string>& args, std::string* out);

}  // namespace pipetwin::cli
