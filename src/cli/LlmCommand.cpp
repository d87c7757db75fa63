// hone llm-check [--llm-url URL] [--llm-model NAME] [--llm-preset P] [--llm-config FILE] [--json]
// The LLM endpoint options shared with `hone tune`, and a check that an
// endpoint answers: one small structured-output request, reported with the
// format the server accepted, the time, the tokens, and where the key came from.
#include "cli/Commands.h"

#include "llm/Client.h"
#include "llm/Config.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <iostream>

namespace hone::cli {

using nlohmann::json;

void addLlmEndpointOptions(CLI::App &cmd, llm::Settings &s, const std::string &group) {
  cmd.add_option("--llm-url", s.url, "Chat completions endpoint, e.g. http://localhost:8000/v1")->group(group);
  cmd.add_option("--llm-model", s.model, "Model name the endpoint serves")->group(group);
  cmd.add_option("--llm-preset", s.preset, "openai, vllm, llamacpp or ollama: the endpoint's default URL")
      ->group(group);
  cmd.add_option("--llm-config", s.configFile,
                 "Config file (TOML: url, model, api_key, prices); default $HONE_LLM_CONFIG or ~/.config/hone/llm.toml")
      ->group(group);
  cmd.add_option("--llm-timeout", s.timeoutS, "Seconds to wait for one reply (default 120)")
      ->check(CLI::PositiveNumber)
      ->group(group);
  cmd.add_option("--llm-retries", s.retries, "Retries of transient failures (429, 5xx, timeouts)")
      ->capture_default_str()
      ->check(CLI::Range(0, 10))
      ->group(group);
}

CLI::Option *addRefusedKeyOption(CLI::App &cmd, std::string &sink) {
  return cmd.add_option("--api-key,--llm-api-key", sink)->group("");
}

void refuseKey(const CLI::Option *option) {
  if (option->count() > 0)
    throw CLI::ValidationError("--api-key", "hone never takes the API key on the command line (it would land in "
                                            "shell history and ps): set HONE_LLM_API_KEY, or api_key in the "
                                            "config file (--llm-config)");
}

void addLlmCheckCommand(CLI::App &app, Action &action) {
  struct Options {
    llm::Settings settings;
    bool json = false;
    std::string refusedKey;
  };
  auto opts = std::make_shared<Options>();
  auto *cmd = app.add_subcommand("llm-check", "Check that an LLM endpoint answers, before a long run");
  addLlmEndpointOptions(*cmd, opts->settings, "Endpoint"); // (an empty group would hide them from --help)
  cmd->add_flag("--json", opts->json, "Print one JSON object");
  CLI::Option *keyOption = addRefusedKeyOption(*cmd, opts->refusedKey);
  cmd->callback([opts, &action, keyOption] {
    refuseKey(keyOption);
    action = [opts]() -> int {
      auto resolved = llm::resolve(opts->settings, [](const char *name) { return std::getenv(name); });
      if (!resolved) {
        std::cerr << "hone: " << resolved.error().message << "\n";
        return kUsage;
      }
      for (const auto &w : resolved->warnings)
        std::cerr << "hone: warning: " << w << "\n";
      const llm::ClientConfig &c = resolved->client;
      const std::string &keySource = resolved->keySource;
      auto client = llm::Client::make(c);
      if (!client) {
        std::cerr << "hone: " << client.error().message << "\n";
        return kUsage;
      }
      llm::ChatRequest request;
      request.messages = {{"system", "You answer with JSON."},
                          {"user", "Reply with the JSON object {\"ok\": true, \"model\": \"<your name>\"}."}};
      request.temperature = 0;
      request.format = llm::Format::JsonSchema;
      request.schema = {{"type", "object"},
                        {"properties", {{"ok", {{"type", "boolean"}}}, {"model", {{"type", "string"}}}}},
                        {"required", {"ok", "model"}},
                        {"additionalProperties", false}};
      auto t0 = std::chrono::steady_clock::now();
      auto reply = (*client)->chat(request);
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      json j{{"url", c.baseUrl}, {"model", c.model}, {"config_file", resolved->configFile},
             {"key", keySource}, {"ok", reply.ok()}, {"seconds", seconds}};
      if (reply) {
        auto parsed = llm::extractJson(reply->content);
        j["format"] = llm::toString(reply->format);
        j["attempts"] = reply->attempts;
        j["tokens"] = {{"prompt", reply->usage.promptTokens}, {"completion", reply->usage.completionTokens}};
        j["reply"] = reply->content;
        j["json_reply"] = parsed.has_value();
      } else {
        j["error"] = reply.error().message;
      }
      if (opts->json) {
        std::cout << j.dump(2) << "\n";
      } else {
        std::cout << fmt::format("endpoint: {}/chat/completions, model {}\n", c.baseUrl, c.model);
        std::cout << fmt::format("config file: {}; key: {}\n",
                                 resolved->configFile.empty() ? "none" : resolved->configFile, keySource);
        if (reply) {
          std::string excerpt = reply->content.substr(0, 200);
          std::cout << fmt::format("ok: answered in {:.2f} s ({} attempt{}), structured output: {}, {} prompt + {} "
                                   "completion tokens\nreply: {}{}\n",
                                   seconds, reply->attempts, reply->attempts == 1 ? "" : "s",
                                   llm::toString(reply->format), reply->usage.promptTokens,
                                   reply->usage.completionTokens, excerpt, reply->content.size() > 200 ? "..." : "");
          if (!j["json_reply"].get<bool>())
            std::cout << "note: the reply holds no JSON object; hone will read mappers from fenced blocks or text\n";
        } else {
          std::cout << "failed: " << reply.error().message << "\n";
        }
      }
      return reply ? kOk : kRejected;
    };
  });
}

} // namespace hone::cli
