// The `hone` command: each subcommand registers itself on the CLI11 app and
// runs through a callback that returns the process exit code.
#pragma once

#include "cluster/Slurm.h"
#include "mapping/MappingDomain.h"
#include "store/Store.h"

#include <CLI/CLI.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace hone::support {
class SourceFile;
}
namespace hone::dsl {
struct CheckedSource;
}
namespace hone::mapping {
class Space;
}
namespace hone::llm {
struct Settings;
}
namespace hone::model {
struct MachineModel;
struct AppModel;
struct Program;
} // namespace hone::model

namespace hone::cli {

/// Exit codes (docs/USER_GUIDE.md).
enum ExitCode : int { kOk = 0, kRejected = 1, kUsage = 2, kInternal = 3 };

/// A subcommand's action, run after parsing; returns the exit code.
using Action = std::function<int()>;

void addCheckCommand(CLI::App &app, Action &action);
void addCompileCommand(CLI::App &app, Action &action);
void addFmtCommand(CLI::App &app, Action &action);
void addEvalCommand(CLI::App &app, Action &action);
void addDumpCommand(CLI::App &app, Action &action);
void addSimulateCommand(CLI::App &app, Action &action);
void addTuneCommand(CLI::App &app, Action &action);
void addResumeCommand(CLI::App &app, Action &action);
void addRunsCommand(CLI::App &app, Action &action);
void addShowCommand(CLI::App &app, Action &action);
void addExportCommand(CLI::App &app, Action &action);
void addSpaceCommand(CLI::App &app, Action &action);
void addLlmCheckCommand(CLI::App &app, Action &action);
void addKernelCommand(CLI::App &app, Action &action);
void addPathsCommand(CLI::App &app, Action &action);
void addDescribeCommand(CLI::App &app, Action &action);
void addReportCommand(CLI::App &app, Action &action);
void addPlotCommand(CLI::App &app, Action &action);
void addServeCommand(CLI::App &app, Action &action);
void addLegionProfCommand(CLI::App &app, Action &action);
void addMachineCommand(CLI::App &app, Action &action);
void addModelCommand(CLI::App &app, Action &action);
void addSweepCommand(CLI::App &app, Action &action);

/// Registers every domain hone has (mapping, kernel) and their agents: the one place that names them all.
void registerDomains();

// ---- shared helpers ----------------------------------------------------------

/// Reads a policy file; on failure prints "hone: cannot read F: reason" and returns nullopt.
std::optional<support::SourceFile> readSource(const std::string &path);

/// Prints the diagnostics of `checked` to stderr in text form.
void printDiagnostics(const dsl::CheckedSource &checked);

/// Prints one located runtime error (line/column may be 0) in compiler form.
void printLocatedError(const support::SourceFile &file, int line, int column, const std::string &message,
                       const std::string &note = "");

/// --executor and the --slurm-* options of the commands that run evaluations (tune, sweep).
struct ExecutorFlags {
  std::string executor = "local";
  cluster::SlurmSettings slurm;
};
/// `what`: what --executor decides, for its help text.
void addExecutorOptions(CLI::App &cmd, ExecutorFlags &flags, const std::string &what);
/// Puts the flags into a run's configuration (reading the header file); false after printing why not.
bool applyExecutorOptions(const ExecutorFlags &flags, tune::TuneConfig &config);

using mapping::LoadedModels;

/// The exit code of an error, by one rule for every command: an error located in a file's content
/// (a model, a manifest, a policy: it has a line) is rejected input, 1; anything else (an option's
/// value that names nothing, a file that cannot be read) is a usage error, 2.
int exitCodeOf(const support::Error &error);

/// Finds and loads the models named by --app and --machine; prints the error and returns nullopt on
/// failure, with the exit code (exitCodeOf) in `*failure`.
std::optional<LoadedModels> loadModels(const std::string &app, const std::string &machine, std::optional<double> size,
                                       int *failure);

/// Makes `cmd`'s action load the models `opts` names (its `app`, `machine` and `size`) and run `body` on
/// them; a model that does not load is said, with its exit code (loadModels).
template <typename Options, typename Body>
void onModels(CLI::App *cmd, Action &action, std::shared_ptr<Options> opts, Body body) {
  cmd->callback([opts, &action, body] {
    action = [opts, body]() -> int {
      int failure = kUsage;
      auto models = loadModels(opts->app, opts->machine, opts->size, &failure);
      return models ? body(*models) : failure;
    };
  });
}

/// An existing experiment store (never creates one); prints why not and returns null.
std::unique_ptr<store::Store> openStore(const std::string &db);

struct OpenedRun {
  std::unique_ptr<store::Store> store;
  store::RunInfo run;
  std::vector<store::StepRecord> steps;
};
/// The store at `db` and its run `id` with its steps; prints why not.
std::optional<OpenedRun> openRun(const std::string &db, int64_t id);

/// The options that say which LLM endpoint to use: --llm-url, --llm-model, --llm-preset,
/// --llm-config, --llm-timeout, --llm-retries (for `tune` and `llm-check`).
void addLlmEndpointOptions(CLI::App &cmd, llm::Settings &settings, const std::string &group);
/// --api-key, hidden: the key is never taken from the command line; refuseKey() says where it goes.
CLI::Option *addRefusedKeyOption(CLI::App &cmd, std::string &sink);
/// Throws a CLI11 validation error (exit 2) when --api-key was given; never repeats the value.
void refuseKey(const CLI::Option *option);

/// The mapper of the assignment in a JSON file; prints the error and returns nullopt.
std::optional<std::string> renderAssignment(const mapping::Space &space, const std::string &path);

} // namespace hone::cli
