// hone's limits on input it does not control (a model's reply, a generated
// file, a hostile tester's): every case here used to crash hone, hang it or
// eat gigabytes, and must now be one located error. Run under the sanitizers
// too, where a stack overflow or undefined behaviour fails the test.
#include "TestUtil.h"
#include "dsl/Formatter.h"
#include "dsl/Interpreter.h"
#include "model/App.h"
#include "model/Expr.h"
#include "model/Machine.h"
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

void expectOneDepthError(const std::string &policy) {
  auto c = test::checkText(policy);
  ASSERT_FALSE(c.ok());
  std::string text = test::diagText(c);
  EXPECT_NE(text.find("expression nested deeper than 200 levels"), std::string::npos) << text.substr(0, 2000);
  EXPECT_LT(c.diags->diagnostics().size(), 5u);
}

TEST(Limits, DeepExpressionsAreALocatedErrorNotACrash) {
  expectOneDepthError("x = " + repeat("(", 20000) + "1" + repeat(")", 20000) + ";\n");
  expectOneDepthError("x = " + repeat("1 + ", 30000) + "1;\n");
  expectOneDepthError("x = " + repeat("- ", 20000) + "1;\n");
  expectOneDepthError("x = " + repeat("True ? 1 : ", 20000) + "2;\n");
  expectOneDepthError("x = " + repeat("(1, ", 5000) + "1" + repeat(")", 5000) + ";\n");
  expectOneDepthError("def f(Task t) {\n  return " + repeat("(", 20000) + "t" + repeat(")", 20000) + ";\n}\n");
}

TEST(Limits, ExpressionsWithinTheLimitCheckFormatAndEvaluate) {
  std::string policy = "x = " + repeat("(", 150) + "1" + repeat(")", 150) + ";\ny = " + repeat("1 + ", 150) + "1;\n";
  auto c = test::checkText(policy);
  ASSERT_TRUE(c.ok()) << test::diagText(c);
  EXPECT_FALSE(dsl::format(c.program).empty());
  dsl::MachineShape shape;
  shape.nodes = 1;
  shape.procsPerNode[dsl::ProcKind::CPU] = 1;
  dsl::Interpreter in(c.program, shape);
  auto ok = in.initialize();
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(in.globals().at("y").str(), "151");
}

dsl::MachineShape cpuShape() {
  dsl::MachineShape shape;
  shape.nodes = 1;
  shape.procsPerNode[dsl::ProcKind::CPU] = 4;
  return shape;
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
  auto deep = model::Expr::parse(repeat("(", 20000) + "1" + repeat(")", 20000));
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.error().message.find("nested deeper than 100 levels"), std::string::npos) << deep.error().message;
  auto sum = model::Expr::parse(repeat("1 + ", 30000) + "1");
  ASSERT_FALSE(sum.ok());
  EXPECT_NE(sum.error().message.find("nested deeper"), std::string::npos);
  auto signs = model::Expr::parse(repeat("-", 30000) + "1");
  ASSERT_FALSE(signs.ok());
  auto fine = model::Expr::parse(repeat("(", 50) + "2 * 3" + repeat(")", 50));
  ASSERT_TRUE(fine.ok()) << fine.error().message;
}

const char *kMachine = R"(name = "m"
nodes = 1
[runtime]
task_analysis_us = 1
[[processor]]
kind = "CPU"
per_node = 2
gflops = 1
[[memory]]
kind = "SYSMEM"
capacity_gb = 1
  [[memory.access]]
  proc = "CPU"
  bandwidth_gbs = 1
  affinity = 100
)";

std::string replaced(std::string text, const std::string &from, const std::string &to) {
  auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return text.replace(at, from.size(), to);
}

void expectMachineRefused(const std::string &text, const std::string &fragment) {
  auto m = model::parseMachine("m.toml", text);
  ASSERT_FALSE(m.ok()) << "accepted:\n" << text;
  EXPECT_NE(m.error().message.find(fragment), std::string::npos) << m.error().message;
  EXPECT_NE(m.error().message.find("m.toml:"), std::string::npos) << m.error().message;
}

TEST(Limits, MachineNumbersOutOfRangeAreLocatedErrors) {
  ASSERT_TRUE(model::parseMachine("m.toml", kMachine).ok());
  expectMachineRefused(replaced(kMachine, "task_analysis_us = 1", "task_analysis_us = nan"), "expected a finite number");
  expectMachineRefused(replaced(kMachine, "gflops = 1", "gflops = inf"), "expected a finite number");
  expectMachineRefused(replaced(kMachine, "bandwidth_gbs = 1", "bandwidth_gbs = -inf"), "expected a finite number");
  expectMachineRefused(replaced(kMachine, "nodes = 1", "nodes = 1e12"), "must be a whole number from 1 to 4096");
  expectMachineRefused(replaced(kMachine, "per_node = 2", "per_node = 100000"), "from 0 to 1024");
  expectMachineRefused(replaced(replaced(kMachine, "nodes = 1", "nodes = 4096"), "per_node = 2", "per_node = 1024"),
                       "processors of a kind");
}

const char *kApp = R"(name = "toy"
top_task = "main"
iterations = 2
[metric]
kind = "time"
[size]
name = "n"
default = 8
[[region]]
name = "r"
fields = { x = 8 }
[[partition]]
name = "p"
region = "r"
pieces = ["cpus"]
elements = "n"
[[partition]]
name = "ghost"
region = "r"
covers = "p"
neighbors = [[-1], [1]]
fraction = 0.5
[[task]]
name = "work"
variants = ["CPU"]
flops = "n * 2"
  [[task.arg]]
  region = "p"
  piece = ["i"]
  privilege = "read-write"
  [[task.arg]]
  region = "ghost"
  piece = ["i"]
  privilege = "read"
[[body]]
task = "work"
domain = ["cpus"]
point = ["i"]
)";

std::string instantiateError(const std::string &appText) {
  auto m = model::parseMachine("m.toml", kMachine);
  EXPECT_TRUE(m.ok());
  auto a = model::parseApp("a.toml", appText);
  if (!a.ok())
    return a.error().message;
  auto p = model::instantiate(*a, *m, std::nullopt);
  return p.ok() ? "" : p.error().message;
}

TEST(Limits, AppNumbersOutOfRangeAreLocatedErrors) {
  EXPECT_EQ(instantiateError(kApp), "");
  EXPECT_NE(instantiateError(replaced(kApp, "flops = \"n * 2\"", "flops = \"0 - 5\"")).find("must not be negative"),
            std::string::npos);
  EXPECT_NE(instantiateError(replaced(kApp, "flops = \"n * 2\"", "flops = \"10 ^ 400\"")).find("not a finite number"),
            std::string::npos);
  EXPECT_NE(instantiateError(replaced(kApp, "piece = [\"i\"]\n  privilege = \"read\"",
                                      "piece = [\"i + 1e300\"]\n  privilege = \"read\""))
                .find("piece coordinate"),
            std::string::npos);
  EXPECT_NE(instantiateError(replaced(kApp, "neighbors = [[-1], [1]]", "neighbors = [[-1], [4611686018427387904]]"))
                .find("out of range"),
            std::string::npos);
  EXPECT_NE(instantiateError(replaced(kApp, "iterations = 2", "iterations = 1e300")).find("from 1 to 1000000"),
            std::string::npos);
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
