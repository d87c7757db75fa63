// AutoGuide: the shipped rules on hone's real messages and on a simulator
// profile, feedback levels, user rule files and their errors.
#include "autoguide/AutoGuide.h"

#include "TestUtil.h"
#include "sim/SimTestUtil.h"

#include <gtest/gtest.h>

#include <set>

namespace hone::autoguide {
namespace {

AutoGuide shipped() {
  auto g = AutoGuide::withDefaults();
  EXPECT_TRUE(g.ok()) << g.error().message;
  return std::move(g).value();
}

std::vector<std::string> ids(const std::vector<Finding> &findings) {
  std::vector<std::string> out;
  for (const auto &f : findings)
    out.push_back(f.rule);
  return out;
}

bool fires(const AutoGuide &g, const std::string &raw, const std::string &rule) {
  auto found = ids(g.interpret(raw, {}, "mapping"));
  return std::find(found.begin(), found.end(), rule) != found.end();
}

std::string diagnosticsOf(const std::string &policy) {
  auto c = test::checkText(policy, "p.map");
  return test::diagText(c);
}

TEST(AutoGuide, ThePapersRulesFireOnHonesOwnMessages) {
  AutoGuide g = shipped();
  EXPECT_TRUE(fires(g, diagnosticsOf("def f(Task t):\n    return t;\n"), "function-colon"));
  EXPECT_TRUE(fires(g, diagnosticsOf("IndexTaskMap t f;\n"), "function-undefined"));
  auto notFound = g.interpret(diagnosticsOf("x = mgpu.size[0];\n"), {}, "mapping");
  ASSERT_FALSE(notFound.empty());
  EXPECT_EQ(notFound.front().rule, "name-not-found");
  EXPECT_NE(notFound.front().suggestion.find("mgpu = Machine(GPU);"), std::string::npos) << "the capture fills the template";

  auto stencil = sim::test::Setup::shipped("stencil");
  auto layout = stencil->run(sim::test::replaced(sim::test::expertText("stencil"), "SOA F_order", "SOA C_order"));
  EXPECT_TRUE(fires(g, layout.error, "stride-mismatch"));
  auto cannon = sim::test::Setup::shipped("cannon");
  EXPECT_TRUE(fires(g, cannon->run(sim::test::replaced(sim::test::expertText("cannon"), "SOA C_order", "SOA F_order")).error,
                    "dgemm-layout"));
  auto circuit = sim::test::Setup::shipped("circuit");
  auto oob = circuit->run(sim::test::replaced(sim::test::expertText("circuit"),
                                              "return mgpu[node, ip[0] % mgpu.size[1]];", "return mgpu[node, ip[0] + 1];"));
  EXPECT_TRUE(fires(g, oob.error, "index-out-of-bound"));
  EXPECT_TRUE(fires(g, "Assertion 'event.exists()' failed", "instance-limit-event"));
  EXPECT_TRUE(fires(g, "execution time is 0.0234 s", "execution-time"));
  EXPECT_TRUE(fires(g, "achieved throughput = 13070 GFLOPS", "throughput"));
  auto variant = circuit->run("Task init_piece GPU;\n");
  EXPECT_TRUE(fires(g, variant.error, "no-variant")) << variant.error;
  auto big = sim::test::Setup::shipped("stencil", "p100x4", 90000);
  auto oom = big->run(sim::test::expertText("stencil"));
  auto oomFindings = g.interpret(oom.error, {}, "mapping");
  ASSERT_EQ(ids(oomFindings), std::vector<std::string>{"out-of-memory"}) << oom.error;
  EXPECT_NE(oomFindings[0].explanation.find("FBMEM node0 GPU"), std::string::npos) << oomFindings[0].explanation;
}

TEST(AutoGuide, ProfileRulesCiteTheNumbers) {
  AutoGuide g = shipped();
  auto circuit = sim::test::Setup::shipped("circuit");
  auto r = circuit->run(sim::test::expertText("circuit"));
  ASSERT_TRUE(r.ok);
  auto findings = g.interpret("execution time is 0.02 s", sim::toEvidence(r.bottlenecks, "simulator"), "mapping");
  bool access = false;
  for (const auto &f : findings)
    if (f.rule == "slow-memory") {
      access = true;
      EXPECT_NE(f.explanation.find("ZCMEM"), std::string::npos) << f.explanation;
      EXPECT_NE(f.explanation.find(" ms"), std::string::npos) << "cites the time: " << f.explanation;
      EXPECT_FALSE(f.suggestion.empty());
    }
  EXPECT_TRUE(access) << "circuit's zero-copy reads should be found";
}

TEST(AutoGuide, TheMappingRulesNameTheSimulatorsKindsBothWays) {
  // The bottleneck kinds are the simulator's (sim::BottleneckKind, also what legion_prof logs give):
  // a mapping rule that names another kind never fires, and a kind without a rule is never explained.
  AutoGuide g = shipped();
  std::set<std::string> ruled;
  for (const Rule &r : g.rules())
    if (r.match == MatchKind::Bottleneck && r.domain == "mapping") {
      EXPECT_TRUE(sim::parseBottleneckKind(r.pattern)) << r.source << " names '" << r.pattern << "'";
      ruled.insert(r.pattern);
    }
  for (int i = 0; i <= static_cast<int>(sim::BottleneckKind::Access); ++i) {
    auto kind = static_cast<sim::BottleneckKind>(i);
    std::string id(sim::toString(kind));
    EXPECT_EQ(sim::parseBottleneckKind(id), kind) << i;
    EXPECT_TRUE(ruled.count(id)) << "no mapping rule explains '" << id << "'";
  }
}

TEST(AutoGuide, FeedbackLevelsSelectWhatTheAgentSees) {
  AutoGuide g = shipped();
  std::string raw = "Assertion failed: stride does not match expected value.";
  auto exec = g.feedback(raw, {}, {}, "mapping", FeedbackLevel::Exec);
  auto explain = g.feedback(raw, {}, {}, "mapping", FeedbackLevel::ExecExplain);
  auto full = g.feedback(raw, {}, {}, "mapping", FeedbackLevel::ExecExplainSuggest);
  EXPECT_EQ(exec.execution, raw);
  ASSERT_EQ(exec.findings.size(), 1u);
  EXPECT_TRUE(exec.findings[0].explanation.empty());
  EXPECT_TRUE(exec.findings[0].suggestion.empty());
  EXPECT_FALSE(explain.findings[0].explanation.empty());
  EXPECT_TRUE(explain.findings[0].suggestion.empty());
  EXPECT_FALSE(full.findings[0].explanation.empty());
  EXPECT_FALSE(full.findings[0].suggestion.empty());
  // Stored as JSON and read back, it is the same feedback; the exec level's JSON has no explanation.
  for (const auto *f : {&exec, &explain, &full}) {
    auto back = hone::support::readFeedback(hone::support::toJson(*f));
    ASSERT_TRUE(back) << back.error().message;
    EXPECT_EQ(*back, *f);
  }
  EXPECT_FALSE(hone::support::toJson(exec)["findings"][0].contains("explanation"));
  for (auto level : {FeedbackLevel::Exec, FeedbackLevel::ExecExplain, FeedbackLevel::ExecExplainSuggest})
    EXPECT_EQ(parseFeedbackLevel(toString(level)), level);
  EXPECT_FALSE(parseFeedbackLevel("everything"));
}

TEST(AutoGuide, UserRulesAddAndDomainsFilter) {
  auto rules = AutoGuide::parseRules("mine.toml", R"([[rule]]
id = "mine"
domain = "kernel"
match = "regex"
pattern = "(\\d+) registers"
explanation = "uses {1} registers"
suggestion = "reduce register pressure"
)");
  ASSERT_TRUE(rules.ok()) << rules.error().message;
  AutoGuide g(*rules);
  EXPECT_TRUE(g.interpret("ptxas: 255 registers", {}, "mapping").empty());
  auto k = g.interpret("ptxas: 255 registers", {}, "kernel");
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0].explanation, "uses 255 registers");
  EXPECT_EQ(k[0].evidence, "ptxas: 255 registers");
}

TEST(AutoGuide, OutputItDoesNotControlIsQuotedWithinLimits) {
  auto rules = AutoGuide::parseRules("mine.toml", R"toml([[rule]]
id = "err"
match = "regex"
pattern = "error: (.*)"
explanation = "the compiler says {1}"
)toml");
  ASSERT_TRUE(rules.ok()) << rules.error().message;
  AutoGuide g(*rules);
  // A 1 MB line: the evidence is a window around the match, the group a prefix.
  std::string line = std::string(500000, 'a') + " error: " + std::string(500000, 'b');
  auto one = g.interpret(line, {}, "kernel");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_LT(one[0].evidence.size(), 500u);
  EXPECT_NE(one[0].evidence.find("error: bbb"), std::string::npos);
  EXPECT_LT(one[0].explanation.size(), 500u);
  // Ten thousand matching lines: the first matches only.
  std::string many;
  for (int i = 0; i < 10000; ++i)
    many += "x.c:" + std::to_string(i) + ": error: e" + std::to_string(i) + "\n";
  auto capped = g.interpret(many, {}, "kernel");
  EXPECT_EQ(capped.size(), 20u);
  EXPECT_EQ(capped[0].explanation, "the compiler says e0");
}

TEST(AutoGuide, BadRuleFilesAreLocated) {
  auto check = [](const std::string &text, const std::string &fragment) {
    auto r = AutoGuide::parseRules("r.toml", text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.error().message.find(fragment), std::string::npos) << r.error().message;
    EXPECT_EQ(r.error().message.rfind("r.toml:", 0), 0u) << r.error().message;
  };
  check("[[rule]]\nid = \"a\"\nmatch = \"regex\"\npattern = \"(\"\nsuggestion = \"x\"\n", "not a valid regular expression");
  // RE2 has no lookaround: a pattern written for another engine is refused where it stands.
  check("[[rule]]\nid = \"a\"\nmatch = \"regex\"\npattern = \"time(?=: )\"\nsuggestion = \"x\"\n",
        "invalid perl operator");
  check("[[rule]]\nid = \"a\"\nmatch = \"glob\"\npattern = \"x\"\nsuggestion = \"x\"\n", "must be \"substring\"");
  check("[[rule]]\nid = \"a\"\nsuggestion = \"x\"\n", "missing 'pattern'");
  check("[[rule]]\nid = \"a\"\npattern = \"x\"\n", "needs an explanation or a suggestion");
  check("[[rule]]\nid = \"a\"\npattern = \"x\"\nsuggestion = \"x\"\n[[rule]]\nid = \"a\"\npattern = \"y\"\nsuggestion = \"y\"\n",
        "used twice");
  check("[[rule]]\nid = \"a\"\npattern = \"x\"\nsugestion = \"x\"\n", "did you mean 'suggestion'?");
}

TEST(AutoGuide, ShippedRulesIncludeThePapersNine) {
  AutoGuide g = shipped();
  auto all = g.rules();
  for (const char *id : {"function-colon", "function-undefined", "name-not-found", "stride-mismatch", "dgemm-layout",
                         "index-out-of-bound", "instance-limit-event", "execution-time", "throughput"})
    EXPECT_TRUE(std::any_of(all.begin(), all.end(), [&](const Rule &r) { return r.id == id; })) << id;
}

} // namespace
} // namespace hone::autoguide
