// The folder a comparison's intermediate files go to: --keep DIR (created; its files are never
// replaced, so a user's file is never lost) or a temporary one removed at the end.
#pragma once

#include <string>

namespace pipetwin::cli {

class WorkDirectory {
 public:
  // `keep`: the folder to keep the files in, or "" for a temporary one.
  explicit WorkDirectory(const std::string& keep);
  ~WorkDirectory();
  WorkDirectory(const WorkDirectory&) = delete;
  WorkDirectory& operator=(const WorkDirectory&) = delete;

  // DIR/name; refuses (InputError) a name that is already there under --keep.
  std::string File(const std::string& name) const;

 private:
  bool keep_;
  std::string path_;
};

}  // namespace pipetwin::cli
