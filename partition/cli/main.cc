// pipetwin: the front end. Dispatches to a subcommand; turns every InputError into one line on
// stderr and exit status 2; never lets an exception escape.
#include <exception>
#include <iostream>
#include <string>

#include "partition/cli/commands.h"
#include "partition/util/error.h"

namespace {

void PrintTopLevelHelp(std::ostream& out) {
  out << "usage: pipetwin COMMAND [OPTIONS]\n\n"
         "Predict (SimGrid) and measure (LibTorch) pipeline-parallel training of deep neural\n"
         "networks from one plan and one schedule.\n\ncommands:\n";
  for (const auto& c : pipetwin::cli::Commands())
    out << "  " << c.name << std::string(11 - std::string(c.name).size(), ' ') << c.summary
        << "\n";
  out << "\n`pipetwin COMMAND --help` describes a command.\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  if (argc < 2) {
    PrintTopLevelHelp(std::cerr);
    return 2;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    PrintTopLevelHelp(std::cout);
    return 0;
  }
  if (name == "--version") {
    std::cout << "pipetwin 0.1.0\n";
    return 0;
  }
  for (const auto& c : pipetwin::cli::Commands()) {
    if (name != c.name) continue;
    try {
      return c.run(pipetwin::cli::Args(argv + 2, argv + argc));
    } catch (const pipetwin::InputError& e) {
      std::cout.flush();
      std::cerr << e.what() << "\n";
      return 2;
    } catch (const std::bad_alloc&) {
      std::cerr << "pipetwin " << name << ": out of memory\n";
      return 2;
    } catch (const std::exception& e) {
      std::cerr << "pipetwin " << name << ": internal error: " << e.what() << "\n";
      return 3;
    }
  }
  if (name.rfind("-", 0) == 0)
    std::cerr << "pipetwin: unknown option '" << name << "' (see pipetwin --help)\n";
  else
    std::cerr << "pipetwin: unknown command '" << name << "' (see pipetwin --help)\n";
  return 2;
}
