// Where the LLM client's settings come from: the command line, then a config
// file (TOML), then the endpoint preset. The API key comes only from the
// environment (HONE_LLM_API_KEY) or the config file, never the command line,
// so it stays out of shell history and `ps`. The config file also holds the
// price table that money budgets are counted with.
//
//   # ~/.config/hone/llm.toml
//   preset = "openai"           # or url = "http://localhost:8000/v1"
//   model = "gpt-4o"
//   api_key = "sk-..."          # HONE_LLM_API_KEY wins when set
//   timeout_s = 120
//   max_reply_mb = 8            # a longer reply body is a failed reply
//   [prices."gpt-4o"]           # per million tokens
//   prompt = 2.5
//   completion = 10.0
#pragma once

#include "llm/Client.h"
#include "support/Expected.h"

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hone::llm {

struct Price {
  double promptPerMTok = 0, completionPerMTok = 0;
};

struct FileConfig {
  std::string path;
  std::string preset, url, model, apiKey;
  std::optional<double> timeoutS;
  std::optional<double> maxReplyMb;
  std::map<std::string, Price> prices; // by model name
};

/// Reads a config file; errors are located (file:line:col), unknown keys get a did-you-mean.
support::Expected<FileConfig> readConfigFile(const std::string &path);

using GetEnv = std::function<const char *(const char *)>;

/// The config file used when none is named: $HONE_LLM_CONFIG, else
/// $XDG_CONFIG_HOME/hone/llm.toml, else ~/.config/hone/llm.toml -- the first that is set.
/// `exists` is false when that file is not there (then it is not an error to lack it).
struct DefaultConfig {
  std::string path;
  bool exists = false;
  bool named = false; // by $HONE_LLM_CONFIG: then it must exist
};
DefaultConfig defaultConfigPath(const GetEnv &env);

/// What a user chose on the command line; empty or unset means "not given".
struct Settings {
  std::string preset, url, model;
  std::string configFile; // empty: defaultConfigPath()
  std::optional<double> timeoutS;
  int retries = 2;
  int concurrency = 4;
  std::string cachePath;
  bool replay = false;
  int64_t tokenBudget = 0;
  double moneyBudget = 0;
  std::optional<double> pricePrompt, priceCompletion; // per million tokens
  uint64_t seed = 1;
};

struct Resolved {
  ClientConfig client;
  std::string configFile;            // the file read, or empty
  std::string keySource = "none";    // where the key came from (never the key)
  std::vector<std::string> warnings; // e.g. a config file with a key that others can read
};

/// Resolves settings, the config file and the environment into a client configuration.
/// Errors say which setting is missing and every way to give it; none contains the key.
support::Expected<Resolved> resolve(const Settings &settings, const GetEnv &env);

} // namespace hone::llm
