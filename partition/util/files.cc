#include "partition/util/files.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "partition/util/error.h"

namespace pipetwin {

std::string ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot open file for reading");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw InputError(path, "", "read error");
  return buffer.str();
}

void WriteTextFileAtomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp-pipetwin";
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path, "", "cannot open file for writing");
    out << text;
    out.flush();
    if (!out) {
      std::remove(temporary.c_str());
      throw InputError(path, "", "write error");
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    throw InputError(path, "", "cannot replace file");
  }
}

}  // namespace pipetwin
