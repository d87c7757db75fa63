// The optimization engine, domain-agnostic: it knows candidates as text and
// results as metrics and a score, never what a mapper or a kernel is. A
// domain plugs in an Evaluator and Strategies; the store and the CLI observe
// the loop through a Recorder. (docs/ARCHITECTURE.md, "A tuning run, end to end".)
#pragma once

#include "support/Evidence.h"
#include "support/Feedback.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hone::engine {

/// A proposed artifact (a policy, a kernel source): its text, a content hash
/// (identical texts are evaluated once), where it came from and why.
struct Candidate {
  std::string artifact;
  std::string hash;   // contentHash(artifact)
  std::string parent; // hash of the candidate it was derived from; empty: none
  std::string rationale;
  nlohmann::json notes; // how the strategy made it (e.g. an LLM conversation and its token counts); recorded
  /// Non-empty: the strategy knows this candidate cannot be evaluated (a model's reply that is not a
  /// candidate: a diff that does not apply, an edit of a protected file). It is recorded as Rejected
  /// with this reason, as data, and never reaches the evaluator.
  std::string refusal;

  static Candidate make(std::string artifact, std::string parent = {}, std::string rationale = {});
};

/// 16 hex digits of a 64-bit FNV-1a hash of the text.
std::string contentHash(const std::string &text);

enum class EvalStatus { Ok, Rejected, BuildFailed, RunFailed, TimedOut, Invalid };
std::string_view toString(EvalStatus status);
std::optional<EvalStatus> parseEvalStatus(std::string_view text);

struct EvalResult {
  EvalStatus status = EvalStatus::Ok;
  double score = 0;                      // higher is better; 0 for failures
  std::map<std::string, double> metrics; // e.g. time_s, throughput
  std::string error;                     // the failure message, when not Ok
  std::string rawOutput;                 // what the evaluator saw (bounded)
  nlohmann::json profile;                // domain data for feedback (e.g. the simulator's result)
  support::Evidence evidence;            // what its profilers found, typed (AutoGuide reads it)
  double seconds = 0;                    // time the evaluation took
  bool ok() const { return status == EvalStatus::Ok; }
};

/// Evaluates candidates; a batch may run in parallel. Failures are results, never exceptions.
class Evaluator {
public:
  virtual ~Evaluator() = default;
  virtual std::vector<EvalResult> evaluate(const std::vector<Candidate> &batch) = 0;
};

/// One evaluated step of a run.
struct Step {
  Candidate candidate;
  EvalResult result;
  support::Feedback feedback; // what the strategy was told about the result
};

/// Proposes candidates and learns from their results.
class Strategy {
public:
  virtual ~Strategy() = default;
  /// Up to `count` new candidates; fewer (or none) ends the run.
  virtual std::vector<Candidate> propose(size_t count) = 0;
  /// Results of the candidates proposed last, in order, with their feedback filled in.
  virtual void notify(const std::vector<Step> &steps) = 0;
  /// Why the strategy proposed nothing (e.g. "the LLM's token budget is used up"); empty: it ran dry.
  virtual std::string stopReason() const { return {}; }
};

/// Turns a result into feedback for the strategy (AutoGuide in the mapping domain).
using FeedbackFn = std::function<support::Feedback(const Candidate &, const EvalResult &)>;

/// Where a run stands, for stop conditions and progress.
struct Progress {
  size_t evaluations = 0; // distinct candidates evaluated
  size_t failures = 0;
  double bestScore = 0;
  size_t sinceImprovement = 0; // evaluations since the best score last rose
  double elapsedS = 0;
};

/// A composable stop condition: returns the reason to stop, or nullopt.
class StopCondition {
public:
  using Test = std::function<std::optional<std::string>(const Progress &)>;
  StopCondition() = default;
  explicit StopCondition(Test test) : tests_{std::move(test)} {}

  static StopCondition wallTime(double seconds);
  static StopCondition noImprovement(size_t n);
  static StopCondition target(double score);
  /// Stops when either stops.
  StopCondition operator|(const StopCondition &other) const;
  std::optional<std::string> check(const Progress &p) const;

private:
  std::vector<Test> tests_;
};

/// Observes a run: the store records every step as it finishes.
class Recorder {
public:
  virtual ~Recorder() = default;
  virtual void record(const Step &step) = 0;
};

struct LoopOptions {
  size_t budget = 10; // evaluations at most; a batch is cut to what is left, so a run ends exactly here
  size_t batch = 1;   // candidates proposed and evaluated together
  StopCondition stop; // further reasons to stop (wall time, no improvement, target)
  /// Called after every step (progress lines).
  std::function<void(const Step &, const Progress &)> onStep;
  /// Polled before each batch and after its evaluation: when it says so, the loop stops and the
  /// batch in flight is neither recorded nor shown to the strategy (a resume evaluates it again).
  std::function<bool()> interrupted;
};

struct LoopOutcome {
  std::vector<Step> steps; // in order, including steps taken from `history`
  Progress progress;
  std::string stopReason;
  std::optional<size_t> best; // index into steps
  bool interrupted = false;   // stopped by options.interrupted
};

/// The loop: propose, evaluate, explain, notify, record, until a stop
/// condition holds or the strategy runs dry. A candidate whose text was
/// evaluated before in the run is not evaluated again: its step reuses the
/// earlier result and does not count as an evaluation.
///
/// Resuming: `history` holds the steps an interrupted run recorded. The
/// (seeded, deterministic) strategy is run again from the start; a proposal
/// found in `history` takes its recorded result instead of being evaluated
/// and is not recorded again, so nothing is lost or repeated and the run
/// ends at the same budget.
LoopOutcome runLoop(Strategy &strategy, Evaluator &evaluator, const FeedbackFn &feedback, Recorder *recorder,
                    const LoopOptions &options, const std::vector<Step> &history = {});

/// The local executor: evaluates each candidate of a batch with `one`, on up
/// to `workers` threads; results keep the batch's order. Evaluations that run
/// commands use support::runSubprocess (own process group, time and memory limits).
class PoolEvaluator : public Evaluator {
public:
  using One = std::function<EvalResult(const Candidate &)>;
  PoolEvaluator(One one, size_t workers) : one_(std::move(one)), workers_(std::max<size_t>(1, workers)) {}
  std::vector<EvalResult> evaluate(const std::vector<Candidate> &batch) override;

private:
  One one_;
  size_t workers_;
};

} // namespace hone::engine
