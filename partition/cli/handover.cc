#include "partition/cli/handover.h"

#include <sched.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>

#include "partition/util/error.h"
#include "partition/util/host.h"

namespace pipetwin::cli {

namespace {

// argv of `program args...`, pointing into the strings given.
std::vector<char*> Argv(const std::string& program, const std::vector<std::string>& args) {
  std::vector<char*> argv = {const_cast<char*>(program.c_str())};
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  return argv;
}

std::string Located(const std::string& name) {
  const std::string program = SiblingProgram(name);
  if (program.empty())
    throw RunError(name + " is not built beside this program (" +
                   (name == "pipetwin-sim" ? "SimGrid" : "LibTorch") + " missing?)");
  return program;
}

}  // namespace

void HandOver(const std::string& name, const std::string& command,
              const std::vector<std::string>& args) {
  const std::string program = Located(name);
  std::vector<std::string> words = {command};
  words.insert(words.end(), args.begin(), args.end());
  std::cout.flush();
  std::cerr.flush();
  ::execv(program.c_str(), Argv(program, words).data());
  throw RunError("cannot start " + program + ": " + std::strerror(errno));
}

int RunBackEnd(const std::string& name, const std::vector<std::string>& args, std::string* out,
               const std::string& error_file) {
  const std::string program = Located(name);
  int fds[2] = {-1, -1};
  if (out && ::pipe(fds) != 0)
    throw RunError("cannot create a pipe: " + std::string(strerror(errno)));
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = ::fork();
  if (pid == 0) {
    if (!error_file.empty()) {
      const int fd = ::open(error_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd >= 0) ::dup2(fd, STDERR_FILENO);
    }
    if (out) {
      ::dup2(fds[1], STDOUT_FILENO);
      ::close(fds[0]);
      ::close(fds[1]);
    }
    ::execv(program.c_str(), Argv(program, args).data());
    ::_exit(127);
  }
  if (out) ::close(fds[1]);
  if (pid < 0) {
    if (out) ::close(fds[0]);
    throw RunError("cannot start " + program + ": " + strerror(errno));
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
