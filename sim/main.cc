// pipetwin-sim: the SimGrid back end as a program. `pipetwin simulate ...` and `pipetwin sweep
// ...` exec it (the front end links no SimGrid); it can also be run directly:
//   pipetwin-sim simulate scenarios/sim-gpt3-1024.json --bench
// Every InputError becomes one line on stderr and exit 2; nothing escapes main.
#include <exception>
#include <iostream>
#include <new>
#include <string>
#include <vector>

#include "partition/util/error.h"
#include "sim/commands.h"

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  const std::string command = argc > 1 ? argv[1] : "";
  if (command.empty() || command == "--help" || command == "-h") {
    (command.empty() ? std::cerr : std::cout)
        << "usage: pipetwin-sim simulate|sweep [OPTIONS]   (as `pipetwin simulate|sweep`)\n";
    return command.empty() ? 2 : 0;
  }
  const std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (command == "simulate") return pipetwin::sim::RunSimulateCommand(args);
    if (command == "sweep") return pipetwin::sim::RunSweepCommand(args);
    std::cerr << "pipetwin-sim: unknown command '" << command << "' (simulate or sweep)\n";
    return 2;
  } catch (const pipetwin::InputError& e) {
    std::cout.flush();
    std::cerr << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    std::cerr << "pipetwin " << command << ": out of memory\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "pipetwin " << command << ": internal error: " << e.what() << "\n";
    return 3;
  }
}
