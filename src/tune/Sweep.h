// The papers' protocol, subjects x agents x seeds, as one batch (`hone sweep`): each combination is a
// `hone tune` process of its own, with its own store and work folder under the sweep's folder; run
// here N at a time or by an executor kind that runs many commands at once (a Slurm array job), and
// gathered into one store at the end. Running a sweep again picks up where a killed one stopped:
// finished tasks are not run again, and runs already gathered are not gathered twice.
#pragma once

#include "store/Store.h"
#include "support/Subprocess.h"

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace hone::tune {

/// One combination of a sweep: its `hone tune` command, its folder (store, work folder, status and
/// output files), what its run returned, and the runs gathered from it.
struct SweepTask {
  std::string subject, agent;
  uint64_t seed = 0;
  std::filesystem::path folder;
  support::SubprocessOptions command;
  support::SubprocessResult result;
  std::vector<int64_t> runs; // in the sweep's store
  std::string error;
};

/// One `hone tune` (the program `self`) per subject x agent x seed, each in its own folder under `root`
/// (created) with its own store; `subjectFlag` selects the domain (`--app`, `--kernel`), `bestName` is
/// the file or folder its best is written to, `tuneArgs` go to every task.
std::vector<SweepTask> planSweep(const std::vector<std::string> &subjects, const std::string &subjectFlag,
                                 const std::vector<std::string> &agents, const std::vector<uint64_t> &seeds,
                                 size_t iterations, const std::string &machine,
                                 const std::vector<std::string> &tuneArgs, const std::string &self,
                                 const std::filesystem::path &root, const std::string &bestName);

/// Runs the tasks here, `jobs` processes at a time; a task that finished before (its status file) is not
/// run again; `heard` hears of each as it ends.
void runSweepHere(std::vector<SweepTask> &tasks, size_t jobs,
                  const std::function<void(size_t, const support::SubprocessResult &)> &heard);

/// Gathers every task's runs into `store` (once: a task's gathered runs are noted in its folder) and says
/// in its `error` why a task has none; returns the number of tasks that failed.
size_t gatherSweep(std::vector<SweepTask> &tasks, store::Store &store);

} // namespace hone::tune
