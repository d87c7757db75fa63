// The experiment store: SQLite in WAL mode, one transaction per recorded
// evaluation, a schema version with migrations. Holds runs (configuration,
// seed, app, machine, agent, status), candidates (text, hash, parent,
// rationale), evaluations (status, score, metrics, raw output excerpt,
// duration), feedback, and the agent's notes on each candidate (an LLM's
// prompts and replies with token counts and cost). Knows nothing of mappers.
#pragma once

#include "support/Evidence.h"
#include "support/Feedback.h"
#include "support/Expected.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>


namespace hone::support {
class Database;
}

namespace hone::store {

struct RunInfo {
  int64_t id = 0;
  std::string createdAt; // UTC, ISO 8601
  std::string domain = "mapping"; // what was tuned: mapping, kernel
  std::string app, machine, agent; // app: the subject (an app model, a kernel project)
  std::string status = "running"; // running, finished, failed
  uint64_t seed = 0;
  nlohmann::json config = nlohmann::json::object();
  /// What the run's candidates and scores are called (its domain's words, kept in its configuration's
  /// "presentation"): "mapper", "variant"; "speedup", "score (relative)". Runs stored before the words
  /// were kept get the words their domain used then.
  std::string artifactName() const;
  std::string scoreName() const;
};

/// A score as reports print it: "1.234x" relative to a baseline (> 0), the raw number without one.
std::string scoreText(double score, double baseline);

/// One evaluated step of a run, as stored.
struct StepRecord {
  int64_t sequence = 0; // 0-based order within the run
  std::string artifact, hash, parent, rationale;
  std::string status; // engine::toString(EvalStatus)
  double score = 0;
  nlohmann::json metrics = nlohmann::json::object();
  std::string error;
  std::string rawOutput; // an excerpt: the last kRawOutputLimit bytes
  nlohmann::json profile;     // the domain's data, without the evidence
  support::Evidence evidence; // stored in the profile's JSON ("bottlenecks", "evidence_version")
  /// Non-empty: the stored evidence or feedback could not be read (a newer hone's, a damaged row): why,
  /// and where; the profile is then kept whole and `evidence` is empty (`feedback` is then none).
  std::string evidenceProblem;
  double seconds = 0;
  support::Feedback feedback; // stored as its JSON (support::toJson)
  // What the agent noted about how it made the candidate (an LLM's conversation); null: nothing.
  nlohmann::json notes;
  int64_t promptTokens = 0, completionTokens = 0;
  double cost = 0;
};

/// What a run's agent spent (LLM tokens and money), as last saved.
struct RunUsage {
  int64_t promptTokens = 0, completionTokens = 0;
  double cost = 0;
  int64_t calls = 0;
};

inline constexpr size_t kRawOutputLimit = 64 * 1024;

class Store {
public:
  /// Opens (creating if needed) and migrates the database at `path`.
  static support::Expected<std::unique_ptr<Store>> open(const std::string &path);
  /// Opens an existing store for reading only (never migrates or writes; in WAL mode it does not block a
  /// writer): for reports and the dashboard. A store of another schema version is refused.
  static support::Expected<std::unique_ptr<Store>> openReadOnly(const std::string &path);
  ~Store();
  Store(const Store &) = delete;
  Store &operator=(const Store &) = delete;

  int schemaVersion() const;
  static int latestSchemaVersion();

  support::Expected<int64_t> createRun(const RunInfo &run);
  support::Expected<bool> setRunStatus(int64_t run, const std::string &status);
  /// Marks `run` as being run by this process; refused, naming the holder, while another live process
  /// holds it (a holder on this host that is gone, killed with SIGKILL, leaves a lock that is taken over).
  support::Expected<bool> lockRun(int64_t run);
  support::Expected<bool> unlockRun(int64_t run);
  /// Replaces a run's configuration (what the run decided after it was created: its baseline).
  support::Expected<bool> setRunConfig(int64_t run, const nlohmann::json &config);
  std::vector<RunInfo> runs();
  std::optional<RunInfo> run(int64_t id);

  /// Records one step (its candidate, evaluation and feedback) in one transaction.
  support::Expected<bool> recordStep(int64_t run, const StepRecord &step);
  /// The steps of a run in order.
  std::vector<StepRecord> steps(int64_t run);

  /// The agent's totals for a run, saved as the run goes (they include calls whose
  /// candidates were duplicates or never came, which have no step of their own).
  support::Expected<bool> setRunUsage(int64_t run, const RunUsage &usage);
  /// Copies run `run` of `from` (its configuration, status, steps with feedback and notes, usage) into this
  /// store as a new run; returns its id here. (`hone sweep` gathers its tasks' stores this way.)
  support::Expected<int64_t> importRun(Store &from, int64_t run);
  RunUsage runUsage(int64_t run);

private:
  explicit Store(std::unique_ptr<support::Database> db);
  support::Expected<bool> migrate();
  std::unique_ptr<support::Database> db_;
  int version_ = 0;
};

} // namespace hone::store
