// One libFuzzer target per input parser (PIPETWIN_FUZZ_KIND, tests/fuzz/CMakeLists.txt): the
// bytes are a file of that kind (parse_input.h). The parser may refuse them only with an
// InputError that names the file; any other exception escapes and aborts, which libFuzzer
// reports as a crash, as it does the sanitizers' findings.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/fuzz/parse_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const char* kName = "fuzz-input";
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    pipetwin::fuzz::ParseInput(PIPETWIN_FUZZ_KIND, text, kName);
  } catch (const pipetwin::InputError& e) {
    if (std::string(e.what()).find(kName) == std::string::npos) {
      std::fprintf(stderr, "an InputError that names no place: %s\n", e.what());
      std::abort();
    }
  }
  return 0;
}
