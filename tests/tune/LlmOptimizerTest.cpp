// The LLM optimizer core with a domain that is not mapping: a toy codec whose
// candidates are numbers written as text, with prompts of its own. It shows
// what the core takes from the codec (the prompt folder, the candidate's name
// in prompts, replies and the reply schema, the fence, the domain's values,
// the repair check) and what it keeps for itself.
#include "llm/FakeServer.h"
#include "support/FileUtil.h"
#include "tune/LlmOptimizer.h"

#include <gtest/gtest.h>

#include <filesystem>

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
  engine::LoopOutcome run(LlmOptimizer &agent, size_t budget) {
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
    engine::FeedbackFn feedback = [](const engine::Candidate &, const engine::EvalResult &r) {
      return json{{"execution", r.rawOutput}};
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

} // namespace
} // namespace hone::tune
