// Helpers shared by the subcommands.
#include "cli/Commands.h"

#include "dsl/Frontend.h"
#include "support/Diagnostics.h"
#include "support/SourceFile.h"
#include "store/Store.h"

#include <fmt/format.h>

#include <fstream>
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
  if (!std::ifstream(db)) {
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

} // namespace hone::cli
