// How numbers, sizes and lists are written for people and for CSV, in one place.
#pragma once

#include <string>
#include <vector>

namespace pipetwin {

// "17.23 GB (17,234,567,890 bytes)", "50.59 MB (50,586,889 bytes)": for messages that must not
// round a shortfall away.
std::string DescribeBytes(double bytes);
// RFC 4180 quoting where a field needs it.
std::string CsvField(const std::string& text);
// "+12.3%" for 0.123, "n/a" when not finite: a relative error in tables.
std::string SignedPercent(double fraction);
// "0-3,8,10-11": device or CPU ids with consecutive runs shortened, for tables.
std::string FormatIdList(const std::vector<int>& ids);
// "%g": the shortest exact-enough form of a number, for error messages ("1e+09", "0.5").
std::string ShortNumber(double x);

}  // namespace pipetwin
