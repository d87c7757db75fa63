// Diagnostics in the form of a compiler's: located (file:line:col), with a
// caret under the offending text, notes, fix-its, many per run, and a JSON
// form for machines (`--diagnostics=json`).
//
//   circuit.map:12:7: error: unknown task 'calc_new_currents'
//     Task calc_new_currents GPU;
//          ^~~~~~~~~~~~~~~~~
//   circuit.map:12:7: note: did you mean 'calculate_new_currents'?
#pragma once

#include "support/SourceFile.h"

#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace hone::support {

enum class Severity { Error, Warning, Note };
const char *toString(Severity severity);

/// A suggested edit: replace `range` with `replacement`. An empty range is an
/// insertion; an empty replacement a removal.
struct FixIt {
  SourceRange range;
  std::string replacement;
};

struct DiagnosticNote {
  SourceRange range; // may be invalid: a note without a location
  std::string message;
};

struct Diagnostic {
  Severity severity = Severity::Error;
  SourceRange range;
  std::string message;
  std::vector<DiagnosticNote> notes;
  std::vector<FixIt> fixIts;
};

/// Collects the diagnostics of one file. Reporting never stops the caller:
/// passes report and carry on, so that one run shows every independent error.
class DiagnosticEngine {
public:
  explicit DiagnosticEngine(const SourceFile &file) : file_(&file) {}

  /// Adds notes and fix-its to the diagnostic just reported.
  class Builder {
  public:
    Builder(DiagnosticEngine &engine, size_t index) : engine_(engine), index_(index) {}
    Builder &note(SourceRange range, std::string message);
    Builder &note(std::string message);
    Builder &fixIt(SourceRange range, std::string replacement);

  private:
    DiagnosticEngine &engine_;
    size_t index_;
  };

  Builder report(Severity severity, SourceRange range, std::string message);
  Builder error(SourceRange range, std::string message) { return report(Severity::Error, range, std::move(message)); }
  Builder warning(SourceRange range, std::string message) {
    return report(Severity::Warning, range, std::move(message));
  }

  const SourceFile &file() const { return *file_; }
  const std::vector<Diagnostic> &diagnostics() const { return diagnostics_; }
  size_t errorCount() const { return errors_; }
  size_t warningCount() const { return warnings_; }
  bool hasErrors() const { return errors_ > 0; }

  /// Orders diagnostics by position (stable: equal positions keep report order).
  void sortByLocation();

private:
  const SourceFile *file_;
  std::vector<Diagnostic> diagnostics_;
  size_t errors_ = 0;
  size_t warnings_ = 0;
};

/// The text of `file` with the fix-its of its error diagnostics applied.
/// Overlapping fix-its are skipped (the first by position wins); *applied
/// counts those applied.
std::string applyFixIts(const SourceFile &file, const std::vector<Diagnostic> &diagnostics, size_t *applied);

/// Human form, one block per diagnostic, as shown above.
std::string renderText(const SourceFile &file, const std::vector<Diagnostic> &diagnostics);

/// Machine form: a list of {file, line, column, end_line, end_column, severity,
/// message, notes: [{file, line, column, message}], fixits: [{line, column,
/// end_line, end_column, replacement}]}.
nlohmann::json toJson(const SourceFile &file, const std::vector<Diagnostic> &diagnostics);

} // namespace hone::support
