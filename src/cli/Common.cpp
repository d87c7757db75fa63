// Helpers shared by the subcommands.
#include "cli/Commands.h"

#include "dsl/Frontend.h"
#include "support/Diagnostics.h"
#include "support/SourceFile.h"

#include <fmt/format.h>

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

} // namespace hone::cli
