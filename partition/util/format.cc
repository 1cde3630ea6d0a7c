#include "partition/util/format.h"

#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

namespace pipetwin {

std::string ShortNumber(double x) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%g", x);
  return buffer;
}

std::string DescribeBytes(double bytes) {
  const double whole = std::ceil(bytes);
  std::string digits = whole < 1e18 ? std::to_string(static_cast<long long>(whole)) : ShortNumber(whole);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0 && whole < 1e18; i -= 3)
    digits.insert(static_cast<size_t>(i), ",");
  if (bytes < 1024) return digits + " bytes";
  return BinaryBytes(bytes) + " (" + digits + " bytes)";
}

std::string BinaryBytes(double bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  double x = bytes;
  while (std::abs(x) >= 1024 && u < 5) x /= 1024, ++u;
  char rounded[32];
  std::snprintf(rounded, sizeof rounded, "%.4g %s", x, units[u]);
  return rounded;
}

std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\n\r") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string SignedPercent(double e) {
  if (!std::isfinite(e)) return "n/a";
  std::ostringstream out;
  out << std::showpos << std::fixed << std::setprecision(1) << 100 * e << "%";
  return out.str();
}

std::string FormatIdList(const std::vector<int>& devices) {
  std::string out;
  for (size_t i = 0; i < devices.size();) {
    size_t j = i;
    while (j + 1 < devices.size() && devices[j + 1] == devices[j] + 1) ++j;
    out += (i ? "," : "") + std::to_string(devices[i]);
    if (j > i) out += "-" + std::to_string(devices[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace pipetwin
