#include "partition/util/json_reader.h"

#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <vector>

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
    if (s.size() > 40) {
      size_t cut = 37;  // not inside a UTF-8 character: back off its continuation bytes
      while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
      s = s.substr(0, cut) + "...";
    }
    return "\"" + s + "\"";
  }
  if (value.is_array()) return "an array";
  return "an object";
}

namespace {

// Where the parser is, to name a repeated key: one frame per open object or array.
struct JsonFrame {
  bool array = false;
  int index = -1;          // the element being read, in an array
  std::string key;         // the member being read, in an object
  std::set<std::string> keys;
};

std::string PathOf(const std::vector<JsonFrame>& frames) {
  std::string path;
  for (const JsonFrame& f : frames) {
    if (f.array) path += "[" + std::to_string(f.index) + "]";
    else if (!f.key.empty()) path += (path.empty() ? "" : ".") + f.key;
  }
  return path;
}

}  // namespace

nlohmann::json ParseJsonText(const std::string& text, const std::string& name) {
  std::vector<JsonFrame> frames;
  // A repeated key would let the last one win unseen (RFC 8259 section 4 leaves it to the
  // reader): refuse it, naming where.
  auto check = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    switch (event) {
      case E::object_start:
      case E::array_start:
        if (!frames.empty() && frames.back().array) ++frames.back().index;
        frames.push_back({event == E::array_start, -1, "", {}});
        break;
      case E::object_end:
      case E::array_end:
        if (!frames.empty()) frames.pop_back();
        break;
      case E::key: {
        JsonFrame& f = frames.back();
        const std::string key = parsed.get<std::string>();
        if (!f.keys.insert(key).second) {
          f.key = key;
          throw InputError(name, PathOf(frames), "duplicate key (each key once per object)");
        }
        f.key = key;
        break;
      }
      case E::value:
        if (!frames.empty() && frames.back().array) ++frames.back().index;
        break;
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text, check);
  } catch (const nlohmann::json::parse_error& e) {
    auto [line, column] = LineAndColumn(text, e.byte == 0 ? 0 : e.byte - 1);
    std::string reason = e.what();
    // nlohmann's messages read "[json.exception.parse_error.101] parse error at line 1, ...:
    // syntax error while parsing value - invalid literal; last read: 'x'"; keep the tail.
    auto cut = reason.rfind(": ");
    if (cut != std::string::npos) reason = reason.substr(cut + 2);
    throw InputError(name, "line " + std::to_string(line) + " column " + std::to_string(column),
                     "malformed JSON: " + reason);
  } catch (const nlohmann::json::out_of_range& e) {
    // "[json.exception.out_of_range.406] number overflow parsing '1e400'"
    std::string reason = e.what();
    auto cut = reason.find("] ");
    if (cut != std::string::npos) reason = reason.substr(cut + 2);
    throw InputError(name, PathOf(frames),
                     reason + " (a number beyond the range of a double, about 1.8e308)");
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

namespace {

// Finite and within pipetwin's magnitude limit (util/limits.h).
bool Sized(double x) { return std::isfinite(x) && std::abs(x) <= kMaxMagnitude; }

// What a number that fails `expected` was: too large for pipetwin, or simply not `expected`.
std::string Why(const nlohmann::json& v, const std::string& expected) {
  if (v.is_number() && std::isfinite(v.get<double>()) && !Sized(v.get<double>()))
    return "expected " + expected + " of at most 1e18 in size (pipetwin's limit for any "
           "quantity), got " + DescribeJson(v);
  return "expected " + expected + ", got " + DescribeJson(v);
}

}  // namespace

double JsonReader::NumberAt(const std::string& key, const nlohmann::json& v) const {
  if (!v.is_number()) FailAt(key, "expected a number, got " + DescribeJson(v));
  double x = v.get<double>();
  if (!std::isfinite(x)) FailAt(key, "expected a finite number, got " + FormatNumber(x));
  if (!Sized(x)) FailAt(key, Why(v, "a number"));
  return x;
}

double JsonReader::Number(const std::string& key) { return NumberAt(key, Need(key)); }

double JsonReader::PositiveNumber(const std::string& key) {
  const nlohmann::json& v = Need(key);
  if (!v.is_number() || !Sized(v.get<double>()) || v.get<double>() <= 0)
    FailAt(key, Why(v, "a number > 0"));
  return v.get<double>();
}

double JsonReader::NonNegativeNumber(const std::string& key) {
  const nlohmann::json& v = Need(key);
  if (!v.is_number() || !Sized(v.get<double>()) || v.get<double>() < 0)
    FailAt(key, Why(v, "a number >= 0"));
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

namespace {

// Whether v is an integer from min to max (exact: doubles hold every integer up to 2^53).
bool IntegerIn(const nlohmann::json& v, int64_t min, int64_t max) {
  if (!v.is_number()) return false;
  const double x = v.get<double>();
  return std::isfinite(x) && x == std::floor(x) && x >= static_cast<double>(min) &&
         x <= static_cast<double>(max);
}

}  // namespace

int JsonReader::Integer(const std::string& key, int64_t min, const Limit& limit) {
  const nlohmann::json& v = Need(key);
  if (!IntegerIn(v, min, limit.max))
    FailAt(key, "expected " + DescribeRange(min, limit) + ", got " + DescribeJson(v));
  return static_cast<int>(v.get<double>());
}

int JsonReader::OptionalInteger(const std::string& key, int64_t min, const Limit& limit,
                                int fallback) {
  return Has(key) ? Integer(key, min, limit) : fallback;
}

int64_t JsonReader::OptionalTally(const std::string& key, int64_t fallback) {
  if (!Has(key)) return fallback;
  const nlohmann::json& v = Need(key);
  if (!IntegerIn(v, 0, int64_t{1} << 53))
    FailAt(key, "expected an integer from 0 to 2^53, got " + DescribeJson(v));
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
  if (!value_->is_number() || !Sized(value_->get<double>()) || value_->get<double>() <= 0)
    Fail(Why(*value_, "a number > 0"));
  return value_->get<double>();
}

double JsonReader::AsNonNegativeNumber() const {
  if (!value_->is_number() || !Sized(value_->get<double>()) || value_->get<double>() < 0)
    Fail(Why(*value_, "a number >= 0"));
  return value_->get<double>();
}

int JsonReader::AsInteger(int64_t min, const Limit& limit) const {
  if (!IntegerIn(*value_, min, limit.max))
    Fail("expected " + DescribeRange(min, limit) + ", got " + DescribeJson(*value_));
  return static_cast<int>(value_->get<double>());
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
