// The fuzzers' findings, replayed (scripts/fuzz.sh): every file in tests/fuzz/regressions/KIND/
// was an input that crashed a parser, broke a sanitizer or escaped as something other than an
// InputError naming the file. Each must now parse or be refused with such an error.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/fuzz/parse_input.h"

namespace pipetwin {
namespace {

TEST(FuzzRegressions, EveryFindingParsesOrIsALocatedInputError) {
  const std::filesystem::path root = std::filesystem::path(PIPETWIN_SOURCE_DIR) / "tests/fuzz";
  int replayed = 0;
  for (const std::string kind : {"scenario", "workload", "cluster", "plan", "graph",
                                 "schedule_csv"}) {
    for (const std::filesystem::path dir : {root / "regressions" / kind, root / "corpus" / kind}) {
      if (!std::filesystem::is_directory(dir)) continue;
      for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        std::ifstream in(entry.path(), std::ios::binary);
        std::ostringstream text;
        text << in.rdbuf();
        const std::string name = "fuzz-input";
        try {
          fuzz::ParseInput(kind, text.str(), name);
        } catch (const InputError& e) {
          EXPECT_NE(std::string(e.what()).find(name), std::string::npos)
              << entry.path() << ": " << e.what();
        }
        ++replayed;
      }
    }
  }
  EXPECT_GT(replayed, 10);  // the seed corpora at least
}

}  // namespace
}  // namespace pipetwin
