// Reading and writing whole text files, with the one error path (InputError naming the file).
//
// Inputs are regular files of at most kMaxInputBytes: a directory, a FIFO or a device is refused
// as such before anything is read, so /dev/zero cannot fill the memory nor a FIFO block.
// Outputs never lose a user's data: CheckOutputPath refuses an existing file unless the command
// was given --force, and refuses one of the command's own inputs even then; the text goes to a
// unique temporary file in the same folder and is renamed into place, so a failed or interrupted
// write leaves the old file (or none) and no temporary behind.
//
//   CheckOutputPath(trace, force, {scenario});   // before the work: fail early
//   ...
//   WriteTextFileAtomically(trace, text);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pipetwin {

// 256 MiB: the largest published PipeDream profile is under 1 MB and a 16,384-rank schedule CSV
// is tens of MB.
constexpr int64_t kMaxInputBytes = int64_t{256} << 20;

// Reads a whole text file; throws InputError when it is not a readable regular file of at most
// kMaxInputBytes.
std::string ReadTextFile(const std::string& path);
// Every file ReadTextFile was asked for in this process, in order, each once: what a command
// was working on when it ran out of memory ("out of memory while working on s.json").
const std::vector<std::string>& InputsRead();
// "s.json, w.json" (InputsRead), or "its built-in inputs" when it read none.
std::string DescribeInputsRead();

// Throws InputError unless `path` may be written: not a directory, not one of `inputs` (the same
// file under any name), and not an existing file unless `force`. `option` is the command-line
// option that named it ("--trace"), for the message.
void CheckOutputPath(const std::string& path, const std::string& option, bool force,
                     const std::vector<std::string>& inputs);

// Writes `text` to `path` through a unique temporary file in the same folder and a rename.
void WriteTextFileAtomically(const std::string& path, const std::string& text);

}  // namespace pipetwin
