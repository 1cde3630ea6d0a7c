#include "tests/test_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace pipetwin::testing {

namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

Layer ChainLayer(int index, double forward_ms, double backward_ms, double activation_bytes,
                 double parameters) {
  Layer l;
  l.id = "layer" + std::to_string(index);
  l.forward_ms = forward_ms;
  l.backward_ms = backward_ms;
  l.activation_bytes = activation_bytes;
  l.parameters = parameters;
  l.parameter_bytes = 4 * parameters;
  if (index > 0) l.inputs = {index - 1};
  return l;
}

std::optional<std::string> SharedProfile(const std::string& name) {
  std::string root = std::getenv("PIPETWIN_SHARED_DIR") ? std::getenv("PIPETWIN_SHARED_DIR")
                                                        : std::string(PIPETWIN_SOURCE_DIR) +
                                                              "/../shared";
  std::string path = root + "/profiles/pipedream/" + name + "/graph.txt";
  if (!std::ifstream(path)) return std::nullopt;
  return path;
}

std::string Fixture(const std::string& name) {
  return std::string(PIPETWIN_FIXTURES_DIR) + "/" + name;
}

namespace {

// Directories handed out to tests, removed when the test process exits.
std::vector<std::string>& MadeDirectories() {
  static std::vector<std::string> dirs;
  return dirs;
}

void RemoveMadeDirectories() {
  for (const std::string& d : MadeDirectories()) std::system(("rm -rf '" + d + "'").c_str());
}

}  // namespace

std::string TemporaryDirectory() {
  char pattern[] = "/tmp/pipetwin-test-XXXXXX";
  char* dir = mkdtemp(pattern);
  if (!dir) throw std::runtime_error("mkdtemp failed");
  if (MadeDirectories().empty()) std::atexit(RemoveMadeDirectories);
  MadeDirectories().push_back(dir);
  return dir;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path);
}

CommandResult RunPipetwin(const std::string& args, const std::string& shell_prefix) {
  std::string dir = TemporaryDirectory();
  std::string command = shell_prefix + "'" + PIPETWIN_BINARY + "' " + args + " >" + dir +
                        "/out 2>" + dir + "/err </dev/null";
  int status = std::system(command.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = Slurp(dir + "/out");
  r.err = Slurp(dir + "/err");
  return r;
}

bool BackEndBuilt(const std::string& name) {
  const std::string front = PIPETWIN_BINARY;
  return std::filesystem::exists(front.substr(0, front.rfind('/')) + "/" + name);
}

}  // namespace pipetwin::testing
