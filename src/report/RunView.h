// What the reports show of a run, computed once from the store: its steps,
// the best score so far after each evaluation, failures by kind, and what the
// agent spent. `hone runs`, `show`, `report`, `plot` and the dashboard all read
// runs through this, so they agree on what "best" and "failed" mean.
#pragma once

#include "store/Store.h"
#include "support/Expected.h"
#include "support/JsonText.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hone::report {

struct RunView {
  store::RunInfo info;
  std::vector<store::StepRecord> steps;
  store::RunUsage usage;

  size_t failures = 0;
  std::map<std::string, size_t> byStatus; // every step's status, "ok" included
  std::optional<size_t> best;             // the index of the best ok step
  double bestScore = 0;
  std::vector<double> bestSoFar; // after each step; 0 until the first ok step

  double baseline() const { return support::numberOf(info.config, "baseline"); }
  /// The run's budget of evaluations (0 when the stored configuration does not say).
  int64_t iterations() const {
    double n = support::numberOf(info.config, "iterations");
    return n >= 0 && n < 1e15 ? static_cast<int64_t>(n) : 0;
  }
  /// What scores are relative to ("the expert mapper ...", "the unmodified project"); empty if absolute.
  std::string baselineLabel() const { return support::textOf(info.config, "baseline_label"); }
  /// What the run's candidates and scores are called ("mapper", "variant"; "speedup"): the run's words.
  std::string artifactName() const { return info.artifactName(); }
  std::string scoreName() const { return info.scoreName(); }
};

RunView makeView(store::RunInfo info, std::vector<store::StepRecord> steps, store::RunUsage usage);

/// The runs `ids` of a store (every run when empty), in the order given (by id when all);
/// an id the store does not have is an error that names it.
support::Expected<std::vector<RunView>> loadRuns(store::Store &store, const std::vector<int64_t> &ids);

/// A run as `hone runs --json` lists it (and the dashboard's run list).
nlohmann::json summaryJson(const RunView &run);

/// One line per finding of a step's feedback ("rule: evidence"), then the first line of its error.
std::string feedbackSummary(const store::StepRecord &step);

/// The first line of a text, at most `limit` bytes (cut with "...").
std::string firstLine(const std::string &text, size_t limit = 200);

} // namespace hone::report
