// Running work in a child process. SimGrid keeps one engine per process and cannot start a
// second, so every simulation after the first (sweep points, tests) runs in a fork of its own.
//
//   ChildProcess child([&] { return ReportToJson(Simulate(...)).dump(); });   // forks now
//   std::string json = child.Collect();   // waits; rethrows the child's InputError, RunError
//
// The parent must not hold a SimGrid engine (fork copies it half-run).
#pragma once

#include <functional>
#include <string>

#include <sys/types.h>

namespace pipetwin::sim {

class ChildProcess {
 public:
  // Forks; the child runs `work`, hands its result back through a temporary file and exits.
  explicit ChildProcess(const std::function<std::string()>& work);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Waits for the child (unless `status` from a waitpid that reaped it is given) and returns
  // what `work` returned. Throws InputError with the child's one line when `work` threw one;
  // RunError when `work` threw one or ran out of memory, or the child died before reporting;
  // std::runtime_error when it threw anything else (an internal error).
  std::string Collect();
  std::string Collect(int status);

 private:
  pid_t pid_ = -1;
  std::string path_;  // where the child writes its result
  bool collected_ = false;
};

// Runs `work` in a child and returns its result (Collect at once).
std::string RunInChild(const std::function<std::string()>& work);

}  // namespace pipetwin::sim
