// The LLM client against a scripted OpenAI-compatible server on 127.0.0.1:
// what hone sends, retries and their delays, structured-output fallback,
// timeouts, cut bodies, errors that must not be retried, the key kept
// secret, budgets, bounded concurrency, and the cache with exact replay.
#include "llm/Client.h"
#include "store/Store.h"
#include "support/Sqlite.h"
#include "llm/FakeServer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <filesystem>
#include <thread>

namespace hone::llm {
namespace {

using nlohmann::json;
using test::FakeServer;
ChatRequest ask(const std::string &text, Format format = Format::Text) {
  ChatRequest r;
  r.messages = {{"system", "You write mappers."}, {"user", text}};
  r.format = format;
  if (format == Format::JsonSchema)
    r.schema = {{"type", "object"}, {"properties", {{"mapper", {{"type", "string"}}}}}, {"required", {"mapper"}}};
  return r;
}

struct Fixture : ::testing::Test {
  FakeServer server;
  std::vector<double> slept;
  ClientConfig config() {
    ClientConfig c;
    c.baseUrl = server.url() + "/";
    c.model = "test-model";
    c.apiKey = "sk-secret-1234";
    c.timeoutS = 5;
    return c;
  }
  std::unique_ptr<Client> client(ClientConfig c) {
    auto made = Client::make(std::move(c), nullptr, [this](double s) { slept.push_back(s); });
    EXPECT_TRUE(made.ok()) << (made.ok() ? "" : made.error().message);
    return std::move(*made);
  }
};

TEST_F(Fixture, SendsTheRequestAndCountsTokens) {
  server.then(FakeServer::reply("Task * GPU;", 120, 30));
  auto c = client(config());
  auto r = c->chat(ask("improve this", Format::JsonSchema));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->content, "Task * GPU;");
  EXPECT_EQ(r->usage.promptTokens, 120);
  EXPECT_EQ(r->attempts, 1);
  ASSERT_EQ(server.requests.size(), 1u);
  const json &sent = server.requests[0];
  EXPECT_EQ(sent["model"], "test-model");
  EXPECT_EQ(sent["messages"][1]["content"], "improve this");
  EXPECT_EQ(sent["response_format"]["type"], "json_schema");
  EXPECT_EQ(sent["response_format"]["json_schema"]["strict"], true);
  EXPECT_EQ(server.authorization[0], "Bearer sk-secret-1234");
  EXPECT_EQ(c->totals().completionTokens, 30);
}

TEST_F(Fixture, TheSeedIsSentAndDistinguishesCacheEntries) {
  auto c = client(config());
  ChatRequest a = ask("improve this"), b = a;
  a.seed = 1;
  b.seed = 2;
  EXPECT_NE(c->cacheKey(a), c->cacheKey(b));
  EXPECT_NE(c->cacheKey(a), c->cacheKey(ask("improve this")));
  server.then(FakeServer::reply("x"));
  ASSERT_TRUE(c->chat(b).ok());
  EXPECT_EQ(server.requests.at(0)["seed"], 2);
  server.then(FakeServer::reply("y"));
  ASSERT_TRUE(c->chat(ask("no seed")).ok());
  EXPECT_FALSE(server.requests.at(1).contains("seed"));
}

TEST_F(Fixture, RetriesA429AfterTheServersRetryAfter) {
  server.then(FakeServer::status(429, R"({"error":{"message":"slow down"}})", {{"Retry-After", "3"}}));
  server.then(FakeServer::reply("ok"));
  auto c = client(config());
  auto r = c->chat(ask("x"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->attempts, 2);
  EXPECT_EQ(slept, (std::vector<double>{3.0}));
}

TEST_F(Fixture, RetriesServerErrorsWithJitteredExponentialBackoff) {
  server.then(FakeServer::status(500, "{}"));
  server.then(FakeServer::status(503, "{}"));
  server.then(FakeServer::reply("ok"));
  auto c = client(config());
  auto r = c->chat(ask("x"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(slept.size(), 2u);
  EXPECT_GE(slept[0], 0.5 * 0.75);
  EXPECT_LE(slept[0], 0.5);
  EXPECT_GE(slept[1], 1.0 * 0.75);
  EXPECT_LE(slept[1], 1.0);
}

TEST_F(Fixture, GivesUpAfterTheRetriesWithTheLastError) {
  for (int i = 0; i < 3; ++i)
    server.then(FakeServer::status(502, R"({"error":"bad gateway"})"));
  auto c = client(config());
  auto r = c->chat(ask("x"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("HTTP 502: bad gateway (after 3 attempts)"), std::string::npos)
      << r.error().message;
}

TEST_F(Fixture, NeverRetriesAWrongModelAndKeepsTheKeySecret) {
  server.then(FakeServer::status(404, R"({"error":{"message":"model 'test-model' not found for key sk-secret-1234"}})"));
  auto c = client(config());
  auto r = c->chat(ask("x"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(server.requests.size(), 1u);
  EXPECT_NE(r.error().message.find("model 'test-model' not found"), std::string::npos);
  EXPECT_EQ(r.error().message.find("sk-secret-1234"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("[key]"), std::string::npos);
}

TEST_F(Fixture, AReasoningModelThatRefusesATemperatureIsAskedWithoutOne) {
  server.then(FakeServer::status(
      400, R"({"error":{"message":"Unsupported value: 'temperature' does not support 0.2 with this model.",)"
           R"("param":"temperature","code":"unsupported_value"}})"));
  server.then(FakeServer::reply("first"));
  server.then(FakeServer::reply("second"));
  auto c = client(config());
  ChatRequest r = ask("x");
  r.seed = 3;
  ASSERT_EQ(c->chat(r)->content, "first");
  ASSERT_EQ(server.requests.size(), 2u);
  EXPECT_TRUE(server.requests[0].contains("temperature"));
  EXPECT_FALSE(server.requests[1].contains("temperature"));
  EXPECT_EQ(server.requests[1]["seed"], 3); // only the refused parameter is left out
  ASSERT_EQ(c->chat(ask("y"))->content, "second"); // remembered: no second refusal
  EXPECT_FALSE(server.requests[2].contains("temperature"));
  EXPECT_TRUE(c->delays().empty()); // not retries
  // A reasoning model wants max_completion_tokens instead of max_tokens.
  server.then(FakeServer::status(
      400, R"({"error":{"message":"Unsupported parameter: 'max_tokens' is not supported with this model. Use )"
           R"('max_completion_tokens' instead.","param":"max_tokens"}})"));
  server.then(FakeServer::reply("third"));
  ChatRequest limited = ask("w");
  limited.maxTokens = 4000;
  ASSERT_EQ(c->chat(limited)->content, "third");
  ASSERT_EQ(server.requests.size(), 5u);
  EXPECT_EQ(server.requests[3]["max_tokens"], 4000);
  EXPECT_FALSE(server.requests[4].contains("max_tokens"));
  EXPECT_EQ(server.requests[4]["max_completion_tokens"], 4000);
  // Other 400s are still errors, not retried.
  server.then(FakeServer::status(400, R"({"error":{"message":"messages: too long","param":"messages"}})"));
  auto bad = c->chat(ask("z"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("HTTP 400: messages: too long"), std::string::npos) << bad.error().message;
  // An error body with fields of the wrong types is an error too, not a crash.
  server.then(FakeServer::status(400, R"({"error":{"message":5,"param":["max_tokens"]}})"));
  EXPECT_FALSE(c->chat(ask("w")).ok());
}

TEST_F(Fixture, FallsBackFromJsonSchemaToJsonObjectToText) {
  server.then(FakeServer::status(400, R"({"error":{"message":"response_format json_schema is not supported"}})"));
  server.then(FakeServer::status(400, R"({"error":{"message":"unknown response_format type json_object"}})"));
  server.then(FakeServer::reply("plain"));
  server.then(FakeServer::reply("plain again"));
  auto c = client(config());
  auto r = c->chat(ask("x", Format::JsonSchema));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->format, Format::Text);
  ASSERT_EQ(server.requests.size(), 3u);
  EXPECT_EQ(server.requests[1]["response_format"]["type"], "json_object");
  EXPECT_FALSE(server.requests[2].contains("response_format"));
  // The server's refusal is remembered: the next request goes out as text at once.
  ASSERT_TRUE(c->chat(ask("y", Format::JsonSchema)).ok());
  EXPECT_FALSE(server.requests[3].contains("response_format"));
  EXPECT_TRUE(slept.empty()); // downgrades are not retries
}

TEST_F(Fixture, AReplyThatNeverComesTimesOut) {
  server.then([](const httplib::Request &, httplib::Response &res) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    res.set_content("{}", "application/json");
  });
  server.then(FakeServer::reply("late but fine"));
  auto cfg = config();
  cfg.timeoutS = 0.3;
  auto c = client(cfg);
  auto start = std::chrono::steady_clock::now();
  auto r = c->chat(ask("x"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->content, "late but fine");
  EXPECT_EQ(slept.size(), 1u);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.4);
}

TEST_F(Fixture, ACutBodyIsRetried) {
  server.then(FakeServer::status(200, R"({"choices": [{"message": {"content": "Task)"));
  server.then(FakeServer::reply("whole"));
  auto c = client(config());
  auto r = c->chat(ask("x"));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->content, "whole");
  EXPECT_EQ(r->attempts, 2);
}

TEST_F(Fixture, AnUnreachableServerIsAConnectionError) {
  auto cfg = config();
  cfg.baseUrl = "http://127.0.0.1:1/v1";
  cfg.maxRetries = 1;
  auto c = client(cfg);
  auto r = c->chat(ask("x"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("cannot reach http://127.0.0.1:1/v1/chat/completions"), std::string::npos)
      << r.error().message;
  EXPECT_EQ(slept.size(), 1u);
}

TEST_F(Fixture, BudgetsStopFurtherCalls) {
  auto cfg = config();
  cfg.tokenBudget = 20;
  cfg.pricePromptPerMTok = 1e6; // 1 per token, to make the arithmetic visible
  server.then(FakeServer::reply("a", 10, 5));
  server.then(FakeServer::reply("b", 10, 5));
  auto c = client(cfg);
  ASSERT_TRUE(c->chat(ask("1")).ok());
  auto second = c->chat(ask("2"));
  ASSERT_TRUE(second.ok());
  EXPECT_DOUBLE_EQ(second->cost, 10.0);
  auto third = c->chat(ask("3"));
  ASSERT_FALSE(third.ok());
  EXPECT_NE(third.error().message.find("token budget of 20"), std::string::npos);
  EXPECT_EQ(server.requests.size(), 2u);
  EXPECT_DOUBLE_EQ(c->cost(), 20.0);

  auto money = config();
  money.moneyBudget = 5;
  money.pricePromptPerMTok = 1e6;
  server.then(FakeServer::reply("c", 10, 5));
  auto m = client(money);
  ASSERT_TRUE(m->chat(ask("4")).ok());
  EXPECT_FALSE(m->chat(ask("5")).ok());
}

TEST_F(Fixture, AReplyLargerThanTheLimitIsAFailedReplyNotRetried) {
  auto cfg = config();
  cfg.maxReplyBytes = 100000;
  server.then(FakeServer::reply(std::string(400000, 'x')));
  server.then(FakeServer::reply("small"));
  auto c = client(cfg);
  auto big = c->chat(ask("1"));
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("larger than 100000 bytes"), std::string::npos) << big.error().message;
  EXPECT_EQ(server.requests.size(), 1u); // not retried
  auto small = c->chat(ask("2"));
  ASSERT_TRUE(small.ok()) << small.error().message;
  EXPECT_EQ(small->content, "small");
}

TEST_F(Fixture, AReplyNestedTooDeepIsAFailedReplyNotACrash) {
  // The content an object nested 200,000 deep: dumping or copying it recursed until the stack ran out.
  std::string deep = "{\"choices\": [{\"message\": {\"content\": " + std::string(200000, '[') +
                     std::string(200000, ']') + "}, \"finish_reason\": \"stop\"}]}";
  server.then(FakeServer::status(200, deep));
  server.then(FakeServer::status(500, "{\"error\": " + std::string(200000, '[') + std::string(200000, ']') + "}"));
  auto cfg = config();
  cfg.maxRetries = 0;
  auto c = client(cfg);
  auto r = c->chat(ask("1"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("nested 200004 levels deep; hone reads JSON at most 256 deep"), std::string::npos)
      << r.error().message;
  auto e = c->chat(ask("2")); // a server's error message nested as deep
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message.find("HTTP 500"), std::string::npos) << e.error().message;
}

TEST_F(Fixture, AbsurdTokenCountsCannotDefeatTheBudget) {
  auto usage = [](json prompt, json completion) {
    return [=](const httplib::Request &, httplib::Response &res) {
      json j{{"choices", {{{"message", {{"role", "assistant"}, {"content", "ok"}}}, {"finish_reason", "stop"}}}},
             {"usage", {{"prompt_tokens", prompt}, {"completion_tokens", completion}}}};
      res.set_content(j.dump(), "application/json");
    };
  };
  auto cfg = config();
  cfg.tokenBudget = 1000;
  server.then(usage(-500, "many"));  // negative, not a number: counted as 0
  server.then(usage(1e308, 3.5));     // a count no server sends: counted as 10^12, the budget is spent
  server.then(FakeServer::reply("never"));
  auto c = client(cfg);
  auto first = c->chat(ask("1"));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->usage.promptTokens, 0);
  EXPECT_EQ(first->usage.completionTokens, 0);
  auto second = c->chat(ask("2"));
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->usage.promptTokens, 1'000'000'000'000);
  EXPECT_EQ(second->usage.completionTokens, 3);
  auto third = c->chat(ask("3"));
  ASSERT_FALSE(third.ok());
  EXPECT_NE(third.error().message.find("token budget of 1000"), std::string::npos) << third.error().message;
  EXPECT_EQ(server.requests.size(), 2u);
}

TEST_F(Fixture, ConcurrencyIsBounded) {
  std::atomic<int> now{0}, peak{0};
  for (int i = 0; i < 6; ++i)
    server.then([&](const httplib::Request &req, httplib::Response &res) {
      int n = ++now;
      for (int p = peak; n > p && !peak.compare_exchange_weak(p, n);)
        ;
      std::this_thread::sleep_for(std::chrono::milliseconds(80));
      --now;
      FakeServer::reply("ok")(req, res);
    });
  auto cfg = config();
  cfg.concurrency = 2;
  auto c = client(cfg);
  std::vector<std::thread> threads;
  for (int i = 0; i < 6; ++i)
    threads.emplace_back([&, i] { EXPECT_TRUE(c->chat(ask("q" + std::to_string(i))).ok()); });
  for (auto &t : threads)
    t.join();
  EXPECT_LE(peak.load(), 2);
  EXPECT_EQ(server.requests.size(), 6u);
}

TEST_F(Fixture, ACachedRunReplaysExactlyWithoutTheNetwork) {
  std::string path = (std::filesystem::temp_directory_path() / ("hone-llm-cache-" + std::to_string(::getpid()))).string();
  std::filesystem::remove(path);
  auto cfg = config();
  cfg.cachePath = path;
  server.then(FakeServer::reply("first", 7, 3));
  server.then(FakeServer::reply("second", 7, 3));
  {
    auto c = client(cfg);
    ASSERT_EQ(c->chat(ask("a"))->content, "first");
    ASSERT_EQ(c->chat(ask("b"))->content, "second");
    auto again = c->chat(ask("a")); // the same request: from the cache
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(again->cached);
    EXPECT_EQ(server.requests.size(), 2u);
  }
  auto replay = cfg;
  replay.replay = true;
  replay.baseUrl = "http://127.0.0.1:1/v1"; // never contacted
  auto r = client(replay);
  EXPECT_EQ(r->chat(ask("b"))->content, "second");
  EXPECT_EQ(r->chat(ask("a"))->content, "first");
  EXPECT_EQ(r->totals().promptTokens, 14);
  auto miss = r->chat(ask("c"));
  ASSERT_FALSE(miss.ok());
  EXPECT_NE(miss.error().message.find("replay"), std::string::npos);
  EXPECT_EQ(server.requests.size(), 2u);
  // The key is not in the cache.
  std::string bytes;
  for (const auto &f : {path, path + "-wal"})
    if (std::filesystem::exists(f)) {
      std::ifstream in(f, std::ios::binary);
      bytes += std::string(std::istreambuf_iterator<char>(in), {});
    }
  EXPECT_EQ(bytes.find("sk-secret-1234"), std::string::npos);
  std::filesystem::remove(path);
  std::filesystem::remove(path + "-wal");
  std::filesystem::remove(path + "-shm");
}

TEST_F(Fixture, TheCacheIsTheStoresTableAndItsFailuresAreReported) {
  std::string path =
      (std::filesystem::temp_directory_path() / ("hone-llm-cache2-" + std::to_string(::getpid()))).string();
  auto cleanup = [&] {
    for (const char *suffix : {"", "-wal", "-shm"})
      std::filesystem::remove(path + suffix);
  };
  cleanup();
  auto cfg = config();
  cfg.cachePath = path;
  // Replay from a file that never cached anything: said plainly.
  {
    auto db = hone::support::Database::open(path);
    ASSERT_TRUE(db);
  }
  auto replay = cfg;
  replay.replay = true;
  auto none = Client::make(replay);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("no responses were ever cached there"), std::string::npos)
      << none.error().message;
  cleanup();
  // The client opens the cache as a hone store: the store's migrations create the table.
  server.then(FakeServer::reply("first", 7, 3));
  {
    auto c = client(cfg);
    ASSERT_EQ(c->chat(ask("a"))->content, "first");
  }
  {
    auto st = hone::store::Store::open(path);
    ASSERT_TRUE(st) << st.error().message;
    EXPECT_EQ((*st)->schemaVersion(), hone::store::Store::latestSchemaVersion());
  }
  // A damaged entry is an error that names the request, not a silent second request.
  {
    auto db = hone::support::Database::open(path);
    ASSERT_TRUE(db);
    ASSERT_TRUE((*db)->exec("UPDATE llm_cache SET response = '{not json';"));
  }
  {
    auto c = client(cfg);
    auto bad = c->chat(ask("a"));
    ASSERT_FALSE(bad.ok());
    EXPECT_NE(bad.error().message.find("unreadable entry for this request"), std::string::npos)
        << bad.error().message;
    EXPECT_EQ(server.requests.size(), 1u);
  }
  // A reply that cannot be cached is reported (a replay would miss it), and still returned.
  {
    auto c = client(cfg);
    std::vector<std::string> told;
    c->setWarningHandler([&](const std::string &w) { told.push_back(w); });
    auto db = hone::support::Database::open(path);
    ASSERT_TRUE(db);
    ASSERT_TRUE((*db)->exec("CREATE TRIGGER no_insert BEFORE INSERT ON llm_cache BEGIN SELECT RAISE(FAIL, 'read-only "
                            "for the test'); END;"));
    server.then(FakeServer::reply("second", 7, 3));
    auto r = c->chat(ask("b"));
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->content, "second");
    ASSERT_EQ(told.size(), 1u);
    EXPECT_NE(told[0].find("a replay of this run would miss it"), std::string::npos) << told[0];
    EXPECT_NE(told[0].find("read-only for the test"), std::string::npos) << told[0];
    EXPECT_EQ(c->warnings(), told);
  }
  cleanup();
}

TEST(Client, ConfigurationErrorsAreExplained) {
  ClientConfig c;
  c.baseUrl = "http://localhost:8000/v1";
  EXPECT_NE(Client::make(c).error().message.find("--llm-model"), std::string::npos);
  c.model = "m";
  c.replay = true;
  EXPECT_NE(Client::make(c).error().message.find("--llm-cache"), std::string::npos);
  ASSERT_NE(findPreset("ollama"), nullptr);
  EXPECT_EQ(findPreset("ollama")->baseUrl, "http://localhost:11434/v1");
  EXPECT_TRUE(findPreset("openai")->needsKey);
  EXPECT_EQ(findPreset("gemini"), nullptr);
}

TEST(Extract, CodeBlocksAndJsonFromTolerantReplies) {
  std::string reply = "Here:\n```python\nprint(1)\n```\nand the mapper:\n```dsl\nTask * GPU;\n```\n";
  EXPECT_EQ(extractCodeBlock(reply, "dsl"), "Task * GPU;\n");
  EXPECT_EQ(extractCodeBlock(reply), "print(1)\n");
  EXPECT_EQ(extractCodeBlock("no block here"), std::nullopt);
  EXPECT_EQ(extractCodeBlock("```\nunterminated"), "unterminated");
  EXPECT_EQ((*extractJson(R"({"a": 1})"))["a"], 1);
  EXPECT_EQ((*extractJson("text ```json\n{\"a\": 2}\n``` more"))["a"], 2);
  EXPECT_EQ((*extractJson("Sure! {\"a\": 3} Hope this helps."))["a"], 3);
  EXPECT_EQ(extractJson("{\"a\": "), std::nullopt);
  EXPECT_EQ(extractJson("[1, 2]"), std::nullopt);
  // Nested past the limit (what the code agent's and the optimizers' readers would copy): no object.
  std::string deep = "{\"a\": " + std::string(200000, '[') + std::string(200000, ']') + "}";
  EXPECT_EQ(extractJson(deep), std::nullopt);
  EXPECT_EQ(extractJson("```json\n" + deep + "\n```"), std::nullopt);
  std::string fine = "{\"a\": " + std::string(200, '[') + std::string(200, ']') + ", \"b\": \"[[[[\"}";
  ASSERT_TRUE(extractJson(fine));
  EXPECT_EQ((*extractJson(fine))["b"], "[[[[");
}

} // namespace
} // namespace hone::llm
