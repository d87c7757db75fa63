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

TEST(TelltaleLine, PicksTheLastMessageElseTheLastErrorLineElseTheLastLine) {
  EXPECT_EQ(telltaleLine("compiling\nmapper.cc:3: error: no such thing\n1 error generated.\nmake: stop\n"),
            "mapper.cc:3: error: no such thing");
  EXPECT_EQ(telltaleLine("a\n  LEGION ERROR: bad mapping  \n\ndone\n"), "LEGION ERROR: bad mapping");
  // A command of 50,000 defines is shown by its start and its length.
  std::string command = "cc";
  for (int i = 0; i < 50000; ++i)
    command += " -DK" + std::to_string(i) + "=1";
  EXPECT_EQ(abbreviated("cc -O2 x.c"), "cc -O2 x.c");
  std::string shown = abbreviated(command, 100);
  EXPECT_EQ(shown.rfind(command.substr(0, 100), 0), 0u);
  EXPECT_NE(shown.find(std::to_string(command.size()) + " characters in all"), std::string::npos);
  EXPECT_LT(shown.size(), 140u);
  EXPECT_EQ(telltaleLine("first\nlast line\n\n  \n"), "last line");
  EXPECT_EQ(telltaleLine("x: error: one\ny: error: two\nsegmentation fault\n"), "y: error: two");
  EXPECT_EQ(telltaleLine("Assertion `x' failed.\nAborted (core dumped)"), "Aborted (core dumped)");
  EXPECT_EQ(telltaleLine(""), "");
  EXPECT_EQ(telltaleLine(" \n\t\n"), "");
  std::string longLine(1000, 'x');
  std::string cut = telltaleLine("error " + longLine, 50);
  EXPECT_EQ(cut.size(), 50u);
  EXPECT_EQ(cut.substr(47), "...");
}

TEST(JoinOr, ListsWithOr) {
  EXPECT_EQ(joinOr({"a"}), "a");
  EXPECT_EQ(joinOr({"a", "b"}), "a or b");
  EXPECT_EQ(joinOr({"a", "b", "c"}), "a, b or c");
}

TEST(Printable, EscapesEveryControlCharacterAndKeepsTheRest) {
  EXPECT_EQ(printable("plain text, ünïcode"), "plain text, ünïcode");
  EXPECT_EQ(printable("a\nb\tc\rd"), "a\\nb\\tc\\rd");
  EXPECT_EQ(printable("\x1b]0;title\x07\x1b[2J"), "\\e]0;title\\x07\\e[2J");
  EXPECT_EQ(printable(std::string("nul\0del\x7f", 8)), "nul\\x00del\\x7f");
  EXPECT_EQ(printable("csi \xc2\x9b" "2J"), "csi \\u009b2J"); // U+009B, the one-character CSI
  EXPECT_EQ(printable("line 1\n\tline 2\x1b[2J\r", true), "line 1\n\tline 2\\e[2J\\r");
}
