// The guided mapping agent's vocabulary (GuidedEdits.h): edits and versions, the text helpers its
// rationales and renderings use, what the best mapper does now according to its profile (Context),
// the edits of one statement each, and what the app model says about regions and partitions.
#include "mapping/GuidedEdits.h"

#include "sim/Simulator.h"
#include "support/JsonText.h"
#include "model/Kinds.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <set>

namespace hone::mapping::guided {

using model::ProcKind;
using nlohmann::json;

std::vector<std::string> Edit::families() const {
  std::vector<std::string> words;
  for (size_t at = 0; at < key.size();) {
    size_t end = std::min(key.find(' ', at), key.size());
    words.push_back(key.substr(at, end - at));
    at = end + 1;
  }
  if (!with.empty() || removes() || words.size() < 2)
    return {};
  std::vector<std::string> out;
  size_t afterTask = statement.find(words[1]) + words[1].size();
  out.push_back(statement.substr(0, statement.find(words[1])) + "*" + statement.substr(afterTask));
  if (words[0] == "Region" && words.size() >= 3) {
    size_t region = statement.find(" " + words[2] + " ", afterTask);
    if (region != std::string::npos)
      out.push_back(statement.substr(0, region) + " * " + statement.substr(region + words[2].size() + 2));
  }
  return out;
}

Version Version::with(const Edit &e) const {
  Version v = *this;
  auto it = std::find_if(v.edits.begin(), v.edits.end(), [&](const Edit &o) { return o.key == e.key; });
  if (it != v.edits.end())
    *it = e;
  else
    v.edits.push_back(e);
  return v;
}
const Edit *Version::find(const std::string &key) const {
  auto it = std::find_if(edits.begin(), edits.end(), [&](const Edit &e) { return e.key == key; });
  return it == edits.end() ? nullptr : &*it;
}

bool mentions(const std::string &text, const std::string &word) {
  auto isWord = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t pos = text.find(word); pos != std::string::npos; pos = text.find(word, pos + 1)) {
    bool before = pos == 0 || !isWord(text[pos - 1]);
    bool after = pos + word.size() >= text.size() || !isWord(text[pos + word.size()]);
    if (before && after)
      return true;
  }
  return false;
}

std::string replaceWord(const std::string &text, const std::string &word, const std::string &by) {
  if (word == by)
    return text;
  auto isWord = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::string out;
  size_t from = 0;
  for (size_t pos = text.find(word); pos != std::string::npos; pos = text.find(word, pos + 1)) {
    bool before = pos == 0 || !isWord(text[pos - 1]);
    bool after = pos + word.size() >= text.size() || !isWord(text[pos + word.size()]);
    if (!before || !after)
      continue;
    out += text.substr(from, pos - from) + by;
    from = pos + word.size();
  }
  return out + text.substr(from);
}

std::string ms(double s) { return s >= 1 ? fmt::format("{:.3g} s", s) : fmt::format("{:.3g} ms", s * 1e3); }

// ---- what the best mapper does now, from its profile ------------------------------

const json *Context::statOf(const std::string &task) const {
  if (!best.profile.contains("task_stats"))
    return nullptr;
  for (const auto &t : best.profile["task_stats"])
    if (support::textOf(t, "name") == task)
      return &t;
  return nullptr;
}

double Context::stat(const std::string &task, const char *what) const {
  const json *s = statOf(task);
  return s ? s->value(what, 0.0) : 0.0;
}

ProcKind Context::kindOf(const std::string &task) const {
  if (const json *s = statOf(task))
    if (auto k = model::parseProcKind(s->value("kind", "")))
      return *k;
  return space.kindOf(task, space.defaults());
}

std::string Context::memoryOf(const std::string &task, const std::string &region) const {
  // A profile may not say (a real run's Legion Prof profile has no per-argument memories).
  if (const json *s = statOf(task); s && s->contains("regions") && s->contains("memories")) {
    const json &regions = s->at("regions"), &memories = s->at("memories");
    if (!regions.is_array() || !memories.is_array())
      return {};
    for (size_t i = 0; i < regions.size() && i < memories.size(); ++i)
      if (regions[i] == region && memories[i].is_string())
        return memories[i].get<std::string>();
  }
  return {};
}

std::vector<std::string> Context::busiestTasks() const {
  std::vector<std::pair<double, std::string>> tasks;
  if (best.profile.contains("task_stats"))
    for (const auto &t : best.profile["task_stats"])
      tasks.push_back({support::numberOf(t, "busy_s"), support::textOf(t, "name")});
  std::stable_sort(tasks.begin(), tasks.end(), [](const auto &a, const auto &b) { return a.first > b.first; });
  std::vector<std::string> out;
  for (auto &[busy, name] : tasks)
    out.push_back(name);
  // Tasks the profile does not time (launched by inner tasks' parents, setup) follow.
  for (const auto &t : app.tasks)
    if (std::find(out.begin(), out.end(), t.name) == out.end())
      out.push_back(t.name);
  return out;
}

double Context::busiestKindShare() const {
  for (const auto &b : best.evidence.bottlenecks)
    if (sim::parseBottleneckKind(b.kind) == sim::BottleneckKind::Processor)
      return b.share;
  return 0;
}

std::vector<std::string> Context::sharedKinds(const std::string &task) const {
  return space.memoryKinds(kindOf(task), true);
}

bool Context::placedWith(const Param &p, const std::string &pattern) const {
  const Edit *have =
      best.version.find((p.kind == ParamKind::SinglePlacement ? "SingleTaskMap " : "IndexTaskMap ") + p.task);
  return have && mentions(have->statement, libraryFunction(pattern, p.dims, kindOf(p.task)).name);
}

const Param *Context::param(const std::string &name) const {
  int i = space.find(name);
  return i < 0 ? nullptr : &space.params()[static_cast<size_t>(i)];
}

std::vector<std::string> Context::memoryLists(const std::string &task, const std::string &region) const {
  const Param *p = param(task + ".memory." + region);
  return p ? p->values : std::vector<std::string>{};
}

// ---- edits ---------------------------------------------------------------------------

Edit regionEdit(const std::string &task, const std::string &region, ProcKind kind, const std::string &list,
                std::string why) {
  std::string k(model::toString(kind));
  return {fmt::format("Region {} {} {}", task, region, k),
          fmt::format("Region {} {} {} {};", task, region, k, list),
          std::move(why),
          {}};
}
Edit placementEdit(const Param &p, const std::string &pattern, ProcKind kind, std::string why) {
  bool single = p.kind == ParamKind::SinglePlacement;
  std::string stmt = single ? "SingleTaskMap" : "IndexTaskMap";
  if (pattern == "default") // an explicit function reproducing Legion's default block
    return placementEdit(p, "block", kind, std::move(why));
  LibraryFunction f = libraryFunction(pattern, p.dims, kind);
  return {fmt::format("{} {}", stmt, p.task), fmt::format("{} {} {};", stmt, p.task, f.name), std::move(why), {f}};
}
Edit layoutEdit(const std::string &task, const std::string &layout, std::string why) {
  return {"Layout " + task, fmt::format("Layout {} * * {};", task, layout), std::move(why), {}};
}

// ---- what the app says ------------------------------------------------------------------

std::vector<std::string> regionsOf(const model::Task &t) {
  std::vector<std::string> out;
  for (const auto &a : t.args)
    if (std::find(out.begin(), out.end(), a.region) == out.end())
      out.push_back(a.region);
  return out;
}

bool shared(const model::AppModel &app, const std::string &region) {
  for (const auto &p : app.partitions)
    if (p.aliased() && (p.name == region || p.covers == region))
      return true;
  return false;
}

bool privateTo(const model::AppModel &app, const model::Task &t, const model::Arg &arg) {
  const model::Partition *part = app.partition(arg.region);
  if (!part || part->aliased() || !arg.over.empty())
    return false;
  std::set<std::string> pointNames;
  auto collect = [&](const std::vector<model::Launch> &launches) {
    for (const auto &l : launches)
      if (l.task == t.name)
        pointNames.insert(l.point.begin(), l.point.end());
  };
  collect(app.setup);
  collect(app.body);
  collect(app.teardown);
  for (const auto &other : app.tasks)
    collect(other.launches);
  std::set<std::string> used;
  for (const auto &e : arg.piece)
    if (!pointNames.count(e.text()) || !used.insert(e.text()).second)
      return false;
  return !arg.piece.empty();
}

std::string rootOf(const model::AppModel &app, const std::string &name) {
  if (const model::Partition *p = app.partition(name))
    return p->region;
  return name;
}

bool sameData(const model::AppModel &app, const std::string &a, const std::string &b) {
  auto covers = [&](const std::string &x, const std::string &y) {
    const model::Partition *p = app.partition(x);
    return p && p->covers == y;
  };
  return a == b || covers(a, b) || covers(b, a) || a == rootOf(app, b) || b == rootOf(app, a);
}

} // namespace hone::mapping::guided
