// Where the commands of an evaluation run. Evaluators (the mapping domain's
// build and run templates, a kernel project's builds and runs) hand each
// command to a CommandExecutor instead of starting it themselves: the local
// one runs it here (support/Subprocess.h); a cluster's (src/cluster) submits
// it as a batch job and waits for it. Commands carry a key, a stable name for
// "this command of this evaluation", so that an executor that outlives hone
// (a batch scheduler) can give a restarted hone the job it already submitted
// instead of submitting it again.
#pragma once

#include "support/Expected.h"
#include "support/Subprocess.h"

#include <nlohmann/json.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace hone::support {

class CommandExecutor {
public:
  virtual ~CommandExecutor() = default;
  /// Runs one command and waits for it; thread-safe (evaluations run in parallel). `key` names the
  /// command among the run's commands ("build", "run-3"); the same key, command and folder asked again
  /// (by a resumed hone) is the same command. Failures, time limits and interruptions are results.
  virtual SubprocessResult run(const SubprocessOptions &options, const std::string &key) = 0;
  /// "local", "slurm (partition gpu)": for messages.
  virtual std::string describe() const = 0;
  /// Whether commands share this machine with hone and with each other (timed runs must then take
  /// turns: parallel runs would measure their contention).
  virtual bool sharesMachine() const { return true; }
  /// A folder for a run's files that the commands' machines see too (a cluster's shared job folder);
  /// empty: any folder of this machine will do.
  virtual std::string sharedDir() const { return ""; }
  /// What it did, for a run's summary ("12 jobs submitted, 3 found from an earlier process"); "": nothing to say.
  virtual std::string activity() const { return ""; }
};

/// Runs commands here, as runSubprocess does.
class LocalExecutor : public CommandExecutor {
public:
  SubprocessResult run(const SubprocessOptions &options, const std::string &) override {
    return runSubprocess(options);
  }
  std::string describe() const override { return "local"; }
};

/// The executor of a caller that names none: a shared LocalExecutor.
std::shared_ptr<CommandExecutor> localExecutor();

/// An executor other than the local one, by the name `--executor` takes ("slurm"). Registered at start-up
/// (the CLI's wiring, cli/Domains.cpp), so that a tuning run makes its executor without naming any.
struct ExecutorKind {
  std::string name;
  /// Makes one from a run's stored options, which it completes with what a resume needs to find the same
  /// jobs again (written back into `options`); `besideStore`: a folder beside the run's store, for files.
  std::function<Expected<std::shared_ptr<CommandExecutor>>(nlohmann::json &options, const std::string &besideStore)>
      make;
  /// Optional: runs many commands as one batch (a Slurm array job) from the kind's options, its files in
  /// `folder`, at most `inFlight` at a time (0: no limit), telling `heard` of each as it ends; the results
  /// in order. Run again with the same commands, it picks the batch up where it stopped. Unset: the
  /// caller runs them itself.
  std::function<Expected<std::vector<SubprocessResult>>(
      const nlohmann::json &options, const std::string &folder, const std::vector<SubprocessOptions> &commands,
      size_t inFlight, const std::function<void(size_t, const SubprocessResult &)> &heard)>
      runMany = nullptr;
};
void registerExecutorKind(ExecutorKind kind); // a second registration of a name is ignored
const ExecutorKind *executorKind(const std::string &name);
/// "local" and every registered name, in registration order.
std::vector<std::string> executorNames();

} // namespace hone::support
