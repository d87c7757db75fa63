// Evaluations on a Slurm cluster: each command an evaluator would run here
// (a mapper's build and runs, a kernel's builds and runs) becomes a batch job,
// submitted with sbatch, followed with squeue and scontrol (sacct where the
// cluster keeps accounting), cancelled with scancel when hone stops or a limit
// is hit, and submitted again after a node failure. Commands and results go
// through a job folder on a filesystem the nodes share with hone:
//   JOB_DIR/RUN_TAG/<key>-<hash>-<n>/job.sh     the batch script (hone's, or the user's header + hone's body)
//                                     jobid      written as soon as sbatch answers
//                                     output     the command's stdout and stderr
//                                     status     "exit start end", written by the job when the command ends
//                                     slurm.out  the job's own messages (Slurm's, the script's)
// A folder's name is a function of the command, its folder and its key, so a
// hone that was killed and resumed finds the jobs it submitted: a finished
// one's result is read, a queued or running one is waited for; nothing is
// submitted twice. docs/SLURM.md is the user's side of this.
#pragma once

#include "support/Executor.h"
#include "support/Expected.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace hone::cluster {

/// How jobs are submitted: stored with a run, so that a resume submits the same way.
struct SlurmSettings {
  std::string jobDir;                   // the job folders (a filesystem the nodes share)
  std::string runTag;                   // this run's jobs, under jobDir (set when the run starts)
  std::string partition, account, gpus; // -p, -A, --gpus ("1", "a100:2"); empty: the cluster's default
  double timeLimitS = 0;                // --time; 0: the command's own limit plus a minute (or none)
  std::vector<std::string> directives;  // more sbatch options, e.g. "--exclusive", "--constraint=skylake"
  std::string header;                   // a user's job header (#SBATCH lines, module loads); {name} {time} {dir}
  std::string headerFile;               // where it came from (messages)
  double pollS = 1.0;                   // how often the queue is asked
  double pendingTimeoutS = 0;           // a job pending longer is cancelled and fails; 0: wait
  int retries = 2;                      // submissions again after a node failure or preemption
  std::string binDir;                   // where sbatch, squeue, ... are; empty: PATH

  nlohmann::json toJson() const;
  /// Reads stored settings strictly (an unknown key is an error).
  static support::Expected<SlurmSettings> fromJson(const nlohmann::json &j);
};

/// A job as squeue or scontrol reports it.
struct JobState {
  std::string id, state, reason; // state: PENDING, RUNNING, COMPLETED, TIMEOUT, NODE_FAIL, ...
  int exitCode = -1, signal = 0; // scontrol's ExitCode=code:signal
  std::string nodes;
};
/// The jobs of `squeue -h -o '%i|%T|%r|%N'` (malformed lines are skipped).
std::map<std::string, JobState> parseSqueue(const std::string &text);
/// The tasks of array job `id` (0 <= task < `count`) in a queue snapshot: running ones as `ID_N`, pending
/// ones also in ranges (`ID_[3-5,7%2]`); a task of a range that cannot be read is not listed, and
/// `unread` (when given) says there was one.
std::map<size_t, JobState> arrayTasks(const std::map<std::string, JobState> &queue, const std::string &id,
                                      size_t count, bool *unread = nullptr);
/// One job of `scontrol show job -o ID`; nullopt when it has no JobId and JobState.
std::optional<JobState> parseScontrolJob(const std::string &text);
/// The first job of `sacct -n -P -X -o JobID,State,ExitCode,NodeList -j ID` ("CANCELLED by 0" reads CANCELLED).
std::optional<JobState> parseSacct(const std::string &text);
/// Why a job's status file cannot be what its script wrote: by the status the command took `r.seconds`,
/// but hone saw the job running for `seenRunningS` (from the first to the last poll of the queue that
/// showed it running, every `pollS`): a program that wrote its job's status itself, or ended the job's
/// script early. Allows a second and two polls for the script's own steps and a queue read late.
std::optional<std::string> statusContradicted(const support::SubprocessResult &r, double seenRunningS, double pollS);
/// Whether a job that ended in `state` without a result is submitted again (node failure, preemption).
bool resubmittable(const std::string &state);
/// Whether a state is final (the job will not run again by itself).
bool finalState(const std::string &state);

/// What a job runs: the command (argv, folder, limits) and where its files go.
struct JobSpec {
  std::string name;   // the job's name in the queue
  std::string folder; // its job folder
  support::SubprocessOptions process;
};
/// The batch script of a job: the header (the user's, or hone's #SBATCH lines from the settings), then
/// hone's body: memory limit, the command under `timeout`, its exit status and times into `status`.
std::string renderJobScript(const SlurmSettings &settings, const JobSpec &job);
/// The batch script of an array job: task i runs `tasks[k].second` where `tasks[k].first` is i.
std::string renderArrayScript(const SlurmSettings &settings, const std::string &name, const std::string &folder,
                              const std::vector<std::pair<size_t, JobSpec>> &tasks);
/// Slurm's --time for a command with `timeoutS` (0: none) under `settings`: "M" minutes, or empty.
std::string timeLimitOf(const SlurmSettings &settings, double timeoutS);

/// Registers "slurm" as an executor kind (support::registerExecutorKind): made from a run's stored
/// SlurmSettings, with the job folder beside the store unless set, and a tag of the run's own
/// (host-pid-milliseconds) that a resume finds its jobs by.
void registerSlurmExecutor();

class SlurmExecutor : public support::CommandExecutor {
public:
  /// Checks that sbatch can be found and the job folder made; an error says which is missing.
  static support::Expected<std::shared_ptr<SlurmExecutor>> make(SlurmSettings settings);
  ~SlurmExecutor() override;

  support::SubprocessResult run(const support::SubprocessOptions &options, const std::string &key) override;
  std::string describe() const override;
  bool sharesMachine() const override { return false; }
  std::string sharedDir() const override;
  std::string activity() const override;

  /// Runs `commands` as one array job (at most `inFlight` tasks at a time; 0: no limit) and waits for all;
  /// `onDone` hears of each as it finishes. As with run(), a restarted hone asking for the same commands
  /// under the same key adopts the array: finished tasks' results are read, the rest waited for or, when
  /// they ended without a result, submitted again (those only).
  std::vector<support::SubprocessResult>
  runArray(const std::vector<support::SubprocessOptions> &commands, const std::string &key, size_t inFlight,
           const std::function<void(size_t, const support::SubprocessResult &)> &onDone = {});
  /// Cancels every job this executor waits for (hone is stopping).
  void cancelAll();
  /// Jobs submitted (not adopted) by this executor so far; for tests and the summary.
  size_t submitted() const { return submitted_; }
  size_t adopted() const { return adopted_; }
  const SlurmSettings &settings() const { return settings_; }

private:
  explicit SlurmExecutor(SlurmSettings settings) : settings_(std::move(settings)) {}
  std::string tool(const char *name) const;
  support::SubprocessResult slurm(std::vector<std::string> argv, double timeoutS = 60) const;
  /// The queue's view of `id` (refreshed at most every pollS, one squeue for all jobs in flight);
  /// `known`: whether the queue answered after `after` (only then does "not queued" mean gone).
  std::optional<JobState> queued(const std::string &id, std::chrono::steady_clock::time_point after, bool *known);
  void refresh(std::chrono::steady_clock::time_point after, bool *known); // the queue snapshot (under mutex_)
  /// The tasks of array job `id` in the queue (same refresh rules); `any`: whether any entry of the
  /// array is there, tasks that could not be read included.
  std::map<size_t, JobState> arrayQueued(const std::string &id, size_t count,
                                         std::chrono::steady_clock::time_point after, bool *known, bool *any);
  /// What Slurm remembers of a job that left the queue (scontrol, then sacct).
  std::optional<JobState> finished(const std::string &id) const;
  support::Expected<std::string> submit(const JobSpec &job);
  /// The job a killed hone submitted for `folder` that can still give a result (its recorded id, or one
  /// found in the queue by `name`); "" when there is none to wait for.
  std::string adoptable(const std::string &folder, const std::string &name, const support::SubprocessOptions &options);
  /// The result of a job or array task (`what`: "Slurm job 12", "Slurm array task 12_3") that left the queue
  /// without a status: its state `st` from scontrol/sacct, the last line of its Slurm output `slurmOut`,
  /// after `attempts` resubmissions and `ranS` seen running.
  support::SubprocessResult jobEndedWithoutResult(const std::string &what, const std::optional<JobState> &st,
                                                  const std::string &slurmOut, int attempts, double ranS) const;
  /// Submits the commands not `done` as one array job from `folder` (task i's files in task-i, at most
  /// `inFlight` at a time) and records its id there; the id, or why it was not submitted.
  support::Expected<std::string> submitArray(const std::vector<support::SubprocessOptions> &commands,
                                             const std::vector<bool> &done, const std::string &folder,
                                             const std::string &name, size_t inFlight);
  void cancel(const std::string &id) const;
  std::string folderFor(const support::SubprocessOptions &options, const std::string &key);

  SlurmSettings settings_;
  mutable std::mutex mutex_;
  std::map<std::string, int> occurrences_; // key+hash -> commands with it so far
  std::set<std::string> inFlight_;         // job ids waited for
  std::map<std::string, JobState> snapshot_;
  std::chrono::steady_clock::time_point snapshotAt_{};
  bool snapshotOk_ = false;
  std::atomic<size_t> submitted_{0}, adopted_{0};
};

} // namespace hone::cluster
