// Golden tests: token and AST dumps and formatter output of the nine example
// mappers, compared with tests/golden/ (regenerate with scripts/regen-golden.sh).
#include "TestUtil.h"

#include "dsl/Formatter.h"
#include "dsl/Lexer.h"
#include "legion/Compiler.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace {

void compare(const std::string &goldenRelative, const std::string &actual) {
  std::string path = hone::test::sourcePath(goldenRelative);
  ASSERT_TRUE(std::filesystem::exists(path)) << path << " is missing; run scripts/regen-golden.sh";
  EXPECT_EQ(hone::test::readFile(path), actual) << goldenRelative << " differs; if the change is intended, run "
                                                   "scripts/regen-golden.sh and review the diff";
}

class Golden : public testing::TestWithParam<std::string> {};

TEST_P(Golden, TokensAstAndFormatMatch) {
  const std::string &app = GetParam();
  std::string rel = "examples/mappers/" + app + ".map";
  // The dumps name the file as the regeneration script does: relative to the repository root.
  hone::support::SourceFile file(rel, hone::test::readFile(hone::test::sourcePath(rel)));
  hone::support::DiagnosticEngine diags(file);
  compare("tests/golden/tokens/" + app + ".txt", hone::dsl::dumpTokens(hone::dsl::lex(file, diags)));
  auto checked = hone::dsl::checkSource(file);
  ASSERT_TRUE(checked.ok()) << hone::test::diagText(checked);
  compare("tests/golden/ast/" + app + ".txt", hone::dsl::dumpAst(checked.program));
  // As `hone compile examples/mappers/<app>.map` writes it.
  hone::legion::CompileOptions options;
  options.className = hone::legion::defaultClassName(app);
  options.sourceName = app + ".map";
  compare("tests/golden/legion/" + app + "_mapper.cc.golden", hone::legion::compileToCpp(checked.program, options));
}

INSTANTIATE_TEST_SUITE_P(Examples, Golden, testing::ValuesIn(hone::test::kExampleApps));

TEST(GoldenFormat, MessyInputFormatsToTheGolden) {
  auto checked = hone::test::checkText(hone::test::readFile(hone::test::sourcePath("tests/golden/fmt/messy.map")));
  ASSERT_TRUE(checked.ok()) << hone::test::diagText(checked);
  compare("tests/golden/fmt/messy.formatted.map", hone::dsl::format(checked.program));
}

} // namespace
