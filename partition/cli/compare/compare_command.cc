// `pipetwin compare SCENARIO`: the same scenario predicted and measured on this machine, as the
// sequence of steps compare_steps.h names; `pipetwin compare --table DIR`: the validation
// matrix's table.
#include <iostream>

#include "partition/cli/commands.h"
#include "partition/cli/compare/compare_steps.h"
#include "partition/util/json_writer.h"

namespace pipetwin::cli {

namespace {

int Compare(const CompareOptions& o) {
  const Scenario scenario = LoadScenarioFile(o.scenario);
  RefuseWhatCannotRunHere(o);
  WorkDirectory work(o.keep_dir);
  const Say say = [&](const std::string& line) {
    if (!o.json) std::cerr << "compare: " << line << "\n";
  };
  // With several runs measured here and no --profile, a profile before each run (compare_steps.h
  // step 2); the first one also chooses the plan when a planner does.
  const bool interleaved = o.profile_file.empty() && o.measured_files.empty() && o.runs > 1;
  std::vector<std::string> profiles = {ProfileStep(o, scenario, work, say, interleaved ? 1 : 0)};
  const std::string calibration = CalibrationStep(o, scenario, work, say);
  const PredictedScenario predicted =
      WritePredictedScenario(o, scenario, profiles.front(), calibration, work);
  const MeasuredRuns measured = RunStep(o, predicted, work, say, [&](int k) {
    if (interleaved && k > 0) profiles.push_back(ProfileStep(o, scenario, work, say, k + 1));
  });
  const std::string profile = MeanProfileStep(profiles, work);
  if (profiles.size() > 1) UseProfile(predicted, profile);
  const Simulated simulated = SimulateStep(o, predicted, work, say);
  const std::optional<Comparison::Band> band = BandStep(o, predicted, profile, work, say);
  const Comparison comparison =
      CompareStep(simulated.report, measured, profile, calibration, band);
  for (const std::string& d : comparison.disturbances) say("warning: " + d);
  WriteTimelines(o, simulated.trace, measured.trace);
  if (o.json) {
    std::cout << JsonText(ComparisonToJson(comparison), 1) << "\n";
    return 0;
  }
  std::cout << ComparisonToText(comparison) << "\nprofile " << profile
            << (o.profile_file.empty() ? "" : " (given)") << "\ncluster " << calibration
            << (o.calibration_file.empty() ? "" : " (given)") << "\n";
  return 0;
}

}  // namespace

int RunCompareCommand(const Args& args) {
  const po::variables_map vm = ParseCompareWords(args);
  if (vm.count("help")) {
    PrintUsage(std::cout, "compare", CompareUsage(), CompareDescription(),
               CompareOptionsDescription());
    return 0;
  }
  try {
    if (vm.count("table")) return WriteValidationTable(vm);
    return Compare(ReadCompareOptions(vm));
  } catch (const StepFailed& failed) {
    return failed.status;
  }
}

}  // namespace pipetwin::cli
