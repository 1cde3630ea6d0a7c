#include "partition/util/spread.h"

#include <algorithm>
#include <cmath>

namespace pipetwin {

double StudentT975(int dof) {
  // t(0.975, dof) for dof = 1..30 (NIST/SEMATECH e-Handbook of Statistical Methods, 1.3.6.7.2).
  static const double kTable[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
                                  2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
                                  2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
                                  2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  if (dof < 1) return 0;
  if (dof <= 30) return kTable[dof - 1];
  if (dof <= 60) return 2.000 + (2.042 - 2.000) * (60 - dof) / 30.0;   // table: t(60) = 2.000
  if (dof <= 120) return 1.980 + (2.000 - 1.980) * (120 - dof) / 60.0;  // t(120) = 1.980
  return 1.960;
}

RoundEstimate EstimateFromRounds(const std::vector<double>& round_means) {
  RoundEstimate e;
  e.rounds = static_cast<int>(round_means.size());
  if (round_means.empty()) return e;
  double sum = 0;
  for (double x : round_means) sum += x;
  e.mean = sum / e.rounds;
  e.lowest = *std::min_element(round_means.begin(), round_means.end());
  e.highest = *std::max_element(round_means.begin(), round_means.end());
  if (e.rounds < 2) return e;
  double squares = 0;
  for (double x : round_means) squares += (x - e.mean) * (x - e.mean);
  const double sd = std::sqrt(squares / (e.rounds - 1));
  e.half_width = StudentT975(e.rounds - 1) * sd / std::sqrt(static_cast<double>(e.rounds));
  return e;
}

std::vector<FarRound> RoundsFarOff(const std::vector<double>& round_means) {
  std::vector<FarRound> far;
  if (round_means.empty()) return far;
  std::vector<double> sorted = round_means;
  std::sort(sorted.begin(), sorted.end());
  const double median = sorted[(sorted.size() - 1) / 2];
  if (!(median > 0)) return far;
  for (size_t r = 0; r < round_means.size(); ++r) {
    const double deviation = round_means[r] / median - 1;
    if (std::fabs(deviation) > kRoundFarOff)
      far.push_back({static_cast<int>(r), deviation, median});
  }
  return far;
}

double Mean(const std::vector<double>& v) {
  if (v.empty()) return 0;
  double sum = 0;
  for (double x : v) sum += x;
  return sum / static_cast<double>(v.size());
}

}  // namespace pipetwin
