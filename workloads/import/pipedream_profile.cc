#include "workloads/import/pipedream_profile.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "partition/util/error.h"
#include "partition/util/limits.h"
#include "partition/util/json_reader.h"

namespace pipetwin {

namespace {

const char kSeparator[] = " -- ";
const size_t kSeparatorLength = 4;
// PipeDream's profiler records fp32 models: 4 bytes per parameter.
const double kFp32Bytes = 4;

// A place in the profile, for errors: "graph.txt: line 12: ...".
struct LineRef {
  const std::string& file;
  int line;
  [[noreturn]] void Fail(const std::string& what) const {
    throw InputError(file, "line " + std::to_string(line), what);
  }
};

// Quotes a piece of the input for a message, cut short so a long GNMT line stays readable.
std::string Quote(const std::string& text) {
  const size_t kMax = 60;
  if (text.size() <= kMax) return "\"" + text + "\"";
  return "\"" + text.substr(0, kMax) + "...\"";
}

std::string Trim(const std::string& text) {
  const char* blanks = " \t\r\n";
  size_t first = text.find_first_not_of(blanks);
  if (first == std::string::npos) return "";
  return text.substr(first, text.find_last_not_of(blanks) - first + 1);
}

bool HasBlank(const std::string& text) { return text.find_first_of(" \t") != std::string::npos; }

// A plain decimal number >= 0. std::strtod alone would also take "nan", "inf", hexadecimal and
// leading blanks, none of which a profile legitimately contains, so the characters are checked
// first and the whole text must be consumed.
double ParseNonNegative(const std::string& text, const std::string& key, const LineRef& at) {
  const std::string expected = "expected " + key + " to be a number >= 0, got ";
  if (text.empty()) at.Fail(expected + "nothing (a truncated line?)");
  if (text.find_first_not_of("0123456789.eE+-") != std::string::npos) at.Fail(expected + Quote(text));
  char* end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) at.Fail(expected + Quote(text));
  if (!std::isfinite(value) || value < 0 || std::signbit(value)) at.Fail(expected + Quote(text));
  return value;
}

// "[6291456.0; 131072.0; 131072.0]": one size per output of a multi-output layer.
std::vector<double> ParseOutputList(const std::string& text, const LineRef& at) {
  if (text.back() != ']')
    at.Fail("expected activation_size list \"[a; b; ...]\" to end with ']', got " + Quote(text));
  std::vector<double> sizes;
  std::string inner = text.substr(1, text.size() - 2);
  size_t start = 0;
  while (true) {
    size_t semicolon = inner.find(';', start);
    sizes.push_back(ParseNonNegative(Trim(inner.substr(start, semicolon - start)),
                                     "each activation_size in the list", at));
    if (semicolon == std::string::npos) break;
    start = semicolon + 1;
  }
  return sizes;
}

void SetActivation(const std::string& value, Layer& layer, const LineRef& at) {
  if (value.empty() || value.front() != '[') {
    layer.activation_bytes = ParseNonNegative(value, "activation_size", at);
    return;
  }
  std::vector<double> sizes = ParseOutputList(value, at);
  layer.activation_bytes = 0;
  for (double s : sizes) layer.activation_bytes += s;
  // Layer::output_bytes is only for layers with several outputs.
  if (sizes.size() > 1) layer.output_bytes = std::move(sizes);
}

// The key=value tail: forward_compute_time=<ms>, backward_compute_time=<ms>,
// activation_size=<bytes or list>, parameter_size=<bytes>. All four are required, once each;
// an unknown key is an error rather than ignored (it is likely a cut or a typo).
void ParseMeasurements(const std::string& tail, Layer& layer, const LineRef& at) {
  const std::vector<std::string> keys = {"forward_compute_time", "backward_compute_time",
                                         "activation_size", "parameter_size"};
  std::map<std::string, std::string> values;
  size_t start = 0;
  while (start <= tail.size()) {
    size_t comma = tail.find(',', start);
    std::string field = Trim(tail.substr(start, comma - start));
    size_t equals = field.find('=');
    if (equals == std::string::npos)
      at.Fail("expected key=value, got " + Quote(field) + " (a truncated line?)");
    std::string key = Trim(field.substr(0, equals));
    if (std::find(keys.begin(), keys.end(), key) == keys.end())
      at.Fail("expected one of forward_compute_time, backward_compute_time, activation_size, "
              "parameter_size, got " + Quote(key));
    if (!values.emplace(key, Trim(field.substr(equals + 1))).second)
      at.Fail(key + " is given twice");
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (const std::string& key : keys)
    if (!values.count(key)) at.Fail("expected " + key + "=<number>, got none (a truncated line?)");
  layer.forward_ms = ParseNonNegative(values["forward_compute_time"], "forward_compute_time", at);
  layer.backward_ms = ParseNonNegative(values["backward_compute_time"], "backward_compute_time", at);
  SetActivation(values["activation_size"], layer, at);
  layer.parameter_bytes = ParseNonNegative(values["parameter_size"], "parameter_size", at);
  layer.parameters = layer.parameter_bytes / kFp32Bytes;
}

// "<id> -- <description> -- <key=value, ...>". The description is free text (GNMT's are long
// module dumps with commas and parentheses), so the id is cut at the first separator and the
// measurements at the last one.
Layer ParseNodeLine(const std::string& text, const LineRef& at) {
  size_t first = text.find(kSeparator);
  size_t last = text.rfind(kSeparator);
  if (first == std::string::npos || first == last)
    at.Fail("expected \"<id> -- <layer> -- forward_compute_time=..., ...\" (an edge line starts "
            "with a tab), got " + Quote(text) + " (a truncated line?)");
  Layer layer;
  layer.id = Trim(text.substr(0, first));
  if (layer.id.empty() || HasBlank(layer.id))
    at.Fail("expected a node id without blanks before \" -- \", got " + Quote(layer.id));
  layer.description = Trim(text.substr(first + kSeparatorLength, last - first - kSeparatorLength));
  ParseMeasurements(text.substr(last + kSeparatorLength), layer, at);
  return layer;
}

struct Edge {
  std::string from;
  std::string to;
  int line;
};

// "\t<from> -- <to>": `from`'s output feeds `to`.
Edge ParseEdgeLine(const std::string& text, const LineRef& at) {
  std::string body = Trim(text);
  size_t separator = body.find(kSeparator);
  Edge edge{"", "", at.line};
  if (separator != std::string::npos) {
    edge.from = Trim(body.substr(0, separator));
    edge.to = Trim(body.substr(separator + kSeparatorLength));
  }
  if (edge.from.empty() || edge.to.empty() || HasBlank(edge.from) || HasBlank(edge.to))
    at.Fail("expected an edge \"<tab><node> -- <node>\", got " + Quote(body));
  return edge;
}

// Turns edges into Layer::inputs, in the order the edges are listed.
void ConnectEdges(const std::vector<Edge>& edges, const std::map<std::string, int>& index_of,
                  Workload& w, const std::string& file) {
  std::map<std::pair<std::string, std::string>, int> seen;
  for (const Edge& e : edges) {
    LineRef at{file, e.line};
    for (const std::string& end : {e.from, e.to})
      if (!index_of.count(end))
        at.Fail("dangling edge: expected a node defined in the file, got unknown node " + Quote(end));
    if (e.from == e.to) at.Fail("edge from " + Quote(e.from) + " to itself (a cycle)");
    auto [it, fresh] = seen.emplace(std::make_pair(e.from, e.to), e.line);
    if (!fresh)
      at.Fail("duplicate edge " + e.from + " -- " + e.to + " (first on line " +
              std::to_string(it->second) + ")");
    w.layers[index_of.at(e.to)].inputs.push_back(index_of.at(e.from));
  }
}

// ".../vgg16/graph.txt" -> "vgg16": PipeDream keeps one graph.txt per model directory.
std::string WorkloadNameFor(const std::string& file) {
  std::filesystem::path path(file);
  if (path.filename() == "graph.txt" && !path.parent_path().filename().empty())
    return path.parent_path().filename().string();
  std::string stem = path.stem().string();
  return stem.empty() ? "pipedream-profile" : stem;
}

}  // namespace

Workload ParsePipeDreamProfile(const std::string& text, const std::string& name,
                               int reference_batch_size) {
  if (reference_batch_size < 1)
    throw InputError("expected a reference batch size >= 1, got " +
                     std::to_string(reference_batch_size));
  Workload w;
  w.name = WorkloadNameFor(name);
  w.reference.batch_size = reference_batch_size;
  w.reference.device = "profiled GPU (PipeDream)";
  w.reference.source = "pipedream-profile";
  w.parameter_dtype_bytes = kFp32Bytes;

  std::map<std::string, int> index_of;  // node id -> index in w.layers
  std::map<std::string, int> line_of;   // node id -> line it is defined on
  std::vector<Edge> edges;
  size_t start = 0;
  for (int number = 1; start < text.size(); ++number) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.back() == '\r') line.pop_back();  // a file saved on Windows
    LineRef at{name, number};
    if (Trim(line).empty()) continue;
    if (line.front() == '\t') {
      edges.push_back(ParseEdgeLine(line, at));
      continue;
    }
    if (w.LayerCount() == kMaxLayers.max)
      at.Fail("too many nodes: expected at most " + std::to_string(kMaxLayers.max) +
              " (pipetwin's limit for " + kMaxLayers.what + ")");
    Layer layer = ParseNodeLine(line, at);
    if (!line_of.emplace(layer.id, number).second)
      at.Fail("duplicate node " + Quote(layer.id) + " (first on line " +
              std::to_string(line_of[layer.id]) + ")");
    index_of[layer.id] = w.LayerCount();
    w.layers.push_back(std::move(layer));
  }
  if (w.layers.empty() && edges.empty())
    throw InputError(name, "line 1", "expected a PipeDream graph.txt with node lines, got an "
                                     "empty file");
  ConnectEdges(edges, index_of, w, name);  // with no node lines, every edge is dangling
  ValidateAndSortWorkload(w, name);  // reports a cycle among the nodes
  // The Input sources' forward time is the data loader's (cost/data_loading.h): it moves to
  // the workload, out of every stage's compute. PipeDream's optimizer drops these nodes too.
  for (Layer& l : w.layers)
    if (l.inputs.empty() && l.description.rfind("Input", 0) == 0) {
      w.data_loading_ms += l.forward_ms;
      l.forward_ms = 0;
    }
  return w;
}

Workload ImportPipeDreamProfile(const std::string& path, int reference_batch_size) {
  return ParsePipeDreamProfile(ReadTextFile(path), path, reference_batch_size);
}

// Every graph.txt line, node or edge, has a " -- "; JSON never starts with one outside a string.
// Anything else (even "precious") goes to the JSON reader, whose "malformed JSON" suits it better.
bool LooksLikePipeDreamProfile(const std::string& text) {
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || text[first] == '{' || text[first] == '[') return false;
  size_t end = text.find('\n', first);
  return text.substr(first, end == std::string::npos ? end : end - first).find(kSeparator) !=
         std::string::npos;
}

}  // namespace pipetwin
