// `pipetwin workload show FILE` and `pipetwin workload gpt|bert|vgg16|resnet50 [settings]`.
#include <cstdio>
#include <iomanip>
#include <map>
#include <iostream>
#include <sstream>

#include "partition/util/files.h"
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
    "                                  [--device NAME] [--json] [--output FILE]";

const char* kDescription =
    "Show a workload file (pipetwin JSON or PipeDream graph.txt) as a per-layer table with\n"
    "totals, or generate an analytic workload. --json prints the workload file itself (with\n"
    "totals beside the layers) so that it can be saved and given to the planners.";

std::string HumanBytes(double bytes) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(bytes >= 1e9 ? 2 : 1);
  if (bytes >= 1e9) out << bytes / 1e9 << " GB";
  else if (bytes >= 1e6) out << bytes / 1e6 << " MB";
  else if (bytes >= 1e3) out << bytes / 1e3 << " kB";
  else out << std::setprecision(0) << bytes << " B";
  return out.str();
}

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
        << std::setw(11) << l.backward_ms << std::setw(12) << HumanBytes(l.activation_bytes)
        << std::setw(14) << std::setprecision(0) << l.parameters << "\n";
  }
  out << "\ntotal: forward " << std::setprecision(3) << w.TotalForwardMs() << " ms, backward "
      << w.TotalBackwardMs() << " ms, " << std::setprecision(0) << w.TotalParameters()
      << " parameters (" << HumanBytes(w.TotalParameterBytes()) << "), activations "
      << HumanBytes(w.TotalActivationBytes()) << "\n";
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
      {"width", "--width"},     {"dtype_bytes", "--dtype-bytes"}};
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

// Builds the generator spec (the scenario schema) from the command line.
nlohmann::json GeneratorSpec(const std::string& generator, const po::variables_map& vm) {
  nlohmann::json spec = {{"generator", generator}};
  const bool transformer = generator == "gpt" || generator == "bert";
  const std::pair<const char*, const char*> transformer_keys[] = {
      {"layers", "layers"}, {"hidden", "hidden"}, {"heads", "heads"},
      {"seq", "sequence"},  {"vocab", "vocabulary"}};
  const std::pair<const char*, const char*> cnn_keys[] = {
      {"image-size", "image_size"}, {"classes", "classes"}};
  for (const auto& [option, key] : transformer_keys)
    if (vm.count(option)) {
      if (!transformer) throw InputError("pipetwin workload " + generator + ": --" + option +
                                         " applies to gpt and bert only");
      spec[key] = vm[option].as<long>();
    }
  for (const auto& [option, key] : cnn_keys)
    if (vm.count(option) && !transformer) spec[key] = vm[option].as<long>();
  if (vm.count("batch")) spec[transformer ? "microbatch" : "batch"] = vm["batch"].as<long>();
  for (const char* option : {"image-size", "classes", "width"})
    if (vm.count(option) && transformer)
      throw InputError("pipetwin workload " + generator + ": --" + option +
                       " applies to vgg16 and resnet50 only");
  if (vm.count("width")) spec["width"] = vm["width"].as<double>();
  if (vm.count("dtype-bytes")) spec["dtype_bytes"] = vm["dtype-bytes"].as<double>();
  return spec;
}

}  // namespace

int RunWorkloadCommand(const Args& args) {
  po::options_description desc("options");
  desc.add_options()
      ("json", "print the workload as JSON (the workload file schema, with totals)")
      ("output", po::value<std::string>(), "also write the workload JSON to FILE")
      ("force", "replace an existing --output file (never the workload shown)")
      ("layers", po::value<long>(), "transformer blocks")
      ("hidden", po::value<long>(), "hidden size")
      ("heads", po::value<long>(), "attention heads")
      ("seq", po::value<long>(), "sequence length")
      ("vocab", po::value<long>(), "vocabulary size")
      ("batch", po::value<long>(), "samples per micro-batch (the times' reference batch)")
      ("dtype-bytes", po::value<double>(), "bytes per element (2 for fp16/bf16, 4 for fp32)")
      ("image-size", po::value<long>(), "square input image size (CNNs)")
      ("classes", po::value<long>(), "output classes (CNNs)")
      ("width", po::value<double>(), "channel multiplier (CNNs)")
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
                     "vgg16, resnet50)");
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
                       "' (expected show, gpt, bert, vgg16 or resnet50)");
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
