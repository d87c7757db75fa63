#include "dsl/Policy.h"

namespace hone::dsl {

namespace {

bool namesTask(const Selector &s, const std::string &task) {
  if (s.isWildcard())
    return true;
  for (const auto &n : s.names)
    if (n.text == task)
      return true;
  return false;
}

bool matchesRegion(const Selector &s, RegionArgRef region) {
  switch (s.kind) {
  case Selector::Kind::Wildcard: return true;
  case Selector::Kind::Index: return s.index == region.index;
  case Selector::Kind::Names:
    for (const auto &n : s.names)
      if (n.text == region.name)
        return true;
    return false;
  case Selector::Kind::ProcKind: return false;
  }
  return false;
}

// The most specific of the statements of type S; `third` scores the
// processor/memory field: -1 no match, 0 wildcard, 1 specific.
template <typename S, typename Third>
const S *mostSpecific(const Program &program, const std::string &task, RegionArgRef region, Third third) {
  const S *best = nullptr;
  int bestScore = -1;
  for (const auto &stmt : program.stmts) {
    const S *s = stmt.as<S>();
    if (!s || !namesTask(s->task, task) || !matchesRegion(s->region, region))
      continue;
    int t = third(*s);
    if (t < 0)
      continue;
    int score = (s->task.isWildcard() ? 0 : 4) + (s->region.isWildcard() ? 0 : 2) + t;
    if (score > bestScore) { // the first among equals
      best = s;
      bestScore = score;
    }
  }
  return best;
}

} // namespace

const TaskStmt *taskStatementFor(const Program &program, const std::string &task) {
  const TaskStmt *named = nullptr, *wildcard = nullptr;
  for (const auto &s : program.stmts)
    if (auto t = s.as<TaskStmt>()) {
      if (t->tasks.isWildcard())
        wildcard = wildcard ? wildcard : t;
      else if (namesTask(t->tasks, task))
        named = named ? named : t;
    }
  return named ? named : wildcard;
}

const TaskMapStmt *taskMapStatementFor(const Program &program, const std::string &task, ProcKind kind, bool single) {
  const TaskMapStmt *byName = nullptr, *byKind = nullptr, *byWildcard = nullptr;
  for (const auto &s : program.stmts) {
    auto m = s.as<TaskMapStmt>();
    if (!m || m->single != single)
      continue;
    switch (m->tasks.kind) {
    case Selector::Kind::Wildcard: byWildcard = byWildcard ? byWildcard : m; break;
    case Selector::Kind::ProcKind:
      if (m->tasks.proc == kind && !byKind)
        byKind = m;
      break;
    case Selector::Kind::Names:
      if (namesTask(m->tasks, task) && !byName)
        byName = m;
      break;
    case Selector::Kind::Index: break;
    }
  }
  return byName ? byName : byKind ? byKind : byWildcard;
}

const RegionStmt *regionStatementFor(const Program &program, const std::string &task, RegionArgRef region,
                                     ProcKind proc) {
  return mostSpecific<RegionStmt>(program, task, region, [&](const RegionStmt &s) {
    return !s.proc ? 0 : s.proc->kind == proc ? 1 : -1;
  });
}

const LayoutStmt *layoutStatementFor(const Program &program, const std::string &task, RegionArgRef region,
                                     MemKind mem, ProcKind proc) {
  return mostSpecific<LayoutStmt>(program, task, region, [&](const LayoutStmt &s) {
    switch (s.target) {
    case LayoutStmt::Target::Any: return 0;
    case LayoutStmt::Target::Memory: return s.mem == mem ? 1 : -1;
    case LayoutStmt::Target::Processor: return s.proc == proc ? 1 : -1;
    }
    return -1;
  });
}

std::optional<int64_t> instanceLimitFor(const Program &program, const std::string &task, ProcKind proc) {
  for (const auto &s : program.stmts)
    if (auto l = s.as<InstanceLimitStmt>())
      if (namesTask(l->task, task) && (!l->proc || l->proc->kind == proc))
        return l->limit;
  return std::nullopt;
}

bool collectsMemory(const Program &program, const std::string &task, RegionArgRef region) {
  for (const auto &s : program.stmts)
    if (auto c = s.as<CollectMemoryStmt>())
      if (namesTask(c->task, task) && matchesRegion(c->region, region))
        return true;
  return false;
}

bool controlReplicated(const Program &program, const std::string &task) {
  for (const auto &s : program.stmts)
    if (auto c = s.as<ControlReplicateStmt>())
      if (namesTask(c->tasks, task))
        return true;
  return false;
}

} // namespace hone::dsl
