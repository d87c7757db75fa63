// The LLM agent against a scripted model on 127.0.0.1: what it sends (the
// feedback on the current mapper, the opro history in ascending order), how
// it reads replies, the repair loop, and a run that ends when the budget does.
#include "llm/FakeServer.h"
#include "mapping/Evaluators.h"
#include "mapping/LlmAgent.h"
#include "sim/SimTestUtil.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

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
  engine::LoopOutcome run(LlmAgent &agent, size_t budget, size_t batch = 1) {
    engine::PoolEvaluator pool([&](const engine::Candidate &c) { return eval.evaluate(c); }, batch);
    engine::LoopOptions o;
    o.budget = budget;
    o.batch = batch;
    engine::FeedbackFn feedback = [](const engine::Candidate &, const engine::EvalResult &r) {
      return hone::test::feedbackOf(json{{"execution", r.rawOutput}, {"error", r.error}});
    };
    return engine::runLoop(agent, pool, feedback, nullptr, o);
  }
  std::string prompt(size_t i) const { return server.requests.at(i)["messages"][1]["content"].get<std::string>(); }
};

TEST_F(LlmAgentTest, TraceSendsTheCurrentMapperAndItsFeedback) {
  std::string better = expertText("circuit") + "Region distribute_charge rp_shared GPU FBMEM;\n";
  server.then(FakeServer::reply(answer(better, "distribute_charge waits on zero-copy memory"), 100, 50));
  LlmAgentOptions options;
  options.program = &*setup->program;
  LlmAgent agent(setup->app, setup->machine, expertText("circuit"), "the expert", *client, options);
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
  EXPECT_NE(p.find("- FBMEM (15 GB per GPU), reachable from GPU\n"), std::string::npos) << p; // the machine
  EXPECT_NE(p.find("Regions (total size; fields):\n- "), std::string::npos);   // sizes at this problem size
  EXPECT_NE(p.find("Point tasks per run"), std::string::npos);
  EXPECT_NE(p.find("- distribute_charge: "), std::string::npos);
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

TEST_F(LlmAgentTest, HostileMappersAreRepairedOrFailAsDataNeverACrash) {
  // Parentheses 20,000 deep go back with the located error; a tuple bomb checks, then fails as data.
  std::string deep = "Task * GPU;\nx = " + std::string(20000, '(') + "1" + std::string(20000, ')') + ";\n";
  std::string bomb = expertText("circuit") + "a0 = (1, 2);\n";
  for (int i = 1; i <= 40; ++i)
    bomb += fmt::format("a{} = (*a{}, *a{});\n", i, i - 1, i - 1);
  server.then(FakeServer::reply(answer(deep, "deeper")));
  server.then(FakeServer::reply(answer(bomb, "bigger")));
  LlmAgent agent(setup->app, setup->machine, expertText("circuit"), "the expert", *client, {});
  auto o = run(agent, 2);
  ASSERT_EQ(o.steps.size(), 2u);
  ASSERT_EQ(server.requests.size(), 2u);
  std::string fix = server.requests[1]["messages"][3]["content"];
  EXPECT_NE(fix.find("nested deeper than 200 levels"), std::string::npos) << fix.substr(0, 2000);
  EXPECT_LT(fix.size(), 20000u); // the diagnostics quote a window of the line, not 40,000 characters
  EXPECT_FALSE(o.steps[1].result.ok());
  EXPECT_NE(o.steps[1].result.error.find("a tuple of more than 65536 items"), std::string::npos)
      << o.steps[1].result.error;
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
  std::string slow = "Region * * GPU ZCMEM;\n" + expertText("circuit"); // the first statement wins
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
  EXPECT_NE(o.stopReason.find("the LLM agent stopped: the token budget of 1000 is used up"), std::string::npos)
      << o.stopReason;
  EXPECT_NE(agent.exchanges().back().error.find("token budget"), std::string::npos);
}

TEST_F(LlmAgentTest, TraceShowsTheLastAttemptWhenItWasNotTheBestAndSeedsEachRequest) {
  std::string slow = "Region * * GPU ZCMEM;\n" + expertText("circuit"); // the first statement wins
  server.then(FakeServer::reply(answer(slow, "everything in zero-copy")));
  server.then(FakeServer::reply(answer(expertText("circuit") + "# two\n", "y")));
  LlmAgentOptions options;
  options.seed = 40;
  LlmAgent agent(setup->app, setup->machine, expertText("circuit"), "the expert", *client, options);
  auto o = run(agent, 3);
  ASSERT_EQ(server.requests.size(), 2u);
  EXPECT_LT(o.steps[1].result.score, 1.0);
  EXPECT_EQ(prompt(0).find("Your last attempt"), std::string::npos);
  std::string p = prompt(1);
  size_t last = p.find("Your last attempt (score 0.");
  ASSERT_NE(last, std::string::npos) << p;
  EXPECT_NE(p.find("Region * * GPU ZCMEM;", last), std::string::npos);
  EXPECT_EQ(server.requests[0]["seed"], 40);
  EXPECT_EQ(server.requests[1]["seed"], 41);
  // The candidate carries the conversation that made it.
  const json &notes = o.steps[1].candidate.notes;
  EXPECT_EQ(notes["optimizer"], "trace");
  EXPECT_EQ(notes["seed"], 40);
  EXPECT_EQ(notes["messages"].size(), 3u);
  EXPECT_EQ(notes["messages"][2]["role"], "assistant");
  EXPECT_EQ(notes["usage"]["prompt_tokens"], 10);
  EXPECT_EQ(notes["calls"], 1);
  EXPECT_TRUE(o.steps[0].candidate.notes.is_null()); // the start was not asked for
}

TEST_F(LlmAgentTest, AMapperAlreadyTriedGoesBackOnce) {
  std::string other = expertText("circuit") + "# other\n";
  server.then(FakeServer::reply(answer(expertText("circuit"), "the same again")));
  server.then(FakeServer::reply(answer(other, "a change")));
  LlmAgent agent(setup->app, setup->machine, expertText("circuit"), "the expert", *client, {});
  auto o = run(agent, 2);
  ASSERT_EQ(server.requests.size(), 2u);
  const json &msgs = server.requests[1]["messages"];
  ASSERT_EQ(msgs.size(), 4u);
  EXPECT_NE(msgs[3]["content"].get<std::string>().find("already tried: it scored 1.000"), std::string::npos)
      << msgs[3]["content"];
  EXPECT_EQ(o.steps[1].candidate.artifact, other);
}

TEST_F(LlmAgentTest, AModelThatOnlyRepeatsItselfIsNotAskedForever) {
  for (int i = 0; i < 20; ++i)
    server.then(FakeServer::reply(answer(expertText("circuit"), "the same")));
  LlmAgentOptions options;
  options.repairs = 1;
  LlmAgent agent(setup->app, setup->machine, expertText("circuit"), "the expert", *client, options);
  auto o = run(agent, 10);
  EXPECT_EQ(o.progress.evaluations, 1u);
  EXPECT_EQ(server.requests.size(), 6u); // 3 candidates x (the ask + 1 follow-up)
  EXPECT_NE(o.stopReason.find("already tried 3 times in a row"), std::string::npos) << o.stopReason;
}

TEST_F(LlmAgentTest, ABatchAsksTogetherAndKeepsTheSeedsOrder) {
  // Each reply names the seed it was asked with; the first request is answered last, so replies
  // arrive out of order; the candidates still come in the order of their seeds.
  std::atomic<int> inFlight{0}, peak{0}, arrived{0};
  for (int i = 0; i < 3; ++i)
    server.then([&](const httplib::Request &req, httplib::Response &res) {
      int now = ++inFlight;
      ++arrived;
      for (int p = peak; now > p && !peak.compare_exchange_weak(p, now);) {
      }
      int64_t seed = json::parse(req.body)["seed"].get<int64_t>();
      // Wait (up to 2 s) for the batch's other request, then answer seed 10 last.
      for (int waited = 0; arrived < 2 && waited < 2000; waited += 5)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      if (seed == 10)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::string mapper = expertText("circuit") + fmt::format("# seed {}\n", seed);
      FakeServer::reply(answer(mapper, fmt::format("seed {}", seed)))(req, res);
      --inFlight;
    });
  LlmAgentOptions options;
  options.seed = 10;
  LlmAgent agent(setup->app, setup->machine, expertText("circuit"), "the expert", *client, options);
  auto o = run(agent, 4, 3); // the start and two asks, then one more ask
  ASSERT_EQ(o.steps.size(), 4u);
  EXPECT_EQ(o.steps[1].candidate.rationale, "llm (trace): seed 10");
  EXPECT_EQ(o.steps[2].candidate.rationale, "llm (trace): seed 11");
  EXPECT_EQ(o.steps[3].candidate.rationale, "llm (trace): seed 12");
  EXPECT_GE(peak.load(), 2); // the first batch's two requests were in flight together
}

TEST_F(LlmAgentTest, AReplyCutAtTheTokenLimitIsToldSo) {
  server.then([](const httplib::Request &, httplib::Response &res) {
    json j{{"choices", {{{"message", {{"role", "assistant"}, {"content", "{\"mapper\": \"Task * GPU,CPU;\\nRegion * * GP"}}},
                         {"finish_reason", "length"}}}},
           {"usage", {{"prompt_tokens", 10}, {"completion_tokens", 64}}}};
    res.set_content(j.dump(), "application/json");
  });
  server.then(FakeServer::reply(answer("Task * GPU,CPU;\n", "shorter")));
  LlmAgentOptions options;
  options.maxTokens = 64;
  LlmAgent agent(setup->app, setup->machine, expertText("circuit"), "the expert", *client, options);
  auto o = run(agent, 2);
  ASSERT_EQ(server.requests.size(), 2u);
  EXPECT_EQ(server.requests[0]["max_tokens"], 64);
  std::string fix = server.requests[1]["messages"][3]["content"];
  EXPECT_NE(fix.find("cut off at the token limit"), std::string::npos) << fix;
  EXPECT_EQ(o.steps[1].candidate.notes["finish_reasons"], json({"length", "stop"}));
  EXPECT_TRUE(o.steps[1].result.ok()) << o.steps[1].result.error;
}

TEST_F(LlmAgentTest, MalformedJsonAndBareTextAreReadTolerantly) {
  // A cut JSON object is not JSON and has no fenced block: the text is the mapper, which does not
  // check; the repair gets a bare mapper with no fences at all, which checks.
  server.then(FakeServer::reply("{\"mapper\": \"Task * GPU,CPU;\n"));
  server.then(FakeServer::reply("Task * GPU,CPU;\nRegion * * GPU FBMEM;\n"));
  LlmAgent agent(setup->app, setup->machine, expertText("circuit"), "the expert", *client, {});
  auto o = run(agent, 2);
  ASSERT_EQ(o.steps.size(), 2u);
  EXPECT_EQ(o.steps[1].candidate.artifact, "Task * GPU,CPU;\nRegion * * GPU FBMEM;\n");
  EXPECT_TRUE(o.steps[1].result.ok()) << o.steps[1].result.error;
  EXPECT_EQ(o.steps[1].candidate.rationale, "llm (trace): no rationale given");
  EXPECT_EQ(agent.exchanges().back().repairs, 1);
}

TEST_F(LlmAgentTest, KShotSamplesFromExamplesWithoutFeedbackOrAStart) {
  server.then(FakeServer::reply(answer("Task * GPU,CPU;\n", "GPUs first")));
  server.then(FakeServer::reply(answer("Task * GPU,CPU;\nRegion * * GPU FBMEM;\n", "framebuffer")));
  LlmAgentOptions options;
  options.optimizer = "1-shot";
  options.examples = {{"stencil (example)", "Task * GPU;\n# the stencil example\n"},
                      {"summa (example)", "# the summa example\n"}};
  LlmAgent agent(setup->app, setup->machine, expertText("circuit"), "the expert", *client, options);
  auto o = run(agent, 2);
  ASSERT_EQ(o.steps.size(), 2u);
  EXPECT_EQ(o.steps[0].candidate.artifact, "Task * GPU,CPU;\n"); // no start: the first step is a sample
  EXPECT_EQ(o.steps[0].candidate.rationale, "llm (1-shot): GPUs first");
  EXPECT_TRUE(o.steps[1].candidate.parent.empty());
  for (size_t i = 0; i < 2; ++i) {
    std::string p = prompt(i);
    EXPECT_NE(p.find("the stencil example"), std::string::npos);
    EXPECT_EQ(p.find("the summa example"), std::string::npos); // one shot only
    EXPECT_EQ(p.find("Execution output"), std::string::npos);  // no feedback
    EXPECT_EQ(p.find("IndexTaskMap calculate_new_currents"), std::string::npos); // not the expert mapper
  }
  EXPECT_EQ(prompt(0), prompt(1)); // independent samples: the same prompt, another seed
  EXPECT_NE(server.requests[0]["seed"], server.requests[1]["seed"]);
}

TEST(LlmAgentOptions, OptimizerNames) {
  EXPECT_EQ(*parseOptimizer("trace"), -1);
  EXPECT_EQ(*parseOptimizer("opro"), -1);
  EXPECT_EQ(*parseOptimizer("0-shot"), 0);
  EXPECT_EQ(*parseOptimizer("5-shot"), 5);
  for (const char *bad : {"Trace", "-shot", "x-shot", "21-shot", "5shot", "100-shot", ""})
    EXPECT_FALSE(parseOptimizer(bad).ok()) << bad;
  EXPECT_NE(parseOptimizer("tracer").error().message.find("trace, opro, K-shot"), std::string::npos);
}

TEST(LlmAgentFeedback, TheLevelDecidesWhatTheModelReads) {
  json exec{{"execution", "time 0.5 s"},
            {"findings", json::array({{{"rule", "slow-memory"}, {"severity", "warning"}, {"evidence", "E"}}})}};
  json explain = exec;
  explain["findings"][0]["explanation"] = "Reading its data dominates";
  json suggest = explain;
  suggest["findings"][0]["suggestion"] = "Use FBMEM";
  std::string a = feedbackText(hone::test::feedbackOf(exec)), b = feedbackText(hone::test::feedbackOf(explain)),
              c = feedbackText(hone::test::feedbackOf(suggest));
  EXPECT_NE(a.find("time 0.5 s"), std::string::npos);
  EXPECT_EQ(a.find("Analysis"), std::string::npos);
  EXPECT_NE(b.find("[warning] Reading its data dominates"), std::string::npos);
  EXPECT_EQ(b.find("Suggestion"), std::string::npos);
  EXPECT_NE(c.find("Suggestion: Use FBMEM"), std::string::npos);
  EXPECT_EQ(feedbackText(support::Feedback{}), "(no feedback)");
}

} // namespace
} // namespace hone::mapping
