#include "sim/AppCheck.h"

#include "support/StringUtil.h"

#include <fmt/format.h>

#include <algorithm>

namespace hone::sim {

namespace {

class Checker {
public:
  Checker(const model::AppModel &app, support::DiagnosticEngine &diags) : app_(app), diags_(diags) {
    tasks_ = app.taskNames();
    tasks_.push_back(app.topTask);
    regions_ = app.regionNames();
  }

  void tasks(const dsl::Selector &s) {
    if (s.kind != dsl::Selector::Kind::Names)
      return;
    for (const auto &n : s.names)
      unknown(n, tasks_, "task");
  }

  void region(const dsl::Selector &task, const dsl::Selector &region) {
    if (region.kind == dsl::Selector::Kind::Names) {
      for (const auto &n : region.names)
        unknown(n, regions_, "region");
      return;
    }
    if (region.kind != dsl::Selector::Kind::Index)
      return;
    // An index must be an argument of some task the statement applies to.
    size_t most = 0;
    for (const auto &t : app_.tasks)
      if (task.isWildcard() || std::any_of(task.names.begin(), task.names.end(),
                                           [&](const dsl::Ident &n) { return n.text == t.name; }))
        most = std::max(most, t.args.size());
    if (region.index >= static_cast<int64_t>(most))
      diags_.warning(region.range, fmt::format("argument index {} matches no region argument: the {} of app '{}' "
                                               "{} at most {} argument{}",
                                               region.index, task.isWildcard() ? "tasks" : "named tasks", app_.name,
                                               "have", most, most == 1 ? "" : "s"));
  }

private:
  void unknown(const dsl::Ident &name, const std::vector<std::string> &known, const char *what) {
    if (std::find(known.begin(), known.end(), name.text) != known.end())
      return;
    auto b = diags_.error(name.range, fmt::format("app '{}' has no {} named '{}'", app_.name, what, name.text));
    if (auto near = support::closestMatch(name.text, known))
      b.note(fmt::format("did you mean '{}'?", *near)).fixIt(name.range, *near);
  }

  const model::AppModel &app_;
  support::DiagnosticEngine &diags_;
  std::vector<std::string> tasks_, regions_;
};

} // namespace

void checkAgainstApp(const dsl::Program &policy, const model::AppModel &app, support::DiagnosticEngine &diags) {
  Checker c(app, diags);
  for (const auto &stmt : policy.stmts) {
    if (auto s = stmt.as<dsl::TaskStmt>())
      c.tasks(s->tasks);
    else if (auto s = stmt.as<dsl::RegionStmt>()) {
      c.tasks(s->task);
      c.region(s->task, s->region);
    } else if (auto s = stmt.as<dsl::LayoutStmt>()) {
      c.tasks(s->task);
      c.region(s->task, s->region);
    } else if (auto s = stmt.as<dsl::CollectMemoryStmt>()) {
      c.tasks(s->task);
      c.region(s->task, s->region);
    } else if (auto s = stmt.as<dsl::InstanceLimitStmt>())
      c.tasks(s->task);
    else if (auto s = stmt.as<dsl::TaskMapStmt>())
      c.tasks(s->tasks);
    else if (auto s = stmt.as<dsl::ControlReplicateStmt>())
      c.tasks(s->tasks);
  }
}

} // namespace hone::sim
