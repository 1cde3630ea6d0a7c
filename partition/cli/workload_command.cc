// `pipetwin workload show FILE` and `pipetwin workload gpt|bert|vgg16|resnet50|mlp [settings]`.
#include <cstdio>
#include <iomanip>
#include <map>
#include <iostream>
#include <sstream>

#include "partition/util/files.h"
#include "partition/util/format.h"
#include "partition/cli/parse.h"
#include "partition/util/error.h"
#include "partition/util/json_reader.h"
#include "partition/model/workload.h"
#include "partition/model/cluster.h"
#include "partition/util/json_writer.h"
#include "workloads/scenario/workload_source.h"

namespace pipetwin::cli {

namespace {

const char* kUsage =
    "show FILE [--json]\n"
    "       pipetwin workload gpt|bert [--layers N --hidden H --heads A --seq S --vocab V]\n"
    "                                  [--batch B --dtype-bytes D --device NAME] [--json]\n"
    "       pipetwin workload vgg16|resnet50 [--image-size N --batch B --classes C --width W]\n"
    "                                  [--device NAME] [--json] [--output FILE]\n"
    "       pipetwin workload mlp [--layers N --input I --width W --classes C --batch B]\n"
    "                                  [--device NAME] [--json] [--output FILE]";

const char* kDescription =
    "Show a workload file (pipetwin JSON or PipeDream graph.txt) as a per-layer table with\n"
    "totals, or generate an analytic workload. --json prints the workload file itself (with\n"
    "totals beside the layers) so that it can be saved and given to the planners. The options\n"
    "are the generator's keys in a scenario file (scenarios/README.md), '_' written '-';\n"
    "--sequence, --vocabulary and --microbatch are accepted for --seq, --vocab and --batch.";

nlohmann::json WithTotals(const Workload& w) {
  nlohmann::json j = WorkloadToJson(w);
  j["layer_count"] = w.LayerCount();
  j["is_chain"] = w.IsChain();
  j["parameters"] = w.TotalParameters();
  j["parameter_bytes"] = w.TotalParameterBytes();
  j["forward_ms"] = w.TotalForwardMs();
  j["backward_ms"] = w.TotalBackwardMs();
  return j;
}

void PrintTable(std::ostream& out, const Workload& w) {
  out << w.name << ": " << w.LayerCount() << " layers ("
      << (w.IsChain() ? "a chain" : "a DAG") << "), times at batch " << w.reference.batch_size
      << " on " << w.reference.device << " (" << w.reference.source << ")\n\n";
  out << std::left << std::setw(5) << "#" << std::setw(12) << "id" << std::setw(34)
      << "layer" << std::right << std::setw(11) << "fwd ms" << std::setw(11) << "bwd ms"
      << std::setw(12) << "activation" << std::setw(14) << "parameters" << "\n";
  for (int i = 0; i < w.LayerCount(); ++i) {
    const Layer& l = w.layers[i];
    std::string what = l.description.size() > 32 ? l.description.substr(0, 29) + "..."
                                                  : l.description;
    std::string id = l.id.size() > 11 ? l.id.substr(0, 10) + "~" : l.id;
    out << std::left << std::setw(5) << i << std::setw(12) << id << std::setw(34) << what
        << std::right << std::fixed << std::setprecision(3) << std::setw(11) << l.forward_ms
        << std::setw(11) << l.backward_ms << std::setw(12) << BinaryBytes(l.activation_bytes)
        << std::setw(14) << std::setprecision(0) << l.parameters << "\n";
  }
  out << "\ntotal: forward " << std::setprecision(3) << w.TotalForwardMs() << " ms, backward "
      << w.TotalBackwardMs() << " ms, " << std::setprecision(0) << w.TotalParameters()
      << " parameters (" << BinaryBytes(w.TotalParameterBytes()) << "), activations "
      << BinaryBytes(w.TotalActivationBytes()) << "\n";
}

// The spec built from the command line is read as a file of this name; its errors are then
// said in terms of the options typed (AsOptionError), never of the spec's keys.
const char* const kCommandLine = "command line";

// The option a generator spec key came from.
std::string OptionOf(const std::string& key) {
  static const std::map<std::string, std::string> options = {
      {"layers", "--layers"},   {"hidden", "--hidden"},         {"heads", "--heads"},
      {"sequence", "--seq"},    {"vocabulary", "--vocab"},      {"microbatch", "--batch"},
      {"batch", "--batch"},     {"image_size", "--image-size"}, {"classes", "--classes"},
      {"width", "--width"},     {"dtype_bytes", "--dtype-bytes"},     {"input", "--input"}};
  const auto it = options.find(key);
  return it == options.end() ? key : it->second;
}

// "command line: layers: expected ..." as "pipetwin workload gpt: --layers: expected ...".
std::string AsOptionError(const InputError& e, const std::string& generator) {
  std::string text = e.what();
  const std::string prefix = e.file() + ": " + (e.where().empty() ? "" : e.where() + ": ");
  if (text.rfind(prefix, 0) == 0) text = text.substr(prefix.size());
  const bool whole = e.where().empty() || e.where() == "(root)";  // a rule between options
  return "pipetwin workload " + generator + ": " + (whole ? "" : OptionOf(e.where()) + ": ") +
         text;
}

// A command-line option of the generators: its names (the short one, and the scenario key's
// where that differs), the spec key it sets and the generators it applies to.
struct GeneratorOption {
  const char* option;
  const char* alias;  // nullptr: none
  const char* key;
  std::vector<std::string> generators;
};

const std::vector<GeneratorOption>& GeneratorOptions() {
  static const std::vector<GeneratorOption> options = {
      {"layers", nullptr, "layers", {"gpt", "bert", "mlp"}},
      {"hidden", nullptr, "hidden", {"gpt", "bert"}},
      {"heads", nullptr, "heads", {"gpt", "bert"}},
      {"seq", "sequence", "sequence", {"gpt", "bert"}},
      {"vocab", "vocabulary", "vocabulary", {"gpt", "bert"}},
      {"input", nullptr, "input", {"mlp"}},
      {"image-size", nullptr, "image_size", {"vgg16", "resnet50"}},
      {"classes", nullptr, "classes", {"vgg16", "resnet50", "mlp"}},
      {"width", nullptr, "width", {"vgg16", "resnet50", "mlp"}},
      {"batch", "microbatch", "batch", {"gpt", "bert", "vgg16", "resnet50", "mlp"}},
      {"dtype-bytes", nullptr, "dtype_bytes", {"gpt", "bert", "vgg16", "resnet50", "mlp"}}};
  return options;
}

std::string Join(const std::vector<std::string>& words) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i)
    out += (i == 0 ? "" : i + 1 == words.size() ? " and " : ", ") + words[i];
  return out;
}

// Builds the generator spec (the scenario schema) from the command line.
nlohmann::json GeneratorSpec(const std::string& generator, const po::variables_map& vm) {
  nlohmann::json spec = {{"generator", generator}};
  const bool transformer = generator == "gpt" || generator == "bert";
  for (const GeneratorOption& o : GeneratorOptions()) {
    const bool named = vm.count(o.option) > 0, aliased = o.alias && vm.count(o.alias) > 0;
    if (!named && !aliased) continue;
    const std::string given = std::string("--") + (named ? o.option : o.alias);
    if (named && aliased)
      throw InputError("pipetwin workload " + generator + ": --" + o.option + " and --" +
                       o.alias + " name the same setting: give one");
    bool applies = false;
    for (const std::string& g : o.generators) applies = applies || g == generator;
    if (!applies)
      throw InputError("pipetwin workload " + generator + ": " + given + " applies to " +
                       Join(o.generators) + " only");
    const po::variable_value& v = vm[named ? o.option : o.alias];
    std::string key = o.key;
    if (key == "batch" && transformer) key = "microbatch";
    // Values are read as text and given to the spec as JSON numbers, so the generator's own
    // rules (integer, range) judge them as they judge a scenario file's.
    const std::string text = v.as<std::string>();
    try {
      size_t used = 0;
      const double number = std::stod(text, &used);
      if (used != text.size()) throw std::invalid_argument(text);
      if (number == static_cast<double>(static_cast<long long>(number)) &&
          text.find_first_of(".eE") == std::string::npos)
        spec[key] = static_cast<long long>(number);
      else
        spec[key] = number;
    } catch (const std::logic_error&) {
      throw InputError("pipetwin workload " + generator + ": " + given +
                       ": expected a number, got \"" + text + "\"");
    }
  }
  return spec;
}

}  // namespace

int RunWorkloadCommand(const Args& args) {
  po::options_description desc("options");
  desc.add_options()
      ("json", "print the workload as JSON (the workload file schema, with totals)")
      ("output", po::value<std::string>(), "also write the workload JSON to FILE")
      ("force", "replace an existing --output file (never the workload shown)")
      ("layers", po::value<std::string>(), "transformer blocks (gpt, bert), layers (mlp)")
      ("hidden", po::value<std::string>(), "hidden size")
      ("heads", po::value<std::string>(), "attention heads")
      ("seq", po::value<std::string>(), "sequence length (also --sequence)")
      ("sequence", po::value<std::string>(), "the same as --seq")
      ("vocab", po::value<std::string>(), "vocabulary size (also --vocabulary)")
      ("vocabulary", po::value<std::string>(), "the same as --vocab")
      ("input", po::value<std::string>(), "input features (mlp)")
      ("batch", po::value<std::string>(),
       "samples per micro-batch, the times' reference batch (also --microbatch)")
      ("microbatch", po::value<std::string>(), "the same as --batch")
      ("dtype-bytes", po::value<std::string>(), "bytes per element (2 for fp16/bf16, 4 for fp32)")
      ("image-size", po::value<std::string>(), "square input image size (CNNs)")
      ("classes", po::value<std::string>(), "output classes (CNNs, mlp)")
      ("width", po::value<std::string>(), "channel multiplier (CNNs), hidden width (mlp)")
      ("device", po::value<std::string>()->default_value("cluster-a"),
       "time layers on the device of this cluster preset (cluster-a, dgx-a100, dgx-h100, ...)");
  po::options_description all = desc;
  all.add_options()("words", po::value<std::vector<std::string>>(), "");
  po::positional_options_description positional;
  positional.add("words", -1);
  po::variables_map vm = ParseCommandLine("workload", all, positional, args);
  if (vm.count("help")) {
    PrintUsage(std::cout, "workload", kUsage, kDescription, desc);
    return 0;
  }
  std::vector<std::string> words =
      vm.count("words") ? vm["words"].as<std::vector<std::string>>() : std::vector<std::string>{};
  if (words.empty())
    throw InputError("pipetwin workload: expected `show FILE` or a generator name (gpt, bert, "
                     "vgg16, resnet50, mlp)");
  const std::string out = vm.count("output") ? vm["output"].as<std::string>() : "";
  if (!out.empty())
    CheckOutputPath(out, "--output", vm.count("force") > 0,
                    {words[0] == "show" && words.size() > 1 ? words[1] : std::string()});
  Workload w;
  if (words[0] == "show") {
    if (words.size() != 2) throw InputError("pipetwin workload show: expected one FILE");
    w = LoadAnyWorkloadFile(words[1]);
  } else {
    if (words[0] == "megatron")
      throw InputError("pipetwin workload: megatron workloads come from a scenario "
                       "(pipetwin from-megatron writes one from Megatron-LM's arguments)");
    bool known = false;
    for (const auto& g : GeneratorNames()) known = known || g == words[0];
    if (!known)
      throw InputError("pipetwin workload: unknown generator or action '" + words[0] +
                       "' (expected show, gpt, bert, vgg16, resnet50 or mlp)");
    if (words.size() != 1)
      throw InputError("pipetwin workload: unexpected argument '" + words[1] + "'");
    nlohmann::json spec = GeneratorSpec(words[0], vm);
    try {
      w = WorkloadFromSource(JsonReader(spec, kCommandLine),
                             ClusterPreset(vm["device"].as<std::string>(), 1), "");
    } catch (const InputError& e) {
      if (e.file() != kCommandLine) throw;
      throw InputError(AsOptionError(e, words[0]));
    }
  }
  if (!out.empty()) WriteTextFileAtomically(out, JsonText(WithTotals(w), 2) + "\n");
  if (vm.count("json")) std::cout << JsonText(WithTotals(w), 2) << "\n";
  else PrintTable(std::cout, w);
  return 0;
}

}  // namespace pipetwin::cli
