// The options of `pipetwin calibrate`, defined once for the front end (which prints the help and
// rejects bad words before LibTorch loads) and for pipetwin-exec (which measures). Header-only
// and free of LibTorch, like options/run.h.
//
//   po::variables_map vm = ParseCommandLine("calibrate", CalibrateOptionsDescription(), {}, args);
//   CalibrateOptions o = ReadCalibrateOptions(vm);   // throws InputError on out-of-range values
//   CheckCalibrationOutput(o);                       // throws InputError: the file exists
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include <boost/program_options.hpp>

#include "partition/cli/parse.h"
#include "partition/util/error.h"
#include "partition/util/files.h"
#include "partition/util/spread.h"

namespace pipetwin::cli {

inline const char* CalibrateUsage() {
  return "[--workers N] [--output FILE [--force]] [--json] [--quick] [--target-spread PCT]\n"
         "       [--max-seconds S] [--rounds N]";
}
inline const char* CalibrateDescription() {
  return "Measure this machine and write it as a cluster the simulator takes: the cores this\n"
         "process may use (sched_getaffinity), one core's GEMM speed alone and with every core\n"
         "busy, and a c10d Gloo ping-pong between two worker processes over loopback (4 B to\n"
         "16 MB) fitted as one-way time = latency + per-message overhead + bytes / bandwidth,\n"
         "a Gloo all-reduce between two workers (4 KB to 32 MB, kept as a table), and a ring of\n"
         "one process more than the cores passing a token under SCHED_RR, as `run` puts such\n"
         "workers (the CPU a message between workers of a server with more workers than cores\n"
         "costs, oversubscribed_message_us), and two workers as two 1F1B stages timing an\n"
         "activation sent while its sender computes against one sent while it sleeps\n"
         "(busy_sender_message_us).\n"
         "The probes run in rounds, each the whole set, until the compute rate, the per-message\n"
         "time and the bandwidth are each known within --target-spread (the half-width of\n"
         "their mean's 95% interval over the rounds), or --max-seconds have passed; the\n"
         "cluster's figures are the rounds' means, their relative spreads its \"spread\".\n"
         "The cluster has one server of N workers sharing the cores (shared_cores); the raw\n"
         "probes are kept in its \"calibration\" member for inspection. A round takes a few\n"
         "seconds; --quick runs fewer sizes and repeats in each (docs/calibration.md).";
}

inline po::options_description CalibrateOptionsDescription() {
  po::options_description desc("options");
  desc.add_options()
      ("workers", po::value<int>(), "workers (devices) of the calibrated server (default: cores)")
      ("output", po::value<std::string>(), "cluster file to write (never replaced without --force)")
      ("force", "replace an existing --output file")
      ("json", "print the calibrated cluster as JSON")
      ("quick", "fewer sizes and repeats in each round")
      ("target-spread", po::value<double>()->default_value(2),
       "repeat rounds of the probes until the compute rate, the per-message time and the "
       "bandwidth are each known within this many percent (the half-width of the 95% interval "
       "of their mean over the rounds); 0: exactly --rounds rounds")
      ("max-seconds", po::value<double>()->default_value(30),
       "with --target-spread, stop after S seconds even if a figure has not settled (the "
       "calibration then says so)")
      ("rounds", po::value<int>()->default_value(kLeastRounds),
       "the fewest rounds (the spread is judged from then on)")
      ("device", po::value<std::string>()->default_value("cpu"),
       "cpu|cuda: measure the cores (above), or the GPUs: bf16 GEMMs over transformer shapes, "
       "device and host copies, and messages and all-reduces between two workers over the "
       "transport the run's --workers would use (NCCL, or Gloo staged through host memory when "
       "they share a GPU)")
      ("timeout", po::value<double>()->default_value(30),
       "seconds a probe worker waits for a peer");
  return desc;
}

// What a calibration was asked to do.
struct CalibrateOptions {
  int workers = 0;           // 0: one per core
  std::string output_file;   // empty: none
  bool force = false;
  bool json = false;
  bool quick = false;
  std::string device = "cpu";  // "cpu" or "cuda"
  double timeout_s = 30;
  double target_spread = 0.02;  // relative half-width of the judged figures; 0: no rule
  double max_seconds = 30;
  int rounds = kLeastRounds;
};

// Reads the parsed options. Throws InputError on bad values.
inline CalibrateOptions ReadCalibrateOptions(const po::variables_map& vm) {
  CalibrateOptions o;
  if (vm.count("workers")) o.workers = vm["workers"].as<int>();
  if (vm.count("output")) o.output_file = vm["output"].as<std::string>();
  o.force = vm.count("force") > 0;
  o.json = vm.count("json") > 0;
  o.quick = vm.count("quick") > 0;
  o.device = vm["device"].as<std::string>();
  if (o.device != "cpu" && o.device != "cuda")
    throw InputError("pipetwin calibrate: --device must be cpu or cuda, got " + o.device);
  o.timeout_s = vm["timeout"].as<double>();
  const double target_percent = vm["target-spread"].as<double>();
  if (!(target_percent >= 0 && target_percent <= 100))
    throw InputError("pipetwin calibrate: --target-spread must be within 0..100 (percent), got " +
                     std::to_string(target_percent));
  o.target_spread = target_percent / 100;
  o.max_seconds = vm["max-seconds"].as<double>();
  if (!(o.max_seconds >= 0 && o.max_seconds <= 3600))
    throw InputError("pipetwin calibrate: --max-seconds must be within 0..3600, got " +
                     std::to_string(o.max_seconds));
  o.rounds = vm["rounds"].as<int>();
  if (o.rounds < 1 || o.rounds > 1000)
    throw InputError("pipetwin calibrate: --rounds must be within 1..1000, got " +
                     std::to_string(o.rounds));
  if (vm.count("workers") && o.workers < 1)
    throw InputError("pipetwin calibrate: --workers must be >= 1, got " +
                     std::to_string(o.workers));
  if (vm.count("output") && o.output_file.empty())
    throw InputError("pipetwin calibrate: --output must name a file");
  if (o.force && o.output_file.empty())
    throw InputError("pipetwin calibrate: --force only goes with --output FILE");
  if (!(o.timeout_s > 0)) throw InputError("pipetwin calibrate: --timeout must be > 0 seconds");
  return o;
}

// Refuses, before anything is measured, an --output file that already exists unless --force was
// given (a calibration must never replace what a user wrote by accident), and one whose folder
// cannot be written.
inline void CheckCalibrationOutput(const CalibrateOptions& o) {
  if (o.output_file.empty()) return;
  CheckOutputPath(o.output_file, "--output", o.force, {});
  const size_t slash = o.output_file.find_last_of('/');
  const std::string folder = slash == std::string::npos ? "." : o.output_file.substr(0, slash + 1);
  if (::access(folder.c_str(), W_OK) != 0)
    throw InputError(o.output_file, "", "expected a file in a folder that exists and is writable");
}

}  // namespace pipetwin::cli
