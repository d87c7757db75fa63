// A tuning session: the engine's loop wired to the mapping domain (space,
// evaluator, agent), AutoGuide (feedback) and the store (one transaction per
// evaluation). `hone tune` starts one, `hone resume` continues one from the
// configuration and steps the store holds.
#pragma once

#include "engine/Engine.h"
#include "llm/Config.h"
#include "mapping/Evaluators.h"
#include "store/Store.h"
#include "support/Expected.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hone::cli {

/// The LLM agent's settings (never the API key: that comes from the environment or a config file).
struct LlmConfig {
  llm::Settings client; // endpoint, model, cache (default: the store), replay, budgets, prices
  std::string optimizer = "trace";
  int repairs = 2;
  size_t history = 5;
  double temperature = 0.7;
  int maxTokens = 0; // per reply; 0: the server's default
  std::vector<std::string> promptDirs;
};

struct TuneConfig {
  std::string app;
  std::string machine = "p100x4";
  std::optional<double> size;
  std::string agent = "guided";
  size_t iterations = 10;
  uint64_t seed = 1;
  std::string start;      // the starting mapper's text; empty: the expert mapper
  std::string startLabel; // where it came from
  size_t jobs = 1;
  std::string feedback = "exec+explain+suggest";
  std::vector<std::string> rules; // extra rule files
  double noise = 0;
  double wallTimeS = 0;    // 0: none
  size_t patience = 0;     // stop after this many evaluations without improvement; 0: never
  std::optional<double> target;
  std::string evaluator = "model"; // or "command"
  mapping::CommandOptions command;
  LlmConfig llm; // for --agent llm
  // Decided when the run starts, kept for resuming:
  double baseline = 0;       // throughput (model) or metric (command) scoring 1.0; 0: raw scores
  std::string baselineLabel; // what scores are relative to

  nlohmann::json toJson() const;
  static support::Expected<TuneConfig> fromJson(const nlohmann::json &j);
};

struct TuneReport {
  int64_t runId = 0;
  engine::LoopOutcome outcome;
  std::string bestText;
  std::string bestFile; // written, or empty
  double seconds = 0;
  store::RunUsage usage; // what the LLM agent spent (zero for the built-in agents)
  std::string llmCache;  // the LLM's response cache used
};

/// Runs (or, with `resumeRun`, resumes) a session; `config` gets what the run decided
/// (start, baseline). Runs recorded in the store at `db`. `bestFile` empty: "hone-best-<app>-run<id>.map".
/// Errors are printed; nullopt means the run could not start (usage) --
/// candidates that fail are results, never errors.
std::optional<TuneReport> runTune(TuneConfig &config, const std::string &db, std::optional<int64_t> resumeRun,
                                  const std::string &bestFile, bool progress);

/// The run's summary as printed at the end of `hone tune` / `hone resume`.
nlohmann::json reportJson(const TuneReport &report, const TuneConfig &config);
void printReport(const TuneReport &report, const TuneConfig &config, const std::string &db);

} // namespace hone::cli
