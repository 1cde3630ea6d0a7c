// The pipeline schedules pipetwin builds, by name.
#pragma once

#include <string>
#include <vector>

namespace pipetwin {

enum class ScheduleKind {
  kGPipe,          // all forwards, all backwards, flush (GPipe)
  kFlush,          // PipeDream-Flush: 1F1B with a flush (Megatron's non-interleaved schedule)
  kPipeDream,      // asynchronous 1F1B with weight stashing (PipeDream, SOSP'19)
  kTwoBW,          // PipeDream-2BW: double-buffered weights (ICML'21)
  kInterleaved,    // interleaved 1F1B, v model chunks per worker (Megatron-LM, SC'21)
  kZeroBubbleH1,   // ZB-H1: 1F1B with split backward (Qi et al., ICLR 2024)
  kImported,       // read from a torch.distributed.pipelining action CSV
};

// "gpipe", "flush", "pipedream", "2bw", "interleaved", "zb-h1", "imported".
std::string ScheduleKindName(ScheduleKind kind);
// PipeDream and 2BW never flush: one list runs the whole run, and its last iteration drains the
// pipeline. The others (GPipe, Flush, interleaved, ZB-H1, imported) flush at every iteration:
// their list is one iteration's, repeated.
bool IsAsynchronous(ScheduleKind kind);
// The inverse of ScheduleKindName for the buildable kinds; throws InputError naming the choices.
ScheduleKind ParseScheduleKind(const std::string& name);
// The names of the buildable kinds, in the order above (for option help and JSON choices).
const std::vector<std::string>& ScheduleKindNames();

}  // namespace pipetwin
