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

// A pipeline pays every op's time: one slow run in ten counts with its whole time.
TEST(Spread, MeanCountsEverySlowRun) {
  std::vector<double> v(10, 1.0);
  v[3] = 100;
  EXPECT_DOUBLE_EQ(Mean(v), 10.9);
  EXPECT_DOUBLE_EQ(Mean({1, 2, 3}), 2.0);
  EXPECT_EQ(Mean({}), 0);
}

// A round more than 15% from the median is named with its deviation; the median of an even
// count is the lower middle one.
TEST(Spread, RoundsFarOffTheMedianAreNamed) {
  const std::vector<FarRound> far = RoundsFarOff({10, 10.5, 8.4, 9.8, 12});
  ASSERT_EQ(far.size(), 2u);
  EXPECT_EQ(far[0].round, 2);
  EXPECT_NEAR(far[0].deviation, -0.16, 1e-12);
  EXPECT_EQ(far[1].round, 4);
  EXPECT_NEAR(far[1].deviation, 0.2, 1e-12);
  EXPECT_DOUBLE_EQ(far[1].median, 10);
  EXPECT_TRUE(RoundsFarOff({10, 11.4, 8.6}).empty());   // 14% either way: not far
  EXPECT_EQ(RoundsFarOff({10, 20}).size(), 1u);         // median 10: 20 is off, 10 is not
  EXPECT_TRUE(RoundsFarOff({}).empty());
}

}  // namespace
}  // namespace pipetwin
