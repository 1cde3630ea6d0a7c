#include "partition/report/text.h"

#include "partition/util/format.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace pipetwin {

namespace {

std::string Bytes(double bytes) { return BinaryBytes(bytes); }

std::string Fixed(double x, int digits) {
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%.*f", digits, x);
  return buffer;
}

}  // namespace

std::string ReportToText(const Report& r) {
  std::ostringstream out;
  out << r.scenario << "\n"
      << r.schedule << ", " << r.pipeline_depth << " stages, " << r.worker_count
      << " workers, micro-batch " << r.microbatch_size << " x " << r.microbatches_per_iteration
      << " per iteration, " << r.iterations << " iterations"
      << (r.recompute.empty() ? ""
          : r.recompute == "early" ? ", recompute early (before the gradient arrives)"
                                   : ", recompute in the backward (after the gradient arrives)")
      << (r.p2p == "blocking" ? ", blocking sends" : "")
      << (r.data_loading.empty() ? ""
          : ", data loading " + r.data_loading + " (" + Fixed(r.load_s_per_microbatch * 1e3, 3) +
                " ms per micro-batch)")
      << " (" << r.source << ", "
      << r.network_model << " network)\n\n";
  out << "throughput   " << Fixed(r.samples_per_s, 2) << " samples/s, iteration "
      << Fixed(r.iteration_s * 1e3, 3) << " ms (" << r.measurement << ")\n";
  if (r.tflops_per_gpu > 0)
    out << "model FLOPs  " << Fixed(r.tflops_per_gpu, 1) << " TFLOP/s per GPU, MFU "
        << Fixed(100 * r.mfu, 1) << "% (Narayanan et al. SC'21 section 5.1, no recomputation "
        << "counted)\n";
  out << "bubble       " << Fixed(100 * r.bubble_fraction, 1)
      << "% of worker time; exposed communication up to "
      << Fixed(r.exposed_communication_s * 1e3, 3) << " ms per worker\n";
  const DeviceReport* fullest = nullptr;
  for (const DeviceReport& d : r.devices)
    if (!fullest || d.peak_memory_bytes > fullest->peak_memory_bytes) fullest = &d;
  if (fullest) {
    // The fit verdict: every device within its capacity, or how far the fullest is over.
    int over = 0;
    for (const DeviceReport& d : r.devices) over += d.over_capacity;
    std::string verdict;
    if (fullest->capacity_bytes > 0)
      verdict = over == 0 ? ", every device fits"
                          : ", OVER CAPACITY by " +
                                Bytes(fullest->peak_memory_bytes - fullest->capacity_bytes) +
                                " (" + Fixed(fullest->peak_memory_bytes / fullest->capacity_bytes,
                                             2) +
                                "x), " + std::to_string(over) + " of " +
                                std::to_string(r.devices.size()) + " devices over";
    out << "memory       peak " << Bytes(fullest->peak_memory_bytes) << " on device "
        << fullest->device << " of " << Bytes(fullest->capacity_bytes) << verdict << " (weights "
        << Bytes(fullest->at_peak.weights) << ", optimizer " << Bytes(fullest->at_peak.optimizer)
        << ", gradients " << Bytes(fullest->at_peak.gradients) << ", activations "
        << Bytes(fullest->at_peak.activations) << ", recompute "
        << Bytes(fullest->at_peak.recompute) << ")\n";
    if (fullest->cuda_allocator)
      out << "             CUDA allocator on device " << fullest->device << ": peak allocated "
          << Bytes(fullest->cuda_allocator->allocated_peak_bytes) << ", peak reserved "
          << Bytes(fullest->cuda_allocator->reserved_peak_bytes) << "\n";
  }
  out << "communication";
  for (const CommunicationLevel& c : r.communication)
    out << (c.level ? ", " : " ") << "level " << c.level << " (" << c.name << ", " << c.link
        << ") " << Bytes(c.Bytes());
  out << "\n\nstage  staleness min/mean/max  weight versions  in-flight activations\n";
  for (const StageSummary& s : r.stages)
    out << std::string(5 - std::min<size_t>(5, std::to_string(s.stage).size()), ' ') << s.stage
        << "  " << Fixed(s.staleness_min, 0) << " / " << Fixed(s.staleness_mean, 2) << " / "
        << Fixed(s.staleness_max, 0) << std::string(12, ' ') << s.max_weight_versions
        << std::string(16, ' ') << s.max_in_flight_activations << "\n";
  out << "\nworker  device  stage    busy ms    idle ms  bubble  exposed comm ms  peak memory\n";
  const size_t shown = std::min<size_t>(r.workers.size(), 64);
  for (size_t i = 0; i < shown; ++i) {
    const WorkerReport& w = r.workers[i];
    double peak = 0;
    for (const DeviceReport& d : r.devices)
      if (d.device == w.device) peak = d.peak_memory_bytes;
    char line[160];
    std::snprintf(line, sizeof line, "%6d  %6d  %5d  %9.3f  %9.3f  %5.1f%%  %15.3f  %s\n",
                  w.worker, w.device, w.stage, w.busy_s * 1e3, w.idle_s * 1e3,
                  100 * w.bubble_fraction, w.exposed_communication_s * 1e3, Bytes(peak).c_str());
    out << line;
  }
  if (shown < r.workers.size())
    out << "... " << r.workers.size() - shown << " more workers (--json lists them all)\n";
  return out.str();
}

}  // namespace pipetwin
