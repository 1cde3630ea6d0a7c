#include "partition/util/json_reader.h"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace pipetwin {

namespace {

std::string FormatNumber(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "infinity" : "-infinity";
  std::ostringstream out;
  out.precision(12);
  out << v;
  return out.str();
}

// Line and column (both from 1) of byte `offset` in `text`.
std::pair<size_t, size_t> LineAndColumn(const std::string& text, size_t offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < text.size() && i < offset; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

}  // namespace

std::string DescribeJson(const nlohmann::json& value) {
  if (value.is_null()) return "null";
  if (value.is_number()) return FormatNumber(value.get<double>());
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_string()) {
    std::string s = value.get<std::string>();
    if (s.size() > 40) s = s.substr(0, 37) + "...";
    return "\"" + s + "\"";
  }
  if (value.is_array()) return "an array";
  return "an object";
}

nlohmann::json ParseJsonText(const std::string& text, const std::string& name) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    auto [line, column] = LineAndColumn(text, e.byte == 0 ? 0 : e.byte - 1);
    std::string reason = e.what();
    // nlohmann's messages read "[json.exception.parse_error.101] parse error at line 1, ...:
    // syntax error while parsing value - invalid literal; last read: 'x'"; keep the tail.
    auto cut = reason.rfind(": ");
    if (cut != std::string::npos) reason = reason.substr(cut + 2);
    throw InputError(name, "line " + std::to_string(line) + " column " + std::to_string(column),
                     "malformed JSON: " + reason);
  }
}

nlohmann::json ParseJsonFile(const std::string& path) {
  return ParseJsonText(ReadTextFile(path), path);
}

JsonReader::JsonReader(const nlohmann::json& value, std::string file, std::string path)
    : value_(&value),
      file_(std::move(file)),
      path_(std::move(path)),
      used_(std::make_shared<std::set<std::string>>()) {}

std::string JsonReader::PathOf(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

void JsonReader::Fail(const std::string& what) const {
  throw InputError(file_, path_.empty() ? "(root)" : path_, what);
}

void JsonReader::FailAt(const std::string& key, const std::string& what) const {
  throw InputError(file_, PathOf(key), what);
}

void JsonReader::RequireObject() const {
  if (!value_->is_object()) Fail("expected an object, got " + DescribeJson(*value_));
}

bool JsonReader::Has(const std::string& key) const {
  return value_->is_object() && value_->contains(key);
}

void JsonReader::Accept(const std::string& key) { used_->insert(key); }

const nlohmann::json& JsonReader::Need(const std::string& key) {
  RequireObject();
  auto it = value_->find(key);
  if (it == value_->end()) FailAt(key, "missing (required)");
  used_->insert(key);
  return *it;
}

JsonReader JsonReader::Member(const std::string& key) {
  const nlohmann::json& v = Need(key);
  return JsonReader(v, file_, PathOf(key));
}

std::optional<JsonReader> JsonReader::OptionalMember(const std::string& key) {
  if (!Has(key)) return std::nullopt;
  return Member(key);
}

std::vector<JsonReader> JsonReader::Elements() const {
  if (!value_->is_array()) Fail("expected an array, got " + DescribeJson(*value_));
  std::vector<JsonReader> out;
  out.reserve(value_->size());
  for (size_t i = 0; i < value_->size(); ++i) {
    out.emplace_back((*value_)[i], file_, path_ + "[" + std::to_string(i) + "]");
  }
  return out;
}

std::vector<JsonReader> JsonReader::Array(const std::string& key) {
  return Member(key).Elements();
}

double JsonReader::NumberAt(const std::string& key, const nlohmann::json& v) const {
  if (!v.is_number()) FailAt(key, "expected a number, got " + DescribeJson(v));
  double x = v.get<double>();
  if (!std::isfinite(x)) FailAt(key, "expected a finite number, got " + FormatNumber(x));
  return x;
}

double JsonReader::Number(const std::string& key) { return NumberAt(key, Need(key)); }

double JsonReader::PositiveNumber(const std::string& key) {
  const nlohmann::json& v = Need(key);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() <= 0)
    FailAt(key, "expected a number > 0, got " + DescribeJson(v));
  return v.get<double>();
}

double JsonReader::NonNegativeNumber(const std::string& key) {
  const nlohmann::json& v = Need(key);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
    FailAt(key, "expected a number >= 0, got " + DescribeJson(v));
  return v.get<double>();
}

double JsonReader::OptionalPositiveNumber(const std::string& key, double fallback) {
  return Has(key) ? PositiveNumber(key) : fallback;
}

double JsonReader::OptionalNonNegativeNumber(const std::string& key, double fallback) {
  return Has(key) ? NonNegativeNumber(key) : fallback;
}

std::optional<double> JsonReader::MaybeNonNegativeNumber(const std::string& key) {
  if (!Has(key)) return std::nullopt;
  return NonNegativeNumber(key);
}

std::optional<double> JsonReader::MaybePositiveNumber(const std::string& key) {
  if (!Has(key)) return std::nullopt;
  return PositiveNumber(key);
}

int64_t JsonReader::PositiveInteger(const std::string& key) {
  const nlohmann::json& v = Need(key);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 1 ||
      v.get<double>() != std::floor(v.get<double>()) || v.get<double>() > 9.0e15)
    FailAt(key, "expected an integer >= 1, got " + DescribeJson(v));
  return static_cast<int64_t>(v.get<double>());
}

int64_t JsonReader::OptionalPositiveInteger(const std::string& key, int64_t fallback) {
  return Has(key) ? PositiveInteger(key) : fallback;
}

int64_t JsonReader::OptionalNonNegativeInteger(const std::string& key, int64_t fallback) {
  if (!Has(key)) return fallback;
  const nlohmann::json& v = Need(key);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 ||
      v.get<double>() != std::floor(v.get<double>()) || v.get<double>() > 9.0e15)
    FailAt(key, "expected an integer >= 0, got " + DescribeJson(v));
  return static_cast<int64_t>(v.get<double>());
}

std::string JsonReader::String(const std::string& key) {
  const nlohmann::json& v = Need(key);
  if (!v.is_string() || v.get<std::string>().empty())
    FailAt(key, "expected a non-empty string, got " + DescribeJson(v));
  return v.get<std::string>();
}

std::string JsonReader::OptionalString(const std::string& key, const std::string& fallback) {
  return Has(key) ? String(key) : fallback;
}

bool JsonReader::OptionalBool(const std::string& key, bool fallback) {
  if (!Has(key)) return fallback;
  const nlohmann::json& v = Need(key);
  if (!v.is_boolean()) FailAt(key, "expected true or false, got " + DescribeJson(v));
  return v.get<bool>();
}

std::string JsonReader::Choice(const std::string& key, const std::vector<std::string>& allowed) {
  const nlohmann::json& v = Need(key);
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  if (v.is_string()) {
    for (const auto& a : allowed)
      if (v.get<std::string>() == a) return a;
  }
  FailAt(key, "expected one of " + list + ", got " + DescribeJson(v));
}

std::string JsonReader::OptionalChoice(const std::string& key,
                                       const std::vector<std::string>& allowed,
                                       const std::string& fallback) {
  return Has(key) ? Choice(key, allowed) : fallback;
}

double JsonReader::AsPositiveNumber() const {
  if (!value_->is_number() || !std::isfinite(value_->get<double>()) || value_->get<double>() <= 0)
    Fail("expected a number > 0, got " + DescribeJson(*value_));
  return value_->get<double>();
}

double JsonReader::AsNonNegativeNumber() const {
  if (!value_->is_number() || !std::isfinite(value_->get<double>()) || value_->get<double>() < 0)
    Fail("expected a number >= 0, got " + DescribeJson(*value_));
  return value_->get<double>();
}

int64_t JsonReader::AsNonNegativeInteger() const {
  double x = value_->is_number() ? value_->get<double>() : -1;
  if (!value_->is_number() || !std::isfinite(x) || x < 0 || x != std::floor(x) || x > 9.0e15)
    Fail("expected an integer >= 0, got " + DescribeJson(*value_));
  return static_cast<int64_t>(x);
}

std::string JsonReader::AsString() const {
  if (!value_->is_string() || value_->get<std::string>().empty())
    Fail("expected a non-empty string, got " + DescribeJson(*value_));
  return value_->get<std::string>();
}

void JsonReader::Finish() const {
  if (!value_->is_object()) return;
  for (auto it = value_->begin(); it != value_->end(); ++it) {
    if (!used_->count(it.key())) FailAt(it.key(), "unknown key");
  }
}

}  // namespace pipetwin
