// The one error path of pipetwin (STYLE.md): library code throws InputError carrying where the
// bad input is (file, JSON path or line) and what was expected, or RunError when a run fails
// (a lost peer, a failed system call); the CLI catches them once, prints one line and exits 2
// or 1 (partition/cli/run_main.h).
//
//   throw InputError("scenario.json", "cluster.levels[1].bandwidth_gbps",
//                    "expected a number > 0, got -5");
//   // what(): "scenario.json: cluster.levels[1].bandwidth_gbps: expected a number > 0, got -5"
#pragma once

#include <stdexcept>
#include <string>

namespace pipetwin {

// Bad user input: a malformed or inconsistent file, or an impossible configuration.
class InputError : public std::runtime_error {
 public:
  // `where` is a JSON path ("cluster.levels[1]"), a line ("line 12") or empty.
  InputError(const std::string& file, const std::string& where, const std::string& what)
      : std::runtime_error(Format(file, where, what)), file_(file), where_(where) {}
  // An error with no file behind it (command-line options, a rule between settings).
  explicit InputError(const std::string& what) : std::runtime_error(what) {}

  const std::string& file() const { return file_; }
  const std::string& where() const { return where_; }

 private:
  static std::string Format(const std::string& file, const std::string& where,
                            const std::string& what) {
    std::string out;
    if (!file.empty()) out += file + ": ";
    if (!where.empty()) out += where + ": ";
    return out + what;
  }
  std::string file_;
  std::string where_;
};

// A run that failed on good input (exit status 1): a lost peer, an unreachable store, workers
// that disagree on what they run, a system call that failed.
class RunError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace pipetwin
