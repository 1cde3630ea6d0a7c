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

// The matrix run K times from scratch (scripts/validate.sh --repeat K: each repetition
// calibrates, profiles, predicts and measures every row anew): per configuration, the
// predictions' and the measurements' run-to-run spread ((highest - lowest) / mean over the
// repetitions) and the errors; the targets: every row's prediction spread <= 3%, the MAPE over
// every row of every repetition <= 5%, no row's error beyond 10%. `repetitions[k]` holds
// repetition k's rows; a configuration missing from some repetition is counted where present.
std::string ValidationRepeatMarkdown(const std::vector<std::vector<ValidationRow>>& repetitions,
                                     const std::string& machine, const std::string& command);
std::string ValidationRepeatCsv(const std::vector<std::vector<ValidationRow>>& repetitions);

}  // namespace pipetwin
