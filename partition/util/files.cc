#include "partition/util/files.h"

#include <algorithm>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "partition/util/error.h"

namespace pipetwin {

namespace {

// The temporary file being written, removed if the process is interrupted meanwhile.
volatile std::sig_atomic_t writing = 0;
char temporary_name[4096];

extern "C" void RemoveTemporaryAndDie(int signal) {
  if (writing) unlink(temporary_name);
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

std::string Folder(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
}

}  // namespace

namespace {
std::vector<std::string>& InputList() {
  static std::vector<std::string> inputs;
  return inputs;
}
}  // namespace

const std::vector<std::string>& InputsRead() { return InputList(); }

std::string DescribeInputsRead() {
  std::string out;
  for (const std::string& p : InputsRead()) out += (out.empty() ? "" : ", ") + p;
  return out.empty() ? "its built-in inputs" : out;
}

std::string ReadTextFile(const std::string& path) {
  std::vector<std::string>& inputs = InputList();
  if (std::find(inputs.begin(), inputs.end(), path) == inputs.end()) inputs.push_back(path);
  struct stat st;
  if (stat(path.c_str(), &st) != 0)
    throw InputError(path, "", errno == ENOENT ? "no such file" : "cannot open file for reading");
  if (S_ISDIR(st.st_mode)) throw InputError(path, "", "is a directory, expected a file");
  if (!S_ISREG(st.st_mode))
    throw InputError(path, "", "is not a regular file (a FIFO, device or socket), expected a file");
  if (st.st_size > kMaxInputBytes)
    throw InputError(path, "", "is " + std::to_string(st.st_size) + " bytes; pipetwin reads " +
                                   "input files of at most " + std::to_string(kMaxInputBytes) +
                                   " bytes (256 MiB)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open file for reading");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw InputError(path, "", "read error");
  return buffer.str();
}

void CheckOutputPath(const std::string& path, const std::string& option, bool force,
                     const std::vector<std::string>& inputs) {
  struct stat out;
  if (stat(path.c_str(), &out) != 0) return;  // nothing there yet
  if (S_ISDIR(out.st_mode))
    throw InputError(path, "", "is a directory; " + option + " expects a file name");
  for (const std::string& input : inputs) {
    struct stat in;
    if (!input.empty() && stat(input.c_str(), &in) == 0 && in.st_dev == out.st_dev &&
        in.st_ino == out.st_ino)
      throw InputError(path, "", "is an input of this command; " + option +
                                     " never replaces an input, even with --force");
  }
  if (!force)
    throw InputError(path, "", "exists already; pipetwin does not overwrite files without "
                               "--force (or choose another name for " + option + ")");
}

void WriteTextFileAtomically(const std::string& path, const std::string& text) {
  std::string pattern = Folder(path) + "/.pipetwin-XXXXXX";
  if (pattern.size() >= sizeof(temporary_name))
    throw InputError(path, "", "the file name is too long");
  std::memcpy(temporary_name, pattern.c_str(), pattern.size() + 1);
  auto previous_int = std::signal(SIGINT, RemoveTemporaryAndDie);
  auto previous_term = std::signal(SIGTERM, RemoveTemporaryAndDie);
  auto restore = [&] {
    writing = 0;
    std::signal(SIGINT, previous_int);
    std::signal(SIGTERM, previous_term);
  };
  const int fd = mkstemp(temporary_name);
  if (fd < 0) {
    restore();
    throw InputError(path, "", "cannot create a file in its folder (" +
                                   std::string(std::strerror(errno)) + ")");
  }
  writing = 1;
  const std::string temporary = temporary_name;
  auto fail = [&](const std::string& what) {
    unlink(temporary.c_str());
    restore();
    throw InputError(path, "", what);
  };
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(fd);
      fail("write error (" + std::string(std::strerror(errno)) + ")");
    }
    done += static_cast<size_t>(n);
  }
  // The file mode an ordinary create would give (mkstemp makes it 0600).
  const mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);
  if (close(fd) != 0) fail("write error (" + std::string(std::strerror(errno)) + ")");
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    fail("cannot replace file (" + std::string(std::strerror(errno)) + ")");
  restore();
}

}  // namespace pipetwin
