// A Report as one CSV row, for sweeps.
#pragma once

#include <string>
#include <vector>

#include "partition/report/report.h"

namespace pipetwin {

// CSV for sweeps: `extra` names leading columns (the varied settings), given per row.
std::string ReportCsvHeader(const std::vector<std::string>& extra);
std::string ReportCsvRow(const Report& report, const std::vector<std::string>& extra);
// A row for a point that produced no report: its settings, empty figures, the error.
std::string ReportCsvErrorRow(const std::vector<std::string>& extra, const std::string& error);

}  // namespace pipetwin
