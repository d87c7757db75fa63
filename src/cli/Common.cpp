// Helpers shared by the subcommands.
#include "cli/Commands.h"

#include "dsl/Frontend.h"
#include "support/Diagnostics.h"
#include "support/FileUtil.h"
#include "tune/Config.h"
#include "support/SourceFile.h"
#include "store/Store.h"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>

namespace hone::cli {

std::optional<support::SourceFile> readSource(const std::string &path) {
  std::string error;
  auto file = support::SourceFile::load(path, &error);
  if (!file)
    std::cerr << fmt::format("hone: cannot read {}: {}\n", path, error);
  return file;
}

void printDiagnostics(const dsl::CheckedSource &checked) {
  std::cerr << support::renderText(*checked.file, checked.diags->diagnostics());
}

void printLocatedError(const support::SourceFile &file, int line, int column, const std::string &message,
                       const std::string &note) {
  support::DiagnosticEngine diags(file);
  support::SourceRange range;
  if (line > 0) {
    // The caret needs only line and column.
    range.begin.line = static_cast<uint32_t>(line);
    range.begin.column = static_cast<uint32_t>(column);
    range.end = range.begin;
  }
  auto b = diags.error(range, message);
  if (!note.empty())
    b.note(note);
  std::cerr << support::renderText(file, diags.diagnostics());
}

std::unique_ptr<store::Store> openStore(const std::string &db) {
  std::error_code ec; // the path's status, not an open: opening a pipe would wait for a writer for ever
  if (!std::filesystem::exists(db, ec)) {
    std::cerr << fmt::format("hone: --db {}: no such store (hone tune creates it)\n", db);
    return nullptr;
  }
  auto st = store::Store::open(db);
  if (!st) {
    std::cerr << "hone: --db " << db << ": " << st.error().message << "\n";
    return nullptr;
  }
  return std::move(*st);
}

std::optional<OpenedRun> openRun(const std::string &db, int64_t id) {
  auto st = openStore(db);
  if (!st)
    return std::nullopt;
  auto run = st->run(id);
  if (!run) {
    std::cerr << fmt::format("hone: no run {} in {} (hone runs --db {} lists them)\n", id, db, db);
    return std::nullopt;
  }
  auto steps = st->steps(id);
  return OpenedRun{std::move(st), std::move(*run), std::move(steps)};
}

void addExecutorOptions(CLI::App &cmd, ExecutorFlags &f, const std::string &what) {
  const std::string g = "Slurm (docs/SLURM.md)";
  cmd.add_option("--executor", f.executor, what)->capture_default_str();
  cmd.add_option("--slurm-job-dir", f.slurm.jobDir,
                 "Job folders, on a filesystem the nodes share (default: beside the store, STORE-jobs)")
      ->group(g);
  cmd.add_option("--slurm-partition", f.slurm.partition, "sbatch --partition")->group(g);
  cmd.add_option("--slurm-account", f.slurm.account, "sbatch --account")->group(g);
  cmd.add_option("--slurm-gpus", f.slurm.gpus, "sbatch --gpus (\"1\", \"a100:2\")")->group(g);
  cmd.add_option("--slurm-time-limit", f.slurm.timeLimitS,
                 "sbatch --time in seconds, rounded up to minutes (default: the command's --timeout plus a minute)")
      ->group(g)
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--slurm-sbatch", f.slurm.directives,
                 "More sbatch options, one per flag (--slurm-sbatch=--exclusive --slurm-sbatch=--mem=8G)")
      ->group(g);
  cmd.add_option("--slurm-header", f.slurm.headerFile,
                 "A job header of your own (#SBATCH lines, module loads; {name} {time} {dir}) instead of hone's")
      ->group(g);
  cmd.add_option("--slurm-poll", f.slurm.pollS, "Seconds between queue queries (one squeue for all jobs)")
      ->group(g)
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd.add_option("--slurm-pending-timeout", f.slurm.pendingTimeoutS,
                 "Cancel a job still pending after this many seconds and fail its command (0: wait)")
      ->group(g)
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--slurm-retries", f.slurm.retries, "Submissions again after a node failure or preemption")
      ->group(g)
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
}

bool applyExecutorOptions(const ExecutorFlags &f, tune::TuneConfig &config) {
  config.executor = f.executor;
  if (f.executor == "local")
    return true;
  if (f.executor != "slurm") {
    std::cerr << "hone: --executor: '" << f.executor << "' is not one of local, slurm\n";
    return false;
  }
  cluster::SlurmSettings s = f.slurm;
  if (!s.headerFile.empty()) {
    auto text = support::readFile(s.headerFile);
    if (!text) {
      std::cerr << "hone: --slurm-header: " << text.error().message << "\n";
      return false;
    }
    s.header = *text;
  }
  config.executorOptions = s.toJson();
  return true;
}

} // namespace hone::cli
