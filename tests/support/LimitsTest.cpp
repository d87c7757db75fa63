// hone's limits on input it does not control (a model's reply, a generated
// file, a hostile tester's): every case here used to crash hone, hang it or
// eat gigabytes, and must now be one located error. (Numbers out of range in
// model files are tested with the model fixtures, tests/model/ModelTest.cpp.) Run under the sanitizers
// too, where a stack overflow or undefined behaviour fails the test.
#include "TestUtil.h"
#include "dsl/Formatter.h"
#include "dsl/Interpreter.h"
#include "support/Expr.h"
#include "support/Diagnostics.h"
#include "support/Regex.h"

#include <gtest/gtest.h>

#include <string>

namespace hone {
namespace {

std::string repeat(const std::string &s, size_t n) {
  std::string out;
  out.reserve(s.size() * n);
  for (size_t i = 0; i < n; ++i)
    out += s;
  return out;
}

dsl::MachineShape cpuShape() {
  dsl::MachineShape shape;
  shape.nodes = 1;
  shape.procsPerNode[dsl::ProcKind::CPU] = 4;
  return shape;
}

void expectOneDepthError(const std::string &policy) {
  auto c = test::checkText(policy);
  ASSERT_FALSE(c.ok());
  std::string text = test::diagText(c);
  EXPECT_NE(text.find("expression nested deeper than 200 levels"), std::string::npos) << text.substr(0, 2000);
  EXPECT_LT(c.diags->diagnostics().size(), 5u);
}

TEST(Limits, DeepExpressionsAreALocatedErrorNotACrash) {
  expectOneDepthError("x = " + repeat("(", 20000) + "1" + repeat(")", 20000) + ";\n");
  expectOneDepthError("x = " + repeat("1 + (", 20000) + "1" + repeat(")", 20000) + ";\n");
  expectOneDepthError("x = " + repeat("- ", 20000) + "1;\n");
  expectOneDepthError("x = " + repeat("True ? 1 : ", 20000) + "2;\n");
  expectOneDepthError("x = " + repeat("(1, ", 5000) + "1" + repeat(")", 5000) + ";\n");
  expectOneDepthError("def f(Task t) {\n  return " + repeat("(", 20000) + "t" + repeat(")", 20000) + ";\n}\n");
}

TEST(Limits, AChainOfOnePrecedenceIsNotNesting) {
  // 40,000 terms, nothing nested: checked, formatted back to the same text, evaluated in a loop.
  std::string sum = repeat("1 + 2 - ", 20000) + "1";
  std::string all = repeat("True && ", 40000) + "True";
  std::string any = repeat("False || ", 40000) + "True";
  std::string mixed = repeat("2 * 3 + ", 20000) + "1";
  auto c = test::checkText("x = " + sum + ";\ny = " + all + ";\nz = " + any + ";\nw = " + mixed + ";\n");
  ASSERT_TRUE(c.ok()) << test::diagText(c).substr(0, 2000);
  std::string formatted = dsl::format(c.program);
  EXPECT_NE(formatted.find("x = " + sum + ";"), std::string::npos);
  EXPECT_NE(formatted.find("w = " + mixed + ";"), std::string::npos);
  dsl::Interpreter in(c.program, cpuShape());
  auto ok = in.initialize();
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(in.globals().at("x").str(), "20001");
  EXPECT_EQ(in.globals().at("y").str(), "True");
  EXPECT_EQ(in.globals().at("z").str(), "True");
  EXPECT_EQ(in.globals().at("w").str(), "120001");
  // A fault in the middle of a chain names the step it happened at.
  auto bad = test::checkText("q = 1 + 2 + 3 / 0 + 4;\n");
  ASSERT_TRUE(bad.ok());
  dsl::Interpreter faulty(bad.program, cpuShape());
  auto fault = faulty.initialize();
  ASSERT_FALSE(fault.ok());
  EXPECT_NE(fault.error().message.find("by zero"), std::string::npos) << fault.error().message;
  auto typed = test::checkText("q = 1 + 2 + True + 4;\n");
  ASSERT_TRUE(typed.ok());
  dsl::Interpreter wrong(typed.program, cpuShape());
  auto mismatch = wrong.initialize();
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.error().column, 5) << mismatch.error().message; // the step '1 + 2 + True' from its start
}

TEST(Limits, ExpressionsWithinTheLimitCheckFormatAndEvaluate) {
  std::string policy = "x = " + repeat("(", 150) + "1" + repeat(")", 150) + ";\ny = " + repeat("1 + ", 150) + "1;\n";
  auto c = test::checkText(policy);
  ASSERT_TRUE(c.ok()) << test::diagText(c);
  EXPECT_FALSE(dsl::format(c.program).empty());
  dsl::Interpreter in(c.program, cpuShape());
  auto ok = in.initialize();
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(in.globals().at("y").str(), "151");
}

// a0 = (1, 2); a1 = (*a0, *a0); ... up to a<last>: a<i> has 2^(i+1) items and stands on line i + 1.
std::string doublings(int last) {
  std::string policy = "a0 = (1, 2);\n";
  for (int i = 1; i <= last; ++i)
    policy += "a" + std::to_string(i) + " = (*a" + std::to_string(i - 1) + ", *a" + std::to_string(i - 1) + ");\n";
  return policy;
}

support::Expected<bool> initialized(const std::string &policy) {
  auto c = test::checkText(policy);
  EXPECT_TRUE(c.ok()) << test::diagText(c);
  dsl::Interpreter in(c.program, cpuShape());
  return in.initialize();
}

TEST(Limits, ATupleBombIsAFaultWithItsLine) {
  auto r = initialized(doublings(40));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("a tuple of more than 65536 items"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().line, 17); // a16 = (*a15, *a15): 2 * 65536 items
}

TEST(Limits, RunawayWorkIsAFault) {
  auto r = initialized(doublings(14) + "b = tuple(tuple(j for j in a14) for i in a14);\n"); // 2^30 items
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("steps of work"), std::string::npos) << r.error().message;
  EXPECT_EQ(r.error().line, 16);
}

TEST(Limits, AHugeUnknownWordIsOneShortDiagnostic) {
  std::string word(10'000'000, 'q');
  auto c = test::checkText("Task * " + word + ";\n");
  ASSERT_FALSE(c.ok());
  std::string text = test::diagText(c);
  EXPECT_LT(text.size(), 8000u);
  EXPECT_NE(text.find("..."), std::string::npos);
}

TEST(Limits, DiagnosticsPerFileAreCapped) {
  auto c = test::checkText(repeat("Task * GPUU;\n", 1000));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.diags->errorCount(), 1000u); // all counted
  EXPECT_EQ(c.diags->diagnostics().size(), 201u); // 200 kept and the note that says so
  EXPECT_NE(test::diagText(c).find("too many diagnostics: only the first 200 are shown"), std::string::npos);
}

TEST(Limits, DeepModelExpressionsAreErrors) {
  auto deep = support::Expr::parse(repeat("(", 20000) + "1" + repeat(")", 20000));
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.error().message.find("nested deeper than 100 levels"), std::string::npos) << deep.error().message;
  auto nested = support::Expr::parse(repeat("1 + (", 20000) + "1" + repeat(")", 20000));
  ASSERT_FALSE(nested.ok());
  EXPECT_NE(nested.error().message.find("nested deeper"), std::string::npos);
  // A chain of one precedence is not nesting: parsed and evaluated in a loop.
  auto sum = support::Expr::parse(repeat("1 + 2 - ", 20000) + "1");
  ASSERT_TRUE(sum.ok()) << sum.error().message;
  auto none = [](const std::string &) -> std::optional<double> { return std::nullopt; };
  EXPECT_EQ(*sum->eval(none), 20001);
  auto product = support::Expr::parse(repeat("2 * 3 / 6 * ", 20000) + "7 // 2 % 2");
  ASSERT_TRUE(product.ok()) << product.error().message;
  EXPECT_EQ(*product->eval(none), 1); // ((... * 7) // 2) % 2 = 3 % 2
  auto zero = support::Expr::parse("1 + 8 / 2 / 0");
  ASSERT_TRUE(zero.ok());
  auto z = zero->eval(none);
  ASSERT_FALSE(z.ok());
  EXPECT_EQ(z.error().column, 11) << z.error().message; // the second '/'
  EXPECT_EQ(*support::Expr::parse("2 ^ 3 ^ 2")->eval(none), 512); // '^' stays right-associative
  auto signs = support::Expr::parse(repeat("-", 30000) + "1");
  ASSERT_FALSE(signs.ok());
  auto fine = support::Expr::parse(repeat("(", 50) + "2 * 3" + repeat(")", 50));
  ASSERT_TRUE(fine.ok()) << fine.error().message;
}

TEST(Limits, RegexesRunInLinearTimeOnHugeOutput) {
  auto re = support::Regex::compile("elapsed: ([0-9.]+) s");
  ASSERT_TRUE(re.ok());
  std::string output = "elapsed: " + std::string(30000, '7') + " s\nelapsed: 2.5 s\n";
  auto matches = re->findAll(output);
  ASSERT_EQ(matches.size(), 2u);
  EXPECT_EQ(matches[1].groups[1], "2.5");
  EXPECT_EQ(matches[0].groups[1].size(), 30000u);
  auto empty = support::Regex::compile("x*");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->findAll("ab").size(), 3u); // empty matches move on
  EXPECT_FALSE(support::Regex::compile("(unclosed").ok());
}

} // namespace
} // namespace hone
