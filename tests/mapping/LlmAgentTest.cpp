// The LLM agent against a scripted model on 127.0.0.1: what it sends (the
// feedback on the current mapper, the opro history in ascending order), how
// it reads replies, the repair loop, and a run that ends when the budget does.
#include "llm/FakeServer.h"
#include "mapping/Evaluators.h"
#include "mapping/LlmAgent.h"
#include "sim/SimTestUtil.h"

#include <gtest/gtest.h>

namespace hone::mapping {
namespace {

using llm::test::FakeServer;
using nlohmann::json;
using sim::test::expertText;

std::string answer(const std::string &mapper, const std::string &why) {
  return json{{"mapper", mapper}, {"rationale", why}}.dump();
}

struct LlmAgentTest : ::testing::Test {
  FakeServer server;
  std::unique_ptr<sim::test::Setup> setup = sim::test::Setup::shipped("circuit");
  ModelEvaluator eval{setup->machine, setup->app, *setup->program};
  std::unique_ptr<llm::Client> client;
  void SetUp() override {
    auto ref = eval.evaluate(engine::Candidate::make(expertText("circuit")));
    eval.setBaseline(ref.metrics["throughput"]);
    llm::ClientConfig c;
    c.baseUrl = server.url();
    c.model = "test-model";
    c.tokenBudget = 1000;
    auto made = llm::Client::make(c, nullptr, [](double) {});
    ASSERT_TRUE(made.ok());
    client = std::move(*made);
  }
  engine::LoopOutcome run(LlmAgent &agent, size_t budget) {
    engine::PoolEvaluator pool([&](const engine::Candidate &c) { return eval.evaluate(c); }, 1);
    engine::LoopOptions o;
    o.budget = budget;
    engine::FeedbackFn feedback = [](const engine::Candidate &, const engine::EvalResult &r) {
      return json{{"execution", r.rawOutput}, {"error", r.error}};
    };
    return engine::runLoop(agent, pool, feedback, nullptr, o);
  }
  std::string prompt(size_t i) const { return server.requests.at(i)["messages"][1]["content"].get<std::string>(); }
};

TEST_F(LlmAgentTest, TraceSendsTheCurrentMapperAndItsFeedback) {
  std::string better = expertText("circuit") + "Region distribute_charge rp_shared GPU FBMEM;\n";
  server.then(FakeServer::reply(answer(better, "distribute_charge waits on zero-copy memory"), 100, 50));
  LlmAgent agent(setup->app, setup->machine, expertText("circuit"), "the expert", *client, {});
  auto o = run(agent, 2);
  ASSERT_EQ(o.steps.size(), 2u);
  EXPECT_EQ(o.steps[0].candidate.artifact, expertText("circuit"));
  EXPECT_EQ(o.steps[1].candidate.artifact, better);
  EXPECT_EQ(o.steps[1].candidate.rationale, "llm (trace): distribute_charge waits on zero-copy memory");
  EXPECT_GT(o.steps[1].result.score, 1.0);
  ASSERT_EQ(server.requests.size(), 1u);
  std::string p = prompt(0);
  EXPECT_NE(p.find("IndexTaskMap calculate_new_currents"), std::string::npos); // the current mapper
  EXPECT_NE(p.find("time 0.0232"), std::string::npos);                       // its feedback
  EXPECT_NE(p.find("distribute_charge [GPU,CPU]"), std::string::npos);        // the app's tasks
  EXPECT_NE(p.find("Region T R K M1,M2;"), std::string::npos);                // the DSL reference
  EXPECT_EQ(server.requests[0]["response_format"]["type"], "json_schema");
  EXPECT_EQ(agent.exchanges().back().usage.promptTokens, 100);
}

TEST_F(LlmAgentTest, AMapperThatDoesNotCheckGoesBackWithTheDiagnostics) {
  server.then(FakeServer::reply(answer("Task * GPUU;\n", "try GPUs")));
  server.then(FakeServer::reply("Sorry! Here it is:\n```dsl\nTask * GPU,CPU;\n```\n")); // not JSON: a fenced block
  LlmAgent agent(setup->app, setup->machine, expertText("circuit"), "the expert", *client, {});
  auto o = run(agent, 2);
  ASSERT_EQ(o.steps.size(), 2u);
  EXPECT_EQ(o.steps[1].candidate.artifact, "Task * GPU,CPU;\n");
  EXPECT_TRUE(o.steps[1].result.ok()) << o.steps[1].result.error;
  ASSERT_EQ(server.requests.size(), 2u);
  const json &msgs = server.requests[1]["messages"];
  ASSERT_EQ(msgs.size(), 4u); // system, prompt, the bad reply, the diagnostics
  EXPECT_EQ(msgs[2]["role"], "assistant");
  std::string fix = msgs[3]["content"];
  EXPECT_NE(fix.find("unknown processor kind 'GPUU'"), std::string::npos) << fix;
  EXPECT_NE(fix.find("\"line\": 1"), std::string::npos);
  EXPECT_EQ(agent.exchanges().back().repairs, 1);
}

TEST_F(LlmAgentTest, RepairsAreBoundedAndTheLastAttemptFailsAsData) {
  for (int i = 0; i < 3; ++i)
    server.then(FakeServer::reply(answer("Task * GPUU;\n", "again")));
  LlmAgentOptions options;
  options.repairs = 2;
  LlmAgent agent(setup->app, setup->machine, expertText("circuit"), "the expert", *client, options);
  auto o = run(agent, 2);
  ASSERT_EQ(o.steps.size(), 2u);
  EXPECT_EQ(o.steps[1].result.status, engine::EvalStatus::Rejected);
  EXPECT_EQ(server.requests.size(), 3u);
}

TEST_F(LlmAgentTest, OproListsTheBestMappersInAscendingOrder) {
  std::string slow = expertText("circuit") + "Region * * GPU ZCMEM;\n";
  std::string fast = expertText("circuit") + "Region distribute_charge rp_shared GPU FBMEM;\n";
  server.then(FakeServer::reply(answer(slow, "a")));
  server.then(FakeServer::reply(answer(fast, "b")));
  server.then(FakeServer::reply(answer(fast + "# same\n", "c")));
  LlmAgentOptions options;
  options.optimizer = "opro";
  LlmAgent agent(setup->app, setup->machine, expertText("circuit"), "the expert", *client, options);
  auto o = run(agent, 4);
  ASSERT_EQ(server.requests.size(), 3u);
  std::string p = prompt(2);
  size_t s = p.find("Region * * GPU ZCMEM;"), e = p.find("IndexTaskMap calculate_new_currents"),
         f = p.find("Region distribute_charge rp_shared GPU FBMEM;");
  ASSERT_NE(s, std::string::npos);
  ASSERT_NE(f, std::string::npos);
  EXPECT_LT(s, f); // the slow one first, the fast one last
  EXPECT_LT(e, f);
  EXPECT_EQ(o.steps[3].candidate.rationale, "llm (opro): c");
}

TEST_F(LlmAgentTest, TheRunEndsWhenTheModelCannotBeAsked) {
  server.then(FakeServer::reply(answer(expertText("circuit") + "# one\n", "x"), 900, 200)); // uses the budget
  LlmAgent agent(setup->app, setup->machine, expertText("circuit"), "the expert", *client, {});
  auto o = run(agent, 5);
  EXPECT_EQ(o.progress.evaluations, 2u);
  EXPECT_EQ(o.stopReason, "the strategy has nothing more to propose");
  EXPECT_NE(agent.exchanges().back().error.find("token budget"), std::string::npos);
}

} // namespace
} // namespace hone::mapping
