#include "partition/cli/run_main.h"

#include <algorithm>
#include <exception>
#include <iostream>
#include <new>

#include <unistd.h>

#include "partition/util/error.h"
#include "partition/util/files.h"

namespace pipetwin::cli {

namespace {

void PrintHelp(std::ostream& out, const Program& program) {
  out << "usage: " << program.name << " COMMAND [OPTIONS]\n\n" << program.about << "\n\ncommands:\n";
  for (const Command& c : program.commands)
    out << "  " << c.name << std::string(11 - std::min<size_t>(10, std::string(c.name).size()), ' ')
        << c.summary << "\n";
  out << "\n`" << program.name << " COMMAND --help` describes a command.\n";
}

// The first line of an exception's text (LibTorch's carry a backtrace after it).
std::string FirstLine(const char* what) {
  std::string text = what;
  const size_t newline = text.find('\n');
  return newline == std::string::npos ? text : text.substr(0, newline);
}

// Out of memory anywhere, in a library's thread or a SimGrid actor included (SimGrid aborts on
// an exception an actor does not catch): one line naming what the command was working on, exit
// 1. The reserve is freed first so that the line can be built.
char* g_reserve = nullptr;
std::string g_command;

void OnOutOfMemory() {
  delete[] g_reserve;
  g_reserve = nullptr;
  std::set_new_handler(nullptr);
  const std::string line = "pipetwin " + g_command + ": out of memory while working on " +
                           DescribeInputsRead() +
                           " (the machine's memory or the address-space limit, ulimit -v, ran "
                           "out)\n";
  if (write(STDERR_FILENO, line.data(), line.size()) < 0) _exit(1);
  _exit(1);
}

int Fail(int status, const std::string& line) {
  std::cout.flush();
  std::cerr << line << "\n";
  return status;
}

}  // namespace

int RunMain(const Program& program, int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  const std::string name = argc > 1 ? argv[1] : "";
  if (name.empty()) {
    PrintHelp(std::cerr, program);
    return 2;
  }
  if (name == "--help" || name == "-h" || name == "help") {
    PrintHelp(std::cout, program);
    return 0;
  }
  if (name == "--version") {
    std::cout << program.name << " 0.1.0\n";
    return 0;
  }
  for (const Command& c : program.commands) {
    if (name != c.name) continue;
    // Commands are named as the user typed them: `pipetwin simulate` also in pipetwin-sim.
    const std::string prefix = "pipetwin " + name + ": ";
    g_command = name;
    g_reserve = new char[1 << 16];
    std::set_new_handler(OnOutOfMemory);
    try {
      return c.run(Args(argv + 2, argv + argc));
    } catch (const InputError& e) {
      return Fail(2, e.what());
    } catch (const RunError& e) {
      return Fail(1, prefix + FirstLine(e.what()));
    } catch (const std::bad_alloc&) {
      return Fail(1, prefix + "out of memory while working on " + DescribeInputsRead() +
                         " (the machine's memory or the address-space limit, ulimit -v, ran "
                         "out)");
    } catch (const std::exception& e) {
      const std::string context = program.context ? program.context() : "";
      return Fail(3, prefix + context + "internal error: " + FirstLine(e.what()));
    }
  }
  std::cerr << program.name << ": unknown " << (name.rfind('-', 0) == 0 ? "option" : "command")
            << " '" << name << "' (see " << program.name << " --help)\n";
  return 2;
}

}  // namespace pipetwin::cli
