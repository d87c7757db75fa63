// The guided mapping agent's starting mapper (GuidedRender.h): a version's edits rendered above it,
// library functions renamed where the start uses their names, and the start's statements that the
// edits override or remove commented out.
#include "mapping/GuidedRender.h"

#include "dsl/Policy.h"
#include "support/Diff.h"

#include <fmt/format.h>

#include <map>

namespace hone::mapping::guided {

using model::ProcKind;

StartMapper::StartMapper(std::string text)
    : text_(std::move(text)), policy_(dsl::checkSource(support::SourceFile("start.map", text_))) {}

std::string StartMapper::render(const Version &v) const {
  if (v.edits.empty())
    return text_;
  std::string out = "# ---- hone guided edits: each addresses a problem the evidence cites; the first statement\n"
                    "# ---- for a task or region wins, so these take precedence over the starting mapper below\n";
  std::set<std::string> spaces;
  std::map<std::string, std::string> renamed;
  std::string defs, statements;
  for (const auto &e : v.edits) {
    std::string statement = e.statement;
    for (const auto &f : e.defs) {
      if (!mentions(text_, f.space) && spaces.insert(f.space).second)
        out += fmt::format("{} = Machine({});\n", f.space, f.space.substr(5));
      auto [it, fresh] = renamed.try_emplace(f.name, f.name);
      if (fresh) {
        for (int i = 2; mentions(text_, it->second); ++i)
          it->second = fmt::format("{}_{}", f.name, i);
        defs += replaceWord(f.text, f.name, it->second);
      }
      statement = replaceWord(statement, f.name, it->second);
    }
    statements +=
        e.removes() ? fmt::format("# {}\n# (the starting mapper's {} statement is removed below)\n", e.rationale, e.key)
                    : fmt::format("# {}\n{}\n", e.rationale, statement);
  }
  out += defs + statements + "# ---- the starting mapper ----\n";
  size_t startAt = out.size();
  out += text_;
  if (!out.empty() && out.back() != '\n')
    out += "\n";
  std::set<std::string> uncollected;
  for (const auto &e : v.edits)
    if (e.removes() && e.key.rfind("CollectMemory ", 0) == 0)
      uncollected.insert(e.key.substr(std::string("CollectMemory ").size()));
  return withoutOverridden(out, startAt, uncollected);
}

const dsl::Stmt *StartMapper::collects(const std::string &task) const {
  if (!policy_.ok())
    return nullptr;
  for (const auto &stmt : policy_.program.stmts)
    if (collectedTask(stmt) == task)
      return &stmt;
  return nullptr;
}

bool StartMapper::maps(const std::string &task, ProcKind kind, bool single) const {
  return policy_.ok() && dsl::taskMapStatementFor(policy_.program, task, kind, single) != nullptr;
}

std::optional<int64_t> StartMapper::instanceLimit(const std::string &task, model::ProcKind kind) const {
  if (!policy_.ok())
    return std::nullopt;
  return dsl::instanceLimitFor(policy_.program, task, kind);
}

std::optional<std::string> StartMapper::collectedTask(const dsl::Stmt &stmt) {
  auto c = stmt.as<dsl::CollectMemoryStmt>();
  if (!c || c->task.kind != dsl::Selector::Kind::Names || c->task.names.size() != 1)
    return std::nullopt;
  return c->task.names[0].text;
}

std::string StartMapper::withoutOverridden(const std::string &text, size_t startAt,
                                           const std::set<std::string> &uncollected) {
  dsl::CheckedSource checked = dsl::checkSource(support::SourceFile("candidate.map", text));
  if (!checked.ok())
    return text;
  std::map<uint32_t, size_t> overriddenKeys; // by a statement's offset: its keys set earlier
  for (const auto &d : checked.diags->diagnostics())
    if (d.severity == support::Severity::Warning && d.range.begin.offset >= startAt &&
        (d.message.find("this later one has no effect") != std::string::npos || d.message.rfind("duplicate ", 0) == 0))
      ++overriddenKeys[d.range.begin.offset];
  std::vector<std::pair<size_t, size_t>> lines; // [begin, end) offsets of statements to comment out
  std::set<size_t> removed;                     // of which an edit removes (not overrides)
  for (const auto &stmt : checked.program.stmts) {
    auto collected = collectedTask(stmt);
    bool remove = collected && stmt.range.begin.offset >= startAt && uncollected.count(*collected);
    auto it = overriddenKeys.find(stmt.range.begin.offset);
    if (!remove && (it == overriddenKeys.end() || it->second < keyCount(stmt)))
      continue;
    size_t begin = text.rfind('\n', stmt.range.begin.offset);
    begin = begin == std::string::npos ? 0 : begin + 1;
    size_t end = text.find('\n', stmt.range.end.offset > 0 ? stmt.range.end.offset - 1 : 0);
    // Only a statement alone on its lines (before it nothing, after it at most a comment).
    size_t after = text.find_first_not_of(" \t;", stmt.range.end.offset);
    if (text.find_first_not_of(" \t", begin) != stmt.range.begin.offset ||
        (after != std::string::npos && text[after] != '\n' && text[after] != '#'))
      continue;
    lines.emplace_back(begin, end == std::string::npos ? text.size() : end);
    if (remove)
      removed.insert(begin);
  }
  std::string out;
  size_t at = 0;
  for (const auto &[begin, end] : lines) {
    out += text.substr(at, begin - at);
    const char *why = removed.count(begin) ? "# removed by an edit above: " : "# overridden by an edit above: ";
    for (const auto &line : support::splitLines(text.substr(begin, end - begin)))
      out += why + line + "\n";
    at = end + 1;
  }
  if (at < text.size())
    out += text.substr(at);
  return out;
}

size_t StartMapper::keyCount(const dsl::Stmt &stmt) {
  auto names = [](const dsl::Selector &s) { return s.kind == dsl::Selector::Kind::Names ? s.names.size() : 1; };
  if (auto t = stmt.as<dsl::TaskStmt>())
    return names(t->tasks);
  if (auto m = stmt.as<dsl::TaskMapStmt>())
    return names(m->tasks);
  if (auto l = stmt.as<dsl::InstanceLimitStmt>())
    return names(l->task);
  if (stmt.as<dsl::RegionStmt>() || stmt.as<dsl::LayoutStmt>())
    return 1;
  return SIZE_MAX; // others are never overridden
}

} // namespace hone::mapping::guided
