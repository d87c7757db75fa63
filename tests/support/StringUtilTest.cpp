// Edit distance and suggestions.
#include "support/StringUtil.h"

#include <gtest/gtest.h>

using namespace hone::support;

TEST(EditDistance, CountsEdits) {
  EXPECT_EQ(editDistance("GPU", "GPU"), 0u);
  EXPECT_EQ(editDistance("GPUU", "GPU"), 1u);
  EXPECT_EQ(editDistance("", "abc"), 3u);
  EXPECT_EQ(editDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(editDistance("Taks", "Task"), 1u); // transposition
  EXPECT_EQ(editDistance("gpu", "GPU"), 2u);   // three case changes at 0.5 each, rounded up
}

TEST(ClosestMatch, SuggestsOnlyPlausibleTypos) {
  std::vector<std::string> c = {"calculate_new_currents", "distribute_charge", "update_voltages"};
  EXPECT_EQ(closestMatch("calculate_new_current", c), "calculate_new_currents");
  EXPECT_EQ(closestMatch("update_voltage", c), "update_voltages");
  EXPECT_FALSE(closestMatch("xyz", c).has_value());
  EXPECT_FALSE(closestMatch("update_voltages", c).has_value()) << "exact names are not suggestions";
}

TEST(JoinOr, ListsWithOr) {
  EXPECT_EQ(joinOr({"a"}), "a");
  EXPECT_EQ(joinOr({"a", "b"}), "a or b");
  EXPECT_EQ(joinOr({"a", "b", "c"}), "a, b or c");
}
