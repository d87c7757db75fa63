// A tuning session: the engine's loop wired to a domain's problem (evaluator,
// start, agent), AutoGuide (feedback) and the store (one transaction per
// evaluation). `hone tune` starts one, `hone resume` continues one from the
// configuration and steps the store holds. Domain-neutral: the domain comes
// from the registry by the configuration's name.
#pragma once

#include "engine/Engine.h"
#include "store/Store.h"
#include "support/Expected.h"
#include "tune/Config.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <optional>
#include <ostream>
#include <string>

namespace hone::tune {

struct TuneReport {
  int64_t runId = 0;
  std::string subject, machine; // from the problem
  engine::LoopOutcome outcome;
  std::string bestText;
  std::string bestFile; // written, or empty
  std::string bestNote; // Problem::bestNote after writing the best
  double seconds = 0;
  store::RunUsage usage; // what the LLM agent spent (zero for the built-in agents)
  std::string llmCache;  // the LLM's response cache used
  std::string executor;  // where commands ran, when not here ("slurm ...: N jobs submitted, ...")
};

struct SessionOptions {
  std::string db = "hone.db";
  std::optional<int64_t> resumeRun;
  std::string bestFile; // empty: the domain's default
  std::function<void(const std::string &)> warn;                          // warnings (not errors)
  std::function<void(const engine::Step &, const engine::Progress &)> onStep; // progress
};

/// Runs (or, with `resumeRun`, resumes) a session; `config` gets what the run decided (start,
/// baseline, options the domain filled in). An error means the run could not start or could
/// not be recorded -- candidates that fail are results, never errors.
support::Expected<TuneReport> runTune(TuneConfig &config, const SessionOptions &options);

/// The run's summary as printed at the end of `hone tune` / `hone resume`.
nlohmann::json reportJson(const TuneReport &report, const TuneConfig &config);
void printReport(std::ostream &out, const TuneReport &report, const TuneConfig &config, const std::string &db);
/// How many candidates that named a diagnostic changed the code it points at (the notes' "alignment"
/// of a code agent): {aligned, claimed, rate}; null when none named one.
nlohmann::json evidenceAlignment(const std::vector<engine::Step> &steps);
/// "1.234x" when scores are relative to a baseline, else the raw score (store::scoreText, the one format).
std::string scoreText(double score, const TuneConfig &config);
/// A file beside the store, after its name: (runs/x.db, "report.html") -> runs/x-report.html. Defaults
/// such as the best mapper and the report go there, so two stores never write the same file. The name
/// is made one path component (support::pathComponent): a project called "/../x" stays beside the store.
std::string besideStore(const std::string &db, const std::string &name);

/// The store's form of a step, and back (for resuming).
store::StepRecord toRecord(const engine::Step &step, int64_t sequence);
engine::Step fromRecord(const store::StepRecord &record);

} // namespace hone::tune
