// The two ways to evaluate a mapper: hone's performance model, in process
// (thread-safe, so a PoolEvaluator can run several at once), and a command
// evaluator for real applications: build and run command templates that
// receive the mapper, a regex that extracts the metric, time and memory
// limits. Both check the policy first (rejected candidates cost nothing) and
// score relative to a reference mapper (1.0 = the reference, 0 = failed).
#pragma once

#include "engine/Engine.h"
#include "model/App.h"
#include "model/Machine.h"
#include "sim/Simulator.h"
#include "support/Executor.h"
#include "support/Expected.h"
#include "support/Regex.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hone::mapping {

/// The expert mapper shipped for an app: $HONE_EXAMPLES/<app>.map, then the
/// source tree's examples/mappers/<app>.map; nullopt when there is none.
std::optional<std::string> findExpertMapper(const std::string &app);

/// Every shipped example mapper (one per app, the same folders), sorted by app name.
std::vector<std::string> exampleMappers();

/// The model's evaluation of one mapper text: checked against the app, then simulated.
class ModelEvaluator {
public:
  ModelEvaluator(const model::MachineModel &machine, const model::AppModel &app, const model::Program &program,
                 double noiseSigma = 0);
  /// Throughput that scores 1.0; 0: scores are raw throughputs.
  void setBaseline(double throughput) { baseline_ = throughput; }
  double baseline() const { return baseline_; }
  engine::EvalResult evaluate(const engine::Candidate &candidate) const;
  const sim::Context &context() const { return context_; }

private:
  const model::AppModel &app_;
  sim::Context context_;
  double noise_ = 0;
  double baseline_ = 0;
};

struct CommandOptions {
  std::string build;   // shell command template; may be empty
  std::string run;     // shell command template
  std::string metric;  // regex; its first group (or the whole match) is the number
  bool higherIsBetter = false; // false: the metric is a time
  double timeoutS = 600;       // per command
  size_t memoryLimitBytes = 0; // 0: none
  std::string workdir;         // each candidate gets workdir/<hash>/
  int repeats = 1;             // runs per candidate; the metric is their median
  // Tasks outside the measured part (the app model's setup and teardown): a real profile covers the
  // whole run, so they are left out of its task statistics. Derived from the app; not stored.
  std::vector<std::string> untimedTasks;
  // Where the commands run (--executor); null: here. Not stored: the run's executor settings are.
  std::shared_ptr<support::CommandExecutor> executor;
};

/// Runs real builds and runs. Templates may use {policy} (the .map file),
/// {cpp} (the compiled C++ mapper), {dir} (the candidate's folder) and {hash}.
class CommandEvaluator {
public:
  static support::Expected<CommandEvaluator> make(CommandOptions options);
  void setBaseline(double metric) { baseline_ = metric; }
  double baseline() const { return baseline_; }
  engine::EvalResult evaluate(const engine::Candidate &candidate) const;
  /// Where candidates go: the workdir, or -- when another hone process works there -- a folder of this
  /// process's inside it (`WORKDIR/pid-N`), so that two runs never build in one candidate's folder.
  const std::string &workdir() const { return options_.workdir; }

private:
  explicit CommandEvaluator(CommandOptions options, support::Regex metric, std::shared_ptr<void> lock)
      : options_(std::move(options)), metric_(std::move(metric)), lock_(std::move(lock)) {}
  CommandOptions options_;
  support::Regex metric_;
  double baseline_ = 0;
  std::shared_ptr<void> lock_; // the workdir's lock, held while any copy lives
};

/// Checks a policy text; on errors, a Rejected result with the diagnostics as raw output.
std::optional<engine::EvalResult> rejectIfInvalid(const std::string &text, const model::AppModel *app);

} // namespace hone::mapping
