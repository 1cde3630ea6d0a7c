// Parsing a command's words with Boost.Program_options, and its help, for every command of the
// three programs (the option tables themselves are in options/).
//
//   po::options_description desc("pipetwin schedule options");
//   desc.add_options()("stages", po::value<int>()->required(), "pipeline depth");
//   auto vm = ParseCommandLine("schedule", desc, {}, args);   // throws InputError on bad words
//   if (vm.count("help")) { PrintUsage(...); return 0; }
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

namespace pipetwin::cli {

namespace po = boost::program_options;

// The words after a command's name.
using Args = std::vector<std::string>;

// Parses `args`; every Boost error (unknown option, missing value, bad number, missing required
// option) becomes InputError("pipetwin COMMAND: ..."), one line. `--help` is always accepted;
// when it is given, required options are not enforced.
po::variables_map ParseCommandLine(const std::string& command, po::options_description desc,
                                   const po::positional_options_description& positional,
                                   const Args& args);

// `desc` with the hidden positional argument `name` added (for parsing, not for help).
inline po::options_description WithPositional(po::options_description desc, const char* name) {
  desc.add_options()(name, po::value<std::string>(), "positional argument");
  return desc;
}

// Prints "usage: pipetwin COMMAND USAGE", the description and the options.
void PrintUsage(std::ostream& out, const std::string& command, const std::string& usage,
                const std::string& description, const po::options_description& desc);


}  // namespace pipetwin::cli
