// The validation matrix's table (scripts/validate.sh, `pipetwin compare --table DIR`).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace pipetwin {

// The validation matrix (scripts/validate.sh): one row per configuration, from the JSON that
// `pipetwin compare --json` printed for it, and the targets checked over all rows: throughput
// mean absolute percentage error <= 5% and every row <= 10%, peak memory within 5%, staleness
// identical.
struct ValidationRow {
  std::string config;
  nlohmann::json comparison;  // ComparisonToJson's object
};
std::string ValidationCsv(const std::vector<ValidationRow>& rows);
std::string ValidationMarkdown(const std::vector<ValidationRow>& rows, const std::string& machine,
                               const std::string& command);

}  // namespace pipetwin
