// Helpers shared by the test suites: where the shared profiles and fixtures are, and running the
// `pipetwin` binary as a user would.
#pragma once

#include <optional>
#include <string>

#include "partition/model/workload.h"

namespace pipetwin::testing {

// ../shared/profiles/pipedream/NAME/graph.txt beside the checkout (or $PIPETWIN_SHARED_DIR), or
// nullopt when it is absent (tests then GTEST_SKIP with a message).
std::optional<std::string> SharedProfile(const std::string& name);
// tests/fixtures/NAME
std::string Fixture(const std::string& name);
// Layer `index` of a chain (fed by layer index - 1) with fp32 parameters.
Layer ChainLayer(int index, double forward_ms, double backward_ms, double activation_bytes,
                 double parameters);
// A fresh empty temporary directory for one test.
std::string TemporaryDirectory();
// Writes `text` to `path`.
void WriteFile(const std::string& path, const std::string& text);

struct CommandResult {
  int exit_code = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};
// Runs `pipetwin ARGS` (ARGS is shell syntax) and captures its output; `shell_prefix` runs
// first in the same shell ("ulimit -v 4000000; ").
CommandResult RunPipetwin(const std::string& args, const std::string& shell_prefix = "");
// Whether the back end `name` ("pipetwin-sim", "pipetwin-exec") is built beside `pipetwin`: a
// build without SimGrid or LibTorch (scripts/sanitize.sh builds neither LibTorch) has not.
bool BackEndBuilt(const std::string& name);

}  // namespace pipetwin::testing
