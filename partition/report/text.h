// A Report as the text `pipetwin simulate` and `pipetwin run` print.
#pragma once

#include <string>

#include "partition/report/report.h"

namespace pipetwin {

// A short human summary (what `pipetwin simulate` prints without --json).
std::string ReportToText(const Report& report);

}  // namespace pipetwin
