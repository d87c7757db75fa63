#include "llm/Config.h"

#include "support/TomlReader.h"

#include <fmt/format.h>

#include <filesystem>
#include <sys/stat.h>

namespace hone::llm {

namespace fs = std::filesystem;
using support::Error;
using support::TableReader;

namespace {

std::string presetNames() {
  std::string names;
  for (const auto &p : presets())
    names += (names.empty() ? "" : ", ") + p.name;
  return names;
}

} // namespace

support::Expected<FileConfig> readConfigFile(const std::string &path) {
  auto text = support::readTomlFile(path);
  if (!text)
    return text.error();
  return support::parseTomlDocument<FileConfig>(path, *text, [&](TableReader &top) {
    FileConfig c;
    c.path = path;
    c.preset = top.string("preset", "");
    if (!c.preset.empty() && !findPreset(c.preset))
      top.failAt("preset", fmt::format("unknown preset '{}' (one of {})", c.preset, presetNames()));
    c.url = top.string("url", "");
    c.model = top.string("model", "");
    c.apiKey = top.string("api_key", "");
    if (top.has("timeout_s")) {
      c.timeoutS = top.number("timeout_s");
      if (*c.timeoutS <= 0)
        top.failAt("timeout_s", "must be positive");
    }
    if (top.has("max_reply_mb")) {
      c.maxReplyMb = top.number("max_reply_mb");
      if (!(*c.maxReplyMb > 0 && *c.maxReplyMb <= 1024))
        top.failAt("max_reply_mb", "must be more than 0 and at most 1024 (megabytes)");
    }
    for (const auto &[model, price] : top.namedValues<Price>("prices", "price table", [&](const toml::node &n) {
           const toml::table *t = n.as_table();
           if (!t)
             top.failNode(n, "prices", "expected a table {prompt = ..., completion = ...} (per million tokens)");
           TableReader r(*t, path, "prices");
           Price p{r.number("prompt"), r.number("completion")};
           if (p.promptPerMTok < 0 || p.completionPerMTok < 0)
             r.failHere("prices cannot be negative");
           r.finish();
           return p;
         }))
      c.prices[model] = price;
    top.finish();
    return c;
  });
}

DefaultConfig defaultConfigPath(const GetEnv &env) {
  DefaultConfig d;
  if (const char *named = env("HONE_LLM_CONFIG"); named && *named) {
    d.path = named;
    d.named = true;
  } else if (const char *xdg = env("XDG_CONFIG_HOME"); xdg && *xdg) {
    d.path = (fs::path(xdg) / "hone" / "llm.toml").string();
  } else if (const char *home = env("HOME"); home && *home) {
    d.path = (fs::path(home) / ".config" / "hone" / "llm.toml").string();
  }
  std::error_code ec;
  d.exists = !d.path.empty() && fs::is_regular_file(d.path, ec);
  return d;
}

support::Expected<Resolved> resolve(const Settings &s, const GetEnv &env) {
  Resolved out;
  FileConfig file;
  std::string path = s.configFile;
  bool mustExist = !path.empty();
  if (path.empty()) {
    DefaultConfig d = defaultConfigPath(env);
    path = d.exists || d.named ? d.path : "";
    mustExist = d.named;
  }
  if (!path.empty()) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec)) {
      if (mustExist)
        return Error{fmt::format("{}: no such LLM config file", path)};
    } else {
      auto read = readConfigFile(path);
      if (!read)
        return read.error();
      file = std::move(*read);
      out.configFile = path;
      struct stat st {};
      if (!file.apiKey.empty() && ::stat(path.c_str(), &st) == 0 && (st.st_mode & (S_IRWXG | S_IRWXO)))
        out.warnings.push_back(fmt::format("{} holds an API key and others can read it (chmod 600 {})", path, path));
    }
  }
  std::string presetName = !s.preset.empty() ? s.preset : file.preset;
  const Preset *preset = nullptr;
  if (!presetName.empty() && !(preset = findPreset(presetName)))
    return Error{fmt::format("--llm-preset: unknown preset '{}' (one of {})", presetName, presetNames())};
  ClientConfig &c = out.client;
  c.baseUrl = !s.url.empty() ? s.url : !file.url.empty() ? file.url : preset ? preset->baseUrl : "";
  c.model = !s.model.empty() ? s.model : file.model;
  std::string where = out.configFile.empty() ? "a config file (~/.config/hone/llm.toml)" : out.configFile;
  if (c.baseUrl.empty() && !s.replay)
    return Error{fmt::format("the LLM endpoint is not set: give --llm-url URL (e.g. http://localhost:8000/v1), "
                             "--llm-preset NAME, or url = \"...\" in {}",
                             where)};
  if (c.model.empty())
    return Error{fmt::format("the LLM model is not set: give --llm-model NAME or model = \"...\" in {}", where)};
  if (const char *key = env("HONE_LLM_API_KEY"); key && *key) {
    c.apiKey = key;
    out.keySource = "HONE_LLM_API_KEY";
  } else if (!file.apiKey.empty()) {
    c.apiKey = file.apiKey;
    out.keySource = "api_key in " + out.configFile;
  }
  if (preset && preset->needsKey && c.apiKey.empty() && !s.replay)
    return Error{fmt::format("the {} endpoint needs an API key: set HONE_LLM_API_KEY or api_key = \"...\" in {} "
                             "(hone never takes the key on the command line)",
                             preset->name, where)};
  c.timeoutS = s.timeoutS ? *s.timeoutS : file.timeoutS.value_or(c.timeoutS);
  if (file.maxReplyMb)
    c.maxReplyBytes = static_cast<size_t>(*file.maxReplyMb * 1e6);
  c.maxRetries = s.retries;
  c.concurrency = s.concurrency;
  c.cachePath = s.cachePath;
  c.replay = s.replay;
  c.tokenBudget = s.tokenBudget;
  c.moneyBudget = s.moneyBudget;
  c.seed = s.seed;
  auto price = file.prices.find(c.model);
  c.pricePromptPerMTok = s.pricePrompt ? *s.pricePrompt : price != file.prices.end() ? price->second.promptPerMTok : 0;
  c.priceCompletionPerMTok =
      s.priceCompletion ? *s.priceCompletion : price != file.prices.end() ? price->second.completionPerMTok : 0;
  if (c.moneyBudget > 0 && c.pricePromptPerMTok == 0 && c.priceCompletionPerMTok == 0)
    return Error{fmt::format("--money-budget needs the price of {}: give --price-prompt and --price-completion "
                             "(per million tokens) or [prices.\"{}\"] in {}",
                             c.model, c.model, where)};
  return out;
}

} // namespace hone::llm
