#include "tune/Config.h"

#include "support/StringUtil.h"

#include <fmt/format.h>

namespace hone::tune {

using nlohmann::json;

void JsonReader::finish() const {
  if (!j_.is_object())
    throw std::runtime_error(what_ + ": expected an object");
  for (const auto &[key, value] : j_.items())
    if (std::find(seen_.begin(), seen_.end(), key) == seen_.end()) {
      auto near = support::closestMatch(key, seen_);
      throw std::runtime_error(fmt::format("{}: unknown key '{}'{}", what_, key,
                                           near ? fmt::format("; did you mean '{}'?", *near) : ""));
    }
}

json TuneConfig::toJson() const {
  json j{{"config_version", kConfigVersion},
         {"domain", domain},
         {"options", options},
         {"agent", agent},
         {"iterations", iterations},
         {"seed", seed},
         {"start", start},
         {"start_label", startLabel},
         {"jobs", jobs},
         {"feedback", feedback},
         {"rules", rules},
         {"wall_time_s", wallTimeS},
         {"patience", patience},
         {"baseline", baseline},
         {"baseline_label", baselineLabel}};
  if (target)
    j["target"] = *target;
  if (executor != "local") {
    j["executor"] = executor;
    j["executor_options"] = executorOptions;
  }
  if (!presentation.is_null())
    j["presentation"] = presentation;
  if (llm.used) {
    const llm::Settings &c = llm.client;
    j["llm"] = {{"preset", c.preset},
                {"url", c.url},
                {"model", c.model},
                {"config_file", c.configFile},
                {"retries", c.retries},
                {"concurrency", c.concurrency},
                {"cache", c.cachePath},
                {"replay", c.replay},
                {"token_budget", c.tokenBudget},
                {"money_budget", c.moneyBudget},
                {"optimizer", llm.optimizer},
                {"repairs", llm.repairs},
                {"mode", llm.mode},
                {"history", llm.history},
                {"temperature", llm.temperature},
                {"max_tokens", llm.maxTokens},
                {"prompt_dirs", llm.promptDirs},
                {"prompt_budget", llm.promptBudget}};
    if (c.timeoutS)
      j["llm"]["timeout_s"] = *c.timeoutS;
    if (c.pricePrompt)
      j["llm"]["price_prompt"] = *c.pricePrompt;
    if (c.priceCompletion)
      j["llm"]["price_completion"] = *c.priceCompletion;
  }
  // The keys the mapping domain kept at the top level before version 2 stay readable there
  // (hone runs and older scripts read "app" and "machine"): copied for any domain that has them.
  for (const char *key : {"app", "machine"})
    if (options.contains(key))
      j[key] = options[key];
  return j;
}

namespace {

/// Version 1 (mapping only): the domain's keys sat at the top level.
json upgradeV1(const json &in) {
  json out = in;
  json options = json::object();
  for (const char *key : {"app", "machine", "size", "noise", "evaluator", "command"})
    if (out.contains(key)) {
      options[key] = out[key];
      out.erase(key);
    }
  out["options"] = options;
  out["domain"] = "mapping";
  out["config_version"] = kConfigVersion;
  return out;
}

LlmConfig readLlm(const json &k) {
  LlmConfig c;
  JsonReader r(k, "the run's configuration: llm");
  llm::Settings &l = c.client;
  l.preset = r.get<std::string>("preset", "");
  l.url = r.get<std::string>("url", "");
  l.model = r.get<std::string>("model", "");
  l.configFile = r.get<std::string>("config_file", "");
  l.retries = r.get<int>("retries", 2);
  l.concurrency = r.get<int>("concurrency", 4);
  l.cachePath = r.get<std::string>("cache", "");
  l.replay = r.get<bool>("replay", false);
  l.tokenBudget = r.get<int64_t>("token_budget", 0);
  l.moneyBudget = r.get<double>("money_budget", 0.0);
  l.timeoutS = r.optional<double>("timeout_s");
  l.pricePrompt = r.optional<double>("price_prompt");
  l.priceCompletion = r.optional<double>("price_completion");
  c.optimizer = r.get<std::string>("optimizer", "trace");
  c.repairs = r.get<int>("repairs", 2);
  c.mode = r.get<std::string>("mode", "single");
  c.history = r.get<size_t>("history", 5);
  c.temperature = r.get<double>("temperature", 0.7);
  c.maxTokens = r.get<int>("max_tokens", 0);
  c.promptDirs = r.get<std::vector<std::string>>("prompt_dirs", {});
  c.promptBudget = r.get<size_t>("prompt_budget", 0);
  r.finish();
  return c;
}

} // namespace

support::Expected<TuneConfig> TuneConfig::fromJson(const json &stored) {
  try {
    if (!stored.is_object())
      return support::Error{"the run's stored configuration is not a JSON object"};
    int version = stored.contains("config_version") ? JsonReader(stored, "the run's configuration")
                                                          .get<int>("config_version")
                                                    : 1;
    if (version < 1)
      return support::Error{fmt::format("the run's configuration is version {}, which no hone writes", version)};
    if (version > kConfigVersion)
      return support::Error{fmt::format("the run's configuration is version {}; this hone reads up to {} (a newer "
                                        "hone wrote it)",
                                        version, kConfigVersion)};
    json j = version == 1 ? upgradeV1(stored) : stored;
    TuneConfig d; // the defaults, written once
    TuneConfig c;
    JsonReader r(j, "the run's configuration");
    r.get<int>("config_version");
    c.domain = r.get<std::string>("domain");
    c.options = r.get<json>("options", json::object());
    if (!c.options.is_object())
      throw std::runtime_error("the run's configuration: 'options' is not an object");
    c.agent = r.get<std::string>("agent");
    c.iterations = r.get<size_t>("iterations");
    c.seed = r.get<uint64_t>("seed");
    c.start = r.get<std::string>("start", d.start);
    c.startLabel = r.get<std::string>("start_label", d.startLabel);
    c.jobs = r.get<size_t>("jobs", d.jobs);
    c.feedback = r.get<std::string>("feedback", d.feedback);
    c.rules = r.get<std::vector<std::string>>("rules", d.rules);
    c.wallTimeS = r.get<double>("wall_time_s", d.wallTimeS);
    c.patience = r.get<size_t>("patience", d.patience);
    c.target = r.optional<double>("target");
    c.baseline = r.get<double>("baseline", d.baseline);
    c.baselineLabel = r.get<std::string>("baseline_label", d.baselineLabel);
    c.executor = r.get<std::string>("executor", d.executor);
    c.executorOptions = r.get<json>("executor_options", json::object());
    if (!c.executorOptions.is_object())
      throw std::runtime_error("the run's configuration: 'executor_options' is not an object");
    if (const json &l = r.raw("llm"); !l.is_null()) {
      c.llm = readLlm(l);
      c.llm.used = true;
    }
    c.presentation = r.get<json>("presentation", json());
    if (!c.presentation.is_null() && !c.presentation.is_object())
      throw std::runtime_error("the run's configuration: 'presentation' is not an object");
    for (const char *key : {"app", "machine"}) // copies of options kept at the top level (toJson), only those
      if (c.options.contains(key))
        r.raw(key);
    r.finish();
    return c;
  } catch (const std::exception &e) {
    return support::Error{fmt::format("the run's stored configuration cannot be read: {}", e.what())};
  }
}

} // namespace hone::tune
