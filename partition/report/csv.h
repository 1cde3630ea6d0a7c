// A Report as one CSV row, for sweeps.
#pragma once

#include <string>
#include <vector>

#include "partition/report/report.h"

namespace pipetwin {

// CSV for sweeps: `names` are leading columns (the varied settings, named by their scenario
// path) and `values` their values in this row. A report column that a leading column already
// names (`schedule` under `--vary schedule`) is written once, as the leading column; the
// `schema_version` column (util/schema_version.h) comes right after the leading ones.
std::string ReportCsvHeader(const std::vector<std::string>& names);
std::string ReportCsvRow(const Report& report, const std::vector<std::string>& names,
                         const std::vector<std::string>& values);
// A row for a point that produced no report: its settings, empty figures, the error.
std::string ReportCsvErrorRow(const std::vector<std::string>& names,
                              const std::vector<std::string>& values, const std::string& error);

}  // namespace pipetwin
