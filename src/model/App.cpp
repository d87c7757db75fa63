#include "model/App.h"

#include "model/ModelToml.h"
#include "support/StringUtil.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

namespace hone::model {

using detail::TomlError;
using detail::TableReader;
using support::Error;
using support::Expected;

std::string_view toString(Privilege p) {
  switch (p) {
  case Privilege::Read: return "read";
  case Privilege::Write: return "write";
  case Privilege::ReadWrite: return "read-write";
  case Privilege::Reduce: return "reduce";
  }
  return "?";
}

bool Task::hasVariant(ProcKind k) const { return std::find(variants.begin(), variants.end(), k) != variants.end(); }

const Task *AppModel::task(const std::string &n) const {
  int i = taskIndex(n);
  return i < 0 ? nullptr : &tasks[static_cast<size_t>(i)];
}

int AppModel::taskIndex(const std::string &n) const {
  for (size_t i = 0; i < tasks.size(); ++i)
    if (tasks[i].name == n)
      return static_cast<int>(i);
  return -1;
}

const Region *AppModel::region(const std::string &n) const {
  for (const auto &r : regions)
    if (r.name == n)
      return &r;
  return nullptr;
}

const Partition *AppModel::partition(const std::string &n) const {
  for (const auto &p : partitions)
    if (p.name == n)
      return &p;
  return nullptr;
}

std::vector<std::string> AppModel::regionNames() const {
  std::vector<std::string> out;
  for (const auto &r : regions)
    out.push_back(r.name);
  for (const auto &p : partitions)
    out.push_back(p.name);
  return out;
}

std::vector<std::string> AppModel::taskNames() const {
  std::vector<std::string> out;
  for (const auto &t : tasks)
    out.push_back(t.name);
  return out;
}

namespace {

// Names every expression may use besides the app's own: "nodes" and the
// processors per node of each kind.
const std::vector<std::pair<std::string, ProcKind>> kKindCounts = {
    {"cpus", ProcKind::CPU}, {"gpus", ProcKind::GPU}, {"omps", ProcKind::OMP},
    {"ios", ProcKind::IO},   {"pys", ProcKind::PY},   {"procs", ProcKind::PROC}};

[[noreturn]] void failLine(const std::string &file, int line, const std::string &message) {
  throw TomlError(fmt::format("{}:{}: {}", file, line, message), line, 0);
}

std::string didYouMean(const std::string &word, const std::vector<std::string> &candidates) {
  auto near = support::closestMatch(word, candidates);
  return near ? fmt::format("; did you mean '{}'?", *near) : "";
}

Launch readLaunch(TableReader &r) {
  Launch l;
  l.line = r.line();
  l.task = r.string("task");
  l.domain = detail::exprs(r, "domain", false);
  l.point = r.strings("point", false);
  if (!l.point.empty() && l.point.size() != l.domain.size())
    r.failAt("point", fmt::format("names {} coordinates but the domain has {} dimensions", l.point.size(),
                                  l.domain.size()));
  if (l.point.empty())
    for (size_t i = 0; i < l.domain.size(); ++i)
      l.point.push_back(fmt::format("p{}", i));
  auto repeat = detail::exprTable(r, "repeat");
  if (repeat.size() > 1)
    r.failAt("repeat", "repeats over one variable, e.g. repeat = { k = \"gx\" }");
  if (!repeat.empty())
    l.repeat = repeat.front();
  r.finish();
  return l;
}

Privilege readPrivilege(TableReader &r) {
  std::string text = r.string("privilege");
  if (text == "read") return Privilege::Read;
  if (text == "write") return Privilege::Write;
  if (text == "read-write") return Privilege::ReadWrite;
  if (text == "reduce") return Privilege::Reduce;
  r.failAt("privilege", fmt::format("unknown privilege '{}' (known: read, write, read-write, reduce)", text));
}

/// One [[region]], checked against the regions before it.
Region readRegion(TableReader &r, const AppModel &app, TableReader &top) {
  Region region;
  region.line = r.line();
  region.name = r.string("name");
  double dims = r.number("dims", 1);
  if (dims < 1 || dims > 3 || dims != std::floor(dims))
    r.failAt("dims", "must be 1, 2 or 3");
  region.dims = static_cast<int>(dims);
  for (const auto &[name, bytes] : r.numberTable("fields")) {
    if (!(bytes > 0))
      r.failAt("fields", fmt::format("field '{}' must have a positive size in bytes", name));
    region.fields.push_back({name, bytes});
  }
  if (region.fields.empty())
    r.failAt("fields", "a region needs at least one field (fields = { name = bytes })");
  if (r.has("elements"))
    region.elements = detail::expr(r, "elements");
  r.finish();
  if (app.region(region.name))
    failLine(top.file(), region.line, fmt::format("region '{}' is defined twice", region.name));
  return region;
}

/// One [[partition]], checked against the regions and partitions before it.
Partition readPartition(TableReader &r, const AppModel &app, TableReader &top) {
  Partition p;
  p.line = r.line();
  p.name = r.string("name");
  p.region = r.string("region");
  p.covers = r.string("covers", "");
  if (p.covers.empty()) {
    p.pieces = detail::exprs(r, "pieces");
    p.elements = detail::expr(r, "elements");
    if (p.pieces.empty() || p.pieces.size() > 3)
      r.failAt("pieces", "a piece grid has 1, 2 or 3 dimensions");
  } else {
    p.neighbors = r.intLists("neighbors");
    p.fraction = detail::expr(r, "fraction");
    p.wrap = r.boolean("wrap", true);
  }
  r.finish();
  if (!app.region(p.region))
    failLine(top.file(), p.line,
             fmt::format("partition '{}': unknown region '{}'", p.name, p.region) +
                 didYouMean(p.region, app.regionNames()));
  if (app.partition(p.name) || app.region(p.name))
    failLine(top.file(), p.line, fmt::format("the name '{}' is defined twice", p.name));
  if (p.aliased()) {
    const Partition *of = app.partition(p.covers);
    if (!of || of->aliased())
      failLine(top.file(), p.line,
               fmt::format("partition '{}': covers '{}', which is not a disjoint partition defined above", p.name,
                           p.covers));
    if (of->region != p.region)
      failLine(top.file(), p.line,
               fmt::format("partition '{}' is of region '{}' but covers '{}' of region '{}'", p.name, p.region,
                           of->name, of->region));
    p.pieces = of->pieces;
    for (const auto &offset : p.neighbors) {
      if (offset.size() != of->pieces.size())
        failLine(top.file(), p.line,
                 fmt::format("partition '{}': a neighbour offset has {} coordinates; the grid of '{}' has {}", p.name,
                             offset.size(), of->name, of->pieces.size()));
      for (int64_t o : offset)
        if (o < -1'000'000'000 || o > 1'000'000'000)
          failLine(
              top.file(), p.line,
              fmt::format("partition '{}': neighbour offset {} is out of range (at most 10^9 pieces away)", p.name, o));
    }
  }
  return p;
}

/// One [[task.arg]] of task `t`: its region or partition, piece and fields checked against the app.
Arg readArg(TableReader &a, const AppModel &app, const Task &t, TableReader &top) {
  Arg arg;
  arg.line = a.line();
  arg.region = a.string("region");
  arg.piece = detail::exprs(a, "piece", false);
  arg.over = detail::exprTable(a, "over");
  arg.privilege = readPrivilege(a);
  arg.fields = a.strings("fields", false);
  if (a.has("traffic"))
    arg.traffic = detail::expr(a, "traffic");
  a.finish();
  const Region *region = app.region(arg.region);
  const Partition *part = app.partition(arg.region);
  if (part)
    region = app.region(part->region);
  if (!region)
    failLine(top.file(), arg.line,
             fmt::format("task '{}': unknown region or partition '{}'", t.name, arg.region) +
                 didYouMean(arg.region, app.regionNames()));
  if (part && arg.piece.size() != part->pieces.size())
    failLine(top.file(), arg.line,
             fmt::format("task '{}': '{}' has a {}-D piece grid; 'piece' needs {} coordinates", t.name, arg.region,
                         part->pieces.size(), part->pieces.size()));
  if (!part && !arg.piece.empty())
    failLine(top.file(), arg.line,
             fmt::format("task '{}': '{}' is a whole region; it has no pieces", t.name, arg.region));
  std::vector<std::string> fieldNames;
  for (const auto &f : region->fields)
    fieldNames.push_back(f.name);
  if (arg.fields.empty())
    arg.fields = fieldNames;
  for (const auto &f : arg.fields)
    if (std::find(fieldNames.begin(), fieldNames.end(), f) == fieldNames.end())
      failLine(top.file(), arg.line,
               fmt::format("task '{}': region '{}' has no field '{}'", t.name, region->name, f) +
                   didYouMean(f, fieldNames));
  return arg;
}

/// One [[task.requires]] of task `t`: a layout its variants need.
LayoutRequirement readRequirement(TableReader &q, const Task &t) {
  LayoutRequirement req;
  req.line = q.line();
  if (q.has("arg")) {
    double a = q.number("arg");
    if (a < 0 || a >= static_cast<double>(t.args.size()) || a != std::floor(a))
      q.failAt("arg", fmt::format("task '{}' has {} arguments (0-based)", t.name, t.args.size()));
    req.arg = static_cast<int>(a);
  }
  if (q.has("order")) {
    req.order = q.string("order");
    if (*req.order != "C_order" && *req.order != "F_order")
      q.failAt("order", "must be \"C_order\" or \"F_order\"");
  }
  req.soa = q.boolean("soa", false);
  for (const std::string &v : q.strings("variants", false)) {
    auto kind = model::parseProcKind(v);
    if (!kind || !t.hasVariant(*kind))
      q.failAt("variants", fmt::format("task '{}' has no {} variant", t.name, v));
    req.variants.push_back(*kind);
  }
  req.message = q.string("message");
  q.finish();
  return req;
}

/// One [[task]]: its variants, costs, arguments, layout needs and launches.
Task readTask(TableReader &r, const AppModel &app, TableReader &top) {
  Task t;
  t.line = r.line();
  t.name = r.string("name");
  if (app.task(t.name))
    failLine(top.file(), t.line, fmt::format("task '{}' is defined twice", t.name));
  for (const std::string &v : r.strings("variants")) {
    auto kind = model::parseProcKind(v);
    if (!kind)
      r.failAt("variants", fmt::format("unknown processor kind '{}'", v));
    t.variants.push_back(*kind);
  }
  if (t.variants.empty())
    r.failAt("variants", "a task needs at least one variant");
  t.flops = detail::expr(r, "flops", "0");
  for (const auto &[k, value] : r.numberTable("efficiency")) {
    auto kind = model::parseProcKind(k);
    if (!kind)
      r.failAt("efficiency", fmt::format("unknown processor kind '{}'", k));
    if (!(value > 0 && value <= 1))
      r.failAt("efficiency", "an efficiency is a fraction of peak in (0, 1]");
    t.efficiency[*kind] = value;
  }
  for (TableReader &a : r.tables("arg"))
    t.args.push_back(readArg(a, app, t, top));
  for (TableReader &q : r.tables("requires"))
    t.layoutNeeds.push_back(readRequirement(q, t));
  for (TableReader &l : r.tables("launch"))
    t.launches.push_back(readLaunch(l));
  r.finish();
  return t;
}

AppModel readApp(TableReader &top) {
  AppModel app;
  app.name = top.string("name");
  app.description = top.string("description", "");
  app.topTask = top.string("top_task", "main");
  app.iterations = detail::expr(top, "iterations", "1");

  TableReader metric = top.table("metric");
  std::string kind = metric.string("kind");
  if (kind != "time" && kind != "gflops")
    metric.failAt("kind", "must be \"time\" (throughput = iterations per second) or \"gflops\"");
  app.gflopsMetric = kind == "gflops";
  if (app.gflopsMetric)
    app.flops = detail::expr(metric, "flops");
  metric.finish();

  TableReader size = top.table("size");
  app.sizeName = size.string("name");
  app.sizeDefault = size.number("default");
  if (!(app.sizeDefault > 0))
    size.failAt("default", "must be greater than 0");
  app.sizeDoc = size.string("doc", "");
  size.finish();

  app.params = detail::exprTable(top, "params");

  for (TableReader &r : top.tables("region"))
    app.regions.push_back(readRegion(r, app, top));

  for (TableReader &r : top.tables("partition"))
    app.partitions.push_back(readPartition(r, app, top));

  for (TableReader &r : top.tables("task"))
    app.tasks.push_back(readTask(r, app, top));
  if (app.tasks.empty())
    top.failHere("an app needs at least one [[task]]");

  for (TableReader &r : top.tables("setup"))
    app.setup.push_back(readLaunch(r));
  for (TableReader &r : top.tables("body"))
    app.body.push_back(readLaunch(r));
  for (TableReader &r : top.tables("teardown"))
    app.teardown.push_back(readLaunch(r));
  if (app.body.empty())
    top.failHere("an app needs at least one [[body]] launch (the measured part)");
  top.finish();
  return app;
}

// Static checks that need the whole file: launched tasks exist, launches do
// not recurse, and every expression uses only names in scope where it is used.
void checkNames(const AppModel &app) {
  const std::string &file = app.path;
  std::vector<std::string> globals = {"nodes"};
  for (const auto &[name, kind] : kKindCounts)
    globals.push_back(name);
  globals.push_back(app.sizeName);
  auto checkExpr = [&](const Expr &e, const std::vector<std::string> &scope, int line, const std::string &what) {
    for (const auto &n : e.names())
      if (std::find(scope.begin(), scope.end(), n) == scope.end())
        failLine(file, line,
                 fmt::format("{}: unknown name '{}' in \"{}\"", what, n, e.text()) + didYouMean(n, scope));
  };
  for (const auto &[name, e] : app.params) {
    checkExpr(e, globals, e.line(), fmt::format("params.{}", name));
    globals.push_back(name);
  }
  checkExpr(app.iterations, globals, app.iterations.line(), "iterations");
  if (app.flops)
    checkExpr(*app.flops, globals, app.flops->line(), "metric.flops");
  for (const auto &r : app.regions)
    if (r.elements)
      checkExpr(*r.elements, globals, r.line, fmt::format("region '{}'", r.name));
  for (const auto &p : app.partitions) {
    for (const auto &e : p.pieces)
      checkExpr(e, globals, p.line, fmt::format("partition '{}'", p.name));
    if (p.elements)
      checkExpr(*p.elements, globals, p.line, fmt::format("partition '{}'", p.name));
    if (p.fraction)
      checkExpr(*p.fraction, globals, p.line, fmt::format("partition '{}'", p.name));
  }
  for (const auto &r : app.regions) {
    bool partitioned = std::any_of(app.partitions.begin(), app.partitions.end(),
                                   [&](const Partition &p) { return p.region == r.name && !p.aliased(); });
    if (!partitioned && !r.elements)
      failLine(file, r.line,
               fmt::format("region '{}' has no disjoint partition, so it needs 'elements'", r.name));
  }

  std::vector<std::string> stack;
  std::function<void(const Launch &, std::vector<std::string>)> visit = [&](const Launch &l,
                                                                            std::vector<std::string> scope) {
    const Task *t = app.task(l.task);
    if (!t)
      failLine(file, l.line, fmt::format("launch of unknown task '{}'", l.task) + didYouMean(l.task, app.taskNames()));
    if (std::find(stack.begin(), stack.end(), l.task) != stack.end())
      failLine(file, l.line, fmt::format("task '{}' launches itself (through {})", l.task, fmt::join(stack, " -> ")));
    std::string what = fmt::format("launch of '{}'", l.task);
    if (l.repeat) {
      checkExpr(l.repeat->second, scope, l.line, what);
      scope.push_back(l.repeat->first);
    }
    for (const auto &e : l.domain)
      checkExpr(e, scope, l.line, what);
    scope.insert(scope.end(), l.point.begin(), l.point.end());
    std::string taskWhat = fmt::format("task '{}'", t->name);
    checkExpr(t->flops, scope, t->line, taskWhat);
    for (const auto &a : t->args) {
      std::vector<std::string> argScope = scope;
      for (const auto &[name, count] : a.over) {
        checkExpr(count, scope, a.line, taskWhat);
        argScope.push_back(name);
      }
      for (const auto &e : a.piece)
        checkExpr(e, argScope, a.line, taskWhat);
      if (a.traffic) {
        argScope.push_back("bytes");
        checkExpr(*a.traffic, argScope, a.line, taskWhat);
      }
    }
    stack.push_back(l.task);
    for (const auto &child : t->launches)
      visit(child, scope);
    stack.pop_back();
  };
  for (const auto &l : app.setup)
    visit(l, globals);
  std::vector<std::string> bodyScope = globals;
  bodyScope.push_back("iter");
  for (const auto &l : app.body)
    visit(l, bodyScope);
  for (const auto &l : app.teardown)
    visit(l, globals);
}

} // namespace

Expected<AppModel> parseApp(const std::string &path, const std::string &text) {
  return support::parseTomlDocument<AppModel>(path, text, [&](TableReader &top) {
    AppModel app = readApp(top);
    app.path = path; // checkNames reports against it
    checkNames(app);
    return app;
  });
}

Expected<AppModel> loadApp(const std::string &path) {
  auto text = support::readTomlFile(path);
  if (!text)
    return text.error();
  return parseApp(path, *text);
}

// ---- instantiation ----------------------------------------------------------

namespace {

class Instantiator {
public:
  Instantiator(const AppModel &app, const MachineModel &machine, size_t maxTasks)
      : app_(app), machine_(machine), maxTasks_(maxTasks) {}

  Program run(double size) {
    program_.app = &app_;
    program_.size = size;
    scope_.emplace_back("nodes", machine_.nodes);
    for (const auto &[name, kind] : kKindCounts)
      scope_.emplace_back(name, machine_.count(kind));
    scope_.emplace_back(app_.sizeName, size);
    program_.values[app_.sizeName] = size;
    for (const auto &[name, e] : app_.params) {
      double v = eval(e, e.line(), fmt::format("params.{}", name));
      scope_.emplace_back(name, v);
      program_.values[name] = v;
    }
    program_.iterations = eval(app_.iterations, app_.iterations.line(), "iterations");
    if (!(program_.iterations >= 1 && program_.iterations <= 1e6))
      failLine(app_.path, app_.iterations.line(),
               fmt::format("iterations is {}; it must be from 1 to 1000000", program_.iterations));
    if (app_.flops)
      program_.flops = evalAmount(*app_.flops, app_.flops->line(), "metric.flops");
    buildData();
    for (const auto &l : app_.setup)
      expand(l, -1, false);
    auto iterations = static_cast<int64_t>(program_.iterations);
    for (int64_t it = 0; it < iterations; ++it) {
      scope_.emplace_back("iter", static_cast<double>(it));
      for (const auto &l : app_.body)
        expand(l, -1, true);
      scope_.pop_back();
    }
    for (const auto &l : app_.teardown)
      expand(l, -1, false);
    return std::move(program_);
  }

private:
  double eval(const Expr &e, int line, const std::string &what) {
    auto v = e.eval([this](const std::string &name) -> std::optional<double> {
      for (auto it = scope_.rbegin(); it != scope_.rend(); ++it)
        if (it->first == name)
          return it->second;
      return std::nullopt;
    });
    if (!v)
      failLine(app_.path, line, fmt::format("{}: \"{}\": {}", what, e.text(), v.error().message));
    if (!std::isfinite(*v))
      failLine(app_.path, line, fmt::format("{}: \"{}\" is {}, not a finite number", what, e.text(), *v));
    return *v;
  }

  // A quantity (flops, elements, bytes, a fraction): finite and not negative.
  double evalAmount(const Expr &e, int line, const std::string &what) {
    double v = eval(e, line, what);
    if (v < 0)
      failLine(app_.path, line, fmt::format("{}: \"{}\" is {}; it must not be negative", what, e.text(), v));
    return v;
  }

  int64_t evalCount(const Expr &e, int line, const std::string &what) {
    double v = eval(e, line, what);
    if (v < 0 || v != std::floor(v) || v > 1e9)
      failLine(app_.path, line, fmt::format("{}: \"{}\" is {}; expected a whole number >= 0", what, e.text(), v));
    return static_cast<int64_t>(v);
  }

  struct PartitionData {
    std::vector<int64_t> grid;
    int64_t pieces = 0;
    uint32_t firstDatum = 0; // disjoint: datum of piece p, field f = first + p * fields + f
    double elements = 0;     // per piece (disjoint)
    double fraction = 0;     // aliased
  };

  void buildData() {
    for (const auto &p : app_.partitions) {
      PartitionData d;
      for (const auto &e : p.pieces) {
        int64_t n = evalCount(e, p.line, fmt::format("partition '{}'", p.name));
        if (n < 1)
          failLine(app_.path, p.line, fmt::format("partition '{}' has {} pieces along a dimension", p.name, n));
        d.grid.push_back(n);
      }
      d.pieces = 1;
      for (int64_t n : d.grid)
        d.pieces *= n;
      if (!p.aliased()) {
        d.elements = evalAmount(*p.elements, p.line, fmt::format("partition '{}'", p.name));
        if (d.elements < 0)
          failLine(app_.path, p.line, fmt::format("partition '{}' has a negative element count", p.name));
        const Region &r = *app_.region(p.region);
        d.firstDatum = static_cast<uint32_t>(program_.data.size());
        int regionIndex = static_cast<int>(&r - app_.regions.data());
        for (int64_t piece = 0; piece < d.pieces; ++piece)
          for (size_t f = 0; f < r.fields.size(); ++f)
            program_.data.push_back({regionIndex, static_cast<int>(f), d.elements * r.fields[f].bytes,
                                     fmt::format("{}[{}].{}", p.name, piece, r.fields[f].name)});
      } else {
        d.fraction = evalAmount(*p.fraction, p.line, fmt::format("partition '{}'", p.name));
        if (d.fraction < 0 || d.fraction > 1)
          failLine(app_.path, p.line, fmt::format("partition '{}': fraction {} is not in [0, 1]", p.name, d.fraction));
      }
      partitions_[p.name] = d;
    }
    for (const auto &r : app_.regions) {
      if (!r.elements)
        continue;
      double elements = evalAmount(*r.elements, r.line, fmt::format("region '{}'", r.name));
      regionFirst_[r.name] = static_cast<uint32_t>(program_.data.size());
      int regionIndex = static_cast<int>(&r - app_.regions.data());
      for (size_t f = 0; f < r.fields.size(); ++f)
        program_.data.push_back(
            {regionIndex, static_cast<int>(f), elements * r.fields[f].bytes, fmt::format("{}.{}", r.name, r.fields[f].name)});
    }
  }

  uint32_t internView(const std::string &key) {
    auto [it, inserted] = viewIds_.emplace(key, static_cast<uint32_t>(program_.views.size()));
    if (inserted)
      program_.views.push_back(key);
    return it->second;
  }

  int64_t linear(const std::vector<int64_t> &grid, const std::vector<int64_t> &point) {
    int64_t index = 0;
    for (size_t d = 0; d < grid.size(); ++d)
      index = index * grid[d] + point[d];
    return index;
  }

  // Adds the data of one piece of `arg.region` to `access`.
  void addPiece(const Task &t, const Arg &arg, const Region &region, std::vector<int64_t> piece, Access &access,
                std::vector<int> &fieldIndex) {
    auto addDisjoint = [&](const std::string &partName, int64_t p, double fraction) {
      const PartitionData &d = partitions_.at(partName);
      for (int f : fieldIndex)
        access.data.emplace_back(d.firstDatum + static_cast<uint32_t>(p * static_cast<int64_t>(region.fields.size()) + f),
                                 fraction);
    };
    const Partition *part = app_.partition(arg.region);
    const PartitionData &d = partitions_.at(arg.region);
    for (size_t k = 0; k < piece.size(); ++k)
      if (piece[k] < 0 || piece[k] >= d.grid[k])
        failLine(app_.path, arg.line,
                 fmt::format("task '{}': piece ({}) is outside the {} grid of '{}'", t.name, fmt::join(piece, ", "),
                             fmt::join(d.grid, "x"), arg.region));
    if (!part->aliased()) {
      addDisjoint(part->name, linear(d.grid, piece), 1.0);
      return;
    }
    for (const auto &offset : part->neighbors) {
      std::vector<int64_t> q(piece.size());
      bool outside = false;
      for (size_t k = 0; k < piece.size(); ++k) {
        q[k] = piece[k] + offset[k];
        outside = outside || q[k] < 0 || q[k] >= d.grid[k];
        q[k] = (q[k] % d.grid[k] + d.grid[k]) % d.grid[k];
      }
      if ((outside && !part->wrap) || q == piece)
        continue; // a piece does not ghost itself (grids of extent 1)
      addDisjoint(part->covers, linear(d.grid, q), d.fraction);
    }
  }

  Access buildAccess(const Task &t, size_t argIndex) {
    const Arg &arg = t.args[argIndex];
    Access access;
    access.arg = static_cast<int>(argIndex);
    access.privilege = arg.privilege;
    const Partition *part = app_.partition(arg.region);
    const Region &region = *app_.region(part ? part->region : arg.region);
    access.dims = region.dims;
    access.fields = static_cast<int>(region.fields.size()); // instances hold every field (Legion's default)
    std::vector<int> fieldIndex;
    for (const auto &name : arg.fields)
      for (size_t f = 0; f < region.fields.size(); ++f)
        if (region.fields[f].name == name)
          fieldIndex.push_back(static_cast<int>(f));
    std::string what = fmt::format("task '{}'", t.name);
    std::string key = arg.region;
    if (!part) {
      auto first = regionFirst_.find(region.name);
      if (first != regionFirst_.end()) {
        for (int f : fieldIndex)
          access.data.emplace_back(first->second + static_cast<uint32_t>(f), 1.0);
      } else {
        for (const auto &p : app_.partitions)
          if (p.region == region.name && !p.aliased()) {
            const PartitionData &d = partitions_.at(p.name);
            for (int64_t piece = 0; piece < d.pieces; ++piece)
              for (int f : fieldIndex)
                access.data.emplace_back(
                    d.firstDatum + static_cast<uint32_t>(piece * static_cast<int64_t>(region.fields.size()) + f), 1.0);
          }
      }
    } else {
      // Enumerate the 'over' ranges (a union of pieces).
      std::vector<int64_t> counts;
      for (const auto &[name, count] : arg.over)
        counts.push_back(evalCount(count, arg.line, what));
      std::vector<int64_t> at(counts.size(), 0);
      std::vector<std::string> pieceKeys;
      for (;;) {
        for (size_t k = 0; k < at.size(); ++k)
          scope_.emplace_back(arg.over[k].first, static_cast<double>(at[k]));
        std::vector<int64_t> piece;
        for (const auto &e : arg.piece) {
          double v = eval(e, arg.line, what);
          if (v != std::floor(v) || std::abs(v) > 1e15)
            failLine(app_.path, arg.line,
                     fmt::format("{}: piece coordinate \"{}\" is {}, not a whole number of at most 10^15", what,
                                 e.text(), v));
          piece.push_back(static_cast<int64_t>(v));
        }
        scope_.resize(scope_.size() - at.size());
        pieceKeys.push_back(fmt::format("{}", fmt::join(piece, ",")));
        addPiece(t, arg, region, piece, access, fieldIndex);
        size_t k = 0;
        while (k < at.size() && ++at[k] == counts[k])
          at[k++] = 0;
        if (k == at.size())
          break;
      }
      key += "[" + fmt::format("{}", fmt::join(pieceKeys, ";")) + "]";
    }
    for (const auto &[datum, fraction] : access.data)
      access.instanceBytes += program_.data[datum].bytes * fraction;
    if (arg.traffic) { // `bytes`: the instance's size, e.g. "bytes * reads_per_element"
      scope_.emplace_back("bytes", access.instanceBytes);
      access.trafficBytes = evalAmount(*arg.traffic, arg.line, what);
      scope_.pop_back();
    } else {
      access.trafficBytes = access.instanceBytes;
    }
    if (access.trafficBytes < 0)
      failLine(app_.path, arg.line, fmt::format("{}: negative traffic", what));
    key += "|" + fmt::format("{}", fmt::join(arg.fields, ","));
    access.view = internView(key);
    return access;
  }

  void expand(const Launch &l, int parent, bool timed) {
    const Task &t = *app_.task(l.task);
    int64_t repeat = 1;
    if (l.repeat)
      repeat = evalCount(l.repeat->second, l.line, fmt::format("launch of '{}'", l.task));
    for (int64_t r = 0; r < repeat; ++r) {
      if (l.repeat)
        scope_.emplace_back(l.repeat->first, static_cast<double>(r));
      std::vector<int64_t> domain;
      for (const auto &e : l.domain)
        domain.push_back(evalCount(e, l.line, fmt::format("launch of '{}'", l.task)));
      int launchId = program_.launches++;
      std::vector<int64_t> point(domain.size(), 0);
      bool empty = std::any_of(domain.begin(), domain.end(), [](int64_t n) { return n == 0; });
      while (!empty) {
        for (size_t k = 0; k < point.size(); ++k)
          scope_.emplace_back(l.point[k], static_cast<double>(point[k]));
        if (program_.tasks.size() >= maxTasks_)
          failLine(app_.path, l.line,
                   fmt::format("the app expands to more than {} point tasks at this size", maxTasks_));
        PointTask pt;
        pt.task = static_cast<int>(&t - app_.tasks.data());
        pt.launch = launchId;
        pt.index = !domain.empty();
        pt.point = point;
        pt.domain = domain;
        pt.parent = parent;
        pt.timed = timed;
        pt.flops = evalAmount(t.flops, t.line, fmt::format("task '{}'", t.name));
        for (size_t a = 0; a < t.args.size(); ++a)
          pt.accesses.push_back(buildAccess(t, a));
        int self = static_cast<int>(program_.tasks.size());
        program_.tasks.push_back(std::move(pt));
        for (const auto &child : t.launches)
          expand(child, self, timed);
        scope_.resize(scope_.size() - point.size());
        // next point, last dimension fastest
        size_t k = point.size();
        while (k > 0 && ++point[k - 1] == domain[k - 1])
          point[--k] = 0;
        if (k == 0)
          break;
      }
      if (l.repeat)
        scope_.pop_back();
    }
  }

  const AppModel &app_;
  const MachineModel &machine_;
  size_t maxTasks_;
  Program program_;
  std::vector<std::pair<std::string, double>> scope_;
  std::map<std::string, PartitionData> partitions_;
  std::map<std::string, uint32_t> regionFirst_;
  std::map<std::string, uint32_t> viewIds_;
};

} // namespace

Expected<Program> instantiate(const AppModel &app, const MachineModel &machine, std::optional<double> size,
                              size_t maxTasks) {
  double s = size.value_or(app.sizeDefault);
  if (!(s > 0))
    return Error{fmt::format("size must be greater than 0 (got {})", s)};
  try {
    return Instantiator(app, machine, maxTasks).run(s);
  } catch (const TomlError &e) {
    return Error{e.what(), e.line, e.column};
  }
}

} // namespace hone::model
