// A tuning run's configuration: what every domain shares (agent, budget,
// seed, feedback, stop conditions, the LLM's settings) plus the domain's own
// options as a JSON object its Domain reads. Stored with the run (versioned,
// strict keys: a misspelt key in a stored run is an error, not a silent
// default) so that `hone resume` continues exactly.
#pragma once

#include "llm/Config.h"
#include "support/Executor.h"
#include "support/Expected.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace hone::tune {

/// The LLM agent's settings (never the API key: that comes from the environment or a config file).
struct LlmConfig {
  bool used = false; // the run's agent asks a model (AgentInfo::asksModel): stored, and read back, only then
  llm::Settings client; // endpoint, model, cache (default: the store), replay, budgets, prices
  std::string optimizer = "trace";
  int repairs = 2;
  std::string mode = "single"; // single or two-agent (insight, then code; domains with an insight stage)
  size_t history = 5;
  double temperature = 0.7;
  int maxTokens = 0; // per reply; 0: the server's default
  std::vector<std::string> promptDirs;
  size_t promptBudget = 0; // bytes of a request's first messages at most; 0: the domain's default
};

/// The configuration format written by this version (1: mapping-only, domain keys at the top level).
inline constexpr int kConfigVersion = 2;

struct TuneConfig {
  std::string domain; // a registered domain's name (Domain::name)
  nlohmann::json options = nlohmann::json::object(); // the domain's own (Domain::open reads them)
  std::string agent;  // empty: the domain's default agent (Registry::defaultAgent), decided when the run starts
  size_t iterations = 10;
  uint64_t seed = 1;
  std::string start;      // the starting artifact's text; empty: the domain's default
  std::string startLabel; // where it came from
  size_t jobs = 1;
  std::string feedback = "exec+explain+suggest";
  std::vector<std::string> rules; // extra rule files
  double wallTimeS = 0;           // 0: none
  size_t patience = 0;            // stop after this many evaluations without improvement; 0: never
  std::optional<double> target;
  LlmConfig llm; // for --agent llm
  // Where evaluations run their commands: "local", or "slurm" with executorOptions (cluster::SlurmSettings;
  // its run_tag is decided when the run starts, so that a resume finds the run's jobs).
  std::string executor = "local";
  nlohmann::json executorOptions = nlohmann::json::object();
  // Not stored: the executor made from the two above for this process (tune/Session makes it before the
  // domain opens its problem, so that a kernel's reference build runs there too); null: local.
  std::shared_ptr<support::CommandExecutor> commandExecutor;
  // Decided when the run starts, kept for resuming:
  double baseline = 0;       // the metric that scores 1.0; 0: raw scores
  std::string baselineLabel; // what scores are relative to
  // Decided by the domain when the run starts, for reports: {"artifact": "variant", "score": "speedup"}
  // (Domain::artifactName, scoreName); null in runs stored before it was kept.
  nlohmann::json presentation;

  nlohmann::json toJson() const;
  /// Reads a stored configuration, this version's or version 1's; unknown keys are errors.
  static support::Expected<TuneConfig> fromJson(const nlohmann::json &j);
};

/// Reads the keys of `j` with `read`, then fails naming the first key it never read
/// (with a did-you-mean among those it did): the strict reading of stored JSON.
class JsonReader {
public:
  JsonReader(const nlohmann::json &j, std::string what) : j_(j), what_(std::move(what)) {}
  template <typename T> T get(const char *key) {
    seen_.push_back(key);
    if (!j_.contains(key))
      throw std::runtime_error(what_ + ": missing '" + key + "'");
    return convert<T>(j_.at(key), key);
  }
  template <typename T> T get(const char *key, T fallback) {
    seen_.push_back(key);
    return j_.contains(key) && !j_.at(key).is_null() ? convert<T>(j_.at(key), key) : fallback;
  }
  template <typename T> std::optional<T> optional(const char *key) {
    seen_.push_back(key);
    return j_.contains(key) && !j_.at(key).is_null() ? std::optional<T>(convert<T>(j_.at(key), key)) : std::nullopt;
  }
  const nlohmann::json &raw(const char *key) {
    seen_.push_back(key);
    static const nlohmann::json null;
    return j_.contains(key) ? j_.at(key) : null;
  }
  /// Throws std::runtime_error naming an unknown key.
  void finish() const;

private:
  /// A number must fit the type it is read as (a stored 1e31 is not an int: converting it would be
  /// undefined behaviour), and a whole-number type takes only whole numbers.
  template <typename T> T convert(const nlohmann::json &v, const char *key) const {
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      if (v.is_number()) {
        long double x = v.is_number_float()      ? static_cast<long double>(v.get<double>())
                        : v.is_number_unsigned() ? static_cast<long double>(v.get<uint64_t>())
                                                 : static_cast<long double>(v.get<int64_t>());
        bool fits = x == x && x >= static_cast<long double>(std::numeric_limits<T>::lowest()) &&
                    x <= static_cast<long double>(std::numeric_limits<T>::max()) &&
                    (std::is_floating_point_v<T> || x == std::floor(x));
        if (!fits)
          throw std::runtime_error(what_ + ": '" + key + "' is " + v.dump() + ", out of range");
      }
    }
    return v.get<T>();
  }

  const nlohmann::json &j_;
  std::string what_;
  std::vector<std::string> seen_;
};

} // namespace hone::tune
