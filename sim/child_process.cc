#include "sim/child_process.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <new>
#include <sstream>
#include <stdexcept>

#include <sys/wait.h>
#include <unistd.h>

#include "partition/util/error.h"
#include "partition/util/files.h"

namespace pipetwin::sim {

namespace {

// The first byte of the result file says what follows: a result, an InputError, a failed run or
// a system fault (RunError, out of memory: exit 1), another fault (an internal error: exit 3).
constexpr char kResult = 'R', kInputError = 'E', kRunError = 'X', kFault = 'F';

void WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(4);
    done += static_cast<size_t>(n);
  }
}

// Out of memory anywhere in the child, SimGrid's actors included (SimGrid aborts on an exception
// an actor does not catch): the new-handler writes the prepared report and ends the child.
int g_result_fd = -1;
std::string* g_out_of_memory = nullptr;

void ReportOutOfMemory() {
  WriteAll(g_result_fd, *g_out_of_memory);
  _exit(0);
}

}  // namespace

ChildProcess::ChildProcess(const std::function<std::string()>& work) {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/pipetwin-sim-XXXXXX";
  const int fd = mkstemp(pattern.data());
  if (fd < 0)
    throw RunError("cannot create a temporary file: " + std::string(strerror(errno)));
  path_ = pattern;
  std::cout.flush();
  std::cerr.flush();
  pid_ = fork();
  if (pid_ < 0) {
    close(fd);
    unlink(path_.c_str());
    throw RunError("fork failed: " + std::string(strerror(errno)));
  }
  if (pid_ > 0) {
    close(fd);
    return;
  }
  g_result_fd = fd;
  g_out_of_memory = new std::string(kRunError + std::string("out of memory while simulating ") +
                                    DescribeInputsRead() +
                                    " (the machine's memory or the address-space limit, "
                                    "ulimit -v, ran out)");
  std::set_new_handler(ReportOutOfMemory);
  std::string out;
  try {
    out = kResult + work();
  } catch (const InputError& e) {
    out = kInputError + std::string(e.what());
  } catch (const RunError& e) {
    out = kRunError + std::string(e.what());
  } catch (const std::bad_alloc&) {
    out = *g_out_of_memory;
  } catch (const std::exception& e) {
    out = kFault + std::string(e.what());
  }
  WriteAll(fd, out);
  close(fd);
  std::cout.flush();
  _exit(0);  // no destructors, no atexit: the parent owns everything else
}

ChildProcess::~ChildProcess() {
  if (!collected_ && pid_ > 0) {
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  if (!path_.empty()) unlink(path_.c_str());
}

std::string ChildProcess::Collect() {
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  return Collect(status);
}

std::string ChildProcess::Collect(int status) {
  collected_ = true;
  std::ifstream in(path_, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string out = buffer.str();
  if (out.empty()) {
    const std::string how = WIFSIGNALED(status)
                                ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                : "exited with status " + std::to_string(WEXITSTATUS(status));
    throw RunError("the simulation process " + how + " before reporting");
  }
  if (out[0] == kInputError) throw InputError(out.substr(1));
  if (out[0] == kRunError) throw RunError(out.substr(1));
  if (out[0] == kFault) throw std::runtime_error(out.substr(1));
  return out.substr(1);
}

std::string RunInChild(const std::function<std::string()>& work) {
  return ChildProcess(work).Collect();
}

}  // namespace pipetwin::sim
