// Reading and writing whole text files, with the one error path (InputError naming the file).
#pragma once

#include <string>

namespace pipetwin {

// Reads a whole text file; throws InputError when it cannot be read.
std::string ReadTextFile(const std::string& path);
// Writes `text` to `path` through a temporary file and a rename, so that a failed write never
// leaves a half-written file where a user's file was.
void WriteTextFileAtomically(const std::string& path, const std::string& text);

}  // namespace pipetwin
