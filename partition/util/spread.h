// How sure a repeated measurement is: the mean of independent rounds and the half-width of its
// 95% confidence interval, the one rule `pipetwin profile` uses to say how far its times may
// move on a second run and when to stop timing, and `compare` to average several profiles.
//
//   RoundEstimate e = EstimateFromRounds({14.1, 14.6, 13.9, 14.4});
//   e.mean;                 // 14.25
//   e.half_width;           // t(0.975, n-1) x s / sqrt(n): 0.49
//   e.RelativeHalfWidth();  // 0.035: "14.25 +- 3.5%"
//
// The rounds are taken as independent samples of the machine's speed; consecutive rounds on a
// machine whose speed drifts over seconds are not, so the interval is a lower bound on how far a
// second measurement may land, which is why the profiler also reports the rounds' range.
#pragma once

#include <vector>

namespace pipetwin {

// Student's t quantile at 0.975 for `dof` degrees of freedom (dof >= 1); the normal 1.96 beyond
// the table (values: any statistics table, e.g. NIST/SEMATECH e-Handbook, section 1.3.6.7.2).
double StudentT975(int dof);

struct RoundEstimate {
  int rounds = 0;
  double mean = 0;
  double half_width = 0;     // of the 95% interval of the mean; 0 with fewer than 2 rounds
  double lowest = 0, highest = 0;  // the extreme round means
  double RelativeHalfWidth() const { return mean > 0 ? half_width / mean : 0; }
};
RoundEstimate EstimateFromRounds(const std::vector<double>& round_means);

// At least this many rounds before a spread decides when to stop: two rounds give an interval,
// but with a t quantile of 12.7 one lucky pair would settle it.
constexpr int kLeastRounds = 4;

// A round further than this from the rounds' median is named as disturbed: the machine was busy
// with something else then (a spread of a few percent is a shared machine's normal).
constexpr double kRoundFarOff = 0.15;

// The rounds further than kRoundFarOff from the median of `round_means` (the lower middle one
// for an even count): (index, relative deviation from the median), in round order.
struct FarRound {
  int round = 0;
  double deviation = 0;  // round / median - 1
  double median = 0;
};
std::vector<FarRound> RoundsFarOff(const std::vector<double>& round_means);

// The mean of `v`, every value counted (0 for none). A profiled op's figure: a pipeline pays
// every op's whole time, its slow runs included, so its throughput follows the mean, which a mean
// without the slowest runs underestimates (docs/validation.md, "twentieth session"). A stall of
// another program shows in the profile's rounds and load instead.
double Mean(const std::vector<double>& v);

}  // namespace pipetwin
