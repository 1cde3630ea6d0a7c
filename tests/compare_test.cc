// partition/compare.h: relative errors figure by figure, staleness matched stage by stage, runs
// that differ refused, and timelines read back from the Chrome traces both back ends write.
#include "partition/report/compare.h"
#include "partition/report/kept_core.h"

#include <gtest/gtest.h>

#include <cmath>

#include "partition/report/text.h"
#include "partition/report/validation_table.h"
#include "partition/util/error.h"
#include "partition/util/json_reader.h"
#include "partition/util/machine.h"
#include "test_support.h"
#include "partition/timeline/chrome_trace.h"

namespace pipetwin {
namespace {

Report TwoWorkerReport(double samples_per_s, double peak0, double bubble1, double mean1) {
  Report r;
  r.scenario = "s";
  r.schedule = "2bw";
  r.pipeline_depth = 2;
  r.worker_count = 2;
  r.samples_per_iteration = 64;
  r.samples_per_s = samples_per_s;
  r.iteration_s = 64 / samples_per_s;
  for (int w = 0; w < 2; ++w) {
    WorkerReport wr;
    wr.worker = wr.device = wr.stage = w;
    wr.bubble_fraction = w == 1 ? bubble1 : 0.1;
    r.workers.push_back(wr);
    DeviceReport d;
    d.device = d.worker = w;
    d.peak_memory_bytes = w == 0 ? peak0 : 1e6;
    r.devices.push_back(d);
    StageSummary s;
    s.stage = w;
    s.staleness_min = 0;
    s.staleness_mean = w == 1 ? mean1 : 0.75;
    s.staleness_max = 1;
    s.max_weight_versions = 2;
    s.updates = 4;
    r.stages.push_back(s);
  }
  r.peak_memory_bytes = std::max(peak0, 1e6);
  return r;
}

// The report's memory line gives the fit verdict: every device within its capacity, or how far
// the fullest is over and how many are (issue 23: a verdict in every report).
TEST(Compare, TheReportTextSaysWhetherEveryDeviceFits) {
  const double gib = 1024.0 * 1024 * 1024;
  Report r = TwoWorkerReport(1000, 2 * gib, 0.2, 0.75);
  for (DeviceReport& d : r.devices) d.capacity_bytes = 4 * gib;
  EXPECT_NE(ReportToText(r).find("memory       peak 2 GiB on device 0 of 4 GiB, every device fits"),
            std::string::npos) << ReportToText(r);
  r.devices[0].peak_memory_bytes = 5 * gib;
  r.devices[0].over_capacity = r.over_capacity = true;
  EXPECT_NE(ReportToText(r).find("peak 5 GiB on device 0 of 4 GiB, OVER CAPACITY by 1 GiB (1.25x), "
                                 "1 of 2 devices over"),
            std::string::npos) << ReportToText(r);
}

TEST(Compare, RelativeErrorsAreAgainstTheMeasurement) {
  const Report predicted = TwoWorkerReport(1100, 2.2e6, 0.25, 0.75);
  const Report measured = TwoWorkerReport(1000, 2e6, 0.2, 0.75);
  const Comparison c = CompareReports(predicted, measured);
  EXPECT_NEAR(c.samples_per_s.relative_error, 0.1, 1e-12);
  EXPECT_NEAR(c.iteration_s.relative_error, 1000.0 / 1100 - 1, 1e-12);
  EXPECT_NEAR(c.peak_memory_bytes.relative_error, 0.1, 1e-12);
  ASSERT_EQ(c.worker_bubble.size(), 2u);
  EXPECT_NEAR(c.worker_bubble[1].absolute_error, 0.05, 1e-12);
  EXPECT_NEAR(c.worker_bubble[1].relative_error, 0.25, 1e-12);
  ASSERT_EQ(c.device_peak_memory.size(), 2u);
  EXPECT_NEAR(c.device_peak_memory[0].relative_error, 0.1, 1e-12);
  EXPECT_EQ(c.device_peak_memory[1].relative_error, 0);
  EXPECT_TRUE(c.staleness_match);

  const nlohmann::json j = ComparisonToJson(c);
  EXPECT_NEAR(j["relative_error"]["samples_per_s"].get<double>(), 0.1, 1e-12);
  EXPECT_EQ(j["predicted"]["samples_per_s"], 1100);
  EXPECT_EQ(j["measured"]["samples_per_s"], 1000);
  EXPECT_EQ(j["relative_error"]["bubble_fraction"].size(), 2u);
  EXPECT_TRUE(j["staleness_match"].get<bool>());
  const std::string text = ComparisonToText(c);
  EXPECT_NE(text.find("+10.0%"), std::string::npos) << text;
}

TEST(Compare, StalenessMustBeIdenticalStageByStage) {
  const Comparison c = CompareReports(TwoWorkerReport(1000, 2e6, 0.2, 0.5),
                                      TwoWorkerReport(1000, 2e6, 0.2, 0.75));
  EXPECT_FALSE(c.staleness_match);
  EXPECT_TRUE(c.staleness[0].match);
  EXPECT_FALSE(c.staleness[1].match);
  EXPECT_NE(ComparisonToText(c).find("NO"), std::string::npos);
}

TEST(Compare, ReportsOfDifferentRunsAreRefused) {
  Report other = TwoWorkerReport(1000, 2e6, 0.2, 0.75);
  other.schedule = "flush";
  try {
    CompareReports(TwoWorkerReport(1000, 2e6, 0.2, 0.75), other);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "compare: the reports describe different runs: schedule 2bw predicted, flush "
              "measured");
  }
  EXPECT_TRUE(std::isinf(RelativeError(1, 0)));
  EXPECT_EQ(RelativeError(0, 0), 0);
}

// A run measured outside pipetwin's executor (torch's runtime, scripts/bench_vs_torch.py
// --report) lists no workers, devices or stages: throughput and iteration time are compared, the
// rest is said to be unmeasured, and the validation table counts it toward neither the memory
// nor the staleness target; a report that lists some of them but not the others is refused.
TEST(Compare, AThroughputOnlyMeasurementComparesThroughputAlone) {
  const Report predicted = TwoWorkerReport(1100, 2.2e6, 0.25, 0.75);
  Report torch = TwoWorkerReport(1000, 0, 0, 0);
  torch.workers.clear();
  torch.devices.clear();
  torch.stages.clear();
  torch.peak_memory_bytes = 0;
  torch.measurement = "torch.distributed.pipelining";
  const Comparison c = CompareReports(predicted, torch);
  EXPECT_TRUE(c.throughput_only);
  EXPECT_NEAR(c.samples_per_s.relative_error, 0.1, 1e-12);
  EXPECT_TRUE(c.worker_bubble.empty() && c.device_peak_memory.empty() && c.staleness.empty());
  const nlohmann::json j = ComparisonToJson(c);
  EXPECT_EQ(j["measured_figures"], "throughput");
  EXPECT_TRUE(j["relative_error"]["peak_memory_bytes"].is_null());
  EXPECT_TRUE(j["staleness_match"].is_null());
  const std::string text = ComparisonToText(c);
  EXPECT_NE(text.find("memory, bubbles and staleness are not compared"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("peak_memory_bytes"), std::string::npos) << text;

  const std::vector<ValidationRow> rows = {
      {"executor", ComparisonToJson(CompareReports(predicted, TwoWorkerReport(1000, 2e6, 0.2,
                                                                              0.75)))},
      {"torch", j}};
  const std::string md = ValidationMarkdown(rows, "m", "c");
  EXPECT_NE(md.find("| not measured | not measured |"), std::string::npos) << md;
  EXPECT_NE(md.find("| staleness identical | 1 of 1 |"), std::string::npos) << md;
  // Memory: the executor's row alone (10% over), not the torch row's missing figure.
  EXPECT_NE(md.find("within 5% | worst 10.0% | NOT met"), std::string::npos) << md;

  Report partial = torch;
  partial.stages = predicted.stages;
  EXPECT_THROW(CompareReports(predicted, partial), InputError);
}

TEST(Compare, TimelineRoundTripsThroughTheChromeTrace) {
  Timeline t;
  TimelineProcess p0, p1;
  p1.device = p1.worker = p1.stage = 1;
  MemorySample m;
  m.time_s = 0.5;
  m.bytes.weights = 123;
  m.bytes.activations = 7;
  p0.memory.push_back(m);
  t.processes = {p0, p1};
  Op f;
  f.kind = OpKind::kForward;
  f.stage = 0;
  f.microbatch = 3;
  f.weight_version = 2;
  t.events.push_back(OpEvent(f, 0, 0, 0.001, 0.002));
  Op send;
  send.kind = OpKind::kSendActivation;
  send.stage = 0;
  send.microbatch = 3;
  send.peer_worker = 1;
  t.events.push_back(OpEvent(send, 0, 0, 0.002, 0.0025, 4096));
  Op b = f;
  b.kind = OpKind::kBackward;
  b.stage = 1;
  t.events.push_back(OpEvent(b, 1, 1, 0.003, 0.005));
  t.events.push_back(AllReduceEvent(1, 1, 1, 0, 1e6, 0.005, 0.006));

  const Timeline back = TimelineFromChromeTrace(ChromeTrace(t), "t.json");
  ASSERT_EQ(back.processes.size(), 2u);
  EXPECT_EQ(back.processes[1].stage, 1);
  ASSERT_EQ(back.processes[0].memory.size(), 1u);
  EXPECT_EQ(back.processes[0].memory[0].bytes.weights, 123);
  ASSERT_EQ(back.events.size(), t.events.size());
  for (size_t i = 0; i < t.events.size(); ++i) {
    EXPECT_EQ(back.events[i].name, t.events[i].name) << i;
    EXPECT_EQ(back.events[i].lane, t.events[i].lane) << i;
    EXPECT_EQ(back.events[i].worker, t.events[i].worker) << i;
    EXPECT_NEAR(back.events[i].start_s, t.events[i].start_s, 1e-9) << i;
    EXPECT_NEAR(back.events[i].end_s, t.events[i].end_s, 1e-9) << i;
  }
  EXPECT_EQ(back.events[0].op.kind, OpKind::kForward);
  EXPECT_EQ(back.events[0].op.microbatch, 3);
  EXPECT_EQ(back.events[0].op.weight_version, 2);
  EXPECT_EQ(back.events[2].op.kind, OpKind::kBackward);
  // Written again, the trace is the same.
  EXPECT_EQ(ChromeTrace(back)["traceEvents"], ChromeTrace(t)["traceEvents"]);
}

TEST(Compare, ATraceInAnotherLayoutIsAnInputError) {
  const auto error = [](const char* text) {
    try {
      TimelineFromChromeTrace(nlohmann::json::parse(text), "t.json");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error("[]"), "t.json: traceEvents: expected an array of trace events");
  EXPECT_EQ(error(R"({"traceEvents": [{"ph": "M", "name": "process_name", "pid": 0,
                                       "args": {"name": "rank 0"}}]})"),
            "t.json: traceEvents: expected process names \"device D: worker W, stage S\", got "
            "\"rank 0\"");
}

// A GPU worker's CUDA caching allocator statistics (the executor on GPUs) travel with the
// report: its JSON reads back with them, a simulated report has none, and the text names the
// fullest device's peaks beside its tensor bytes.
TEST(Report, CudaAllocatorStatisticsSurviveJsonAndShowInText) {
  Report r = TwoWorkerReport(1000, 2e9, 0.2, 0.75);
  r.devices[0].cuda_allocator = AllocatorView{1.5e9, 2.25e9, 3e9, 3.5e9};
  const Report back = ReportFromJson(ReportToJson(r), "report.json");
  ASSERT_TRUE(back.devices[0].cuda_allocator.has_value());
  EXPECT_EQ(back.devices[0].cuda_allocator->allocated_bytes, 1.5e9);
  EXPECT_EQ(back.devices[0].cuda_allocator->allocated_peak_bytes, 2.25e9);
  EXPECT_EQ(back.devices[0].cuda_allocator->reserved_bytes, 3e9);
  EXPECT_EQ(back.devices[0].cuda_allocator->reserved_peak_bytes, 3.5e9);
  EXPECT_FALSE(back.devices[1].cuda_allocator.has_value());
  EXPECT_FALSE(ReportToJson(TwoWorkerReport(1000, 2e9, 0.2, 0.75))["devices"][0].contains(
      "cuda_allocator"));
  const std::string text = ReportToText(back);
  EXPECT_NE(text.find("CUDA allocator on device 0: peak allocated"), std::string::npos) << text;
  // A malformed entry is refused with its JSON path.
  nlohmann::json doc = ReportToJson(r);
  doc["devices"][0]["cuda_allocator"]["reserved_peak_bytes"] = -1;
  try {
    ReportFromJson(doc, "report.json");
    ADD_FAILURE() << "a negative byte count was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("cuda_allocator.reserved_peak_bytes"), std::string::npos)
        << e.what();
  }
}

// The validation table shows the allocator's peaks (the largest over the devices) when a row was
// measured on a GPU, and keeps its CPU form when none was.
TEST(ValidationTable, GpuRowsShowTheAllocatorPeaks) {
  const Report predicted = TwoWorkerReport(1000, 2e9, 0.2, 0.75);
  Report on_gpu = TwoWorkerReport(900, 2e9, 0.2, 0.75);
  on_gpu.devices[0].cuda_allocator = AllocatorView{0, 2.5e9, 0, 3e9};
  on_gpu.devices[1].cuda_allocator = AllocatorView{0, 4e9, 0, 4.5e9};
  const Report on_cpu = TwoWorkerReport(900, 2e9, 0.2, 0.75);
  const std::vector<ValidationRow> cpu = {
      {"cpu", ComparisonToJson(CompareReports(predicted, on_cpu))}};
  std::vector<ValidationRow> both = cpu;
  both.push_back({"gpu", ComparisonToJson(CompareReports(predicted, on_gpu))});

  const std::string cpu_md = ValidationMarkdown(cpu, "m", "c");
  EXPECT_EQ(cpu_md.find("allocator"), std::string::npos) << cpu_md;
  const std::string md = ValidationMarkdown(both, "m", "c");
  EXPECT_NE(md.find("| allocator peak allocated MB | allocator peak reserved MB |"),
            std::string::npos) << md;
  EXPECT_NE(md.find("| 4000.00 | 4500.00 |"), std::string::npos) << md;  // device 1's, in MB
  const std::string csv = ValidationCsv(both);
  EXPECT_NE(csv.find(",true,,,,,,,\n"), std::string::npos) << csv;  // the CPU row: empty, no band
  EXPECT_NE(csv.find(",true,4000000000,4500000000,,,,,\n"), std::string::npos) << csv;
}

TEST(Compare, TheProfilesBandIsShownAndAMeasurementOutsideItFlagged) {
  const Report predicted = TwoWorkerReport(1000, 2e6, 0.2, 0.75);
  Comparison inside = CompareReports(predicted, TwoWorkerReport(960, 2e6, 0.2, 0.75));
  inside.band = Comparison::Band{950, 1040};
  Comparison outside = CompareReports(predicted, TwoWorkerReport(900, 2e6, 0.2, 0.75));
  outside.band = Comparison::Band{950, 1040};
  const nlohmann::json j = ComparisonToJson(inside);
  EXPECT_EQ(j["predicted_band"]["low_samples_per_s"], 950);
  EXPECT_EQ(j["predicted_band"]["measured_inside"], true);
  EXPECT_EQ(ComparisonToJson(outside)["predicted_band"]["measured_inside"], false);
  EXPECT_TRUE(ComparisonToJson(CompareReports(predicted, predicted))["predicted_band"].is_null());
  EXPECT_NE(ComparisonToText(inside).find("950-1040"), std::string::npos);
  EXPECT_NE(ComparisonToText(outside).find("OUTSIDE"), std::string::npos);

  const std::vector<ValidationRow> rows = {{"a", j}, {"b", ComparisonToJson(outside)}};
  const std::string md = ValidationMarkdown(rows, "m", "c");
  EXPECT_NE(md.find("| 950-1040 | 960 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 950-1040 (measured OUTSIDE) | 900 |"), std::string::npos) << md;
  EXPECT_NE(md.find("band (the profile's 95% spread): 1 of 2 rows"), std::string::npos) << md;
  const std::string csv = ValidationCsv(rows);
  EXPECT_NE(csv.find(",950.00,1040.00,true,,\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",950.00,1040.00,false,,\n"), std::string::npos) << csv;
}

TEST(ValidationTable, RepeatedMatricesGiveEachRowsSpreadAndTheTargets) {
  const Report measured = TwoWorkerReport(1000, 2e6, 0.2, 0.75);
  const auto row = [&](const std::string& config, double predicted) {
    return ValidationRow{config, ComparisonToJson(CompareReports(
                                     TwoWorkerReport(predicted, 2e6, 0.2, 0.75), measured))};
  };
  // Row "steady": predictions 1000, 1010, 1020 (spread 20 / 1010 = 1.98%); row "moving": 950,
  // 1000, 1060 (110 / 1003.3 = 10.96%, and an error of +6%).
  const std::vector<std::vector<ValidationRow>> repetitions = {
      {row("steady", 1000), row("moving", 950)},
      {row("steady", 1010), row("moving", 1000)},
      {row("steady", 1020), row("moving", 1060)}};
  const std::string md = ValidationRepeatMarkdown(repetitions, "m", "c");
  EXPECT_NE(md.find("| steady | 2bw | 1000, 1010, 1020 | 2.0% | 1000, 1000, 1000 | 0.0% |"),
            std::string::npos) << md;
  EXPECT_NE(md.find("| 11.0% (over 3%) |"), std::string::npos) << md;
  EXPECT_NE(md.find("worst 11.0% (1 rows over) | NOT met"), std::string::npos) << md;
  // Errors 0, 1, 2, -5, 0, 6 %: MAPE 14 / 6 = 2.3%, worst 6%.
  EXPECT_NE(md.find("| 2.3% | met |"), std::string::npos) << md;
  EXPECT_NE(md.find("| worst 6.0% | met |"), std::string::npos) << md;
  EXPECT_NE(md.find("3 repetitions from scratch"), std::string::npos) << md;
  const std::string csv = ValidationRepeatCsv(repetitions);
  EXPECT_NE(csv.find("steady,2bw,3,0.0198,0.0000,0.0100,0.0200,0,\n"), std::string::npos) << csv;
  EXPECT_EQ(md.find("the machine's own speed"), std::string::npos) << md;  // none was read
}

// With the machine's speed read in the runs, each row shows it beside the prediction's spread,
// and the rows over the target while the machine held its speed are counted: those are the
// model's own. The single matrix shows the speed while profiling against the run's.
TEST(ValidationTable, TheMachinesSpeedShowsBesideThePredictionsSpread) {
  const auto row = [&](const std::string& config, double predicted, double profile_gflops,
                       double run_gflops) {
    MachineLoad load;
    load.cpus = 2;
    load.gflops_before = load.gflops_after = run_gflops;
    Report measured = TwoWorkerReport(1000, 2e6, 0.2, 0.75);
    measured.details["machine_load"] = load.ToJson();
    Comparison c = CompareReports(TwoWorkerReport(predicted, 2e6, 0.2, 0.75), measured);
    AddProfileSpeed(c, profile_gflops);
    return ValidationRow{config, ComparisonToJson(c)};
  };
  // "machine": predictions and the machine's speed both moved 11%; "model": the predictions
  // moved 11% while the machine held within 1%.
  const std::vector<std::vector<ValidationRow>> repetitions = {
      {row("machine", 950, 95, 95), row("model", 950, 100, 100)},
      {row("machine", 1000, 100, 100), row("model", 1000, 100, 100)},
      {row("machine", 1060, 106, 106), row("model", 1060, 100, 101)}};
  const std::string md = ValidationRepeatMarkdown(repetitions, "m", "c");
  EXPECT_NE(md.find("| 11.0% (over 3%) | 1000, 1000, 1000 | 0.0% | 95, 100, 106 (11.0%) |"),
            std::string::npos) << md;
  EXPECT_NE(md.find("| 100, 100, 101 (1.0%) |"), std::string::npos) << md;
  EXPECT_NE(md.find("moved up to 11.0% over a row's repetitions; rows over the prediction spread "
                    "target while it held within 3%: 1 of 2"),
            std::string::npos) << md;
  const std::string csv = ValidationRepeatCsv(repetitions);
  EXPECT_NE(csv.find("machine,2bw,3,0.1096,0.0000,0.0367,0.0600,0,0.1096\n"), std::string::npos)
      << csv;

  const std::vector<ValidationRow> single = {row("slowed", 1000, 100, 88),
                                             row("steady", 1000, 100, 98)};
  const std::string one = ValidationMarkdown(single, "m", "c");
  EXPECT_NE(one.find("1 of 2 rows moved more than 5% between the two"), std::string::npos) << one;
  EXPECT_NE(one.find("| slowed | 100.0 | 88.0 | -12.0% |"), std::string::npos) << one;
  EXPECT_NE(ValidationCsv(single).find(",100.00,88.00\n"), std::string::npos);
}

// Compute by op kind: each worker's, per iteration run, predicted against measured; a report
// written before the split (no busy_by_op_s) compares without it.
TEST(Compare, ComputeIsComparedOpKindByOpKind) {
  Report predicted = TwoWorkerReport(1000, 2e6, 0.2, 0.75);
  Report measured = TwoWorkerReport(1000, 2e6, 0.2, 0.75);
  predicted.iterations = measured.iterations = 4;
  predicted.workers[1].busy_by_op_s = {{"forward", 0.2}, {"backward", 0.4}, {"update", 0.1}};
  measured.workers[1].busy_by_op_s = {{"forward", 0.2}, {"backward", 0.5}, {"update", 0.3}};
  predicted.workers[0].busy_by_op_s = {{"forward", 0.2}};
  measured.workers[0].busy_by_op_s = {{"forward", 0.1}, {"recompute", 0.04}};

  const Comparison c = CompareReports(predicted, measured);
  // Worker 0: forward, then recompute (OpKind order); worker 1: forward, backward, update.
  ASSERT_EQ(c.worker_busy_by_op.size(), 5u);
  EXPECT_EQ(c.worker_busy_by_op[1].op, "recompute");
  EXPECT_EQ(c.worker_busy_by_op[1].figure.predicted, 0);
  EXPECT_NEAR(c.worker_busy_by_op[1].figure.measured, 0.01, 1e-12);
  const Comparison::OpBusy& update = c.worker_busy_by_op[4];
  EXPECT_EQ(update.worker, 1);
  EXPECT_EQ(update.op, "update");
  EXPECT_NEAR(update.figure.predicted, 0.025, 1e-12);  // 0.1 s over 4 iterations
  EXPECT_NEAR(update.figure.measured, 0.075, 1e-12);
  EXPECT_NEAR(update.figure.relative_error, -2.0 / 3, 1e-12);

  const nlohmann::json j = ComparisonToJson(c);
  ASSERT_EQ(j["busy_by_op"].size(), 5u);
  EXPECT_EQ(j["busy_by_op"][3]["op"], "backward");
  EXPECT_EQ(j["busy_by_op"][3]["worker"], 1);
  EXPECT_NEAR(j["busy_by_op"][3]["relative_error"].get<double>(), -0.2, 1e-12);
  const std::string text = ComparisonToText(c);
  EXPECT_NE(text.find("worker 1 update (ms/iter)"), std::string::npos) << text;
  EXPECT_NE(text.find("75.000"), std::string::npos) << text;
  // Exposed communication beside it, per iteration too.
  ASSERT_EQ(c.worker_exposed_communication.size(), 2u);
  EXPECT_EQ(j["exposed_communication"].size(), 2u);
  EXPECT_EQ(j["exposed_communication"][1]["worker"], 1);
  EXPECT_NE(text.find("worker 1 exposed comm (ms/iter)"), std::string::npos) << text;

  measured.workers[1].busy_by_op_s.clear();
  measured.workers[0].busy_by_op_s.clear();
  EXPECT_TRUE(CompareReports(predicted, measured).worker_busy_by_op.empty());
}

// Where both reports split the iterations the throughput counts (steady_busy_by_op_s, per
// iteration), compute is compared over them: a run whose first iteration's update took 0.2 s of
// its 0.3 s over 4 iterations costs 1/30 s an update after it, not 0.075. Where one report
// lacks the split, every iteration run, as before.
TEST(Compare, ComputeIsComparedOverTheIterationsTheThroughputCounts) {
  Report predicted = TwoWorkerReport(1000, 2e6, 0.2, 0.75);
  Report measured = TwoWorkerReport(1000, 2e6, 0.2, 0.75);
  predicted.iterations = measured.iterations = 4;
  predicted.workers[1].busy_by_op_s = {{"update", 0.1}};
  measured.workers[1].busy_by_op_s = {{"update", 0.3}};
  predicted.workers[1].steady_busy_by_op_s = {{"update", 0.025}};
  measured.workers[1].steady_busy_by_op_s = {{"update", 0.1 / 3}};
  Comparison c = CompareReports(predicted, measured);
  ASSERT_EQ(c.worker_busy_by_op.size(), 1u);
  EXPECT_NEAR(c.worker_busy_by_op[0].figure.predicted, 0.025, 1e-12);
  EXPECT_NEAR(c.worker_busy_by_op[0].figure.measured, 0.1 / 3, 1e-12);
  predicted.workers[1].steady_busy_by_op_s.clear();
  c = CompareReports(predicted, measured);
  ASSERT_EQ(c.worker_busy_by_op.size(), 1u);
  EXPECT_NEAR(c.worker_busy_by_op[0].figure.measured, 0.075, 1e-12);
  // It survives the report's JSON.
  const Report back = ReportFromJson(ReportToJson(measured), "report.json");
  EXPECT_EQ(back.workers[1].steady_busy_by_op_s, measured.workers[1].steady_busy_by_op_s);
  EXPECT_TRUE(back.workers[0].steady_busy_by_op_s.empty());
}

TEST(Report, ComputeByOpKindSurvivesJsonAndOnlyOpKindsAreAccepted) {
  Report r = TwoWorkerReport(1000, 2e6, 0.2, 0.75);
  r.workers[1].busy_by_op_s = {{"forward", 0.25}, {"update", 0.5}};
  nlohmann::json doc = ReportToJson(r);
  EXPECT_FALSE(doc["workers"][0].contains("busy_by_op_s"));
  const Report back = ReportFromJson(doc, "report.json");
  EXPECT_EQ(back.workers[1].busy_by_op_s, r.workers[1].busy_by_op_s);
  EXPECT_TRUE(back.workers[0].busy_by_op_s.empty());

  const auto refused = [&](const nlohmann::json& value, const std::string& expected) {
    nlohmann::json bad = doc;
    bad["workers"][1]["busy_by_op_s"] = value;
    try {
      ReportFromJson(bad, "report.json");
      ADD_FAILURE() << value.dump() << " was accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
    }
  };
  refused({{"fwd", 0.1}}, "workers[1].busy_by_op_s.fwd");
  refused({{"update", -0.1}}, "workers[1].busy_by_op_s.update");
  refused(nlohmann::json::array({0.1}), "workers[1].busy_by_op_s");
}

// Which core each compute op ran on (kept_core.h), computed by hand: two cores, ops out of
// order; a use on an unknown core is left out. Core 0: w0 (1 s), w1 (1 s, w0 was there), w0
// (3 s, w1 was); core 1: w1 (1 s), w0 (2 s, w1 was), w0 (1 s, kept). w0 kept 1 of 7 s, w1 0 of
// 2 s; worker 2's only use has no core.
TEST(KeptCore, AWorkersShareIsItsTimeOnTheCoreItsOwnOpLeft) {
  const std::map<int, double> shares =
      KeptCoreShares({{0, 4.0, 2, 1}, {1, 1.0, 1, 0}, {0, 0.0, 1, 0}, {2, 0.5, 1, -1},
                      {1, 0.1, 1, 1}, {0, 6.5, 1, 1}, {0, 2.0, 3, 0}});
  ASSERT_EQ(shares.size(), 2u);
  EXPECT_NEAR(shares.at(0), 1.0 / 7, 1e-12);
  EXPECT_EQ(shares.at(1), 0);
  // Every op on one worker's own core: kept, its first excepted.
  EXPECT_NEAR(KeptCoreShares({{0, 0, 1, 3}, {0, 1, 1, 3}, {0, 2, 2, 3}}).at(0), 0.75, 1e-12);
}

// The share survives the report's JSON, is compared where both reports know it, and a value
// outside [0, 1] is refused with its path.
TEST(KeptCore, TheShareIsComparedWhereBothReportsKnowIt) {
  Report predicted = TwoWorkerReport(1000, 2e6, 0.2, 0.75);
  Report measured = predicted;
  predicted.workers[1].kept_core_share = 0.8;
  measured.workers[1].kept_core_share = 0.5;
  measured.workers[0].kept_core_share = 0.9;  // unknown in the prediction: not compared
  const Report back = ReportFromJson(ReportToJson(measured), "report.json");
  EXPECT_EQ(back.workers[0].kept_core_share, 0.9);
  EXPECT_EQ(back.workers[1].kept_core_share, 0.5);
  EXPECT_FALSE(ReportToJson(predicted)["workers"][0].contains("kept_core_share"));
  EXPECT_EQ(ReportFromJson(ReportToJson(predicted), "report.json").workers[0].kept_core_share, -1);

  const Comparison c = CompareReports(predicted, measured);
  ASSERT_EQ(c.worker_kept_core.size(), 1u);
  EXPECT_EQ(c.worker_kept_core[0].worker, 1);
  EXPECT_NEAR(c.worker_kept_core[0].figure.absolute_error, 0.3, 1e-12);
  const nlohmann::json j = ComparisonToJson(c);
  ASSERT_EQ(j["kept_core"].size(), 1u);
  EXPECT_EQ(j["kept_core"][0]["worker"], 1);
  EXPECT_EQ(j["kept_core"][0]["measured"], 0.5);
  const std::string text = ComparisonToText(c);
  EXPECT_NE(text.find("worker 1 kept its core"), std::string::npos) << text;
  EXPECT_NE(text.find("+30.0 pt"), std::string::npos) << text;

  nlohmann::json bad = ReportToJson(measured);
  bad["workers"][1]["kept_core_share"] = 1.5;
  try {
    ReportFromJson(bad, "report.json");
    ADD_FAILURE() << "a share of 1.5 was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("workers[1].kept_core_share"), std::string::npos)
        << e.what();
  }
}

// The matrix's tables add each row's compute by op kind, measured over predicted, over every
// worker: a prediction whose forwards are right and whose optimizer steps are not shows it.
TEST(ValidationTable, RowsShowComputeByOpKindMeasuredOverPredicted) {
  const auto with_ops = [](double samples_per_s, double forward, double update,
                           double exposed) {
    Report r = TwoWorkerReport(samples_per_s, 2e6, 0.2, 0.75);
    for (WorkerReport& w : r.workers) {
      w.busy_by_op_s = {{"forward", forward}, {"update", update}};
      w.exposed_communication_s = exposed;
    }
    return r;
  };
  // Forward 2 x 0.3 s measured against 2 x 0.3 s predicted: 1.00; update 2 x 0.2 against
  // 2 x 0.1: 2.00, and 2 x 0.15 against 2 x 0.1: 1.50; exposed communication 2 x 0.05 against
  // 2 x 0.01: 5.00, then 2 x 0.01: 1.00.
  const Report predicted = with_ops(1000, 0.3, 0.1, 0.01);
  const std::vector<ValidationRow> first = {
      {"a", ComparisonToJson(CompareReports(predicted, with_ops(900, 0.3, 0.2, 0.05)))}};
  const std::vector<ValidationRow> second = {
      {"a", ComparisonToJson(CompareReports(predicted, with_ops(950, 0.3, 0.15, 0.01)))}};
  const std::string md = ValidationMarkdown(first, "m", "c");
  EXPECT_NE(md.find("| config | forward | update | exposed communication |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| a | 1.00 | 2.00 | 5.00 |"), std::string::npos) << md;
  const std::string repeated = ValidationRepeatMarkdown({first, second}, "m", "c");
  EXPECT_NE(repeated.find("| a | 1.00, 1.00 | 2.00, 1.50 | 5.00, 1.00 |"), std::string::npos)
      << repeated;
  // Where both reports know which core each op ran on, the workers' kept_core_share weighted
  // by their busy time: predicted (0.2 x 1 + 0.8 x 3) / 4 = 0.65, measured (0.5 x 1 + 1 x 3) /
  // 4 = 0.875.
  const auto kept = [&](double samples_per_s, double share0, double share1) {
    Report r = with_ops(samples_per_s, 0.3, 0.1, 0.01);
    r.workers[0].busy_s = 1;
    r.workers[1].busy_s = 3;
    r.workers[0].kept_core_share = share0;
    r.workers[1].kept_core_share = share1;
    return r;
  };
  const std::string with_kept = ValidationMarkdown(
      {{"k", ComparisonToJson(CompareReports(kept(1000, 0.2, 0.8), kept(900, 0.5, 1)))}}, "m",
      "c");
  EXPECT_NE(with_kept.find("| exposed communication | kept its core |"), std::string::npos)
      << with_kept;
  EXPECT_NE(with_kept.find("| 0.65 / 0.88 |"), std::string::npos) << with_kept;
  EXPECT_EQ(md.find("kept its core"), std::string::npos) << md;  // not known there
  // Where both reports split the iterations the throughput counts, their compute by op kind:
  // a measured first iteration that doubled the updates over the run leaves them at 1.00.
  const auto steady = [&](double samples_per_s, double update, double steady_update) {
    Report r = with_ops(samples_per_s, 0.3, update, 0.01);
    for (WorkerReport& w : r.workers)
      w.steady_busy_by_op_s = {{"forward", 0.1}, {"update", steady_update}};
    return r;
  };
  const std::string counted = ValidationMarkdown(
      {{"s", ComparisonToJson(CompareReports(steady(1000, 0.1, 0.025), steady(900, 0.2, 0.025)))}},
      "m", "c");
  EXPECT_NE(counted.find("| s | 1.00 | 1.00 | 1.00 |"), std::string::npos) << counted;
  // Without the figures, no such table.
  const std::vector<ValidationRow> plain = {{"b", ComparisonToJson(CompareReports(
      TwoWorkerReport(1000, 2e6, 0.2, 0.75), TwoWorkerReport(900, 2e6, 0.2, 0.75)))}};
  EXPECT_EQ(ValidationMarkdown(plain, "m", "c").find("by op kind"), std::string::npos);
}

}  // namespace
}  // namespace pipetwin
