// Strict, location-aware reading of pipetwin's JSON files (workload, cluster, scenario, plan).
//
// A JsonReader is a view of one JSON value together with the file it came from and its JSON
// path. Every accessor checks type and range and throws InputError naming file, path, what was
// expected and what was found; `Finish()` rejects keys nobody asked for (typos must not be
// silently ignored).
//
//   nlohmann::json doc = ParseJsonFile("cluster.json");
//   JsonReader root(doc, "cluster.json");
//   for (JsonReader level : root.Array("levels")) {
//     double gbps = level.PositiveNumber("bandwidth_gbps");   // "levels[1].bandwidth_gbps"
//     level.Finish();
//   }
//   root.Finish();
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "partition/util/error.h"
#include "partition/util/files.h"
#include "partition/util/limits.h"

namespace pipetwin {

// Reads and parses a JSON file; a missing file or malformed JSON throws InputError with the line
// and column of the fault.
nlohmann::json ParseJsonFile(const std::string& path);
// Parses JSON text that stands for `name` (a file name or "<embedded>").
nlohmann::json ParseJsonText(const std::string& text, const std::string& name);

class JsonReader {
 public:
  JsonReader(const nlohmann::json& value, std::string file, std::string path = "");

  const nlohmann::json& value() const { return *value_; }
  const std::string& file() const { return file_; }
  // The JSON path of this value ("" for the document root, shown as "(root)" in errors).
  const std::string& path() const { return path_; }
  // The JSON path of member `key` of this object.
  std::string PathOf(const std::string& key) const;

  bool Has(const std::string& key) const;
  // Member `key`, which must exist.
  JsonReader Member(const std::string& key);
  // Member `key` if present.
  std::optional<JsonReader> OptionalMember(const std::string& key);
  // Member `key`, which must be an array; its elements as readers ("key[i]").
  std::vector<JsonReader> Array(const std::string& key);
  // This value's elements, when it is an array.
  std::vector<JsonReader> Elements() const;

  // Numbers: finite (never NaN or infinite) and in range, else InputError.
  double Number(const std::string& key);                 // any finite number
  double PositiveNumber(const std::string& key);         // > 0
  double NonNegativeNumber(const std::string& key);      // >= 0
  double OptionalPositiveNumber(const std::string& key, double fallback);
  double OptionalNonNegativeNumber(const std::string& key, double fallback);
  std::optional<double> MaybeNonNegativeNumber(const std::string& key);
  std::optional<double> MaybePositiveNumber(const std::string& key);
  // Integers: integral and from `min` to limit.max (util/limits.h), else InputError naming the
  // value, the range and what the limit is for; narrowed to int only once in range.
  int Integer(const std::string& key, int64_t min, const Limit& limit);
  int OptionalInteger(const std::string& key, int64_t min, const Limit& limit, int fallback);
  // A tally that may pass an int (a report's message count): integral, from 0 to 2^53.
  int64_t OptionalTally(const std::string& key, int64_t fallback);
  std::string String(const std::string& key);            // non-empty string
  std::string OptionalString(const std::string& key, const std::string& fallback);
  bool OptionalBool(const std::string& key, bool fallback);
  // A string that must be one of `allowed`.
  std::string Choice(const std::string& key, const std::vector<std::string>& allowed);
  std::string OptionalChoice(const std::string& key, const std::vector<std::string>& allowed,
                             const std::string& fallback);

  // This value itself read as a number (for array elements).
  double AsPositiveNumber() const;
  double AsNonNegativeNumber() const;
  int AsInteger(int64_t min, const Limit& limit) const;
  std::string AsString() const;

  // Throws InputError naming the first member of this object that no accessor read.
  void Finish() const;
  // Marks a key as read without reading it (a key handled elsewhere).
  void Accept(const std::string& key);

  // An error at this value (or at member `key` of it).
  [[noreturn]] void Fail(const std::string& what) const;
  [[noreturn]] void FailAt(const std::string& key, const std::string& what) const;

 private:
  void RequireObject() const;
  const nlohmann::json& Need(const std::string& key);
  double NumberAt(const std::string& key, const nlohmann::json& v) const;

  const nlohmann::json* value_;
  std::string file_;
  std::string path_;
  std::shared_ptr<std::set<std::string>> used_;
};

// A short rendering of a JSON value for error messages ("-5", "\"abc\"", "an object").
std::string DescribeJson(const nlohmann::json& value);

}  // namespace pipetwin
