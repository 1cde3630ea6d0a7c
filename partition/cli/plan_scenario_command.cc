#include "partition/cli/plan_scenario.h"


#include <algorithm>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "partition/planners/baselines.h"
#include "partition/util/error.h"
#include "partition/util/files.h"
#include "partition/util/json_reader.h"
#include "partition/util/json_writer.h"
#include "workloads/scenario/scenario.h"
#include "workloads/scenario/plan_for_scenario.h"
#include "workloads/scenario/schedule_for_scenario.h"
#include "partition/planners/settings.h"
#include "partition/util/format.h"

namespace pipetwin::cli {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

PlanFit FitOf(const Plan& plan, double capacity_bytes) {
  PlanFit fit;
  fit.capacity_bytes = capacity_bytes;
  for (int q = 0; q < plan.StageCount(); ++q)
    if (fit.fullest_stage < 0 || plan.stages[q].memory_bytes > fit.peak_bytes) {
      fit.fullest_stage = q;
      fit.peak_bytes = plan.stages[q].memory_bytes;
    }
  if (capacity_bytes > 0) fit.over_bytes = std::max(0.0, fit.peak_bytes - capacity_bytes);
  return fit;
}

std::string DescribeFit(const PlanFit& fit) {
  std::ostringstream out;
  out << std::fixed << std::setprecision(1);
  if (fit.Fits())
    out << "every stage fits its device's " << fit.capacity_bytes / kGiB << " GiB (the fullest, "
        << "stage " << fit.fullest_stage << ", needs " << fit.peak_bytes / kGiB << " GiB)";
  else
    out << "stage " << fit.fullest_stage << " needs " << fit.peak_bytes / kGiB
        << " GiB per device, over its " << fit.capacity_bytes / kGiB << " GiB by "
        << fit.over_bytes / kGiB << " GiB (" << std::setprecision(2)
        << fit.peak_bytes / fit.capacity_bytes << "x)";
  return out.str();
}

void AddFitVerdicts(nlohmann::json& j, const Plan& plan, const PlanFit& fit) {
  j["capacity_bytes_per_device"] = fit.capacity_bytes;
  j["fits"] = fit.Fits();
  j["over_capacity_bytes"] = fit.over_bytes;
  // Each stage's verdict, when the plan estimates memory (a written plan does not).
  if (fit.peak_bytes <= 0) return;
  for (int q = 0; q < plan.StageCount(); ++q) {
    const double over = std::max(0.0, plan.stages[q].memory_bytes - fit.capacity_bytes);
    j["stages"][q]["fits"] = over <= 0;
    j["stages"][q]["over_capacity_bytes"] = over;
  }
}

void WriteStageTable(std::ostream& out, const Plan& plan, int layers_width, int devices_width,
                     double capacity_bytes) {
  // A written plan carries no memory estimate (simulate predicts it): no verdict to give.
  if (FitOf(plan, capacity_bytes).peak_bytes <= 0) capacity_bytes = 0;
  out << std::left << std::setw(7) << "stage" << std::setw(layers_width) << "layers"
      << std::setw(10) << "replicas" << std::setw(devices_width) << "devices" << std::right
      << std::setw(12) << "compute ms" << std::setw(18) << "communication ms" << std::setw(12)
      << "memory GiB";
  if (capacity_bytes > 0) out << "  fits " << std::fixed << std::setprecision(1)
                              << capacity_bytes / kGiB << " GiB" << std::defaultfloat;
  out << "\n";
  for (int q = 0; q < plan.StageCount(); ++q) {
    const StagePlan& st = plan.stages[q];
    out << std::left << std::setw(7) << q << std::setw(layers_width)
        << (std::to_string(st.first_layer) + ".." + std::to_string(st.last_layer))
        << std::setw(10) << st.replicas << std::setw(devices_width) << FormatIdList(st.devices)
        << std::right << std::fixed << std::setprecision(3) << std::setw(12) << st.compute_ms
        << std::setw(18) << st.communication_ms << std::setw(12) << st.memory_bytes / kGiB;
    if (capacity_bytes > 0) {
      out << "  ";
      if (st.memory_bytes <= capacity_bytes)
        out << "yes";
      else
        out << "no, over by " << std::setprecision(1) << (st.memory_bytes - capacity_bytes) / kGiB;
    }
    out << "\n" << std::defaultfloat;
  }
}

namespace {

// Pure data parallelism on the same cluster, in the same units and at the plan's micro-batch and
// samples per weight update (so that both pay for their updates alike: one model of data
// parallelism whatever the planner); its memory may not fit, which the comparison says rather
// than hides.
Plan DataParallelReference(const Scenario& s, const Plan& plan) {
  PlannerSettings settings = PlannerSettingsFor(s);
  settings.allow_over_capacity = true;
  if (!plan.stages.empty() && plan.microbatch_size > 0) {
    settings.microbatch_size = plan.microbatch_size;
    settings.global_batch_size =
        plan.stages[0].replicas * plan.microbatch_size * std::max(plan.microbatches_per_update, 1);
  }
  return PlanBaseline(BaselineKind::kDataParallel, s.workload, s.cluster, settings);
}

void PrintTable(std::ostream& out, const Scenario& s, const Plan& p, const Plan& dp) {
  const ScheduleKind runs = ScheduleFor(s, p);
  out << s.name << "\n" << p.planner << " plan, schedule " << ScheduleKindName(runs)
      << (runs != p.schedule ? " (planned for " + ScheduleKindName(p.schedule) + ")" : "") << ": "
      << p.StageCount() << " stages on " << p.WorkerCount() << " of " << s.cluster.DeviceCount()
      << " devices, micro-batch " << p.microbatch_size << ", " << p.microbatches_per_update
      << " micro-batches per update" << (p.recompute ? ", recomputation" : "") << "\n\n";
  WriteStageTable(out, p, 11, 14, s.cluster.device.memory_bytes);
  if (p.StageCount() > 0 && FitOf(p, s.cluster.device.memory_bytes).peak_bytes > 0)
    out << "\nmemory: " << DescribeFit(FitOf(p, s.cluster.device.memory_bytes));
  out << std::fixed << std::setprecision(1);
  if (p.predicted_samples_per_s > 0)
    out << "\npredicted " << p.predicted_samples_per_s << " samples/s"
        << (runs != p.schedule ? " under " + ScheduleKindName(p.schedule) +
                                     " (pipetwin simulate predicts " + ScheduleKindName(runs) + ")"
                               : "");
  else
    out << "\nno prediction (a written plan: pipetwin simulate predicts it)";
  out << "; data parallelism on the same cluster: " << dp.predicted_samples_per_s << " samples/s";
  if (dp.details.value("fits", true) == false) out << " (does not fit in device memory)";
  if (p.predicted_samples_per_s > 0 && dp.predicted_samples_per_s > 0) {
    const double speedup = p.predicted_samples_per_s / dp.predicted_samples_per_s;
    out << "; speed-up " << std::setprecision(2) << speedup << "x";
    if (speedup < 1)
      out << " (data parallelism is faster" << (dp.details.value("fits", true) ? "" : " but does not fit")
          << ")";
  }
  out << "\n" << std::defaultfloat;
  if (p.details.contains("caveat")) out << "note: " << p.details["caveat"].get<std::string>() << "\n";
  if (!p.layer_order.empty())
    out << "layers are counted in a reordered topological order (the plan's layer_order)\n";
}

}  // namespace

int RunPlanOnScenario(const po::variables_map& vm) {
  for (const char* option : {"workers", "bandwidth", "activation-compression-ratio",
                             "use-memory-constraint", "straight", "use-fewer-machines", "bench"})
    if (vm.count(option))
      throw InputError(std::string("pipetwin plan: --") + option +
                       " applies to --profile graph.txt (a scenario carries its own cluster)");
  std::vector<std::string> words = vm.count("scenario")
                                       ? vm["scenario"].as<std::vector<std::string>>()
                                       : std::vector<std::string>{};
  if (words.size() > 1)
    throw InputError("pipetwin plan: expected one SCENARIO, got " + std::to_string(words.size()));
  const std::string out = vm.count("output") ? vm["output"].as<std::string>() : "";
  if (!out.empty())
    CheckOutputPath(out, "--output", vm.count("force") > 0,
                    {words.empty() ? std::string() : words[0]});
  Scenario s = words.empty() ? DefaultScenario() : LoadScenarioFile(words[0]);
  if (vm.count("planner")) {
    const std::string planner = vm["planner"].as<std::string>();
    try {
      s.planner = ParsePlannerKind(planner);
    } catch (const InputError&) {
      throw InputError("pipetwin plan: unknown planner '" + planner + "'");
    }
    s.plan.reset();
    s.notes.clear();
  }
  const Plan plan = PlanForScenario(s);
  // Said as simulate and run say it (and put it in their reports' warnings).
  const std::vector<std::string> warnings = PlanWarnings(s, plan, "");
  for (const std::string& w : warnings) std::cerr << "pipetwin plan: warning: " << w << "\n";
  // What simulate and run would refuse about the plan's schedule, refused here as well.
  CheckScheduleForScenario(s, plan, s.training.iterations);
  // A plan that does not fit its devices is not recommended unless asked for.
  const PlanFit fit = FitOf(plan, s.cluster.device.memory_bytes);
  if (!fit.Fits() && !vm.count("allow-over-capacity"))
    throw InputError(s.file, "planner",
                     "expected a plan that fits the devices: the " + plan.planner + " plan's " +
                         DescribeFit(fit) + " (--allow-over-capacity prints it anyway)");
  const Plan dp = DataParallelReference(s, plan);
  if (!out.empty()) WriteTextFileAtomically(out, JsonText(PlanToJson(plan), 2) + "\n");
  if (vm.count("json")) {
    nlohmann::json j = PlanToJson(plan);
    j["scenario"] = s.name;
    j["runs_schedule"] = ScheduleKindName(ScheduleFor(s, plan));
    AddFitVerdicts(j, plan, fit);
    j["warnings"] = warnings;
    j["data_parallel_samples_per_s"] = dp.predicted_samples_per_s;
    j["data_parallel_fits"] = dp.details.value("fits", true);
    j["speedup_over_data_parallel"] =
        dp.predicted_samples_per_s > 0 ? plan.predicted_samples_per_s / dp.predicted_samples_per_s
                                       : 0.0;
    if (plan.details.contains("noam")) j["noam"] = plan.details["noam"];
    // The plan's shape under the names Megatron-LM's users read (docs/output-schema.md):
    // pipeline positions, replicas of the input stage, each worker's tensor-parallel group.
    j["pipeline_depth"] = plan.StageCount() / PlanChunksPerWorker(plan.schedule, s.training);
    j["data_parallel"] = plan.stages.empty() ? 0 : plan.stages[0].replicas;
    j["tensor_parallel"] = s.workload.tensor_parallel;
    j["global_batch_size"] =
        j["data_parallel"].get<int>() * plan.microbatch_size * plan.microbatches_per_update;
    std::cout << JsonText(j, 2) << "\n";
  } else {
    PrintTable(std::cout, s, plan, dp);
  }
  return 0;
}

}  // namespace pipetwin::cli
