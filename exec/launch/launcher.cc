#include "exec/launch/launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <map>
#include <optional>
#include <thread>

#include "exec/launch/worker.h"

namespace pipetwin::exec {

namespace {

constexpr auto kGracePeriod = std::chrono::seconds(3);

// A TCP port free on this machine now (for rank 0's store when a prefix places the ranks).
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof address;
  int port = 29500;
  if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0)
    port = ntohs(address.sin_port);
  if (fd >= 0) ::close(fd);
  return port;
}

volatile sig_atomic_t g_interrupted = 0;
void OnInterrupt(int signal) { g_interrupted = signal; }

std::string Describe(int status) {
  if (WIFSTOPPED(status))
    return std::string("stopped by signal ") + std::to_string(WSTOPSIG(status)) + " (" +
           strsignal(WSTOPSIG(status)) + "), so it makes no progress";
  if (WIFSIGNALED(status))
    return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  return "exit status " + std::to_string(WEXITSTATUS(status));
}

bool Failed(int status) { return !WIFEXITED(status) || WEXITSTATUS(status) != 0; }

[[noreturn]] void ExecWorker(int rank, int workers, int port, bool store_hosted,
                             const std::vector<std::string>& words) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // never outlive the launcher
  ::setenv("RANK", std::to_string(rank).c_str(), 1);
  ::setenv("WORLD_SIZE", std::to_string(workers).c_str(), 1);
  ::setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
  ::setenv("LOCAL_WORLD_SIZE", std::to_string(workers).c_str(), 1);
  ::setenv("MASTER_ADDR", "127.0.0.1", 1);
  ::setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
  if (store_hosted) ::setenv("PIPETWIN_STORE_HOSTED", "1", 1);
  else ::unsetenv("PIPETWIN_STORE_HOSTED");
  // OpenMP threads that spin while they wait steal the cores the other workers compute on.
  ::setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
  ::unsetenv("SLURM_PROCID");
  ::unsetenv("SLURM_NTASKS");
  std::vector<char*> argv;
  for (const auto& w : words) argv.push_back(const_cast<char*>(w.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  std::cerr << "pipetwin run: cannot start " << words[0] << ": " << std::strerror(errno) << "\n";
  ::_exit(127);
}

// Stops the workers still running: SIGTERM, then SIGKILL after a grace period.
void StopAll(std::map<pid_t, int>& running) {
  for (auto& [pid, rank] : running) {
    ::kill(pid, SIGTERM);
    ::kill(pid, SIGCONT);  // a stopped worker acts on SIGTERM only once it runs again
  }
  const auto deadline = std::chrono::steady_clock::now() + kGracePeriod;
  while (!running.empty() && std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0) running.erase(pid);
    else std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (auto& [pid, rank] : running) ::kill(pid, SIGKILL);
  for (auto& [pid, rank] : running) ::waitpid(pid, nullptr, 0);
  running.clear();
}

}  // namespace

int LaunchLocalWorkers(int workers, const std::string& program,
                       const std::vector<std::string>& args,
                       const std::vector<std::string>& rank_prefix) {
  // Without a prefix the workers are this machine's processes: the store is hosted here.
  std::optional<StoreHost> store;
  int port = 0;
  if (rank_prefix.empty()) {
    store.emplace();
    port = store->port();
  } else {
    port = FreePort();
  }
  std::vector<std::string> words = rank_prefix;
  words.push_back(program);
  words.insert(words.end(), args.begin(), args.end());
  std::cout.flush();
  std::cerr.flush();
  std::map<pid_t, int> running;  // pid -> rank
  for (int rank = 0; rank < workers; ++rank) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      StopAll(running);
      throw RunError(std::string("cannot start a worker process: ") + std::strerror(errno));
    }
    if (pid == 0) ExecWorker(rank, workers, port, rank_prefix.empty(), words);
    running[pid] = rank;
  }
  struct sigaction action = {};
  action.sa_handler = OnInterrupt;
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
  while (!running.empty()) {
    int status = 0;
    // WUNTRACED: a worker stopped (SIGSTOP, SIGTSTP) is as lost as a dead one, found at once
    // rather than when its peers' timeout runs out.
    const pid_t pid = ::waitpid(-1, &status, WUNTRACED);
    if (pid < 0) {
      if (errno == EINTR && g_interrupted) {
        StopAll(running);
        std::cerr << "pipetwin run: interrupted; stopped the workers\n";
        return 130;
      }
      if (errno == EINTR) continue;
      break;
    }
    auto it = running.find(pid);
    if (it == running.end()) continue;
    int rank = it->second;
    if (WIFSTOPPED(status)) {
      const size_t others = running.size() - 1;
      StopAll(running);
      std::cerr << "pipetwin run: rank " << rank << " " << Describe(status);
      if (others) std::cerr << "; stopped it and the other " << others << " worker"
                            << (others > 1 ? "s" : "");
      std::cerr << "\n";
      return 1;
    }
    running.erase(it);
    if (!Failed(status)) continue;
    // Peers of a dead worker fail too, a moment later: look briefly at who else ended, and name
    // a worker that was killed (the cause) before one that reported a lost peer.
    const auto settle = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
    while (!running.empty() && !WIFSIGNALED(status) && std::chrono::steady_clock::now() < settle) {
      int other = 0;
      const pid_t done = ::waitpid(-1, &other, WNOHANG);
      if (done <= 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      auto o = running.find(done);
      if (o == running.end()) continue;
      if (WIFSIGNALED(other)) rank = o->second, status = other;
      running.erase(o);
    }
    const size_t others = running.size();
    StopAll(running);
    std::cerr << "pipetwin run: rank " << rank << (WIFSIGNALED(status) ? " died (" : " failed (")
              << Describe(status) << ")";
    if (others) std::cerr << "; stopped the other " << others << " worker" << (others > 1 ? "s" : "");
    std::cerr << "\n";
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  }
  return 0;
}

}  // namespace pipetwin::exec
