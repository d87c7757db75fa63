// Diagnostics: locations, caret rendering, fix-its, JSON form, ordering.
#include "support/Diagnostics.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

using namespace hone::support;

TEST(SourceFile, LocatesOffsetsAsOneBasedLinesAndColumns) {
  SourceFile f("a.map", "ab\ncd\n\nx");
  EXPECT_EQ(f.locate(0).line, 1u);
  EXPECT_EQ(f.locate(0).column, 1u);
  EXPECT_EQ(f.locate(4).line, 2u);
  EXPECT_EQ(f.locate(4).column, 2u);
  EXPECT_EQ(f.locate(7).line, 4u);
  EXPECT_EQ(f.lineText(2), "cd");
  EXPECT_EQ(f.lineText(3), "");
  EXPECT_EQ(f.lineText(9), "");
  EXPECT_EQ(f.lineCount(), 4u);
}

TEST(Diagnostics, RendersCaretUnderRangeWithNotesAndFixIts) {
  SourceFile f("c.map", "Task calc GPU;\n");
  DiagnosticEngine d(f);
  SourceRange r{f.locate(5), f.locate(9)};
  d.error(r, "unknown task 'calc'").note(r, "did you mean 'calculate'?").fixIt(r, "calculate");
  std::string text = renderText(f, d.diagnostics());
  EXPECT_NE(text.find("c.map:1:6: error: unknown task 'calc'\n  Task calc GPU;\n       ^~~~\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("fix-it: c.map:1:6: replace 'calc' with 'calculate'"), std::string::npos) << text;
  EXPECT_NE(text.find("c.map:1:6: note: did you mean 'calculate'?"), std::string::npos) << text;
  EXPECT_EQ(d.errorCount(), 1u);
  EXPECT_TRUE(d.hasErrors());
}

TEST(Diagnostics, CaretKeepsTabsAligned) {
  SourceFile f("t.map", "\tx = y;\n");
  DiagnosticEngine d(f);
  d.error(SourceRange{f.locate(5), f.locate(6)}, "bad");
  EXPECT_NE(renderText(f, d.diagnostics()).find("\t    ^\n"), std::string::npos);
}

TEST(Diagnostics, JsonCarriesLocationSeverityNotesAndFixIts) {
  SourceFile f("j.map", "x = 1\ny = 2;\n");
  DiagnosticEngine d(f);
  auto at = SourceRange{f.locate(5), f.locate(5)};
  d.error(at, "expected ';'").fixIt(at, ";").note("a note");
  d.warning(SourceRange{f.locate(6), f.locate(7)}, "w");
  auto j = toJson(f, d.diagnostics());
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["file"], "j.map");
  EXPECT_EQ(j[0]["line"], 1);
  EXPECT_EQ(j[0]["column"], 6);
  EXPECT_EQ(j[0]["severity"], "error");
  EXPECT_EQ(j[0]["fixits"][0]["replacement"], ";");
  EXPECT_EQ(j[0]["notes"][0]["message"], "a note");
  EXPECT_TRUE(j[0]["notes"][0]["line"].is_null());
  EXPECT_EQ(j[1]["severity"], "warning");
  EXPECT_EQ(j[1]["line"], 2);
}

TEST(Diagnostics, SortByLocationIsStable) {
  SourceFile f("s.map", "abcdef");
  DiagnosticEngine d(f);
  d.error(SourceRange{f.locate(4), f.locate(5)}, "second");
  d.error(SourceRange{f.locate(1), f.locate(2)}, "first");
  d.warning(SourceRange{f.locate(4), f.locate(5)}, "third");
  d.sortByLocation();
  ASSERT_EQ(d.diagnostics().size(), 3u);
  EXPECT_EQ(d.diagnostics()[0].message, "first");
  EXPECT_EQ(d.diagnostics()[1].message, "second");
  EXPECT_EQ(d.diagnostics()[2].message, "third");
}

TEST(Diagnostics, FixItDescriptionsEscapeNewlines) {
  SourceFile f("n.map", "def f(Task t):\n    return 1;\n");
  DiagnosticEngine d(f);
  auto end = SourceRange{f.locate(28), f.locate(28)};
  d.error(SourceRange{f.locate(13), f.locate(14)}, "colon").fixIt(end, "\n}");
  std::string text = renderText(f, d.diagnostics());
  EXPECT_NE(text.find("insert '\\n}'"), std::string::npos) << text;
}

TEST(Diagnostics, ApplyFixItsInOrderSkippingOverlapsAndWarnings) {
  SourceFile f("a.map", "x = 1\ny = GPUU;\n");
  DiagnosticEngine d(f);
  auto semi = SourceRange{f.locate(5), f.locate(5)};
  auto word = SourceRange{f.locate(10), f.locate(14)};
  d.error(word, "unknown").fixIt(word, "GPU");
  d.error(semi, "missing ;").fixIt(semi, ";");
  d.error(SourceRange{f.locate(11), f.locate(12)}, "overlapping").fixIt(SourceRange{f.locate(11), f.locate(12)}, "Z");
  d.warning(semi, "a warning").fixIt(semi, "!");
  size_t applied = 0;
  EXPECT_EQ(applyFixIts(f, d.diagnostics(), &applied), "x = 1;\ny = GPU;\n");
  EXPECT_EQ(applied, 2u);
}
