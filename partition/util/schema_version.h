// The version of the files pipetwin writes for programs to read: reports (simulate, run, sweep),
// plans (plan --json, plan --output) and the sweep table. docs/output-schema.md lists their keys.
//
// The version rises when a key is renamed or removed or changes meaning; adding a key keeps it.
// Version 1 is what pipetwin wrote before the field existed (plans' w, d, b, m); version 2 has
// the readable names (pipeline_depth, data_parallel, microbatch_size, microbatches).
//
//   j["schema_version"] = kSchemaVersion;              // writers
//   CheckSchemaVersion(root);                          // readers: a newer file is refused
#pragma once

#include "partition/util/json_reader.h"

namespace pipetwin {

inline constexpr int kSchemaVersion = 2;

// Reads `schema_version` from `root` (absent: an old file, accepted) and throws InputError when
// it is newer than this pipetwin's: its keys may mean what this version cannot tell.
void CheckSchemaVersion(JsonReader& root);

}  // namespace pipetwin
