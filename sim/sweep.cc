#include "sim/sweep.h"

#include <cstdio>

#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>

#include <sys/wait.h>
#include <unistd.h>

#include "partition/util/error.h"
#include "partition/util/json_reader.h"
#include "partition/util/json_writer.h"
#include "sim/child_process.h"
#include "sim/simulate.h"
#include "workloads/scenario/plan_for_scenario.h"

namespace pipetwin::sim {

namespace {

// A path as keys and array indices: "levels[1].count" -> "levels", 1, "count".
struct Step {
  std::string key;
  long index = -1;  // >= 0: an array index
};

std::vector<Step> ParsePath(const std::string& path) {
  std::vector<Step> steps;
  size_t i = 0;
  auto bad = [&](const std::string& why) -> InputError {
    return InputError("pipetwin sweep: --vary path '" + path + "': " + why);
  };
  while (i < path.size()) {
    if (path[i] == '[') {
      const size_t close = path.find(']', i);
      if (close == std::string::npos) throw bad("unclosed '['");
      const std::string digits = path.substr(i + 1, close - i - 1);
      if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos)
        throw bad("expected an index like [1], got [" + digits + "]");
      steps.push_back({"", std::stol(digits)});
      i = close + 1;
      if (i < path.size() && path[i] == '.') ++i;
      continue;
    }
    const size_t end = path.find_first_of(".[", i);
    const std::string key = path.substr(i, end == std::string::npos ? std::string::npos : end - i);
    if (key.empty()) throw bad("empty key");
    steps.push_back({key, -1});
    i = end == std::string::npos ? path.size() : (path[end] == '.' ? end + 1 : end);
  }
  if (steps.empty() || steps[0].index >= 0) throw bad("expected a key first");
  return steps;
}

nlohmann::json ParseValue(const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    return text;
  }
}

std::string BaseDirectory(const std::string& file) {
  const size_t slash = file.find_last_of('/');
  return slash == std::string::npos ? "." : file.substr(0, slash);
}

}  // namespace

Variation ParseVariation(const std::string& text) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
    throw InputError("pipetwin sweep: --vary expects PATH=V1,V2,..., got '" + text + "'");
  Variation v;
  v.path = text.substr(0, eq);
  ParsePath(v.path);
  std::stringstream values(text.substr(eq + 1));
  std::string item;
  while (std::getline(values, item, ',')) {
    if (item.empty())
      throw InputError("pipetwin sweep: --vary " + v.path + ": empty value in '" + text + "'");
    v.labels.push_back(item);
    v.values.push_back(ParseValue(item));
  }
  return v;
}

// The most points a sweep runs: each is a simulation of its own, and the points are listed
// before the first runs (a few --vary lists multiply fast: ten of ten values are 10^10).
constexpr double kMaxSweepPoints = 100'000;

std::vector<SweepPoint> CartesianProduct(const std::vector<Variation>& variations) {
  double count = 1;
  for (const Variation& v : variations) count *= static_cast<double>(v.values.size());
  if (count > kMaxSweepPoints) {
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", count);
    throw InputError("pipetwin sweep: the --vary lists make " + std::string(text) +
                     " points, more than pipetwin's limit of 100000 for one sweep");
  }
  std::vector<SweepPoint> points = {{}};
  for (const Variation& v : variations) {
    std::vector<SweepPoint> next;
    for (const SweepPoint& p : points)
      for (size_t k = 0; k < v.values.size(); ++k) {
        SweepPoint q = p;
        q.push_back(k);
        next.push_back(q);
      }
    points = std::move(next);
  }
  return points;
}

nlohmann::json ApplyPoint(const Scenario& scenario, const std::vector<Variation>& variations,
                          const SweepPoint& point) {
  nlohmann::json doc = scenario.source;
  const nlohmann::json resolved = ClusterToJson(scenario.cluster);
  for (size_t i = 0; i < variations.size(); ++i) {
    const std::vector<Step> steps = ParsePath(variations[i].path);
    // A preset cluster has no levels or device to vary until they are written out.
    if (steps.size() > 1 && steps[0].key == "cluster" && doc["cluster"].is_object() &&
        (steps[1].key == "levels" || steps[1].key == "device") &&
        !doc["cluster"].contains(steps[1].key))
      doc["cluster"][steps[1].key] = resolved[steps[1].key];
    nlohmann::json* at = &doc;
    std::string walked;
    for (const Step& step : steps) {
      if (step.index >= 0) {
        if (!at->is_array() || static_cast<size_t>(step.index) >= at->size())
          throw InputError("pipetwin sweep: --vary " + variations[i].path + ": " +
                           (walked.empty() ? "the scenario" : walked) + " has no element [" +
                           std::to_string(step.index) + "]");
        at = &(*at)[static_cast<size_t>(step.index)];
        walked += "[" + std::to_string(step.index) + "]";
        continue;
      }
      if (!at->is_object() && !at->is_null())
        throw InputError("pipetwin sweep: --vary " + variations[i].path + ": " + walked +
                         " is " + DescribeJson(*at) + ", not an object");
      at = &(*at)[step.key];
      walked += (walked.empty() ? "" : ".") + step.key;
    }
    *at = variations[i].values[point[i]];
  }
  return doc;
}

namespace {

std::string SimulatePoint(const Scenario& base, const std::vector<Variation>& variations,
                          const SweepPoint& point, const SimOptions& options) {
  const nlohmann::json doc = ApplyPoint(base, variations, point);
  const Scenario scenario = ScenarioFromJson(doc, base.file, BaseDirectory(base.file));
  const Plan plan = PlanForScenario(scenario);
  return JsonText(ReportToJson(Simulate(scenario, plan, options).report, false));
}

// A --vary path the scenario format does not know fails every point alike: said before any
// runs, from the first point's document (a value out of range stays that point's error).
void CheckPaths(const Scenario& base, const std::vector<Variation>& variations,
                const SweepPoint& first) {
  try {
    ScenarioFromJson(ApplyPoint(base, variations, first), base.file, BaseDirectory(base.file));
  } catch (const InputError& e) {
    const std::string what = e.what();
    for (const Variation& v : variations)
      if (what.find(v.path + ": unknown key") != std::string::npos)
        throw InputError("pipetwin sweep: --vary " + v.path + ": " + what);
  }
}

}  // namespace

std::vector<std::string> MergeShardCsvs(const std::vector<std::string>& texts,
                                        const std::vector<std::string>& files,
                                        std::string* header) {
  std::map<long long, std::string> rows;
  header->clear();
  for (size_t f = 0; f < texts.size(); ++f) {
    std::istringstream in(texts[f]);
    std::string line, first;
    if (!std::getline(in, first) || first.rfind("point,", 0) != 0)
      throw InputError(files[f] + ": line 1: expected the header of a `pipetwin sweep --shard` "
                       "CSV (its first column \"point\")");
    if (header->empty()) *header = first.substr(6);
    else if (first.substr(6) != *header)
      throw InputError(files[f] + ": line 1: expected the same columns as " + files[0] +
                       " (shards of one sweep)");
    for (int n = 2; std::getline(in, line); ++n) {
      if (line.empty()) continue;
      const size_t comma = line.find(',');
      long long point = -1;
      size_t used = 0;
      try {
        point = std::stoll(line.substr(0, comma), &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (comma == std::string::npos || used != comma || point < 0)
        throw InputError(files[f] + ": line " + std::to_string(n) +
                         ": expected a point index (a whole number) before the first comma");
      if (!rows.emplace(point, line.substr(comma + 1)).second)
        throw InputError(files[f] + ": line " + std::to_string(n) + ": point " +
                         std::to_string(point) + " is in another shard too");
    }
  }
  std::vector<std::string> out;
  long long expected = 0;
  for (const auto& [point, row] : rows) {
    if (point != expected)
      throw InputError("pipetwin sweep --merge: point " + std::to_string(expected) +
                       " is in none of the " + std::to_string(texts.size()) +
                       " shards (a shard missing?)");
    out.push_back(row);
    ++expected;
  }
  return out;
}

std::vector<SweepResult> RunSweep(const Scenario& scenario,
                                  const std::vector<Variation>& variations,
                                  const SimOptions& options, int jobs,
                                  const std::function<void(size_t, size_t)>& progress,
                                  int shard, int shards) {
  const std::vector<SweepPoint> all = CartesianProduct(variations);
  for (const SweepPoint& p : all) ApplyPoint(scenario, variations, p);  // paths fit
  CheckPaths(scenario, variations, all.front());
  std::vector<SweepPoint> points;
  std::vector<size_t> index;  // of each point run, in `all`
  for (size_t i = 0; i < all.size(); ++i)
    if (shards <= 0 || static_cast<int>(i % shards) == shard) {
      points.push_back(all[i]);
      index.push_back(i);
    }
  if (jobs <= 0) jobs = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  std::vector<SweepResult> results(points.size());
  std::map<pid_t, std::pair<size_t, std::unique_ptr<ChildProcess>>> running;
  size_t next = 0, done = 0;
  if (progress) progress(0, points.size());
  while (done < points.size()) {
    while (next < points.size() && static_cast<int>(running.size()) < jobs) {
      const SweepPoint point = points[next];
      auto child = std::make_unique<ChildProcess>(
          [&, point] { return SimulatePoint(scenario, variations, point, options); });
      const pid_t pid = child->pid();
      running[pid] = {next++, std::move(child)};
    }
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    auto it = running.find(pid);
    if (it == running.end()) continue;
    SweepResult& result = results[it->second.first];
    result.point = index[it->second.first];
    for (size_t v = 0; v < variations.size(); ++v)
      result.labels.push_back(variations[v].labels[points[it->second.first][v]]);
    try {
      const std::string json = it->second.second->Collect(status);
      result.report = ReportFromJson(ParseJsonText(json, "<sweep point>"), "<sweep point>");
      result.ok = true;
    } catch (const std::exception& e) {
      result.error = e.what();
    }
    running.erase(it);
    ++done;
    if (progress) progress(done, points.size());
  }
  return results;
}

}  // namespace pipetwin::sim
