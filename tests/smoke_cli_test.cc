#include <gtest/gtest.h>
#include "tests/test_support.h"
TEST(Cli, UnknownCommandExits2) {
  auto r = pipetwin::testing::RunPipetwin("frobnicate");
  EXPECT_EQ(r.exit_code, 2);
}
