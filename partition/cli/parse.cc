#include "partition/cli/parse.h"

#include <iostream>

#include "partition/util/error.h"

namespace pipetwin::cli {

po::variables_map ParseCommandLine(const std::string& command, po::options_description desc,
                                   const po::positional_options_description& positional,
                                   const Args& args) {
  desc.add_options()("help,h", "print this help");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args)
                  .options(desc)
                  .positional(positional)
                  .style(po::command_line_style::default_style &
                         ~po::command_line_style::allow_guessing)
                  .run(),
              vm);
    bool help = false;
    for (const auto& a : args) help = help || a == "--help" || a == "-h";
    if (!help) po::notify(vm);
  } catch (const po::error& e) {
    throw InputError("pipetwin " + command + ": " + e.what());
  }
  return vm;
}

void PrintUsage(std::ostream& out, const std::string& command, const std::string& usage,
                const std::string& description, const po::options_description& desc) {
  out << "usage: pipetwin " << command << " " << usage << "\n\n" << description << "\n\n"
      << desc << "  -h [ --help ]          print this help\n";
}

}  // namespace pipetwin::cli
