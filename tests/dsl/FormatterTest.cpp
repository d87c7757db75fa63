// Formatter: canonical output, comments kept, idempotent, meaning preserved.
#include "TestUtil.h"

#include "dsl/Formatter.h"

#include <gtest/gtest.h>

using hone::test::checkText;
using hone::test::diagText;

namespace {
std::string fmtText(const std::string &text) {
  auto c = checkText(text);
  EXPECT_TRUE(c.ok()) << diagText(c);
  return hone::dsl::format(c.program);
}
} // namespace

TEST(Formatter, CanonicalSpacingAndMinimalParentheses) {
  EXPECT_EQ(fmtText("Task   *   GPU ,CPU ;"), "Task * GPU,CPU;\n");
  EXPECT_EQ(fmtText("x=((1+2))*3;"), "x = (1 + 2) * 3;\n");
  EXPECT_EQ(fmtText("x=1+(2*3);"), "x = 1 + 2 * 3;\n");
  EXPECT_EQ(fmtText("x=10-(3-2);"), "x = 10 - (3 - 2);\n");
  EXPECT_EQ(fmtText("x=(10-3)-2;"), "x = 10 - 3 - 2;\n");
  EXPECT_EQ(fmtText("x=-(1+2);"), "x = -(1 + 2);\n");
  EXPECT_EQ(fmtText("x=(True?1:2)+3;"), "x = (True ? 1 : 2) + 3;\n");
  EXPECT_EQ(fmtText("t=(1,);"), "t = (1,);\n");
  EXPECT_EQ(fmtText("Layout * * * SOA Align == 128;"), "Layout * * * SOA Align==128;\n");
}

TEST(Formatter, KeepsCommentsAndOneBlankLineBetweenGroups) {
  std::string in = "# header\n\n\n\nTask * GPU; # trailing\n// own line\nx = 1;\n\ndef f(Task t) { # opener\n"
                   "  # inside\n  return 1; # ret\n  # before close\n}\n# end\n";
  std::string want = "# header\n\nTask * GPU; # trailing\n// own line\nx = 1;\n\ndef f(Task t) {\n    # opener\n"
                     "    # inside\n    return 1; # ret\n    # before close\n}\n# end\n";
  EXPECT_EQ(fmtText(in), want);
  EXPECT_EQ(fmtText(want), want) << "idempotent";
}

TEST(Formatter, ExamplesAreInCanonicalForm) {
  for (const auto &app : hone::test::kExampleApps) {
    std::string text = hone::test::readFile(hone::test::sourcePath("examples/mappers/" + app + ".map"));
    EXPECT_EQ(fmtText(text), text) << app << " is not formatted; run hone fmt -i";
  }
}

TEST(Formatter, FormattedProgramMeansTheSame) {
  std::string messy = "m=Machine(GPU);def f(Task t){a=t.ipoint;return m[a[0]/m.size[1]%m.size[0],a[0]%m.size[1]];}\n"
                      "IndexTaskMap x,y f;Region * rp GPU ZCMEM,FBMEM;";
  auto before = checkText(messy);
  ASSERT_TRUE(before.ok()) << diagText(before);
  auto after = checkText(hone::dsl::format(before.program));
  ASSERT_TRUE(after.ok()) << diagText(after);
  EXPECT_EQ(hone::dsl::dumpAst(before.program, false), hone::dsl::dumpAst(after.program, false));
}
