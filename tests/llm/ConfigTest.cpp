// Where the LLM client's settings come from: command line over config file
// over preset; the key only from the environment or the file; the price
// table; located errors in the config file.
#include "llm/Config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sys/stat.h>
#include <unistd.h>

namespace hone::llm {
namespace {

namespace fs = std::filesystem;

struct ConfigTest : ::testing::Test {
  fs::path dir = fs::temp_directory_path() / ("hone-llm-config-" + std::to_string(getpid()));
  std::map<std::string, std::string> vars;
  GetEnv env = [this](const char *name) -> const char * {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
  void SetUp() override {
    fs::create_directories(dir);
    vars["HOME"] = dir.string(); // no ~/.config/hone/llm.toml unless a test writes one
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string write(const std::string &name, const std::string &text, mode_t mode = 0600) {
    fs::path p = dir / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    ::chmod(p.c_str(), mode);
    return p.string();
  }
};

TEST_F(ConfigTest, TheCommandLineWinsOverTheFileAndTheFileOverThePreset) {
  std::string file =
      write("llm.toml", "preset = \"vllm\"\nmodel = \"from-file\"\ntimeout_s = 30\nmax_reply_mb = 2.5\n");
  Settings s;
  s.configFile = file;
  auto r = resolve(s, env);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->client.baseUrl, "http://localhost:8000/v1"); // the preset's
  EXPECT_EQ(r->client.model, "from-file");
  EXPECT_EQ(r->client.timeoutS, 30);
  EXPECT_EQ(r->client.maxReplyBytes, 2'500'000u);
  EXPECT_EQ(r->configFile, file);
  s.url = "http://gpu-box:9000/v1";
  s.model = "from-cli";
  s.timeoutS = 5;
  r = resolve(s, env);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->client.baseUrl, "http://gpu-box:9000/v1");
  EXPECT_EQ(r->client.model, "from-cli");
  EXPECT_EQ(r->client.timeoutS, 5);
}

TEST_F(ConfigTest, TheKeyComesFromTheEnvironmentOrTheFile) {
  Settings s;
  s.preset = "openai";
  s.model = "gpt-4o";
  auto missing = resolve(s, env);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("HONE_LLM_API_KEY"), std::string::npos);
  s.configFile = write("llm.toml", "api_key = \"sk-file-1234\"\n");
  auto fromFile = resolve(s, env);
  ASSERT_TRUE(fromFile.ok()) << fromFile.error().message;
  EXPECT_EQ(fromFile->client.apiKey, "sk-file-1234");
  EXPECT_EQ(fromFile->keySource, "api_key in " + s.configFile);
  EXPECT_TRUE(fromFile->warnings.empty());
  vars["HONE_LLM_API_KEY"] = "sk-env-5678";
  EXPECT_EQ(resolve(s, env)->client.apiKey, "sk-env-5678");
  EXPECT_EQ(resolve(s, env)->keySource, "HONE_LLM_API_KEY");
  // A key in a file others can read: it works, with a warning that does not quote the key.
  s.configFile = write("open.toml", "api_key = \"sk-file-1234\"\n", 0644);
  vars.erase("HONE_LLM_API_KEY");
  auto open = resolve(s, env);
  ASSERT_TRUE(open.ok());
  ASSERT_EQ(open->warnings.size(), 1u);
  EXPECT_NE(open->warnings[0].find("chmod 600"), std::string::npos);
  EXPECT_EQ(open->warnings[0].find("sk-file"), std::string::npos);
}

TEST_F(ConfigTest, TheDefaultFileIsFoundAndANamedOneMustExist) {
  Settings s;
  s.url = "http://localhost:8080/v1";
  EXPECT_FALSE(resolve(s, env).ok()); // no model anywhere
  write(".config/hone/llm.toml", "model = \"local\"\n");
  auto r = resolve(s, env);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->client.model, "local");
  vars["XDG_CONFIG_HOME"] = (dir / "xdg").string();
  write("xdg/hone/llm.toml", "model = \"xdg\"\n");
  EXPECT_EQ(resolve(s, env)->client.model, "xdg");
  vars["HONE_LLM_CONFIG"] = (dir / "nowhere.toml").string();
  auto named = resolve(s, env);
  ASSERT_FALSE(named.ok());
  EXPECT_NE(named.error().message.find("nowhere.toml: no such LLM config file"), std::string::npos);
}

TEST_F(ConfigTest, PricesComeFromTheTableOrTheCommandLine) {
  std::string file = write("llm.toml", "url = \"http://x/v1\"\nmodel = \"big\"\n"
                                       "[prices.big]\nprompt = 2.5\ncompletion = 10\n"
                                       "[prices.small]\nprompt = 0.1\ncompletion = 0.4\n");
  Settings s;
  s.configFile = file;
  s.moneyBudget = 1;
  auto r = resolve(s, env);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->client.pricePromptPerMTok, 2.5);
  EXPECT_EQ(r->client.priceCompletionPerMTok, 10);
  s.model = "small";
  s.priceCompletion = 0.5;
  r = resolve(s, env);
  EXPECT_EQ(r->client.pricePromptPerMTok, 0.1);
  EXPECT_EQ(r->client.priceCompletionPerMTok, 0.5);
  s.model = "unpriced";
  s.priceCompletion.reset();
  auto none = resolve(s, env);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("--money-budget needs the price of unpriced"), std::string::npos);
}

TEST_F(ConfigTest, ErrorsInTheFileAreLocated) {
  struct Case {
    std::string text, where, what;
  };
  for (const Case &c : std::vector<Case>{
           {"model = \"m\"\nurll = \"x\"\n", ":2:1", "did you mean 'url'"},
           {"preset = \"openia\"\n", ":1:", "unknown preset 'openia'"},
           {"timeout_s = -1\n", ":1:", "must be positive"},
           {"timeout_s = nan\n", ":1:", "expected a finite number"},
           {"max_reply_mb = 0\n", ":1:", "at most 1024"},
           {"model = 3\n", ":1:", "expected a string"},
           {"[prices.m]\nprompt = 1\n", ":1:", "completion"},
           {"[prices.m]\nprompt = 1\ncompletion = -2\n", ":1:", "cannot be negative"},
           {"model = \"unterminated\n", ":1:", ""},
       }) {
    std::string file = write("bad.toml", c.text);
    auto r = readConfigFile(file);
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_NE(r.error().message.find(file + c.where), std::string::npos) << r.error().message;
    EXPECT_NE(r.error().message.find(c.what), std::string::npos) << r.error().message;
  }
}

TEST_F(ConfigTest, ReplayNeedsNoEndpointOrKey) {
  Settings s;
  s.preset = "openai";
  s.model = "gpt-4o";
  s.replay = true;
  s.cachePath = (dir / "cache.db").string();
  auto r = resolve(s, env);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->client.replay);
  EXPECT_TRUE(r->client.apiKey.empty());
}

} // namespace
} // namespace hone::llm
