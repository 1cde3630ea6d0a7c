// How numbers, sizes and lists are written for people and for CSV, in one place.
#pragma once

#include <string>
#include <vector>

namespace pipetwin {

// "13.67 GiB", "48.24 MiB", "512 B": memory in binary units (GiB = 2^30 bytes), as device
// memory is sold (an "80 GB" HBM card holds 80 GiB) and as the tools report it (nvidia-smi's
// MiB, torch.cuda's bytes); four significant digits.
std::string BinaryBytes(double bytes);
// "16.05 GiB (17,234,567,890 bytes)", "48.24 MiB (50,586,889 bytes)": for messages that must
// not round a shortfall away.
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
