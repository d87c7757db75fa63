// Line diffs: the lines a change touches, and the strict application of a
// unified diff as a model writes it (headers or none, several files, hunks
// whose line numbers are off, a lost leading space on an empty context line),
// with failures that name the hunk and the line that differs.
#include "support/Diff.h"

#include <gtest/gtest.h>

namespace hone::support {
namespace {

const std::string kText = "int main() {\n  int a = 1;\n  int b = 2;\n  return a + b;\n}\n";

TEST(Diff, ChangedLinesAreTheLinesOfTheOldTextThatAChangeRemovesOrReplaces) {
  EXPECT_EQ(changedLines(kText, kText), std::vector<int>{});
  std::string replaced = "int main() {\n  int a = 1;\n  int b = 3;\n  return a + b;\n}\n";
  EXPECT_EQ(changedLines(kText, replaced), std::vector<int>{3});
  std::string removed = "int main() {\n  int a = 1;\n  return a + b;\n}\n";
  EXPECT_EQ(changedLines(kText, removed), std::vector<int>{3});
  std::string inserted = "int main() {\n  int a = 1;\n  int c = 0;\n  int b = 2;\n  return a + b;\n}\n";
  EXPECT_EQ(changedLines(kText, inserted), (std::vector<int>{2, 3})); // both neighbours of the insertion
  EXPECT_EQ(changedLines(kText, "// top\n" + kText), std::vector<int>{1});
}

TEST(Diff, AUnifiedDiffRoundTripsThroughSplitAndApply) {
  std::string changed = "int main() {\n  int a = 10;\n  int b = 2;\n  return a * b;\n}\n";
  std::string diff = unifiedDiff(kText, changed, "a/k.c", "b/k.c");
  EXPECT_EQ(diff.rfind("--- a/k.c\n+++ b/k.c\n@@ ", 0), 0u) << diff;
  auto parts = splitPatch(diff);
  ASSERT_TRUE(parts) << parts.error().message;
  ASSERT_EQ(parts->size(), 1u);
  EXPECT_EQ((*parts)[0].path, "k.c");
  auto applied = applyPatch(kText, (*parts)[0].hunks);
  ASSERT_TRUE(applied) << applied.error().message;
  EXPECT_EQ(*applied, changed);
}

TEST(Diff, SeveralFilesHeadersWithTimestampsAndNoHeadersAtAll) {
  std::string two = "diff --git a/x.c b/x.c\nindex 1..2\n--- a/x.c\t2026-01-01 10:00:00\n+++ b/x.c\t2026-01-02\n"
                    "@@ -1 +1 @@\n-a\n+b\n--- y.h\n+++ y.h\n@@ -1 +1 @@\n-c\n+d\n";
  auto parts = splitPatch(two);
  ASSERT_TRUE(parts) << parts.error().message;
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].path, "x.c");
  EXPECT_EQ((*parts)[1].path, "y.h");
  EXPECT_EQ(*applyPatch("c\n", (*parts)[1].hunks), "d\n");
  auto bare = splitPatch("@@ -2,1 +2,1 @@\n-  int a = 1;\n+  int a = 5;\n");
  ASSERT_TRUE(bare);
  EXPECT_EQ((*bare)[0].path, "");
  EXPECT_FALSE(splitPatch("just some text\n"));
  EXPECT_FALSE(splitPatch("--- a/x.c\n+++ b/x.c\n"));
}

TEST(Diff, AHunkWhoseLineNumbersAreOffIsFoundByItsExactContent) {
  // Written as if "int b" were line 10; it is line 3. Two hunks: the second moves with the first.
  std::string hunks = "@@ -10,2 +10,3 @@\n   int b = 2;\n+  int c = 3;\n   return a + b;\n"
                      "@@ -20,1 +21,1 @@\n-}\n+} // main\n";
  auto applied = applyPatch(kText, hunks);
  ASSERT_TRUE(applied) << applied.error().message;
  EXPECT_EQ(*applied, "int main() {\n  int a = 1;\n  int b = 2;\n  int c = 3;\n  return a + b;\n} // main\n");
}

TEST(Diff, AnEmptyContextLineThatLostItsSpaceStillMatches) {
  std::string text = "a\n\nb\n";
  auto applied = applyPatch(text, "@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n");
  ASSERT_TRUE(applied) << applied.error().message;
  EXPECT_EQ(*applied, "a\n\nc\n");
}

TEST(Diff, AHunkThatDoesNotMatchFailsNamingTheHunkAndTheLine) {
  std::string hunks = "@@ -1,2 +1,2 @@\n int main() {\n-  int a = 1;\n+  int a = 2;\n"
                      "@@ -3,1 +3,1 @@\n-  int b = 7;\n+  int b = 8;\n";
  auto applied = applyPatch(kText, hunks);
  ASSERT_FALSE(applied);
  const std::string &why = applied.error().message;
  EXPECT_NE(why.find("hunk 2 (@@ -3,1 +3,1 @@) does not apply"), std::string::npos) << why;
  EXPECT_NE(why.find("at line 3 the hunk expects '  int b = 7;', the file has '  int b = 2;'"), std::string::npos)
      << why;
  EXPECT_FALSE(applyPatch(kText, "@@ nonsense @@\n-x\n"));
  EXPECT_FALSE(applyPatch(kText, "@@ -1 +1 @@\n?what\n"));
}

TEST(Diff, AHugeFileOfRepeatedLinesDoesNotMakeTheSearchQuadratic) {
  // 200,000 identical lines and a 5,000-line hunk that matches nowhere: a bounded search, an error.
  std::string file;
  for (int i = 0; i < 200000; ++i)
    file += "x\n";
  std::string hunk = "@@ -1,5000 +1,5000 @@\n";
  for (int i = 0; i < 4999; ++i)
    hunk += " x\n";
  hunk += "-y\n+z\n";
  auto applied = applyPatch(file, hunk);
  ASSERT_FALSE(applied);
  EXPECT_NE(applied.error().message.find("hunk 1"), std::string::npos) << applied.error().message;
}

TEST(Diff, InsertionsAtTheTopAndAMissingFinalNewlineAreKept) {
  EXPECT_EQ(*applyPatch("b\n", "@@ -0,0 +1 @@\n+a\n"), "a\nb\n");
  EXPECT_EQ(*applyPatch("x\ny", "@@ -2 +2 @@\n-y\n+z\n\\ No newline at end of file\n"), "x\nz");
}

} // namespace
} // namespace hone::support
