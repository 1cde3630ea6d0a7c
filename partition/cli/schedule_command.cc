// `pipetwin schedule`: build (or import) a pipeline schedule, check it, and print it as text,
// torch.distributed.pipelining CSV, JSON with a replay summary, or an SVG timeline.
#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "partition/cli/parse.h"
#include "partition/util/error.h"
#include "partition/util/json_reader.h"
#include "partition/schedule/op.h"
#include "partition/schedule/build.h"
#include "partition/schedule/check.h"
#include "partition/schedule/format.h"
#include "partition/schedule/replay.h"
#include "partition/schedule/spec.h"
#include "partition/timeline/svg.h"
#include "partition/util/files.h"
#include "partition/util/json_writer.h"

namespace pipetwin::cli {

namespace {

const char kUsage[] =
    "--kind KIND --stages P --microbatches M [options]\n"
    "       pipetwin schedule --import FILE.csv [options]";

std::vector<int> ParseReplicas(const std::string& text) {
  std::vector<int> counts;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    size_t used = 0;
    int value = 0;
    try {
      value = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != item.size())
      throw InputError("pipetwin schedule: --replicas expects counts like 2,1,1, got '" + text +
                       "'");
    counts.push_back(value);
  }
  if (counts.empty())
    throw InputError("pipetwin schedule: --replicas expects counts like 2,1,1, got '" + text + "'");
  return counts;
}

std::string OutputFormat(const po::variables_map& vm) {
  std::string format = vm.count("format") ? vm["format"].as<std::string>() : "";
  if (vm.count("json")) {
    if (!format.empty() && format != "json")
      throw InputError("pipetwin schedule: --json and --format " + format + " disagree");
    format = "json";
  }
  if (format.empty()) format = "text";
  if (format != "text" && format != "csv" && format != "csv-comms" && format != "json" &&
      format != "svg")
    throw InputError("pipetwin schedule: --format must be text, csv, csv-comms, json or svg, got '" +
                     format + "'");
  return format;
}

OpCosts CostsFrom(const po::variables_map& vm) {
  OpCosts costs;
  if (vm.count("forward-time")) costs.forward = vm["forward-time"].as<double>();
  if (vm.count("backward-time")) costs.backward = vm["backward-time"].as<double>();
  if (!(costs.forward > 0) || !(costs.backward > 0) || !std::isfinite(costs.forward) ||
      !std::isfinite(costs.backward))
    throw InputError("pipetwin schedule: --forward-time and --backward-time must be > 0");
  return costs;
}

ScheduleSpec SpecFrom(const po::variables_map& vm) {
  if (!vm.count("kind") || !vm.count("stages") || !vm.count("microbatches"))
    throw InputError("pipetwin schedule: --kind, --stages and --microbatches are required "
                     "(or --import FILE.csv)");
  ScheduleSpec spec;
  spec.kind = ParseScheduleKind(vm["kind"].as<std::string>());
  spec.stages = vm["stages"].as<int>();
  spec.microbatches = vm["microbatches"].as<int>();
  if (vm.count("replicas")) spec.replicas = ParseReplicas(vm["replicas"].as<std::string>());
  if (spec.kind == ScheduleKind::kDualPipe) {
    // --stages is DualPipe's PP ranks, --replicas one count per rank's stage; the spec counts
    // mirror pairs (spec.h).
    if (spec.replicas.empty()) spec.replicas.assign(std::max(spec.stages, 0), 1);
    if (static_cast<int>(spec.replicas.size()) != spec.stages)
      throw InputError("pipetwin schedule: --replicas lists " +
                       std::to_string(spec.replicas.size()) + " stages for --stages " +
                       std::to_string(spec.stages));
    spec.replicas = PositionReplicas(spec.kind, 2, spec.replicas);
    spec.stages /= 2;
  }
  if (vm.count("chunks")) spec.chunks = vm["chunks"].as<int>();
  else if (TakesChunkCount(spec.kind) || IsVShaped(spec.kind)) spec.chunks = 2;
  if (vm.count("batches")) {
    spec.batches = vm["batches"].as<int>();
    if (spec.batches < 1) throw InputError("pipetwin schedule: --batches must be >= 1");
  }
  if (vm.count("layers")) spec.layer_count = vm["layers"].as<int>();
  if (vm.count("workers")) spec.worker_count = vm["workers"].as<int>();
  if (vm.count("layers") && spec.layer_count < 1)
    throw InputError("pipetwin schedule: --layers must be >= 1");
  if (vm.count("workers") && spec.worker_count < 1)
    throw InputError("pipetwin schedule: --workers must be >= 1");
  spec.vertical_sync = vm.count("vertical-sync") > 0;
  spec.weight_stashing = vm.count("no-weight-stashing") == 0;
  spec.recompute = vm.count("recompute") > 0;
  if (vm.count("recompute-timing")) {
    if (!spec.recompute)
      throw InputError("pipetwin schedule: --recompute-timing needs --recompute");
    const auto timing = ParseRecomputeTiming(vm["recompute-timing"].as<std::string>());
    if (!timing)
      throw InputError("pipetwin schedule: --recompute-timing must be in_backward or early, got '" +
                       vm["recompute-timing"].as<std::string>() + "'");
    spec.recompute_timing = *timing;
  }
  return spec;
}

}  // namespace

int RunScheduleCommand(const Args& args) {
  po::options_description desc("options");
  desc.add_options()
      ("kind", po::value<std::string>(),
       "gpipe|flush|pipedream|2bw|interleaved|zb-h1|zb-h2|looped-bfs|interleaved-zb|zb-v|"
       "dualpipe-v|dualpipe")
      ("stages", po::value<int>(), "pipeline depth P (dualpipe: its PP ranks, even)")
      ("microbatches", po::value<int>(),
       "micro-batches per batch M (pipedream: minibatches to run)")
      ("replicas", po::value<std::string>(), "replicas per stage R0,R1,... (1F1B-RR)")
      ("chunks", po::value<int>(),
       "model chunks per worker (interleaved, looped-bfs, interleaved-zb; default 2; zb-v, "
       "dualpipe-v and dualpipe have 2)")
      ("batches", po::value<int>(), "batches to run (2bw; default 4)")
      ("vertical-sync", "PipeDream with vertical sync")
      ("no-weight-stashing", "PipeDream without weight stashing: backwards on the latest weights, "
       "each forward rerun on them first")
      ("recompute", "recompute activations in the backward (stash stage inputs only)")
      ("recompute-timing", po::value<std::string>(),
       "in_backward (default: once the gradient has arrived, as Megatron-LM and torch) or "
       "early (before the gradient arrives)")
      ("layers", po::value<int>(), "layer count, when known (more stages than layers is an error)")
      ("workers", po::value<int>(), "worker count, when known (the replicas must add up to it)")
      ("forward-time", po::value<double>(), "forward time per stage and micro-batch (default 1)")
      ("backward-time", po::value<double>(), "backward time per stage and micro-batch (default 2)")
      ("check", "check validity and replay for deadlocks; exit 2 when broken")
      ("import", po::value<std::string>(), "read a torch.distributed.pipelining action CSV")
      ("format", po::value<std::string>(),
       "text|csv|csv-comms|json|svg (default text); csv: torch's compute-only action CSV, "
       "csv-comms: its lowered form with sends, receives and REDUCE_GRAD")
      ("json", "same as --format json")
      ("output,o", po::value<std::string>(), "write to FILE (atomically) instead of stdout")
      ("force", "replace an existing --output file (never the --import file)");
  po::variables_map vm = ParseCommandLine("schedule", desc, {}, args);
  if (vm.count("help")) {
    PrintUsage(std::cout, "schedule", kUsage,
               "Per-worker op lists of a pipeline schedule, with weight versions and stash "
               "events;\nchecked, replayed with the given forward and backward times, and "
               "exported.",
               desc);
    return 0;
  }
  const std::string format = OutputFormat(vm);
  const OpCosts costs = CostsFrom(vm);
  const std::string input = vm.count("import") ? vm["import"].as<std::string>() : "";
  const std::string output = vm.count("output") ? vm["output"].as<std::string>() : "";
  if (!output.empty()) CheckOutputPath(output, "--output", vm.count("force") > 0, {input});

  PipelineSchedule schedule;
  if (!input.empty()) {
    if (vm.count("kind") || vm.count("stages") || vm.count("microbatches"))
      throw InputError("pipetwin schedule: --import takes the schedule from the file; drop "
                       "--kind, --stages and --microbatches");
    schedule = ScheduleFromCsv(ReadTextFile(input), input);
    try {
      CheckSchedule(schedule);
    } catch (const InputError& e) {
      if (!e.file().empty()) throw;
      throw InputError(input, "", e.what());  // a deadlock of the file's lists
    }
  } else {
    schedule = BuildSchedule(SpecFrom(vm));
    if (vm.count("check")) CheckSchedule(schedule);
  }
  const ReplayResult replay = ReplaySchedule(schedule, costs);
  if (!replay.completed)
    throw InputError(input.empty() ? "pipetwin schedule" : input, "",
                     "deadlock in the replay: " + replay.deadlock);

  std::string text;
  if (format == "csv") text = ScheduleToCsv(schedule, CsvForm::kComputeOnly);
  if (format == "csv-comms") text = ScheduleToCsv(schedule, CsvForm::kWithCommunication);
  if (format == "json") text = JsonText(ScheduleToJson(schedule, replay, costs), 1) + "\n";
  if (format == "svg") text = ScheduleToSvg(schedule, replay);
  if (format == "text") {
    text = ScheduleToText(schedule, replay, costs);
    if (vm.count("check") || !input.empty())
      text += "check: ok (every send has its receive; the lists complete)\n";
  }
  if (output.empty()) {
    std::cout << text;
  } else {
    WriteTextFileAtomically(output, text);
  }
  return 0;
}

}  // namespace pipetwin::cli
