// `pipetwin compare`'s steps, each a function the command runs in turn (compare_command.cc):
//   1. refuse what the executor cannot run or this machine cannot hold, before anything starts;
//   2. profile the workload here (pipetwin-exec profile --concurrent workers: the layers timed
//      while as many processes compute on this machine's cores as the pipeline has workers, by
//      their thread's CPU time when they outnumber the cores, in rounds until the step is known
//      within --profile-target-spread) unless --profile gives one; with several runs, once
//      before each run, and the prediction takes the mean of these profiles (MeanOfProfiles):
//      a shared machine's speed drifts over minutes, and a profile taken at one time and runs
//      taken at another see two different machines;
//   3. calibrate the machine (pipetwin-exec calibrate) unless --calibration gives a cluster;
//   4. write the predicted scenario: the user's, with the profiled workload on the calibrated
//      machine, and the plan both back ends run (a planner's choice depends on the workload's
//      times, so it is made once, on the profiled workload);
//   5. simulate it (pipetwin-sim);
//   6. run it for real, N times, or take the measured reports given (--measured);
//   7. compare the reports of the median run (report/compare.h), and draw both timelines.
// Nothing is fitted to the measured run: the prediction uses only the profile and calibration.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "partition/cli/compare/work_directory.h"
#include "partition/cli/options/compare.h"
#include "partition/report/compare.h"
#include "workloads/scenario/scenario.h"

namespace pipetwin::cli {

// A back end failed; it has said why on standard error. Ends the comparison with its status.
struct StepFailed {
  int status;
};

// Progress lines on standard error (silent under --json).
using Say = std::function<void(const std::string&)>;

void RefuseWhatCannotRunHere(const CompareOptions& o);
// The workload file of the prediction: --profile's, or one measured now (number k of several:
// WORK/profile-k.json; k = 0: WORK/profile.json).
std::string ProfileStep(const CompareOptions& o, const Scenario& scenario, WorkDirectory& work,
                        const Say& say, int k = 0);
// Several profiles' mean (MeanOfProfiles) as WORK/profile.json; the one profile when alone.
std::string MeanProfileStep(const std::vector<std::string>& profiles, WorkDirectory& work);
// The cluster file of the prediction: --calibration's, or one measured now.
std::string CalibrationStep(const CompareOptions& o, const Scenario& scenario,
                            WorkDirectory& work, const Say& say);

// What both back ends are given: the predicted scenario's file and the plan's options.
struct PredictedScenario {
  std::string file;
  std::vector<std::string> plan_args;  // {"--plan", FILE} when a planner chose the plan
};
PredictedScenario WritePredictedScenario(const CompareOptions& o, const Scenario& scenario,
                                         const std::string& profile,
                                         const std::string& calibration, WorkDirectory& work);
// The predicted scenario with another workload file, its plan kept (the runs ran that plan).
void UseProfile(const PredictedScenario& predicted, const std::string& profile);

// The simulator's JSON report, and its trace file when timelines are asked for.
struct Simulated {
  std::string report;
  std::string trace;
};
Simulated SimulateStep(const CompareOptions& o, const PredictedScenario& predicted,
                       WorkDirectory& work, const Say& say);

// The prediction's band: the scenario simulated again with the profile and the calibrated
// cluster at the slow and at the fast end of their spreads (Workload::AtSpreadEdge,
// Cluster::AtSpreadEdge), the same plan; none when neither has a spread (files made before
// rounds, or by hand).
std::optional<Comparison::Band> BandStep(const CompareOptions& o,
                                         const PredictedScenario& predicted,
                                         const std::string& profile, WorkDirectory& work,
                                         const Say& say);

// The measured runs, and the one of median throughput.
struct MeasuredRuns {
  std::string report;   // the median run's JSON report
  std::string trace;    // its trace file, when timelines are asked for
  std::vector<double> samples_per_s;  // every run's, in the order they ran
};
// `before_run(k)` is called before run k (0-based) is started.
MeasuredRuns RunStep(const CompareOptions& o, const PredictedScenario& predicted,
                     WorkDirectory& work, const Say& say,
                     const std::function<void(int)>& before_run = nullptr);

// The comparison of the two reports, with where the profile and the calibration came from.
Comparison CompareStep(const std::string& predicted_report, const MeasuredRuns& measured,
                       const std::string& profile, const std::string& calibration,
                       const std::optional<Comparison::Band>& band);
// Both timelines in one trace (--trace) and one SVG (--svg).
void WriteTimelines(const CompareOptions& o, const std::string& predicted_trace,
                    const std::string& measured_trace);

// `pipetwin compare --table DIR`.
int WriteValidationTable(const po::variables_map& vm);

}  // namespace pipetwin::cli
