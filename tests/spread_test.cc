// The 95% interval of a mean of rounds (partition/util/spread.h), against values worked by hand.
#include <gtest/gtest.h>

#include "partition/util/spread.h"

namespace pipetwin {
namespace {

TEST(Spread, StudentQuantilesAreTheTablesAndTendToTheNormal) {
  EXPECT_DOUBLE_EQ(StudentT975(1), 12.706);
  EXPECT_DOUBLE_EQ(StudentT975(4), 2.776);
  EXPECT_DOUBLE_EQ(StudentT975(30), 2.042);
  EXPECT_DOUBLE_EQ(StudentT975(60), 2.000);
  EXPECT_DOUBLE_EQ(StudentT975(1000), 1.960);
  for (int dof = 1; dof < 200; ++dof) EXPECT_GE(StudentT975(dof), StudentT975(dof + 1)) << dof;
}

TEST(Spread, HalfWidthOfFourRoundsWorkedByHand) {
  // mean 14.25; squared deviations 0.0225 + 0.1225 + 0.1225 + 0.0225 = 0.29, s^2 = 0.29 / 3;
  // half-width = 3.182 x sqrt(0.29 / 3) / 2 = 0.49466.
  const RoundEstimate e = EstimateFromRounds({14.1, 14.6, 13.9, 14.4});
  EXPECT_EQ(e.rounds, 4);
  EXPECT_DOUBLE_EQ(e.mean, 14.25);
  EXPECT_NEAR(e.half_width, 0.49466, 1e-5);
  EXPECT_NEAR(e.RelativeHalfWidth(), e.half_width / 14.25, 1e-15);
  EXPECT_DOUBLE_EQ(e.lowest, 13.9);
  EXPECT_DOUBLE_EQ(e.highest, 14.6);
}

TEST(Spread, OneRoundHasNoIntervalAndEqualRoundsAZeroOne) {
  EXPECT_EQ(EstimateFromRounds({3.0}).half_width, 0);
  EXPECT_EQ(EstimateFromRounds({}).rounds, 0);
  EXPECT_EQ(EstimateFromRounds({2.0, 2.0, 2.0}).half_width, 0);
}

TEST(Spread, TrimmedMeanLeavesOutTheSlowestTenth) {
  std::vector<double> v(10, 1.0);
  v[3] = 100;  // one stall in ten runs
  EXPECT_DOUBLE_EQ(TrimmedMean(v), 1.0);
  EXPECT_DOUBLE_EQ(TrimmedMean({1, 2, 3}), 2.0);  // fewer than ten: nothing left out
}

}  // namespace
}  // namespace pipetwin
