#include "partition/cli/back_end.h"

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "partition/util/error.h"
#include "partition/util/host.h"

namespace pipetwin::cli {

int RunBackEnd(const std::string& name, const std::vector<std::string>& args, std::string* out) {
  const std::string program = SiblingProgram(name);
  if (program.empty()) throw InputError("pipetwin: " + name + " is not built");
  int fds[2] = {-1, -1};
  if (out && ::pipe(fds) != 0)
    throw InputError("pipetwin: cannot create a pipe: " + std::string(strerror(errno)));
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (out) {
      ::dup2(fds[1], STDOUT_FILENO);
      ::close(fds[0]);
      ::close(fds[1]);
    }
    std::vector<char*> argv = {const_cast<char*>(program.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(program.c_str(), argv.data());
    ::_exit(127);
  }
  if (out) ::close(fds[1]);
  if (pid < 0) {
    if (out) ::close(fds[0]);
    throw InputError("pipetwin: cannot start " + program + ": " + strerror(errno));
  }
  if (out) {
    out->clear();
    char buffer[65536];
    for (ssize_t got; (got = ::read(fds[0], buffer, sizeof buffer)) != 0;) {
      if (got < 0) {
        if (errno == EINTR) continue;
        break;
      }
      out->append(buffer, static_cast<size_t>(got));
    }
    ::close(fds[0]);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace pipetwin::cli
