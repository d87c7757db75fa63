#include "mapping/Space.h"

#include "support/StringUtil.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace hone::mapping {

using model::MemKind;
using model::ProcKind;

std::string_view toString(ParamKind kind) {
  switch (kind) {
  case ParamKind::Processor: return "processor";
  case ParamKind::Memory: return "memory";
  case ParamKind::Layout: return "layout";
  case ParamKind::IndexPlacement: return "placement";
  case ParamKind::SinglePlacement: return "single_placement";
  case ParamKind::InstanceLimit: return "instance_limit";
  case ParamKind::Collect: return "collect";
  }
  return "?";
}

// ---- the placement library ---------------------------------------------------

std::vector<std::string> placementPatterns(int dims, bool child, bool single) {
  std::vector<std::string> out{"default"};
  if (!single) {
    out.insert(out.end(), {"hblock", "hcyclic", "cyclic"});
    if (dims >= 2)
      out.push_back("tile");
  }
  if (child && single) // task.parent exists for single tasks only
    out.push_back("parent");
  return out;
}

std::string machineGlobal(ProcKind kind) {
  return fmt::format("hone_{0} = Machine({0});", model::toString(kind));
}

namespace {

// The linearised point (row-major) and the launch volume, for 1- to 3-D launches.
std::string linear(int dims) {
  std::string e = "p[0]";
  for (int d = 1; d < dims; ++d)
    e = fmt::format("{} * s[{}] + p[{}]", d > 1 ? "(" + e + ")" : e, d, d);
  return e;
}

std::string volume(int dims) {
  std::vector<std::string> parts;
  for (int d = 0; d < dims; ++d)
    parts.push_back(fmt::format("s[{}]", d));
  return fmt::format("{}", fmt::join(parts, " * "));
}

} // namespace

LibraryFunction libraryFunction(const std::string &pattern, int dims, ProcKind kind) {
  std::string k(model::toString(kind));
  std::string m = "hone_" + k;
  dims = std::clamp(dims, 1, 3);
  LibraryFunction f;
  f.space = m;
  if (pattern == "parent") {
    f.name = "hone_parent_" + k;
    f.text = fmt::format("# The processor the parent task runs on.\n"
                         "def {}(Task task) {{\n    return {}[*task.parent.processor({})];\n}}\n",
                         f.name, m, m);
    return f;
  }
  f.name = fmt::format("hone_{}{}_{}", pattern, dims, k);
  std::string head = fmt::format("def {}(Task task) {{\n    p = task.ipoint;\n    s = task.ispace;\n", f.name);
  if (pattern == "tile") {
    std::vector<std::string> nodes, procs;
    for (int d = 0; d < dims; ++d) {
      nodes.push_back(fmt::format("p[{0}] * t.size[{0}] / s[{0}]", d));
      procs.push_back(fmt::format("p[{}] % t.size[{}]", d, d + dims));
    }
    f.text = fmt::format("# Nodes split to match the launch (blocks), then each node's processors to match\n"
                         "# its share (round-robin): the communication-minimising tiling.\n"
                         "{}    n = {}.auto_split(0, s);\n    t = n.auto_split({}, s / n[:-1]);\n"
                         "    return t[{}, {}];\n}}\n",
                         head, m, dims, fmt::join(nodes, ", "), fmt::join(procs, ", "));
    return f;
  }
  std::string i = fmt::format("    i = {};\n", linear(dims));
  if (pattern == "hblock")
    f.text = fmt::format("# Linearised point: blocks over nodes, round-robin over a node's processors.\n"
                         "{}{}    return {}[i * {}.size[0] / ({}), i % {}.size[1]];\n}}\n",
                         head, i, m, m, volume(dims), m);
  else if (pattern == "block")
    f.text = fmt::format("# Linearised point: blocks over all processors, a node's in turn (Legion's default).\n"
                         "{}{}    a = {}.merge(0, 1);\n    return a[i * a.size[0] / ({})];\n}}\n",
                         head, i, m, volume(dims));
  else if (pattern == "hcyclic")
    f.text = fmt::format("# Linearised point: round-robin over nodes, then over a node's processors.\n"
                         "{}{}    return {}[i % {}.size[0], i / {}.size[0] % {}.size[1]];\n}}\n",
                         head, i, m, m, m, m);
  else // cyclic
    f.text = fmt::format("# Linearised point: round-robin over all processors, a node's in turn.\n"
                         "{}{}    a = {}.merge(0, 1);\n    return a[i % a.size[0]];\n}}\n",
                         head, i, m);
  return f;
}

// ---- building the space ------------------------------------------------------

namespace {

struct TaskFacts {
  int indexDims = 0;       // dims of its index launches (0: none)
  bool single = false;     // launched as a single task by an inner task
  bool child = false;      // launched by an inner task
  bool layoutMatters = false;
  std::vector<std::string> regions; // argument regions, distinct, in order
};

std::string join(const std::vector<ProcKind> &kinds) {
  std::vector<std::string_view> names;
  for (ProcKind k : kinds)
    names.push_back(model::toString(k));
  return fmt::format("{}", fmt::join(names, ","));
}

/// What the launches say of each task: its index launches' dimensions, whether an inner task launches
/// it (alone or not).
std::map<std::string, TaskFacts> launchFacts(const model::AppModel &app) {
  std::map<std::string, TaskFacts> facts;
  auto visit = [&](const std::vector<model::Launch> &launches, bool fromInner) {
    for (const auto &l : launches) {
      TaskFacts &f = facts[l.task];
      if (!l.domain.empty())
        f.indexDims = std::max(f.indexDims, static_cast<int>(l.domain.size()));
      else if (fromInner)
        f.single = true;
      f.child = f.child || fromInner;
    }
  };
  visit(app.setup, false);
  visit(app.body, false);
  visit(app.teardown, false);
  for (const auto &t : app.tasks)
    visit(t.launches, true);
  return facts;
}

/// Whether a processor of kind `p` reaches a memory of kind `k` on `machine`.
bool reaches(const model::MachineModel &machine, ProcKind p, MemKind k) {
  for (const auto &m : machine.memories)
    if (m.kind == k)
      for (const auto &a : m.access)
        if (a.proc == p)
          return true;
  return false;
}

/// The best affinity from a processor of kind `p` to a memory of kind `k` (-1: none).
double affinity(const model::MachineModel &machine, ProcKind p, MemKind k) {
  double best = -1;
  for (const auto &m : machine.memories)
    if (m.kind == k)
      for (const auto &a : m.access)
        if (a.proc == p)
          best = std::max(best, a.affinity);
  return best;
}

/// The processor orders of a task with several variants: every ordering, the default preference first.
Param processorParam(const model::Task &task, const std::vector<ProcKind> &kinds) {
  Param p{task.name + ".processor", ParamKind::Processor, task.name, {}, 0, {}, {}};
  std::vector<size_t> idx(kinds.size());
  for (size_t i = 0; i < idx.size(); ++i)
    idx[i] = i;
  do {
    std::vector<ProcKind> o;
    for (size_t i : idx)
      o.push_back(kinds[i]);
    p.values.push_back(join(o));
  } while (std::next_permutation(idx.begin(), idx.end()));
  p.doc = fmt::format("processor kinds tried in order for {} (variants: {})", task.name, join(kinds));
  return p;
}

/// A task's instance layouts, and the constraints its layout needs put on them (added to `constraints`).
Param layoutParam(const model::Task &task, const std::vector<ProcKind> &kinds, std::vector<Constraint> &constraints) {
  Param layout{task.name + ".layout",
               ParamKind::Layout,
               task.name,
               {},
               0,
               {"SOA C_order", "SOA F_order", "AOS C_order", "AOS F_order"},
               fmt::format("instance layout of {}'s region arguments", task.name)};
  for (const auto &need : task.layoutNeeds) {
    Constraint c;
    c.param = task.name + ".layout";
    for (const auto &v : layout.values)
      if ((!need.order || v.find(*need.order) != std::string::npos) && (!need.soa || v.rfind("SOA", 0) == 0))
        c.allowed.push_back(v);
    if (!need.variants.empty() && kinds.size() > 1)
      c.dependsOn = task.name + ".processor";
    c.rule = need.variants.empty() ? need.message : fmt::format("on {}: {}", join(need.variants), need.message);
    constraints.push_back(std::move(c));
  }
  return layout;
}

} // namespace

Space Space::build(const model::AppModel &app, const model::MachineModel &machine) {
  Space s;
  s.app_ = app.name;
  s.machine_ = machine.name;
  std::map<std::string, TaskFacts> facts = launchFacts(app);

  // Processor kinds in Legion's default preference, present on the machine.
  const std::array<ProcKind, 3> order = {ProcKind::GPU, ProcKind::OMP, ProcKind::CPU};
  std::vector<MemKind> memKinds;
  for (const auto &m : machine.memories)
    if (m.capacity > 0 && std::find(memKinds.begin(), memKinds.end(), m.kind) == memKinds.end())
      memKinds.push_back(m.kind);
  auto reaches = [&](ProcKind p, MemKind k) { return mapping::reaches(machine, p, k); };
  auto affinity = [&](ProcKind p, MemKind k) { return mapping::affinity(machine, p, k); };

  for (const auto &m : machine.memories)
    for (const auto &acc : m.access)
      if (m.capacity > 0 && machine.count(acc.proc) > 0)
        s.reach_.push_back({acc.proc, m.kind, acc.affinity, !m.per.has_value()});
  std::stable_sort(s.reach_.begin(), s.reach_.end(),
                   [](const Reach &a, const Reach &b) { return a.affinity > b.affinity; });

  std::vector<Param> processors, memories, layouts, placements, limits, collects;
  for (const auto &task : app.tasks) {
    TaskFacts &f = facts[task.name];
    s.taskOrder_.push_back(task.name);
    std::vector<ProcKind> kinds;
    for (ProcKind k : order)
      if (task.hasVariant(k) && machine.count(k) > 0)
        kinds.push_back(k);
    s.variants_.push_back(kinds);
    if (kinds.size() > 1)
      processors.push_back(processorParam(task, kinds));
    if (kinds.empty())
      continue;

    for (const auto &arg : task.args) {
      if (std::find(f.regions.begin(), f.regions.end(), arg.region) == f.regions.end())
        f.regions.push_back(arg.region);
      const model::Region *r = app.region(arg.region);
      if (!r)
        if (const model::Partition *part = app.partition(arg.region))
          r = app.region(part->region);
      if (r && (r->dims >= 2 || r->fields.size() >= 2))
        f.layoutMatters = true;
    }
    // Memory lists: one or two kinds usable from one of the task's kinds,
    // ordered by affinity from its default kind.
    std::vector<MemKind> usable;
    for (MemKind k : memKinds)
      for (ProcKind p : kinds)
        if (reaches(p, k) && std::find(usable.begin(), usable.end(), k) == usable.end())
          usable.push_back(k);
    std::stable_sort(usable.begin(), usable.end(),
                     [&](MemKind a, MemKind b) { return affinity(kinds[0], a) > affinity(kinds[0], b); });
    std::vector<std::string> lists;
    for (MemKind a : usable)
      lists.emplace_back(model::toString(a));
    for (MemKind a : usable)
      for (MemKind b : usable)
        if (a != b)
          lists.push_back(fmt::format("{},{}", model::toString(a), model::toString(b)));
    for (const auto &region : f.regions)
      memories.push_back(Param{task.name + ".memory." + region, ParamKind::Memory, task.name, region, 0, lists,
                               fmt::format("memory kinds tried in order for region {} of {}", region, task.name)});
    if (f.layoutMatters && !task.inner())
      layouts.push_back(layoutParam(task, kinds, s.constraints_));
    if (f.indexDims > 0)
      placements.push_back(Param{task.name + ".placement", ParamKind::IndexPlacement, task.name, {}, f.indexDims,
                                 placementPatterns(f.indexDims, f.child, false),
                                 fmt::format("placement function of {}'s {}-D index launches", task.name,
                                             f.indexDims)});
    if (f.single)
      placements.push_back(Param{task.name + ".single_placement", ParamKind::SinglePlacement, task.name, {}, 0,
                                 placementPatterns(0, true, true),
                                 fmt::format("placement of {} when an inner task launches it alone", task.name)});
    if (f.child) {
      limits.push_back(Param{task.name + ".instance_limit",
                             ParamKind::InstanceLimit,
                             task.name,
                             {},
                             0,
                             {"none", "1", "2", "4"},
                             fmt::format("at most this many {} in flight per processor", task.name)});
      if (!task.args.empty())
        collects.push_back(Param{task.name + ".collect",
                                 ParamKind::Collect,
                                 task.name,
                                 {},
                                 0,
                                 {"no", "yes"},
                                 fmt::format("collect {}'s read-only instances after it runs", task.name)});
    }
  }
  for (auto *group : {&processors, &memories, &layouts, &placements, &limits, &collects})
    for (auto &p : *group)
      s.params_.push_back(std::move(p));

  for (const auto &p : s.params_)
    if (p.kind == ParamKind::Memory) {
      std::vector<std::string> rules;
      for (MemKind k : memKinds) {
        std::vector<ProcKind> from;
        for (ProcKind pk : order)
          if (machine.count(pk) > 0 && reaches(pk, k))
            from.push_back(pk);
        rules.push_back(fmt::format("{} from {}", model::toString(k), from.empty() ? "none" : join(from)));
      }
      Constraint c;
      c.param = p.name;
      if (s.find(p.task + ".processor") >= 0)
        c.dependsOn = p.task + ".processor";
      c.rule = fmt::format("the first kind usable from the task's processor is taken (usable: {}); a list with "
                           "none fails with no affinity",
                           fmt::join(rules, "; "));
      s.constraints_.push_back(std::move(c));
    }
  return s;
}

int Space::find(const std::string &name) const {
  for (size_t i = 0; i < params_.size(); ++i)
    if (params_[i].name == name)
      return static_cast<int>(i);
  return -1;
}

double Space::log10Size() const {
  double sum = 0;
  for (const auto &p : params_)
    sum += std::log10(static_cast<double>(p.values.size()));
  return sum;
}

std::vector<std::string> Space::memoryKinds(ProcKind kind, bool nodeShared) const {
  std::vector<std::string> out;
  for (const auto &r : reach_)
    if (r.proc == kind && (!nodeShared || r.nodeShared)) {
      std::string name(model::toString(r.mem));
      if (std::find(out.begin(), out.end(), name) == out.end())
        out.push_back(name);
    }
  return out;
}

ProcKind Space::kindOf(const std::string &task, const Assignment &a) const {
  int p = find(task + ".processor");
  if (p >= 0) {
    const std::string &v = params_[static_cast<size_t>(p)].values[static_cast<size_t>(a[static_cast<size_t>(p)])];
    if (auto k = model::parseProcKind(v.substr(0, v.find(','))))
      return *k;
  }
  for (size_t t = 0; t < taskOrder_.size(); ++t)
    if (taskOrder_[t] == task && !variants_[t].empty())
      return variants_[t][0];
  return ProcKind::GPU;
}

std::string Space::render(const Assignment &a) const {
  auto value = [&](size_t i) -> const std::string & {
    return params_[i].values[static_cast<size_t>(a.at(i))];
  };
  std::string out = fmt::format("# A mapper for {} on {}, from hone's decision space.\n\n", app_, machine_);
  // Task statements: the chosen order, or the task's only kind.
  for (size_t t = 0; t < taskOrder_.size(); ++t) {
    if (variants_[t].empty())
      continue;
    int p = find(taskOrder_[t] + ".processor");
    out += fmt::format("Task {} {};\n", taskOrder_[t],
                       p >= 0 ? value(static_cast<size_t>(p)) : join(variants_[t]));
  }
  std::string maps, defs;
  std::set<std::string> spaces, defined;
  std::string tail;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Param &p = params_[i];
    const std::string &v = value(i);
    std::string_view kind = model::toString(kindOf(p.task, a));
    switch (p.kind) {
    case ParamKind::Processor: break;
    case ParamKind::Memory: out += fmt::format("Region {} {} {} {};\n", p.task, p.region, kind, v); break;
    case ParamKind::Layout: out += fmt::format("Layout {} * * {};\n", p.task, v); break;
    case ParamKind::InstanceLimit:
      if (v != "none")
        tail += fmt::format("InstanceLimit {} {};\n", p.task, v);
      break;
    case ParamKind::Collect:
      if (v == "yes")
        tail += fmt::format("CollectMemory {} *;\n", p.task);
      break;
    case ParamKind::IndexPlacement:
    case ParamKind::SinglePlacement: {
      if (v == "default")
        break;
      LibraryFunction f = libraryFunction(v, p.dims, kindOf(p.task, a));
      spaces.insert(f.space);
      if (defined.insert(f.name).second)
        defs += "\n" + f.text;
      maps += fmt::format("{} {} {};\n", p.kind == ParamKind::IndexPlacement ? "IndexTaskMap" : "SingleTaskMap",
                          p.task, f.name);
      break;
    }
    }
  }
  out += tail;
  if (!spaces.empty()) {
    out += "\n";
    for (const auto &sp : spaces)
      out += fmt::format("{0} = Machine({1});\n", sp, sp.substr(5));
  }
  out += defs;
  if (!maps.empty())
    out += "\n" + maps;
  return out;
}

nlohmann::json Space::toJson(const Assignment &a) const {
  nlohmann::json j = nlohmann::json::object();
  for (size_t i = 0; i < params_.size(); ++i)
    j[params_[i].name] = params_[i].values[static_cast<size_t>(a.at(i))];
  return j;
}

support::Expected<Assignment> Space::fromJson(const nlohmann::json &j) const {
  if (!j.is_object())
    return support::Error{"an assignment is a JSON object {\"parameter\": \"value\"}"};
  Assignment a = defaults();
  for (const auto &[name, v] : j.items()) {
    int i = find(name);
    if (i < 0) {
      std::vector<std::string> names;
      for (const auto &p : params_)
        names.push_back(p.name);
      auto hint = support::closestMatch(name, names);
      return support::Error{
          fmt::format("unknown parameter '{}'{}", name, hint ? "; did you mean '" + *hint + "'?" : "")};
    }
    const Param &p = params_[static_cast<size_t>(i)];
    if (v.is_number_integer()) {
      auto n = v.get<int64_t>();
      if (n < 0 || n >= static_cast<int64_t>(p.values.size()))
        return support::Error{
            fmt::format("parameter '{}': index {} is out of range 0..{}", name, n, p.values.size() - 1)};
      a[static_cast<size_t>(i)] = static_cast<int>(n);
      continue;
    }
    if (!v.is_string())
      return support::Error{fmt::format("parameter '{}': the value must be a string or an index", name)};
    auto it = std::find(p.values.begin(), p.values.end(), v.get<std::string>());
    if (it == p.values.end())
      return support::Error{fmt::format("parameter '{}': '{}' is not one of: {}", name, v.get<std::string>(),
                                        fmt::join(p.values, " | "))};
    a[static_cast<size_t>(i)] = static_cast<int>(it - p.values.begin());
  }
  return a;
}

nlohmann::json Space::describe() const {
  nlohmann::json params = nlohmann::json::array();
  for (const auto &p : params_) {
    nlohmann::json j{{"name", p.name},   {"kind", toString(p.kind)}, {"task", p.task},
                     {"type", "categorical"}, {"values", p.values}, {"default", p.values.front()},
                     {"doc", p.doc}};
    if (!p.region.empty())
      j["region"] = p.region;
    params.push_back(std::move(j));
  }
  nlohmann::json constraints = nlohmann::json::array();
  for (const auto &c : constraints_) {
    nlohmann::json j{{"param", c.param}, {"rule", c.rule}};
    if (!c.dependsOn.empty())
      j["depends_on"] = c.dependsOn;
    if (!c.allowed.empty())
      j["allowed"] = c.allowed;
    constraints.push_back(std::move(j));
  }
  return {{"app", app_},
          {"machine", machine_},
          {"parameters", params},
          {"constraints", constraints},
          {"log10_size", log10Size()},
          {"evaluate", "hone simulate --app APP --machine MACHINE --assign assignment.json --json"}};
}

std::vector<size_t> Space::sizes() const {
  std::vector<size_t> out;
  for (const auto &p : params_)
    out.push_back(p.values.size());
  return out;
}

} // namespace hone::mapping
