#include "partition/cli/compare/work_directory.h"

#include <cstdlib>
#include <filesystem>

#include "partition/util/error.h"

namespace pipetwin::cli {

namespace fs = std::filesystem;

WorkDirectory::WorkDirectory(const std::string& keep) : keep_(!keep.empty()) {
  if (keep_) {
    // Absolute: the derived scenario names the profile by this path, and a scenario's relative
    // paths count from its own folder (a relative --keep k read k/k/profile.json).
    path_ = fs::absolute(keep).lexically_normal().string();
    std::error_code ec;
    fs::create_directories(path_, ec);
    if (ec || !fs::is_directory(path_))
      throw InputError("pipetwin compare: --keep " + keep + ": cannot create the folder");
    return;
  }
  std::string pattern = (fs::temp_directory_path() / "pipetwin-compare-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) throw RunError("cannot create a temporary folder");
  path_ = pattern;
}

WorkDirectory::~WorkDirectory() {
  std::error_code ec;
  if (!keep_) fs::remove_all(path_, ec);
}

std::string WorkDirectory::File(const std::string& name) const {
  const std::string p = (fs::path(path_) / name).string();
  if (keep_ && fs::exists(p))
    throw InputError("pipetwin compare: --keep " + path_ + ": " + name +
                     " is already there; give an empty or new folder");
  return p;
}

}  // namespace pipetwin::cli
