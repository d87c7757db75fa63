// The LLM optimizer core with a domain that is not mapping: a toy codec whose
// candidates are numbers written as text, with prompts of its own. It shows
// what the core takes from the codec (the prompt folder, the candidate's name
// in prompts, replies and the reply schema, the fence, the domain's values,
// the repair check) and what it keeps for itself.
#include "llm/FakeServer.h"
#include "support/FileUtil.h"
#include "tune/LlmOptimizer.h"
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>
#include <set>

namespace hone::tune {
namespace {

using llm::test::FakeServer;
using nlohmann::json;
namespace fs = std::filesystem;

class NumberCodec : public LlmCodec {
public:
  std::string promptFolder() const override { return "toy"; }
  std::string artifactName() const override { return "number"; }
  std::string fence() const override { return "num"; }
  support::Expected<std::map<std::string, std::string>> promptValues() const override {
    return std::map<std::string, std::string>{{"goal", "the largest number below 100"}, {"score", "shadowed"}};
  }
  std::optional<LlmRejection> check(const std::string &artifact) const override {
    if (artifact.find_first_not_of("0123456789\n") == std::string::npos && !artifact.empty())
      return std::nullopt;
    return LlmRejection{"'" + artifact + "' is not a number", "not a number"};
  }
};

struct LlmOptimizerTest : ::testing::Test {
  FakeServer server;
  std::unique_ptr<llm::Client> client;
  fs::path prompts = fs::temp_directory_path() / ("hone-llmopt-" + std::to_string(::getpid()));

  void SetUp() override {
    fs::create_directories(prompts / "toy");
    auto write = [&](const char *name, const std::string &text) {
      ASSERT_TRUE(support::writeFileAtomically((prompts / "toy" / name).string(), text, nullptr));
    };
    write("system.md", "You write numbers.");
    write("trace.md", "Goal: {{goal}}\nCurrent ({{score}}):\n```num\n{{number}}\n```\n{{feedback}}\n{{last}}");
    write("opro.md", "Goal: {{goal}}\n{{history}}");
    write("shots.md", "Goal: {{goal}}\n{{examples}}");
    write("repair.md", "Fix it: {{diagnostics}}");
    write("duplicate.md", "Already tried: it {{earlier}}.");
    llm::ClientConfig c;
    c.baseUrl = server.url();
    c.model = "test-model";
    auto made = llm::Client::make(c, nullptr, [](double) {});
    ASSERT_TRUE(made.ok());
    client = std::move(*made);
  }
  void TearDown() override { fs::remove_all(prompts); }

  LlmOptimizerOptions options() const {
    LlmOptimizerOptions o;
    o.promptDirs = {prompts.string()};
    return o;
  }
  engine::LoopOutcome run(LlmOptimizer &agent, size_t budget, engine::FeedbackFn feedback = nullptr) {
    engine::PoolEvaluator pool(
        [](const engine::Candidate &c) {
          engine::EvalResult r;
          r.status = engine::EvalStatus::Ok;
          r.score = std::stod(c.artifact) / 100;
          r.rawOutput = "scored " + c.artifact;
          return r;
        },
        1);
    engine::LoopOptions o;
    o.budget = budget;
    if (!feedback)
      feedback = [](const engine::Candidate &, const engine::EvalResult &r) {
        return hone::test::feedbackOf(json{{"execution", r.rawOutput}});
      };
    return engine::runLoop(agent, pool, feedback, nullptr, o);
  }
  static std::string answer(const std::string &number) {
    return json{{"number", number}, {"rationale", "bigger"}}.dump();
  }
};

TEST_F(LlmOptimizerTest, TheCodecNamesTheCandidateInPromptsRepliesAndTheSchema) {
  server.then(FakeServer::reply(answer("42")));
  LlmOptimizer agent(std::make_unique<NumberCodec>(), "7", "a small number", *client, options());
  auto o = run(agent, 2);
  ASSERT_EQ(o.steps.size(), 2u);
  EXPECT_EQ(o.steps[1].candidate.artifact, "42");
  EXPECT_EQ(o.steps[1].candidate.parent, o.steps[0].candidate.hash);
  ASSERT_EQ(server.requests.size(), 1u);
  const json &req = server.requests[0];
  std::string prompt = req["messages"][1]["content"];
  EXPECT_NE(prompt.find("Goal: the largest number below 100"), std::string::npos) << prompt; // a domain value
  EXPECT_NE(prompt.find("```num\n7\n```"), std::string::npos) << prompt;  // the start, under the codec's name
  EXPECT_NE(prompt.find("Current (0.070)"), std::string::npos) << prompt; // the optimizer's score wins
  EXPECT_NE(prompt.find("scored 7"), std::string::npos) << prompt;        // the feedback on it
  const json &schema = req["response_format"]["json_schema"]["schema"];
  EXPECT_EQ(schema["required"], json({"number", "rationale"}));
  EXPECT_TRUE(schema["properties"].contains("number"));
  EXPECT_EQ(agent.exchanges().size(), 1u);
}

TEST_F(LlmOptimizerTest, ARejectedCandidateGoesBackWithTheCodecsDiagnosticsAndAFenceIsRead) {
  server.then(FakeServer::reply(answer("forty")));
  server.then(FakeServer::reply("Sorry:\n```num\n40\n```\n"));
  LlmOptimizer agent(std::make_unique<NumberCodec>(), "7", "a small number", *client, options());
  auto o = run(agent, 2);
  ASSERT_EQ(o.steps.size(), 2u);
  EXPECT_EQ(o.steps[1].candidate.artifact, "40\n");
  ASSERT_EQ(server.requests.size(), 2u);
  const json &msgs = server.requests[1]["messages"];
  ASSERT_EQ(msgs.size(), 4u);
  EXPECT_EQ(msgs[3]["content"], "Fix it: 'forty' is not a number");
  EXPECT_EQ(agent.exchanges().back().repairs, 1);
}

TEST_F(LlmOptimizerTest, TheLastAttemptIsShownUnderTheCodecsNameAndFence) {
  server.then(FakeServer::reply(answer("3")));  // worse than the start
  server.then(FakeServer::reply(answer("50")));
  LlmOptimizer agent(std::make_unique<NumberCodec>(), "7", "a small number", *client, options());
  auto o = run(agent, 3);
  ASSERT_EQ(server.requests.size(), 2u);
  std::string prompt = server.requests[1]["messages"][1]["content"];
  EXPECT_NE(prompt.find("not better than the current number\n```num\n3\n```"), std::string::npos) << prompt;
}

// A long candidate's failed attempt is shown as its difference from the best, which the prompt
// already shows in full; the attempts so far are one line each.
TEST_F(LlmOptimizerTest, TheLastAttemptIsItsDiffFromTheBestAndEveryAttemptIsOneLine) {
  ASSERT_TRUE(support::writeFileAtomically((prompts / "toy" / "trace.md").string(),
                                           "Current ({{score}}):\n```num\n{{number}}\n```\nTried:\n{{tried}}{{last}}",
                                           nullptr));
  std::string tail;
  for (int i = 0; i < 30; ++i)
    tail += "1\n";
  server.then(FakeServer::reply(json{{"number", "30\n" + tail}, {"rationale", "smaller\nfirst"}}.dump()));
  server.then(FakeServer::reply(answer("50")));
  LlmOptimizer agent(std::make_unique<NumberCodec>(), "70\n" + tail, "a long number", *client, options());
  run(agent, 3);
  ASSERT_EQ(server.requests.size(), 2u);
  std::string first = server.requests[0]["messages"][1]["content"];
  EXPECT_NE(first.find("Tried:\n- 0: the starting point: a long number -> score 0.700 (the current best)\n"),
            std::string::npos)
      << first;
  std::string prompt = server.requests[1]["messages"][1]["content"];
  EXPECT_NE(prompt.find("how it differs from it\n```diff\n--- current\n+++ attempt\n@@"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("-70\n+30\n"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("- 1: smaller first -> score 0.300 (-57.1% on step 0)\n"), std::string::npos) << prompt; // one line
  EXPECT_EQ(prompt.find(tail + "```\nWhat happened"), std::string::npos) << prompt; // not whole again
  // Every request's size is recorded with the candidate; with no budget none is set.
  const auto &ex = agent.exchanges()[1];
  std::string system = server.requests[1]["messages"][0]["content"];
  EXPECT_EQ(ex.promptBytes, system.size() + prompt.size());
  EXPECT_EQ(ex.toJson("trace")["prompt_bytes"], ex.promptBytes);
  EXPECT_FALSE(ex.toJson("trace").contains("prompt_budget"));
}

// The evidence section: the current best's findings still open, what the attempts since did to each,
// and the findings of an earlier best that the current best no longer has.
TEST_F(LlmOptimizerTest, TheEvidenceSaysWhatIsStillOpenAndWhatTheDecisionsClosed) {
  ASSERT_TRUE(support::writeFileAtomically((prompts / "toy" / "trace.md").string(),
                                           "```num\n{{number}}\n```\nTried:\n{{tried}}Evidence:\n{{evidence}}",
                                           nullptr));
  // Two rules: "odd" on odd numbers, "small" on numbers under 10 (with an explanation each).
  engine::FeedbackFn feedback = [](const engine::Candidate &c, const engine::EvalResult &r) {
    int n = std::stoi(c.artifact);
    json findings = json::array();
    if (n % 2)
      findings.push_back({{"rule", "odd"}, {"severity", "warning"}, {"evidence", "odd"}, {"explanation", "it is odd"}});
    if (n < 10)
      findings.push_back({{"rule", "small"}, {"severity", "info"}, {"evidence", "<10"}, {"explanation", "it is small"}});
    return hone::test::feedbackOf(json{{"execution", r.rawOutput}, {"findings", findings}});
  };
  server.then(FakeServer::reply(answer("4")));  // step 1: not odd, still small, worse
  server.then(FakeServer::reply(answer("3")));  // step 2: odd and small, worse
  server.then(FakeServer::reply(answer("11"))); // step 3: odd, not small: the new best
  server.then(FakeServer::reply(answer("12")));
  LlmOptimizer agent(std::make_unique<NumberCodec>(), "9", "nine", *client, options());
  run(agent, 5, feedback);
  ASSERT_EQ(server.requests.size(), 4u);
  auto prompt = [&](size_t i) { return server.requests[i]["messages"][1]["content"].get<std::string>(); };
  EXPECT_NE(prompt(0).find("Still open (the current best's analysis, step 0):\n"
                           "- [warning] it is odd (since step 0): no attempt has addressed it yet\n"
                           "- [info] it is small (since step 0): no attempt has addressed it yet\n"),
            std::string::npos)
      << prompt(0);
  EXPECT_NE(prompt(2).find("- [warning] it is odd (since step 0): 1 attempt left it; gone in step 1 "
                           "(score 0.040), none better than the best\n"
                           "- [info] it is small (since step 0): 2 attempts left it\n"),
            std::string::npos)
      << prompt(2);
  EXPECT_EQ(prompt(2).find("Closed"), std::string::npos) << prompt(2);
  // Step 3 answered "small": closed; "odd" is still open on the new best, first seen on step 0.
  EXPECT_NE(prompt(3).find("Still open (the current best's analysis, step 3):\n"
                           "- [warning] it is odd (since step 0): 1 attempt left it; gone in step 1 "
                           "(score 0.040), none better than the best\n"
                           "Closed (gone from the current best):\n"
                           "- [info] it is small (on step 0, then the best)\n"),
            std::string::npos)
      << prompt(3);
}

// At the exec feedback level the findings carry no explanation: the section says it shows none, not
// that there is none.
TEST_F(LlmOptimizerTest, TheEvidenceAtTheExecLevelSaysItIsNotShown) {
  ASSERT_TRUE(support::writeFileAtomically((prompts / "toy" / "trace.md").string(), "Evidence:\n{{evidence}}",
                                           nullptr));
  engine::FeedbackFn feedback = [](const engine::Candidate &, const engine::EvalResult &r) {
    return hone::test::feedbackOf(
        json{{"execution", r.rawOutput}, {"findings", json::array({{{"rule", "odd"}, {"evidence", "odd"}}})}});
  };
  server.then(FakeServer::reply(answer("4")));
  LlmOptimizer agent(std::make_unique<NumberCodec>(), "9", "nine", *client, options());
  run(agent, 2, feedback);
  ASSERT_EQ(server.requests.size(), 1u);
  EXPECT_EQ(server.requests[0]["messages"][1]["content"], "Evidence:\n(the analysis is not shown at this feedback level)\n");
}

/// A codec with a long manual that it can shorten.
class ManualCodec : public NumberCodec {
public:
  support::Expected<std::map<std::string, std::string>> promptValues() const override {
    return std::map<std::string, std::string>{{"goal", "the largest number below 100"},
                                              {"manual", std::string(3000, 'm')}};
  }
  std::vector<std::pair<std::string, std::string>>
  trimmings(const std::map<std::string, std::string> &values) const override {
    EXPECT_EQ(values.at("manual").size(), 3000u); // as rendered
    return {{"manual", "(the manual, left out)"}, {"goal", "a goal far longer than the one it would replace, kept"}};
  }
};

TEST_F(LlmOptimizerTest, APromptOverItsBudgetIsShortenedInTheCodecsOrderAndSaysSo) {
  ASSERT_TRUE(support::writeFileAtomically((prompts / "toy" / "trace.md").string(),
                                           "Goal: {{goal}}\n{{manual}}\n```num\n{{number}}\n```\n{{tried}}{{last}}",
                                           nullptr));
  server.then(FakeServer::reply(answer("42")));
  server.then(FakeServer::reply(answer("43")));
  LlmOptimizerOptions o = options();
  o.promptBudget = 1000;
  LlmOptimizer agent(std::make_unique<ManualCodec>(), "7", "a small number", *client, o);
  run(agent, 2);
  ASSERT_EQ(server.requests.size(), 1u);
  std::string prompt = server.requests[0]["messages"][1]["content"];
  EXPECT_NE(prompt.find("(the manual, left out)"), std::string::npos) << prompt;
  EXPECT_NE(prompt.find("Goal: the largest number below 100"), std::string::npos); // a longer form is never taken
  const auto &ex = agent.exchanges()[0];
  EXPECT_LE(ex.promptBytes, 1000u);
  EXPECT_EQ(ex.toJson("trace")["prompt_budget"], 1000);
  EXPECT_EQ(ex.toJson("trace")["trimmed"], json::array({"manual"}));
  // Within the budget nothing is shortened.
  o.promptBudget = 100000;
  LlmOptimizer roomy(std::make_unique<ManualCodec>(), "7", "a small number", *client, o);
  run(roomy, 2);
  ASSERT_EQ(server.requests.size(), 2u);
  EXPECT_NE(std::string(server.requests[1]["messages"][1]["content"]).find(std::string(3000, 'm')), std::string::npos);
  EXPECT_TRUE(roomy.exchanges()[0].trimmed.empty());
}

TEST_F(LlmOptimizerTest, AMissingPromptStopsTheAgentWithTheReason) {
  fs::remove(prompts / "toy" / "repair.md");
  LlmOptimizerOptions o = options();
  o.promptDirs = {prompts.string()};
  LlmOptimizer agent(std::make_unique<NumberCodec>(), "7", "a small number", *client, o);
  auto outcome = run(agent, 3);
  EXPECT_EQ(outcome.steps.size(), 1u); // the start only
  EXPECT_NE(agent.stopReason().find("repair"), std::string::npos) << agent.stopReason();
  EXPECT_TRUE(server.requests.empty());
}

/// Reads "no:REASON" as a reply that is no candidate at all (a diff that does not apply).
class RefusingCodec : public NumberCodec {
public:
  LlmReading read(const std::string &content, const std::string &base,
                  const support::Feedback &feedback) const override {
    auto j = json::parse(content);
    std::string n = j["number"];
    if (n.rfind("no:", 0) == 0) {
      LlmReading r;
      r.rejection = LlmRejection{n.substr(3), n.substr(3)};
      return r;
    }
    LlmReading r = NumberCodec::read(content, base, feedback);
    r.notes["base"] = base; // what the reply was read against
    return r;
  }
};

TEST_F(LlmOptimizerTest, AReplyThatIsNoCandidateIsRefusedWithItsReasonAndNeverEvaluated) {
  server.then(FakeServer::reply(answer("no:the diff does not apply")));
  server.then(FakeServer::reply(answer("no:the diff still does not apply")));
  server.then(FakeServer::reply(answer("60")));
  LlmOptimizerOptions o = options();
  o.repairs = 1;
  LlmOptimizer agent(std::make_unique<RefusingCodec>(), "7", "a small number", *client, o);
  auto outcome = run(agent, 3); // std::stod in the evaluator would throw on a refused reply
  ASSERT_EQ(outcome.steps.size(), 3u);
  const engine::Step &refused = outcome.steps[1];
  EXPECT_EQ(refused.result.status, engine::EvalStatus::Rejected);
  EXPECT_EQ(refused.result.error, "the diff still does not apply");
  EXPECT_NE(refused.candidate.artifact.find("no:the diff still"), std::string::npos); // what the model said
  EXPECT_EQ(std::string(server.requests[1]["messages"][3]["content"]), "Fix it: the diff does not apply");
  EXPECT_EQ(outcome.steps[2].candidate.artifact, "60");
  EXPECT_EQ(outcome.steps[2].candidate.notes["base"], "7"); // read against the best so far
}

/// The numbers as measured: the score and feedback are measurements, masked in the cache key.
class MeasuredCodec : public NumberCodec {
public:
  std::set<std::string> measuredValues() const override { return {"score", "feedback", "last"}; }
};

TEST_F(LlmOptimizerTest, MeasuredNumbersAreMaskedInTheCacheKeySoARemeasuredRunReplays) {
  fs::path cache = prompts / "cache.db";
  auto runWith = [&](std::unique_ptr<LlmCodec> codec, double scale) {
    llm::ClientConfig c;
    c.baseUrl = server.url();
    c.model = "test-model";
    c.cachePath = cache.string();
    auto made = llm::Client::make(c, nullptr, [](double) {});
    EXPECT_TRUE(made.ok());
    LlmOptimizer agent(std::move(codec), "7", "a small number", **made, options());
    engine::PoolEvaluator pool(
        [scale](const engine::Candidate &cand) {
          engine::EvalResult r;
          r.score = std::stod(cand.artifact) * scale; // a second measurement differs from the first
          r.rawOutput = fmt::format("took {:.4f} s", 1 / r.score);
          return r;
        },
        1);
    engine::LoopOptions o;
    o.budget = 2;
    engine::FeedbackFn feedback = [](const engine::Candidate &, const engine::EvalResult &r) {
      return hone::test::feedbackOf(json{{"execution", r.rawOutput}});
    };
    return engine::runLoop(agent, pool, feedback, nullptr, o);
  };
  server.then(FakeServer::reply(answer("42")));
  server.then(FakeServer::reply(answer("43")));
  runWith(std::make_unique<MeasuredCodec>(), 0.010);
  ASSERT_EQ(server.requests.size(), 1u);
  auto again = runWith(std::make_unique<MeasuredCodec>(), 0.011); // measured again: other numbers, same key
  EXPECT_EQ(server.requests.size(), 1u);
  ASSERT_EQ(again.steps.size(), 2u);
  EXPECT_EQ(again.steps[1].candidate.artifact, "42");
  runWith(std::make_unique<NumberCodec>(), 0.012); // a deterministic domain: the prompt itself is the key
  EXPECT_EQ(server.requests.size(), 2u);
  EXPECT_EQ(maskNumbers("1.93x in 0.071 s, 5e-3 of 12 runs; D1"), "#x in # s, # of # runs; D#");
}

/// A domain with an insight stage: it picks a word, the code stage is told the pick.
class InsightCodec : public NumberCodec {
public:
  std::string promptFolder() const override { return "toy2"; }
  bool hasInsight() const override { return true; }
  json insightSchema() const override { return {{"type", "object"}, {"required", {"pick"}}}; }
  support::Expected<std::pair<std::string, json>> readInsight(const std::string &content) const override {
    auto j = json::parse(content);
    if (!j.contains("pick") || j["pick"] != "grow")
      return support::Error{"pick one of: grow"};
    return std::make_pair(std::string("Chosen: grow"), json{{"pick", "grow"}});
  }
  std::string singleCallInsight() const override { return "Choose yourself."; }
};

TEST_F(LlmOptimizerTest, TwoAgentsTheInsightStageChoosesAndTheCodeStageIsToldItsChoice) {
  fs::create_directories(prompts / "toy2");
  for (const char *name : {"system.md", "repair.md", "duplicate.md"})
    fs::copy_file(prompts / "toy" / name, prompts / "toy2" / name);
  ASSERT_TRUE(support::writeFileAtomically((prompts / "toy2" / "trace.md").string(),
                                           "Improve {{number}}. {{insight}}", nullptr));
  ASSERT_TRUE(support::writeFileAtomically((prompts / "toy2" / "insight.md").string(), "What for {{number}}?", nullptr));
  server.then(FakeServer::reply(json{{"pick", "shrink"}}.dump())); // not an option: sent back
  server.then(FakeServer::reply(json{{"pick", "grow"}}.dump()));
  server.then(FakeServer::reply(answer("70")));
  LlmOptimizerOptions o = options();
  o.mode = "two-agent";
  LlmOptimizer agent(std::make_unique<InsightCodec>(), "7", "a small number", *client, o);
  auto outcome = run(agent, 2);
  ASSERT_EQ(outcome.steps.size(), 2u);
  ASSERT_EQ(server.requests.size(), 3u);
  EXPECT_EQ(std::string(server.requests[0]["messages"][1]["content"]), "What for 7?");
  EXPECT_NE(std::string(server.requests[1]["messages"][3]["content"]).find("pick one of: grow"), std::string::npos);
  EXPECT_EQ(std::string(server.requests[2]["messages"][1]["content"]), "Improve 7. Chosen: grow");
  const json &notes = outcome.steps[1].candidate.notes;
  EXPECT_EQ(notes["mode"], "two-agent");
  EXPECT_EQ(notes["insight"]["choice"]["pick"], "grow");
  EXPECT_EQ(notes["calls"], 3);
  // The single mode does not ask for insight; the codec's own words stand in.
  server.then(FakeServer::reply(answer("71")));
  LlmOptimizer single(std::make_unique<InsightCodec>(), "7", "a small number", *client, options());
  run(single, 2);
  EXPECT_EQ(std::string(server.requests.back()["messages"][1]["content"]), "Improve 7. Choose yourself.");
  // A domain without an insight stage has no two-agent mode.
  LlmOptimizer none(std::make_unique<NumberCodec>(), "7", "a small number", *client, o);
  run(none, 2);
  EXPECT_NE(none.stopReason().find("no two-agent mode"), std::string::npos) << none.stopReason();
}

} // namespace
} // namespace hone::tune
