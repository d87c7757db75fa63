#include "sim/Resolution.h"

#include "dsl/Policy.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace hone::sim {

namespace {
// Legion's DefaultMapper prefers these kinds, in order, when no Task statement applies.
constexpr std::array<ProcKind, 6> kDefaultKindOrder = {ProcKind::GPU, ProcKind::OMP, ProcKind::CPU,
                                                       ProcKind::IO,  ProcKind::PY,  ProcKind::PROC};

} // namespace

Resolver::Resolver(const Context &cx, const dsl::Program &policy)
    : cx_(cx), tb_(cx.tables()), app_(*cx.program().app), policy_(policy), interp_(policy, cx.shape()),
      kindChoice_(app_.tasks.size()), taskPolicy_(app_.tasks.size() * model::kProcKindNames.size()),
      topReplicated_(dsl::controlReplicated(policy, app_.topTask)) {}

std::optional<Failure> Resolver::initialize() {
  auto init = interp_.initialize();
  if (init)
    return std::nullopt;
  return Failure{"policy", init.error().message,
                 fmt::format("evaluating the policy's globals (policy line {})", init.error().line)};
}

Resolver::KindChoice Resolver::resolveKind(const model::Task &task) const {
  const model::MachineModel &m = cx_.machine();
  KindChoice c;
  const dsl::TaskStmt *stmt = dsl::taskStatementFor(policy_, task.name);
  std::vector<std::string> variants;
  for (ProcKind k : task.variants)
    variants.emplace_back(model::toString(k));
  if (stmt) {
    std::vector<std::string> listed;
    for (const auto &p : stmt->procs) {
      listed.emplace_back(model::toString(p.kind));
      if (m.count(p.kind) > 0 && task.hasVariant(p.kind)) {
        c.kind = p.kind;
        return c;
      }
    }
    c.failure = Failure{"variant",
                        fmt::format("No valid task variant for task {} on processor kinds {} (its variants: {}; "
                                    "the machine has {})",
                                    task.name, fmt::join(listed, ","), fmt::join(variants, ","), m.describe()),
                        fmt::format("the Task statement at policy line {} lists no kind that the task has a "
                                    "variant for and the machine has",
                                    stmt->procs.front().range.begin.line)};
    return c;
  }
  for (ProcKind k : kDefaultKindOrder)
    if (m.count(k) > 0 && task.hasVariant(k)) {
      c.kind = k;
      return c;
    }
  c.failure = Failure{"variant",
                      fmt::format("No valid task variant for task {}: its variants ({}) match no processor of {}",
                                  task.name, fmt::join(variants, ","), m.describe()),
                      "no Task statement applies; Legion's default processor choice"};
  return c;
}

ProcKind Resolver::kindFor(const model::PointTask &pt) {
  KindChoice &c = kindChoice_[static_cast<size_t>(pt.task)];
  if (!c.kind && !c.failure)
    c = resolveKind(app_.tasks[static_cast<size_t>(pt.task)]);
  if (c.failure)
    throw *c.failure;
  return *c.kind;
}

ProcId Resolver::place(const model::PointTask &pt, ProcKind kind, ProcId parent,
                       const std::shared_ptr<const dsl::TaskInfo> &parentInfo) {
  const model::Task &task = app_.tasks[static_cast<size_t>(pt.task)];
  bool single = !pt.index;
  const dsl::FuncDef *fn = interp_.placementFunctionFor(task.name, kind, single);
  int parentNode = parent.valid() ? tb_.proc(parent).node : 0;
  int perNode = cx_.machine().count(kind);
  if (!fn) {
    if (pt.index) {
      // Legion's default: block the linearised launch over all processors of the kind.
      int64_t volume = 1, lin = 0;
      for (size_t d = 0; d < pt.domain.size(); ++d) {
        volume *= pt.domain[d];
        lin = lin * pt.domain[d] + pt.point[d];
      }
      int64_t total = static_cast<int64_t>(perNode) * cx_.machine().nodes;
      int64_t idx = lin * total / std::max<int64_t>(volume, 1);
      return tb_.procId(kind, static_cast<int>(idx / perNode), static_cast<int>(idx % perNode));
    }
    // Single tasks: the parent's node, round-robin over its processors of the kind.
    int &next = roundRobin_[{static_cast<int>(kind), parentNode}];
    ProcId proc = tb_.procId(kind, parentNode, next % perNode);
    next = (next + 1) % perNode;
    return proc;
  }
  PlacementKey key;
  key.ints.reserve(8 + pt.point.size() + pt.domain.size());
  key.ints.push_back(reinterpret_cast<intptr_t>(fn));
  key.ints.push_back(pt.task);
  key.ints.push_back(static_cast<int64_t>(pt.point.size()));
  key.ints.insert(key.ints.end(), pt.point.begin(), pt.point.end());
  key.ints.insert(key.ints.end(), pt.domain.begin(), pt.domain.end());
  key.ints.push_back(single ? parent.value() : -2);
  if (single && parentInfo)
    key.ints.insert(key.ints.end(), parentInfo->ipoint.begin(), parentInfo->ipoint.end());
  auto cached = placements_.find(key);
  if (cached == placements_.end()) {
    dsl::TaskInfo info;
    info.name = task.name;
    info.indexLaunch = pt.index;
    info.ipoint = pt.point;
    info.ispace = pt.domain;
    info.kind = kind;
    info.parent = parentInfo;
    auto placed = interp_.place(*fn, info);
    if (!placed) {
      const auto &e = placed.error();
      fail("placement", e.message,
           fmt::format("{} {} for task {}{} (policy line {})", single ? "SingleTaskMap" : "IndexTaskMap",
                       fn->name.text, task.name,
                       pt.index ? fmt::format(" point ({}) of ({})", fmt::join(pt.point, ", "),
                                              fmt::join(pt.domain, ", "))
                                : "",
                       e.line));
    }
    cached = placements_.emplace(key, *placed).first;
  }
  const dsl::Placement &pl = cached->second;
  dsl::Point2 at = pl.points.front();
  if (pl.isSet) {
    int &next = setRoundRobin_[pt.task];
    at = pl.points[static_cast<size_t>(next) % pl.points.size()];
    ++next;
  }
  if (!task.hasVariant(pl.kind)) {
    std::vector<std::string> variants;
    for (ProcKind k : task.variants)
      variants.emplace_back(model::toString(k));
    fail("variant",
         fmt::format("Invalid mapper output: task {} was placed on a {} processor but has no {} variant (its "
                     "variants: {})",
                     task.name, model::toString(pl.kind), model::toString(pl.kind), fmt::join(variants, ",")),
         fmt::format("{} {} returns a point of a Machine({}) space", single ? "SingleTaskMap" : "IndexTaskMap",
                     fn->name.text, model::toString(pl.kind)));
  }
  return tb_.procId(pl.kind, static_cast<int>(at[0]), static_cast<int>(at[1]));
}

const TaskPolicy &Resolver::policyFor(int taskIndex, ProcKind kind) {
  TaskPolicy &tp =
      taskPolicy_[static_cast<size_t>(taskIndex) * model::kProcKindNames.size() + static_cast<size_t>(kind)];
  if (tp.resolved)
    return tp;
  const model::Task &task = app_.tasks[static_cast<size_t>(taskIndex)];
  tp.resolved = true;
  tp.limit = dsl::instanceLimitFor(policy_, task.name, kind);
  tp.replicated = dsl::controlReplicated(policy_, task.name);
  for (size_t a = 0; a < task.args.size(); ++a) {
    dsl::RegionArgRef ref{task.args[a].region, static_cast<int>(a)};
    tp.region.push_back(dsl::regionStatementFor(policy_, task.name, ref, kind));
    tp.collects.push_back(dsl::collectsMemory(policy_, task.name, ref));
    std::array<const dsl::LayoutStmt *, kMemKinds> layouts{};
    for (size_t m = 0; m < kMemKinds; ++m)
      layouts[m] = dsl::layoutStatementFor(policy_, task.name, ref, static_cast<MemKind>(m), kind);
    tp.layout.push_back(layouts);
  }
  return tp;
}

MemoryChoice Resolver::memoriesFor(const model::PointTask &pt, const model::Access &a, ProcId proc,
                                   ProcKind kind) {
  MemoryChoice choice;
  if (const dsl::RegionStmt *rs = policyFor(pt.task, kind).region[static_cast<size_t>(a.arg)]) {
    for (const auto &m : rs->mems)
      choice.wanted.push_back(m.kind);
    choice.line = static_cast<int>(rs->mems.front().range.begin.line);
  } else {
    MemId m = tb_.defaultMem[proc.index()];
    HONE_CHECK(m.valid(), "processor without memory");
    choice.wanted.push_back(tb_.mem(m).kind);
  }
  return choice;
}

void Resolver::checkLayout(const model::PointTask &pt, const model::Access &a, MemKind mem, ProcKind kind) {
  const model::Task &task = app_.tasks[static_cast<size_t>(pt.task)];
  if (task.layoutNeeds.empty())
    return;
  const std::string &regionName = task.args[static_cast<size_t>(a.arg)].region;
  // Legion's default layout: SOA, Fortran order (dimension x fastest).
  std::string order = "F_order";
  bool soa = true;
  int line = 0;
  if (const dsl::LayoutStmt *ls =
          policyFor(pt.task, kind).layout[static_cast<size_t>(a.arg)][static_cast<size_t>(mem)]) {
    line = static_cast<int>(ls->targetRange.begin.line);
    for (const auto &c : ls->constraints) {
      using K = dsl::LayoutConstraint::Kind;
      if (c.kind == K::SOA)
        soa = true;
      if (c.kind == K::AOS)
        soa = false;
      if (c.kind == K::COrder)
        order = "C_order";
      if (c.kind == K::FOrder)
        order = "F_order";
    }
  }
  for (const auto &req : task.layoutNeeds) {
    if (!req.variants.empty() && std::find(req.variants.begin(), req.variants.end(), kind) == req.variants.end())
      continue;
    if (req.arg && *req.arg != a.arg)
      continue;
    bool orderBad = req.order && a.dims >= 2 && order != *req.order;
    bool soaBad = req.soa && !soa && a.fields > 1;
    if (orderBad || soaBad)
      fail("layout", req.message,
           fmt::format("task {} argument {} ({}) in {} with layout {} {}; the {} variant needs {}{}{}", task.name,
                       a.arg, regionName, model::toString(mem), soa ? "SOA" : "AOS", order,
                       model::toString(kind), req.order ? *req.order : "", req.order && req.soa ? " " : "",
                       req.soa ? "SOA" : "") +
               (line ? fmt::format(" (Layout statement at policy line {})", line) : " (Legion's default layout)"));
  }
}

} // namespace hone::sim
