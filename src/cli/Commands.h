// The `hone` command: each subcommand registers itself on the CLI11 app and
// runs through a callback that returns the process exit code.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <optional>
#include <string>

namespace hone::support {
class SourceFile;
}
namespace hone::dsl {
struct CheckedSource;
}

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

// ---- shared helpers ----------------------------------------------------------

/// Reads a policy file; on failure prints "hone: cannot read F: reason" and returns nullopt.
std::optional<support::SourceFile> readSource(const std::string &path);

/// Prints the diagnostics of `checked` to stderr in text form.
void printDiagnostics(const dsl::CheckedSource &checked);

/// Prints one located runtime error (line/column may be 0) in compiler form.
void printLocatedError(const support::SourceFile &file, int line, int column, const std::string &message,
                       const std::string &note = "");

} // namespace hone::cli
