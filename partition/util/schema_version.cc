#include "partition/util/schema_version.h"

#include <string>

namespace pipetwin {

void CheckSchemaVersion(JsonReader& root) {
  if (!root.Has("schema_version")) return;
  const int version = root.Integer("schema_version", 1, kMaxCount);
  if (version > kSchemaVersion)
    root.FailAt("schema_version",
                "expected at most " + std::to_string(kSchemaVersion) +
                    " (what this pipetwin reads), got " + std::to_string(version) +
                    ": the file was written by a newer pipetwin");
}

}  // namespace pipetwin
