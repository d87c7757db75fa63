// Diagnostic collection and rendering (text with carets, and JSON).
#include "support/Diagnostics.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>

namespace hone::support {

const char *toString(Severity severity) {
  switch (severity) {
  case Severity::Error:
    return "error";
  case Severity::Warning:
    return "warning";
  case Severity::Note:
    return "note";
  }
  return "error";
}

namespace {
// Input is not always written by a person (a model's reply, a generated file): hone reports at most
// this many diagnostics per file and quotes at most this much of a message or a source line, so a
// 10 MB word is one short diagnostic (docs/DEVELOPING.md lists hone's limits).
constexpr size_t kMaxDiagnostics = 200;
constexpr size_t kMaxMessage = 600;
constexpr size_t kMaxQuotedLine = 200;

std::string clipped(std::string message) {
  if (message.size() > kMaxMessage) {
    message.resize(kMaxMessage);
    message += "...";
  }
  return message;
}
} // namespace

DiagnosticEngine::Builder &DiagnosticEngine::Builder::note(SourceRange range, std::string message) {
  if (index_ < engine_.diagnostics_.size())
    engine_.diagnostics_[index_].notes.push_back({range, clipped(std::move(message))});
  return *this;
}

DiagnosticEngine::Builder &DiagnosticEngine::Builder::note(std::string message) {
  return note(SourceRange{}, std::move(message));
}

DiagnosticEngine::Builder &DiagnosticEngine::Builder::fixIt(SourceRange range, std::string replacement) {
  if (index_ < engine_.diagnostics_.size())
    engine_.diagnostics_[index_].fixIts.push_back({range, std::move(replacement)});
  return *this;
}

DiagnosticEngine::Builder DiagnosticEngine::report(Severity severity, SourceRange range, std::string message) {
  if (severity == Severity::Error)
    ++errors_;
  else if (severity == Severity::Warning)
    ++warnings_;
  if (diagnostics_.size() >= kMaxDiagnostics) {
    // Counted, not kept: the last kept one says so. A builder past the end adds nothing.
    if (diagnostics_.size() == kMaxDiagnostics)
      diagnostics_.push_back(Diagnostic{Severity::Note, range,
                                        fmt::format("too many diagnostics: only the first {} are shown", kMaxDiagnostics),
                                        {},
                                        {}});
    return Builder(*this, SIZE_MAX);
  }
  diagnostics_.push_back(Diagnostic{severity, range, clipped(std::move(message)), {}, {}});
  return Builder(*this, diagnostics_.size() - 1);
}

void DiagnosticEngine::sortByLocation() {
  std::stable_sort(diagnostics_.begin(), diagnostics_.end(), [](const Diagnostic &a, const Diagnostic &b) {
    return a.range.begin.offset < b.range.begin.offset;
  });
}

namespace {

// The source line and a caret line under [begin, end) (clipped to the line).
void appendSnippet(std::string &out, const SourceFile &file, const SourceRange &range) {
  std::string_view line = file.lineText(range.begin.line);
  uint32_t col = range.begin.column; // 1-based
  uint32_t endColumn = range.end.column;
  std::string prefix, suffix;
  if (line.size() > kMaxQuotedLine) { // a window of the line around the caret
    size_t from = col > kMaxQuotedLine / 2 ? col - 1 - kMaxQuotedLine / 2 : 0;
    from = std::min(from, line.size());
    if (from > 0)
      prefix = "...";
    if (line.size() - from > kMaxQuotedLine)
      suffix = "...";
    line = line.substr(from, kMaxQuotedLine);
    col = static_cast<uint32_t>(col - from + prefix.size());
    endColumn = endColumn > from ? static_cast<uint32_t>(endColumn - from + prefix.size()) : col;
  }
  const std::string shown = prefix + std::string(line) + suffix;
  out += "  ";
  out += shown;
  out += "\n  ";
  for (uint32_t i = 1; i < col; ++i)
    out += (i - 1 < shown.size() && shown[i - 1] == '\t') ? '\t' : ' ';
  out += '^';
  if (range.end.line == range.begin.line && endColumn > col + 1) {
    uint32_t endCol = std::min<uint32_t>(endColumn, static_cast<uint32_t>(prefix.size() + line.size()) + 1);
    for (uint32_t i = col + 1; i < endCol; ++i)
      out += '~';
  }
  out += '\n';
}

// Newlines and tabs as escapes, so a fix-it stays on one line.
std::string escaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else
      out += c;
  }
  return out;
}

std::string describeFixIt(const SourceFile &file, const FixIt &fix) {
  std::string_view text(file.text());
  auto begin = fix.range.begin.offset;
  auto end = std::max(begin, fix.range.end.offset);
  std::string_view old = text.substr(begin, end - begin);
  if (old.empty())
    return fmt::format("insert '{}'", escaped(fix.replacement));
  if (fix.replacement.empty())
    return fmt::format("remove '{}'", escaped(old));
  return fmt::format("replace '{}' with '{}'", escaped(old), escaped(fix.replacement));
}

} // namespace

std::string applyFixIts(const SourceFile &file, const std::vector<Diagnostic> &diagnostics, size_t *applied) {
  std::vector<const FixIt *> fixes;
  for (const auto &d : diagnostics)
    if (d.severity == Severity::Error)
      for (const auto &f : d.fixIts)
        if (f.range.valid())
          fixes.push_back(&f);
  std::stable_sort(fixes.begin(), fixes.end(), [](const FixIt *a, const FixIt *b) {
    return a->range.begin.offset < b->range.begin.offset;
  });
  std::string out;
  uint32_t pos = 0;
  size_t count = 0;
  const std::string &text = file.text();
  for (const FixIt *f : fixes) {
    uint32_t begin = f->range.begin.offset, end = std::max(begin, f->range.end.offset);
    if (begin < pos || end > text.size())
      continue; // overlaps one already applied
    out.append(text, pos, begin - pos);
    out += f->replacement;
    pos = end;
    ++count;
  }
  out.append(text, pos, std::string::npos);
  if (applied)
    *applied = count;
  return out;
}

std::string renderText(const SourceFile &file, const std::vector<Diagnostic> &diagnostics) {
  std::string out;
  for (const auto &d : diagnostics) {
    if (d.range.valid()) {
      out += fmt::format("{}:{}:{}: {}: {}\n", file.name(), d.range.begin.line, d.range.begin.column,
                         toString(d.severity), d.message);
      appendSnippet(out, file, d.range);
    } else {
      out += fmt::format("{}: {}: {}\n", file.name(), toString(d.severity), d.message);
    }
    for (const auto &fix : d.fixIts)
      out += fmt::format("  fix-it: {}:{}:{}: {}\n", file.name(), fix.range.begin.line, fix.range.begin.column,
                         describeFixIt(file, fix));
    for (const auto &n : d.notes) {
      if (n.range.valid()) {
        out += fmt::format("{}:{}:{}: note: {}\n", file.name(), n.range.begin.line, n.range.begin.column, n.message);
        if (n.range.begin.line != d.range.begin.line || n.range.begin.column != d.range.begin.column)
          appendSnippet(out, file, n.range);
      } else {
        out += fmt::format("{}: note: {}\n", file.name(), n.message);
      }
    }
  }
  return out;
}

nlohmann::json toJson(const SourceFile &file, const std::vector<Diagnostic> &diagnostics) {
  auto list = nlohmann::json::array();
  for (const auto &d : diagnostics) {
    nlohmann::json notes = nlohmann::json::array();
    for (const auto &n : d.notes) {
      nlohmann::json note = {{"file", file.name()}, {"message", n.message}};
      note["line"] = n.range.valid() ? nlohmann::json(n.range.begin.line) : nlohmann::json(nullptr);
      note["column"] = n.range.valid() ? nlohmann::json(n.range.begin.column) : nlohmann::json(nullptr);
      notes.push_back(std::move(note));
    }
    nlohmann::json fixits = nlohmann::json::array();
    for (const auto &f : d.fixIts)
      fixits.push_back({{"line", f.range.begin.line},
                        {"column", f.range.begin.column},
                        {"end_line", f.range.end.line},
                        {"end_column", f.range.end.column},
                        {"replacement", f.replacement},
                        {"description", describeFixIt(file, f)}});
    list.push_back({{"file", file.name()},
                    {"line", d.range.begin.line},
                    {"column", d.range.begin.column},
                    {"end_line", d.range.end.line},
                    {"end_column", d.range.end.column},
                    {"severity", toString(d.severity)},
                    {"message", d.message},
                    {"notes", std::move(notes)},
                    {"fixits", std::move(fixits)}});
  }
  return list;
}

} // namespace hone::support
