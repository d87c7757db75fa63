// The simulator. Reader's map: Context builds the machine's instances and
// reach tables once; Sim::run walks the program's point tasks in issue order
// and, for each, resolves the policy (processor kind, placement, memories,
// layouts), checks the runtime's failure conditions, schedules the copies its
// data needs on the machine's channels, and runs it on its processor at the
// earliest time its dependences, its processor and the runtime allow.
// Resources serve requests in issue order (list scheduling); docs/MODEL.md
// states the model and its limits.
#include "sim/Simulator.h"

#include "dsl/Interpreter.h"
#include "dsl/Policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <map>
#include <cstdlib>
#include <random>
#include <span>
#include <unordered_map>

namespace hone::sim {

using model::Access;
using model::PointTask;
using model::Privilege;

namespace {
const BottleneckThresholds kThresholds;
constexpr std::array<std::pair<BottleneckKind, std::string_view>, 7> kBottleneckNames = {
    {{BottleneckKind::Channel, "channel"},
     {BottleneckKind::Processor, "processor"},
     {BottleneckKind::Idle, "idle"},
     {BottleneckKind::Runtime, "runtime"},
     {BottleneckKind::Memory, "memory"},
     {BottleneckKind::Variant, "variant"},
     {BottleneckKind::Access, "access"}}};
} // namespace

std::string_view toString(BottleneckKind kind) {
  for (const auto &[k, name] : kBottleneckNames)
    if (k == kind)
      return name;
  return "?";
}

std::optional<BottleneckKind> parseBottleneckKind(std::string_view text) {
  for (const auto &[k, name] : kBottleneckNames)
    if (name == text)
      return k;
  return std::nullopt;
}

namespace {
constexpr double kUs = 1e-6;
constexpr size_t kMemKinds = support::kMemKindNames.size();
// Legion's DefaultMapper prefers these kinds, in order, when no Task statement applies.
constexpr std::array<ProcKind, 6> kDefaultKindOrder = {ProcKind::GPU, ProcKind::OMP, ProcKind::CPU,
                                                       ProcKind::IO,  ProcKind::PY,  ProcKind::PROC};

std::string bytesText(double bytes) {
  if (bytes >= 1e9)
    return fmt::format("{:.2f} GB", bytes / 1e9);
  if (bytes >= 1e6)
    return fmt::format("{:.2f} MB", bytes / 1e6);
  if (bytes >= 1e3)
    return fmt::format("{:.1f} KB", bytes / 1e3);
  return fmt::format("{:.0f} B", bytes);
}

std::string timeText(double s) {
  if (s >= 1)
    return fmt::format("{:.3f} s", s);
  if (s >= 1e-3)
    return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.1f} us", s * 1e6);
}
} // namespace

struct ProcInst {
  ProcKind kind;
  int node;
  int index;
  const model::ProcessorSpec *spec;
  std::string name;
};

struct MemInst {
  MemKind kind;
  int node;
  int owner; // processor index, -1: the node's
  const model::MemorySpec *spec;
  std::string name;
};

struct Reach {
  int mem = -1;
  double bandwidth = 0;
  double latencyUs = 0;
};

struct Context::Tables {
  std::vector<ProcInst> procs;
  std::map<ProcKind, int> procBase;
  std::vector<MemInst> mems;
  std::vector<std::array<Reach, kMemKinds>> reach; // per processor, per memory kind: the fastest one
  std::vector<int> defaultMem;                      // per processor: the highest-affinity memory
  std::vector<double> bestTaskS;                    // per point task: time at its fastest variant

  int procIndex(ProcKind kind, int node, int index) const {
    auto base = procBase.find(kind);
    HONE_CHECK(base != procBase.end(), "no processors of a kind");
    return base->second + node * procs[static_cast<size_t>(base->second)].spec->perNode + index;
  }
};

dsl::MachineShape shapeOf(const model::MachineModel &machine) {
  dsl::MachineShape shape;
  shape.nodes = machine.nodes;
  for (const auto &p : machine.processors)
    shape.procsPerNode[p.kind] = p.perNode;
  for (const auto &m : machine.memories)
    for (const auto &a : m.access)
      shape.memories[a.proc].insert(m.kind);
  return shape;
}

namespace {

// Time of one point task of `task` on a processor with `reach`, its data in
// the memories `mems` (per access; -1: fastest reachable).
struct TaskTime {
  double compute = 0;
  double access = 0;
  double overhead = 0;
  double total() const { return overhead + std::max(compute, access); }
};

TaskTime taskTime(const model::Task &task, const PointTask &pt, const ProcInst &proc,
                  const std::array<Reach, kMemKinds> &reach, const std::vector<int> *memKinds) {
  TaskTime t;
  t.overhead = proc.spec->overheadUs * kUs;
  auto eff = task.efficiency.find(proc.kind);
  double efficiency = eff == task.efficiency.end() ? 1.0 : eff->second;
  t.compute = pt.flops / (proc.spec->gflops * 1e9 * efficiency);
  for (size_t a = 0; a < pt.accesses.size(); ++a) {
    const Reach *r = nullptr;
    if (memKinds && (*memKinds)[a] >= 0) {
      r = &reach[static_cast<size_t>((*memKinds)[a])];
    } else {
      for (const auto &candidate : reach)
        if (candidate.mem >= 0 && (!r || candidate.bandwidth > r->bandwidth))
          r = &candidate;
    }
    if (r && r->mem >= 0 && pt.accesses[a].trafficBytes > 0)
      t.access += r->latencyUs * kUs + pt.accesses[a].trafficBytes / r->bandwidth;
  }
  return t;
}

} // namespace

Context::Context(const model::MachineModel &machine, const model::Program &program)
    : machine_(machine), program_(program), shape_(shapeOf(machine)), tables_(std::make_unique<Tables>()) {
  Tables &tb = *tables_;
  for (const auto &spec : machine.processors) {
    if (spec.perNode == 0)
      continue;
    tb.procBase[spec.kind] = static_cast<int>(tb.procs.size());
    for (int n = 0; n < machine.nodes; ++n)
      for (int i = 0; i < spec.perNode; ++i)
        tb.procs.push_back({spec.kind, n, i, &spec, fmt::format("node{} {}{}", n, support::toString(spec.kind), i)});
  }
  for (const auto &spec : machine.memories)
    for (int n = 0; n < machine.nodes; ++n) {
      if (!spec.per) {
        tb.mems.push_back({spec.kind, n, -1, &spec, fmt::format("{} node{}", support::toString(spec.kind), n)});
        continue;
      }
      for (int i = 0; i < machine.count(*spec.per); ++i)
        tb.mems.push_back({spec.kind, n, tb.procIndex(*spec.per, n, i), &spec,
                           fmt::format("{} node{} {}{}", support::toString(spec.kind), n,
                                       support::toString(*spec.per), i)});
    }
  tb.reach.resize(tb.procs.size());
  tb.defaultMem.assign(tb.procs.size(), -1);
  for (size_t p = 0; p < tb.procs.size(); ++p) {
    double bestAffinity = -1, bestBandwidth = -1;
    for (size_t m = 0; m < tb.mems.size(); ++m) {
      const MemInst &mem = tb.mems[m];
      if (mem.node != tb.procs[p].node)
        continue;
      for (const auto &a : mem.spec->access) {
        if (a.proc != tb.procs[p].kind || (a.own && mem.owner != static_cast<int>(p)))
          continue;
        Reach &r = tb.reach[p][static_cast<size_t>(mem.kind)];
        if (a.bandwidth > r.bandwidth)
          r = {static_cast<int>(m), a.bandwidth, a.latencyUs};
        if (a.affinity > bestAffinity || (a.affinity == bestAffinity && a.bandwidth > bestBandwidth)) {
          bestAffinity = a.affinity;
          bestBandwidth = a.bandwidth;
          tb.defaultMem[p] = static_cast<int>(m);
        }
      }
    }
  }

  // Lower bound: every timed leaf task at its fastest variant with its data in
  // the fastest memory its processor reaches, no copies, no runtime overhead,
  // work spread perfectly. With several kinds, T >= sum_t min_k w_k t_k / N_k
  // for any weights w summing to 1 (a relaxation of the assignment); take
  // the best w on a grid.
  const model::AppModel &app = *program.app;
  std::vector<ProcKind> kinds;
  for (const auto &[kind, base] : tb.procBase)
    kinds.push_back(kind);
  std::vector<std::vector<double>> perKind; // per timed leaf point: time per kind (inf: no variant)
  tb.bestTaskS.assign(program.tasks.size(), 0);
  for (size_t i = 0; i < program.tasks.size(); ++i) {
    const PointTask &pt = program.tasks[i];
    const model::Task &task = app.tasks[static_cast<size_t>(pt.task)];
    std::vector<double> times;
    double best = INFINITY;
    for (ProcKind k : kinds) {
      double t = INFINITY;
      if (task.hasVariant(k)) {
        int p = tb.procBase.at(k);
        t = taskTime(task, pt, tb.procs[static_cast<size_t>(p)], tb.reach[static_cast<size_t>(p)], nullptr).total();
      }
      times.push_back(t);
      best = std::min(best, t);
    }
    tb.bestTaskS[i] = std::isfinite(best) ? best : 0;
    if (pt.timed && !task.inner())
      perKind.push_back(std::move(times));
  }
  std::vector<double> counts;
  for (ProcKind k : kinds)
    counts.push_back(static_cast<double>(machine.count(k) * machine.nodes));
  int steps = kinds.size() <= 2 ? 40 : 10;
  std::vector<int> w(kinds.size(), 0);
  std::function<void(size_t, int)> search = [&](size_t k, int left) {
    if (k + 1 == kinds.size()) {
      w[k] = left;
      double bound = 0;
      for (const auto &times : perKind) {
        double m = INFINITY;
        for (size_t j = 0; j < times.size(); ++j)
          if (std::isfinite(times[j])) // a zero weight makes the term 0: that kind is not bounded
            m = std::min(m, (static_cast<double>(w[j]) / steps) * times[j] / counts[j]);
        if (std::isfinite(m))
          bound += m;
      }
      lowerBound_ = std::max(lowerBound_, bound);
      return;
    }
    for (int v = 0; v <= left; ++v) {
      w[k] = v;
      search(k + 1, left - v);
    }
  };
  if (!kinds.empty())
    search(0, steps);
}

Context::~Context() = default;

namespace {

struct Failure {
  std::string kind, message, detail;
};

// The busy intervals of a resource that serves one thing at a time. A job
// takes the earliest gap at or after its ready time that is long enough
// (insertion scheduling), so a job issued later but ready earlier does not
// wait behind one that is not ready yet.
class Timeline {
public:
  /// The earliest start >= `ready` with [start, start + duration) free.
  double earliest(double ready, double duration) const {
    double s = ready;
    auto it = busy_.upper_bound(s);
    if (it != busy_.begin() && std::prev(it)->second > s)
      s = std::prev(it)->second;
    for (; it != busy_.end() && it->first < s + duration; ++it)
      s = std::max(s, it->second);
    return s;
  }
  void reserve(double start, double end) {
    if (end > start)
      busy_.emplace(start, end);
  }

private:
  std::map<double, double> busy_; // start -> end, disjoint
};

/// The earliest start at or after `ready` when every timeline has the gap.
double earliestOnAll(std::span<Timeline *const> lines, double ready, double duration) {
  double s = ready;
  for (bool moved = true; moved;) {
    moved = false;
    for (const Timeline *line : lines) {
      double t = line->earliest(s, duration);
      if (t > s) {
        s = t;
        moved = true;
      }
    }
  }
  return s;
}

struct KindChoice {
  std::optional<ProcKind> kind;
  std::optional<Failure> failure;
};

class Sim {
public:
  Sim(const Context &cx, const dsl::Program &policy, const Options &options)
      : cx_(cx), tb_(cx.tables()), prog_(cx.program()), app_(*prog_.app), policy_(policy), options_(options),
        interp_(policy, cx.shape()) {}

  Result run();

private:
  struct Port {
    std::string name, channel;
    Timeline line;
    double busy = 0, bytes = 0;
    int copies = 0;
  };
  struct Valid {
    int mem;
    double ready;
    double fraction; // of the datum (ghost copies hold part of it)
  };
  struct Pending {
    int mem;
    double bytes, ready;
  };
  struct DatumState {
    double lastWrite = 0, readsEnd = 0;
    std::vector<Valid> valid;
    std::vector<Pending> reductions;
  };
  struct Instance {
    double bytes = 0;
    bool live = false;
    double freeAt = INFINITY; // CollectMemory scheduled its release at this time
  };
  struct MemState {
    double allocated = 0;                          // live instances, including ones with a scheduled free
    std::vector<std::pair<double, double>> frees;  // (time, bytes) not yet applied
    std::vector<std::pair<double, double>> events; // (time, +/- bytes) for the peak
  };
  struct TaskAgg {
    int points = 0;
    ProcKind kind = ProcKind::CPU;
    std::vector<int> memKinds; // per argument, last used
    double busy = 0, access = 0, compute = 0, best = 0;
    size_t firstPoint = 0; // a point of the task, to price its other variants
  };

  [[noreturn]] void fail(std::string kind, std::string message, std::string detail) {
    throw Failure{std::move(kind), std::move(message), std::move(detail)};
  }

  ProcKind kindFor(const PointTask &pt);
  int place(size_t index, ProcKind kind);
  int chooseMemory(const PointTask &pt, const Access &a, int proc, double mapped, ProcKind kind);
  void checkLayout(const PointTask &pt, const Access &a, MemKind mem, ProcKind kind);
  double copy(int src, int dst, double bytes, double ready);
  int port(const model::ChannelSpec &channel, bool node, bool out, const MemInst &end);
  double usage(int mem, double at);
  double bringIn(uint32_t datum, double fraction, int mem, double floor);
  void execute(size_t index);
  void flushReductions();
  Result finish();

  const Context &cx_;
  const Context::Tables &tb_;
  const model::Program &prog_;
  const model::AppModel &app_;
  const dsl::Program &policy_;
  Options options_;
  dsl::Interpreter interp_;

  std::vector<Timeline> procLine_;
  std::vector<double> procBusy_;
  std::vector<int> procTasks_;
  // The runtime of each node: task analysis in program order (analysisEnd_),
  // copy issue work whenever the data is ready, both on one timeline.
  std::vector<Timeline> utilLine_;
  std::vector<double> analysisEnd_;
  double utilBusy_ = 0;
  std::vector<Port> ports_;
  std::unordered_map<uint64_t, int> portIndex_;
  std::vector<DatumState> data_;
  std::vector<MemState> mems_;
  std::unordered_map<uint64_t, Instance> instances_;
  std::vector<KindChoice> kindChoice_;          // per app task
  std::vector<double> start_, end_;            // per point task
  std::vector<int> procOf_;                     // per point task
  std::vector<std::shared_ptr<const dsl::TaskInfo>> info_; // per point task with children
  std::shared_ptr<dsl::TaskInfo> top_;
  struct PlacementKey {
    std::vector<int64_t> ints; // function, task, point, domain, parent processor and point
    bool operator==(const PlacementKey &o) const { return ints == o.ints; }
  };
  struct PlacementKeyHash {
    size_t operator()(const PlacementKey &k) const {
      size_t h = 1469598103934665603ull;
      for (int64_t v : k.ints)
        h = (h ^ static_cast<size_t>(v)) * 1099511628211ull;
      return h;
    }
  };
  std::unordered_map<PlacementKey, dsl::Placement, PlacementKeyHash> placements_;
  // The statements that apply to a task on a kind, looked up once per run.
  struct TaskPolicy {
    bool resolved = false;
    std::optional<int64_t> limit;
    bool replicated = false;                          // as a parent: its children are analysed on their node
    std::vector<const dsl::RegionStmt *> region;      // per argument
    std::vector<bool> collects;                       // per argument
    std::vector<std::array<const dsl::LayoutStmt *, kMemKinds>> layout; // per argument, per memory kind
  };
  std::vector<TaskPolicy> taskPolicy_; // per (task, kind)
  const TaskPolicy &policyFor(int task, ProcKind kind);
  std::map<std::pair<int, int>, std::deque<double>> inFlight_; // (task, processor) -> ends, for InstanceLimit
  std::map<std::pair<int, int>, int> roundRobin_;               // (kind, node) -> next processor
  std::map<int, int> setRoundRobin_;                            // task -> next of a '*' placement
  std::vector<TaskAgg> agg_;
  double barrier_ = -1; // when the timed part starts
  double flushEnd_ = 0; // when the reductions outstanding at the end of the timed part are applied
  int copies_ = 0;
  double bytesCopied_ = 0;
  bool timed_ = false;
  bool topReplicated_ = false;
  bool trace_ = std::getenv("HONE_SIM_TRACE") != nullptr; // developer aid: every copy and task on stderr
};

KindChoice resolveKind(const model::Task &task, const dsl::Program &policy, const model::MachineModel &m) {
  KindChoice c;
  const dsl::TaskStmt *stmt = dsl::taskStatementFor(policy, task.name);
  std::vector<std::string> variants;
  for (ProcKind k : task.variants)
    variants.emplace_back(support::toString(k));
  if (stmt) {
    std::vector<std::string> listed;
    for (const auto &p : stmt->procs) {
      listed.emplace_back(support::toString(p.kind));
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

ProcKind Sim::kindFor(const PointTask &pt) {
  KindChoice &c = kindChoice_[static_cast<size_t>(pt.task)];
  if (!c.kind && !c.failure)
    c = resolveKind(app_.tasks[static_cast<size_t>(pt.task)], policy_, cx_.machine());
  if (c.failure)
    throw *c.failure;
  return *c.kind;
}

int Sim::place(size_t index, ProcKind kind) {
  const PointTask &pt = prog_.tasks[index];
  const model::Task &task = app_.tasks[static_cast<size_t>(pt.task)];
  bool single = !pt.index;
  const dsl::FuncDef *fn = interp_.placementFunctionFor(task.name, kind, single);
  int parentProc = pt.parent >= 0 ? procOf_[static_cast<size_t>(pt.parent)] : -1;
  int parentNode = parentProc >= 0 ? tb_.procs[static_cast<size_t>(parentProc)].node : 0;
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
      return tb_.procIndex(kind, static_cast<int>(idx / perNode), static_cast<int>(idx % perNode));
    }
    // Single tasks: the parent's node, round-robin over its processors of the kind.
    int &next = roundRobin_[{static_cast<int>(kind), parentNode}];
    int proc = tb_.procIndex(kind, parentNode, next % perNode);
    next = (next + 1) % perNode;
    return proc;
  }
  std::shared_ptr<const dsl::TaskInfo> parentInfo =
      pt.parent >= 0 ? info_[static_cast<size_t>(pt.parent)] : std::shared_ptr<const dsl::TaskInfo>(top_);
  PlacementKey key;
  key.ints.reserve(8 + pt.point.size() + pt.domain.size());
  key.ints.push_back(reinterpret_cast<intptr_t>(fn));
  key.ints.push_back(pt.task);
  key.ints.push_back(static_cast<int64_t>(pt.point.size()));
  key.ints.insert(key.ints.end(), pt.point.begin(), pt.point.end());
  key.ints.insert(key.ints.end(), pt.domain.begin(), pt.domain.end());
  key.ints.push_back(single ? parentProc : -2);
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
      variants.emplace_back(support::toString(k));
    fail("variant",
         fmt::format("Invalid mapper output: task {} was placed on a {} processor but has no {} variant (its "
                     "variants: {})",
                     task.name, support::toString(pl.kind), support::toString(pl.kind), fmt::join(variants, ",")),
         fmt::format("{} {} returns a point of a Machine({}) space", single ? "SingleTaskMap" : "IndexTaskMap",
                     fn->name.text, support::toString(pl.kind)));
  }
  return tb_.procIndex(pl.kind, static_cast<int>(at[0]), static_cast<int>(at[1]));
}

double Sim::usage(int mem, double at) {
  MemState &ms = mems_[static_cast<size_t>(mem)];
  auto it = std::remove_if(ms.frees.begin(), ms.frees.end(), [&](const auto &f) {
    if (f.first <= at) {
      ms.allocated -= f.second;
      return true;
    }
    return false;
  });
  ms.frees.erase(it, ms.frees.end());
  return ms.allocated;
}

int Sim::chooseMemory(const PointTask &pt, const Access &a, int proc, double mapped, ProcKind kind) {
  const model::Task &task = app_.tasks[static_cast<size_t>(pt.task)];
  const std::string &regionName = task.args[static_cast<size_t>(a.arg)].region;
  std::vector<MemKind> wanted;
  int line = 0;
  if (const dsl::RegionStmt *rs = policyFor(pt.task, kind).region[static_cast<size_t>(a.arg)]) {
    for (const auto &m : rs->mems)
      wanted.push_back(m.kind);
    line = static_cast<int>(rs->mems.front().range.begin.line);
  } else {
    int m = tb_.defaultMem[static_cast<size_t>(proc)];
    HONE_CHECK(m >= 0, "processor without memory");
    wanted.push_back(tb_.mems[static_cast<size_t>(m)].kind);
  }
  auto where = [&] { // only for messages: formatting on every call costs more than the rest
    return fmt::format("region {} (argument {}) of task {} on {}", regionName, a.arg, task.name,
                       tb_.procs[static_cast<size_t>(proc)].name);
  };
  std::vector<std::string> unreachable;
  int full = -1;
  for (MemKind k : wanted) {
    if (k == MemKind::VIRTUAL)
      fail("policy",
           fmt::format("Invalid mapper output: a virtual instance for {}; a task that accesses its data needs a "
                       "physical instance",
                       where()),
           fmt::format("Region statement at policy line {}", line));
    const Reach &r = tb_.reach[static_cast<size_t>(proc)][static_cast<size_t>(k)];
    if (r.mem < 0) {
      unreachable.emplace_back(support::toString(k));
      continue;
    }
    uint64_t key = (static_cast<uint64_t>(a.view) << 20) | static_cast<uint64_t>(r.mem);
    Instance &inst = instances_[key];
    MemState &ms = mems_[static_cast<size_t>(r.mem)];
    if (inst.live && inst.freeAt > mapped) {
      if (std::isfinite(inst.freeAt)) { // mapped before its release: the release waits for this task
        auto f = std::find(ms.frees.begin(), ms.frees.end(), std::make_pair(inst.freeAt, inst.bytes));
        if (f != ms.frees.end())
          ms.frees.erase(f);
        auto e = std::find(ms.events.begin(), ms.events.end(), std::make_pair(inst.freeAt, -inst.bytes));
        if (e != ms.events.end())
          ms.events.erase(e);
        inst.freeAt = INFINITY;
      }
      return r.mem;
    }
    bool recreated = inst.live; // released earlier: its data went with it
    const MemInst &mem = tb_.mems[static_cast<size_t>(r.mem)];
    if (usage(r.mem, mapped) + a.instanceBytes <= mem.spec->capacity) {
      ms.allocated += a.instanceBytes;
      ms.events.emplace_back(mapped, a.instanceBytes);
      inst = {a.instanceBytes, true, INFINITY};
      if (recreated)
        for (const auto &[datum, fraction] : a.data) {
          auto &valid = data_[datum].valid;
          valid.erase(std::remove_if(valid.begin(), valid.end(), [&](const Valid &v) { return v.mem == r.mem; }),
                      valid.end());
        }
      return r.mem;
    }
    if (full < 0)
      full = r.mem;
  }
  if (full >= 0) {
    const MemInst &mem = tb_.mems[static_cast<size_t>(full)];
    fail("memory",
         fmt::format("Out of memory: failed to allocate {} for {} in {} ({} of {} in use)", bytesText(a.instanceBytes),
                     where(), mem.name, bytesText(usage(full, mapped)), bytesText(mem.spec->capacity)),
         line == 0              ? "no Region statement applies; Legion's default memory has no fallback"
         : wanted.size() > 1    ? "every memory the Region statement lists is full"
                                : fmt::format("the Region statement at policy line {} lists no fallback memory", line));
  }
  fail("memory",
       fmt::format("No memory of kind {} has affinity to {} (needed for {})", fmt::join(unreachable, " or "),
                   tb_.procs[static_cast<size_t>(proc)].name, where()),
       line ? fmt::format("Region statement at policy line {}", line) : "Legion's default memory choice");
}

void Sim::checkLayout(const PointTask &pt, const Access &a, MemKind mem, ProcKind kind) {
  const model::Task &task = app_.tasks[static_cast<size_t>(pt.task)];
  if (task.layoutNeeds.empty())
    return;
  const std::string &regionName = task.args[static_cast<size_t>(a.arg)].region;
  // Legion's default layout: SOA, Fortran order (dimension x fastest).
  std::string order = "F_order";
  bool soa = true;
  int line = 0;
  if (const dsl::LayoutStmt *ls = policyFor(pt.task, kind).layout[static_cast<size_t>(a.arg)][static_cast<size_t>(mem)]) {
    line = static_cast<int>(ls->targetRange.begin.line);
    for (const auto &c : ls->constraints) {
      using K = dsl::LayoutConstraint::Kind;
      if (c.kind == K::SOA) soa = true;
      if (c.kind == K::AOS) soa = false;
      if (c.kind == K::COrder) order = "C_order";
      if (c.kind == K::FOrder) order = "F_order";
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
                       a.arg, regionName, support::toString(mem), soa ? "SOA" : "AOS", order,
                       support::toString(kind), req.order ? *req.order : "", req.order && req.soa ? " " : "",
                       req.soa ? "SOA" : "") +
               (line ? fmt::format(" (Layout statement at policy line {})", line) : " (Legion's default layout)"));
  }
}

// Links are full duplex: an endpoint has an outgoing and an incoming port per
// channel, of its node (`node`) or of its memory.
int Sim::port(const model::ChannelSpec &channel, bool node, bool out, const MemInst &end) {
  uint64_t id = node ? static_cast<uint64_t>(end.node) : static_cast<uint64_t>(&end - tb_.mems.data());
  uint64_t key = (static_cast<uint64_t>(&channel - cx_.machine().channels.data()) << 32) |
                 (static_cast<uint64_t>(node) << 31) | (static_cast<uint64_t>(out) << 30) | id;
  auto [it, inserted] = portIndex_.emplace(key, static_cast<int>(ports_.size()));
  if (inserted)
    ports_.push_back({fmt::format("{} {} {}", channel.name, out ? "out of" : "into",
                                  node ? fmt::format("node{}", end.node) : end.name),
                      channel.name, {}, 0, 0, 0});
  return it->second;
}

double Sim::copy(int src, int dst, double bytes, double ready) {
  if (src == dst || bytes <= 0)
    return ready;
  const MemInst &a = tb_.mems[static_cast<size_t>(src)];
  const MemInst &b = tb_.mems[static_cast<size_t>(dst)];
  bool network = a.node != b.node;
  const model::ChannelSpec *ch = cx_.machine().channel(a.kind, b.kind, network);
  HONE_CHECK(ch != nullptr, "machine model without a channel (validated at load)");
  std::array<Timeline *, 4> lines{};
  std::array<int, 4> used{};
  size_t count = 0;
  for (const MemInst *end : {&a, &b}) {
    bool out = end == &a;
    if (ch->nodePorts)
      used[count++] = port(*ch, true, out, *end);
    if (std::find(ch->portKinds.begin(), ch->portKinds.end(), end->kind) != ch->portKinds.end())
      used[count++] = port(*ch, false, out, *end);
  }
  for (size_t i = 0; i < count; ++i)
    lines[i] = &ports_[static_cast<size_t>(used[i])].line;
  // The runtime of the destination's node issues the copy (its utility
  // work serialises with task analysis), then the channel carries it.
  double issue = cx_.machine().runtime.copyIssueUs * kUs;
  Timeline &util = utilLine_[static_cast<size_t>(b.node)];
  double issueStart = util.earliest(ready, issue);
  util.reserve(issueStart, issueStart + issue);
  if (timed_)
    utilBusy_ += issue;
  double duration = ch->latencyUs * kUs + bytes / ch->bandwidth;
  double start = earliestOnAll({lines.data(), count}, issueStart + issue, duration);
  double end = start + duration;
  for (size_t i = 0; i < count; ++i) {
    Port &pp = ports_[static_cast<size_t>(used[i])];
    pp.line.reserve(start, end);
    if (timed_) {
      pp.busy += duration;
      pp.bytes += bytes;
      ++pp.copies;
    }
  }
  if (timed_) {
    ++copies_;
    bytesCopied_ += bytes;
  }
  if (trace_)
    fmt::print(stderr, "copy {} -> {} {} [{:.1f}, {:.1f}] us\n", a.name, b.name, bytesText(bytes), start * 1e6,
               end * 1e6);
  return end;
}

// Makes `datum` (the fraction an argument covers) valid in `mem`; returns when it is.
const Sim::TaskPolicy &Sim::policyFor(int taskIndex, ProcKind kind) {
  TaskPolicy &tp = taskPolicy_[static_cast<size_t>(taskIndex) * support::kProcKindNames.size() + static_cast<size_t>(kind)];
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

// `floor`: the copy cannot start before the task is mapped.
double Sim::bringIn(uint32_t datum, double fraction, int mem, double floor) {
  DatumState &st = data_[datum];
  double bytes = prog_.data[datum].bytes * fraction;
  double ready = st.lastWrite;
  Valid *here = nullptr;
  const Valid *src = nullptr;
  int node = tb_.mems[static_cast<size_t>(mem)].node;
  for (Valid &v : st.valid) {
    if (v.fraction + 1e-12 < fraction)
      continue;
    if (v.mem == mem)
      here = &v;
    // Copy from a copy on the same node when there is one.
    else if (!src || (tb_.mems[static_cast<size_t>(v.mem)].node == node &&
                      tb_.mems[static_cast<size_t>(src->mem)].node != node))
      src = &v;
  }
  if (here) {
    ready = std::max(ready, here->ready);
  } else if (src) {
    double end = copy(src->mem, mem, bytes, std::max({floor, st.lastWrite, src->ready}));
    ready = std::max(ready, end);
    bool merged = false;
    for (Valid &v : st.valid)
      if (v.mem == mem) { // a smaller part was here: now this much is
        v = {mem, end, fraction};
        merged = true;
      }
    if (!merged)
      st.valid.push_back({mem, end, fraction});
  }
  if (!st.reductions.empty()) {
    double folded = ready;
    for (const Pending &p : st.reductions)
      folded = std::max(folded, copy(p.mem, mem, p.bytes, std::max(floor, p.ready)));
    st.reductions.clear();
    st.valid = {{mem, folded, 1.0}};
    st.lastWrite = std::max(st.lastWrite, folded);
    ready = folded;
  }
  return ready;
}

// The measured part ends when its reductions are applied: fold every
// outstanding reduction into the instance that holds the data (or where
// the first reduction landed), as the runtime does before the fence that
// stops the app's timer returns.
void Sim::flushReductions() {
  timed_ = true;
  for (uint32_t d = 0; d < data_.size(); ++d) {
    DatumState &st = data_[d];
    if (st.reductions.empty())
      continue;
    int target = st.valid.empty() ? st.reductions.front().mem : st.valid.front().mem;
    flushEnd_ = std::max(flushEnd_, bringIn(d, 1.0, target, 0));
  }
}

void Sim::execute(size_t index) {
  const PointTask &pt = prog_.tasks[index];
  const model::Task &task = app_.tasks[static_cast<size_t>(pt.task)];
  timed_ = pt.timed;
  if (pt.timed && barrier_ < 0) {
    barrier_ = 0;
    for (size_t i = 0; i < index; ++i)
      barrier_ = std::max(barrier_, end_[i]);
    for (double &a : analysisEnd_)
      a = std::max(a, barrier_);
  }
  ProcKind kind = kindFor(pt);
  int proc = place(index, kind);
  const ProcInst &pi = tb_.procs[static_cast<size_t>(proc)];
  kind = pi.kind;
  procOf_[index] = proc;
  int node = pi.node;

  // Runtime analysis: the node of the parent, or the point's own node when
  // the parent is control-replicated.
  double issue = pt.parent >= 0 ? start_[static_cast<size_t>(pt.parent)] : std::max(barrier_, 0.0);
  bool replicated = pt.parent >= 0 ? policyFor(prog_.tasks[static_cast<size_t>(pt.parent)].task,
                                                tb_.procs[static_cast<size_t>(procOf_[static_cast<size_t>(pt.parent)])].kind)
                                          .replicated
                                    : topReplicated_;
  int parentNode = pt.parent >= 0 ? tb_.procs[static_cast<size_t>(procOf_[static_cast<size_t>(pt.parent)])].node : 0;
  int util = replicated ? node : parentNode;
  double analysis = cx_.machine().runtime.taskAnalysisUs * kUs;
  Timeline &line = utilLine_[static_cast<size_t>(util)];
  double aStart = line.earliest(std::max(analysisEnd_[static_cast<size_t>(util)], issue), analysis);
  line.reserve(aStart, aStart + analysis);
  analysisEnd_[static_cast<size_t>(util)] = aStart + analysis;
  if (timed_)
    utilBusy_ += analysis;
  double mapped = aStart + analysis;

  // InstanceLimit: at most N of this task mapped and unfinished. Each
  // processor's mapper counts its own (as the compiled mapper does).
  std::deque<double> *flight = nullptr;
  if (auto limit = policyFor(pt.task, kind).limit; limit && *limit > 0) {
    flight = &inFlight_[{pt.task, proc}];
    if (static_cast<int64_t>(flight->size()) >= *limit)
      mapped = std::max(mapped, (*flight)[flight->size() - static_cast<size_t>(*limit)]);
  }

  double ready = mapped;
  std::vector<int> memOf(pt.accesses.size(), -1);
  std::vector<int> memKinds(pt.accesses.size(), -1);
  if (!task.inner()) {
    for (size_t i = 0; i < pt.accesses.size(); ++i) {
      const Access &a = pt.accesses[i];
      int m = chooseMemory(pt, a, proc, mapped, kind);
      memOf[i] = m;
      memKinds[i] = static_cast<int>(tb_.mems[static_cast<size_t>(m)].kind);
      checkLayout(pt, a, tb_.mems[static_cast<size_t>(m)].kind, kind);
    }
    for (size_t i = 0; i < pt.accesses.size(); ++i) {
      const Access &a = pt.accesses[i];
      for (const auto &[datum, fraction] : a.data) {
        DatumState &st = data_[datum];
        switch (a.privilege) {
        case Privilege::Read: ready = std::max(ready, bringIn(datum, fraction, memOf[i], mapped)); break;
        case Privilege::ReadWrite:
          ready = std::max({ready, bringIn(datum, fraction, memOf[i], mapped), st.readsEnd});
          break;
        case Privilege::Write: ready = std::max({ready, st.lastWrite, st.readsEnd}); break;
        case Privilege::Reduce: ready = std::max(ready, st.readsEnd); break;
        }
      }
    }
  }

  Timeline &procLine = procLine_[static_cast<size_t>(proc)];
  TaskTime tt;
  if (task.inner())
    tt.overhead = pi.spec->overheadUs * kUs;
  else
    tt = taskTime(task, pt, pi, tb_.reach[static_cast<size_t>(proc)], &memKinds);
  double duration = tt.total();
  double start = procLine.earliest(std::max(mapped, ready), duration);
  double end = start + duration;
  procLine.reserve(start, end);
  if (trace_)
    fmt::print(stderr, "task {}({}) on {} [{:.1f}, {:.1f}] us\n", task.name, fmt::join(pt.point, ","), pi.name,
               start * 1e6, end * 1e6);
  start_[index] = start;
  end_[index] = end;
  if (flight)
    flight->push_back(end);
  if (timed_) {
    procBusy_[static_cast<size_t>(proc)] += duration;
    ++procTasks_[static_cast<size_t>(proc)];
    TaskAgg &ag = agg_[static_cast<size_t>(pt.task)];
    if (ag.points++ == 0)
      ag.firstPoint = index;
    ag.kind = kind;
    ag.memKinds = memKinds;
    ag.busy += duration;
    ag.access += tt.access;
    ag.compute += tt.compute;
    ag.best += tb_.bestTaskS[index];
  }
  if (task.inner()) {
    auto info = std::make_shared<dsl::TaskInfo>();
    info->name = task.name;
    info->indexLaunch = pt.index;
    info->ipoint = pt.point;
    info->ispace = pt.domain;
    info->kind = kind;
    info->processor = dsl::Point2{pi.node, pi.index};
    info->parent = pt.parent >= 0 ? info_[static_cast<size_t>(pt.parent)] : top_;
    info_[index] = info;
    return;
  }

  for (size_t i = 0; i < pt.accesses.size(); ++i) {
    const Access &a = pt.accesses[i];
    int m = memOf[i];
    for (const auto &[datum, fraction] : a.data) {
      DatumState &st = data_[datum];
      switch (a.privilege) {
      case Privilege::Read: st.readsEnd = std::max(st.readsEnd, end); break;
      case Privilege::Write:
      case Privilege::ReadWrite:
        st.lastWrite = end;
        st.readsEnd = end;
        st.valid = {{m, end, 1.0}};
        st.reductions.clear();
        break;
      case Privilege::Reduce: {
        // Reductions from one memory share one reduction instance: one fold copy later.
        double bytes = prog_.data[datum].bytes * fraction;
        auto same = std::find_if(st.reductions.begin(), st.reductions.end(), [&](const Pending &p) { return p.mem == m; });
        if (same != st.reductions.end()) {
          same->bytes = std::max(same->bytes, bytes);
          same->ready = std::max(same->ready, end);
        } else {
          st.reductions.push_back({m, bytes, end});
        }
        break;
      }
      }
    }
    // CollectMemory: a read-only instance is released when the task ends.
    if (a.privilege == Privilege::Read && policyFor(pt.task, kind).collects[static_cast<size_t>(a.arg)]) {
      uint64_t key = (static_cast<uint64_t>(a.view) << 20) | static_cast<uint64_t>(m);
      Instance &inst = instances_[key];
      if (inst.live && !std::isfinite(inst.freeAt)) {
        inst.freeAt = end;
        MemState &ms = mems_[static_cast<size_t>(m)];
        ms.frees.emplace_back(end, inst.bytes);
        ms.events.emplace_back(end, -inst.bytes);
      }
    }
  }
}

Result Sim::run() {
  size_t n = prog_.tasks.size();
  procLine_.assign(tb_.procs.size(), Timeline());
  procBusy_.assign(tb_.procs.size(), 0);
  procTasks_.assign(tb_.procs.size(), 0);
  utilLine_.assign(static_cast<size_t>(cx_.machine().nodes), Timeline());
  analysisEnd_.assign(static_cast<size_t>(cx_.machine().nodes), 0);
  data_.assign(prog_.data.size(), {});
  mems_.assign(tb_.mems.size(), {});
  kindChoice_.assign(app_.tasks.size(), {});
  taskPolicy_.assign(app_.tasks.size() * support::kProcKindNames.size(), {});
  topReplicated_ = dsl::controlReplicated(policy_, app_.topTask);
  agg_.assign(app_.tasks.size(), {});
  start_.assign(n, 0);
  end_.assign(n, 0);
  procOf_.assign(n, -1);
  info_.assign(n, nullptr);
  top_ = std::make_shared<dsl::TaskInfo>();
  top_->name = app_.topTask;
  top_->indexLaunch = false;
  top_->kind = ProcKind::CPU;
  top_->processor = dsl::Point2{0, 0};

  Result r;
  auto init = interp_.initialize();
  if (!init) {
    r.errorKind = "policy";
    r.error = init.error().message;
    r.errorDetail = fmt::format("evaluating the policy's globals (policy line {})", init.error().line);
    r.lowerBoundS = cx_.lowerBoundS();
    return r;
  }
  try {
    bool flushed = false;
    for (size_t i = 0; i < n; ++i) {
      if (!flushed && barrier_ >= 0 && !prog_.tasks[i].timed) {
        flushReductions();
        flushed = true;
      }
      execute(i);
    }
    if (!flushed)
      flushReductions();
  } catch (const Failure &f) {
    r.errorKind = f.kind;
    r.error = f.message;
    r.errorDetail = f.detail;
    r.lowerBoundS = cx_.lowerBoundS();
    return r;
  }
  return finish();
}

Result Sim::finish() {
  Result r;
  r.ok = true;
  double t0 = std::max(barrier_, 0.0), t1 = std::max(t0, flushEnd_);
  for (size_t i = 0; i < prog_.tasks.size(); ++i)
    if (prog_.tasks[i].timed)
      t1 = std::max(t1, end_[i]);
  double elapsed = t1 - t0;
  if (options_.noiseSigma > 0) {
    std::mt19937_64 rng(options_.seed);
    // Box-Muller on the raw engine output: identical on every platform.
    double u1 = (static_cast<double>(rng() >> 11) + 1.0) / 9007199254740993.0;
    double u2 = static_cast<double>(rng() >> 11) / 9007199254740992.0;
    double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
    elapsed *= std::exp(options_.noiseSigma * z);
  }
  r.timeS = elapsed;
  r.lowerBoundS = cx_.lowerBoundS();
  if (app_.gflopsMetric) {
    r.throughputUnit = "GFLOP/s";
    r.throughput = elapsed > 0 ? prog_.flops / elapsed / 1e9 : 0;
  } else {
    r.throughputUnit = "iterations/s";
    r.throughput = elapsed > 0 ? prog_.iterations / elapsed : 0;
  }
  r.tasks = static_cast<int>(std::count_if(prog_.tasks.begin(), prog_.tasks.end(), [](const auto &t) { return t.timed; }));
  r.copies = copies_;
  r.bytesCopied = bytesCopied_;
  r.runtimeOverheadS = utilBusy_;
  double span = elapsed > 0 ? (t1 - t0) : 1;

  for (size_t p = 0; p < tb_.procs.size(); ++p)
    r.processors.push_back({tb_.procs[p].name, tb_.procs[p].kind, procTasks_[p], procBusy_[p], procBusy_[p] / span});
  for (const Port &p : ports_)
    if (p.copies > 0)
      r.channels.push_back({p.name, p.channel, p.copies, p.bytes, p.busy, p.busy / span});
  std::sort(r.channels.begin(), r.channels.end(), [](const auto &a, const auto &b) { return a.bytes > b.bytes; });
  for (size_t m = 0; m < tb_.mems.size(); ++m) {
    auto events = mems_[m].events;
    std::sort(events.begin(), events.end(), [](const auto &a, const auto &b) {
      return a.first != b.first ? a.first < b.first : a.second < b.second; // frees first at equal times
    });
    double use = 0, peak = 0;
    for (const auto &[t, delta] : events) {
      use += delta;
      peak = std::max(peak, use);
    }
    r.memories.push_back({tb_.mems[m].name, tb_.mems[m].kind, tb_.mems[m].spec->capacity, peak});
  }
  std::vector<std::pair<ProcKind, double>> fasterVariant; // per task stat
  for (size_t t = 0; t < app_.tasks.size(); ++t) {
    const TaskAgg &ag = agg_[t];
    if (ag.points == 0)
      continue;
    TaskStat s;
    s.name = app_.tasks[t].name;
    s.kind = std::string(support::toString(ag.kind));
    for (ProcKind k : app_.tasks[t].variants)
      s.variants.emplace_back(support::toString(k));
    for (size_t a = 0; a < ag.memKinds.size(); ++a) {
      s.memories.emplace_back(ag.memKinds[a] < 0 ? "virtual" : support::toString(static_cast<MemKind>(ag.memKinds[a])));
      s.regions.push_back(app_.tasks[t].args[a].region);
    }
    s.points = ag.points;
    s.busyS = ag.busy;
    s.accessS = ag.access;
    s.computeS = ag.compute;
    s.bestVariantS = ag.best;
    // The fastest other variant for one of its points, for the "variant" bottleneck.
    std::pair<ProcKind, double> other{ag.kind, INFINITY};
    for (ProcKind k : app_.tasks[t].variants)
      if (k != ag.kind && cx_.machine().count(k) > 0) {
        int p = tb_.procBase.at(k);
        double alt = taskTime(app_.tasks[t], prog_.tasks[ag.firstPoint], tb_.procs[static_cast<size_t>(p)],
                              tb_.reach[static_cast<size_t>(p)], nullptr)
                         .total();
        if (alt < other.second)
          other = {k, alt};
      }
    fasterVariant.push_back(other);
    r.taskStats.push_back(std::move(s));
  }

  // Bottlenecks, each with the numbers behind it.
  const BottleneckThresholds &th = kThresholds;
  auto add = [&](BottleneckKind kind, std::string resource, double share, std::string detail) {
    r.bottlenecks.push_back({kind, std::move(resource), share, std::move(detail)});
  };
  for (const ChannelStat &c : r.channels)
    if (c.busyFraction >= th.channelBusy)
      add(BottleneckKind::Channel, c.name, c.busyFraction,
          fmt::format("{} is busy {:.0f}% of the time: {} in {} copies", c.name, 100 * c.busyFraction,
                      bytesText(c.bytes), c.copies));
  std::map<ProcKind, std::pair<double, int>> byKind; // busy sum, count
  for (const ProcessorStat &p : r.processors) {
    byKind[p.kind].first += p.busyFraction;
    byKind[p.kind].second += 1;
  }
  for (const auto &[kind, sum] : byKind) {
    double mean = sum.first / sum.second;
    double max = 0;
    std::string busiest;
    for (const ProcessorStat &p : r.processors)
      if (p.kind == kind && p.busyFraction > max) {
        max = p.busyFraction;
        busiest = p.name;
      }
    if (max >= th.processorBusy && mean < th.imbalanceRatio * max)
      add(BottleneckKind::Processor, busiest, max,
          fmt::format("load imbalance on {} processors: {} is busy {:.0f}% of the time, the {} average {:.0f}%",
                      support::toString(kind), busiest, 100 * max, support::toString(kind), 100 * mean));
    else if (max >= th.processorBusy)
      add(BottleneckKind::Processor, fmt::format("{} processors", support::toString(kind)), mean,
          fmt::format("the {} {} processors are busy {:.0f}% of the time on average", sum.second,
                      support::toString(kind), 100 * mean));
  }
  for (const auto &[kind, sum] : byKind)
    if (sum.first / sum.second < th.idleBusy)
      for (const auto &[other, osum] : byKind)
        if (other != kind && osum.first / osum.second >= th.otherBusy) {
          add(BottleneckKind::Idle, fmt::format("{} processors", support::toString(kind)), 1 - sum.first / sum.second,
              fmt::format("the {} {} processors are idle {:.0f}% of the time while the {} processors are busy "
                          "{:.0f}%",
                          sum.second, support::toString(kind), 100 * (1 - sum.first / sum.second),
                          support::toString(other), 100 * osum.first / osum.second));
          break;
        }
  if (elapsed > 0 && utilBusy_ / cx_.machine().nodes / elapsed >= th.runtimeShare)
    add(BottleneckKind::Runtime, "runtime overhead", utilBusy_ / elapsed,
        fmt::format("the runtime spends {} analysing {} tasks and {} copies ({:.0f}% of the elapsed time{})",
                    timeText(utilBusy_), r.tasks, r.copies, 100 * utilBusy_ / elapsed,
                    cx_.machine().nodes > 1 ? ", summed over nodes" : ""));
  for (const MemoryStat &m : r.memories)
    if (m.peak >= th.memoryPeak * m.capacity)
      add(BottleneckKind::Memory, m.name, m.peak / m.capacity,
          fmt::format("{} peaks at {} of {} ({:.0f}%)", m.name, bytesText(m.peak), bytesText(m.capacity),
                      100 * m.peak / m.capacity));
  for (size_t i = 0; i < r.taskStats.size(); ++i) {
    const TaskStat &s = r.taskStats[i];
    double here = s.busyS / s.points;
    if (elapsed > 0 && fasterVariant[i].second < th.variantRatio * here)
      add(BottleneckKind::Variant, s.name, s.busyS / elapsed / std::max(1.0, static_cast<double>(r.processors.size())),
          fmt::format("{} runs on {} at {} per point; its {} variant would take about {}", s.name, s.kind,
                      timeText(here), support::toString(fasterVariant[i].first), timeText(fasterVariant[i].second)));
    if (s.accessS > 0 && s.accessS >= s.computeS && s.busyS > 0 && s.accessS > th.accessRatio * s.bestVariantS) {
      add(BottleneckKind::Access, s.name, elapsed > 0 ? s.accessS / elapsed : 0,
          fmt::format("{} spends {} moving data through its arguments in {} (regions {}); its fastest memories "
                      "would take about {} in total",
                      s.name, timeText(s.accessS), fmt::join(s.memories, ","), fmt::join(s.regions, ","),
                      timeText(s.bestVariantS)));
    }
  }
  std::stable_sort(r.bottlenecks.begin(), r.bottlenecks.end(),
                   [](const Bottleneck &a, const Bottleneck &b) { return a.share > b.share; });
  if (r.bottlenecks.size() > th.keep)
    r.bottlenecks.resize(th.keep);
  return r;
}

} // namespace

Result simulate(const Context &context, const dsl::Program &policy, const Options &options) {
  return Sim(context, policy, options).run();
}

nlohmann::json toJson(const Result &r) {
  using nlohmann::json;
  json j;
  j["status"] = r.ok ? "ok" : "error";
  j["error"] = r.ok ? json(nullptr) : json(r.error);
  if (!r.ok) {
    j["error_kind"] = r.errorKind;
    j["error_detail"] = r.errorDetail;
  }
  j["time_s"] = r.ok ? json(r.timeS) : json(nullptr);
  j["throughput"] = r.ok ? json(r.throughput) : json(0);
  j["throughput_unit"] = r.throughputUnit;
  j["lower_bound_s"] = r.lowerBoundS;
  j["tasks"] = r.tasks;
  j["copies"] = r.copies;
  j["bytes_copied"] = r.bytesCopied;
  j["runtime_overhead_s"] = r.runtimeOverheadS;
  j["processors"] = json::array();
  for (const auto &p : r.processors)
    j["processors"].push_back({{"name", p.name},
                               {"kind", support::toString(p.kind)},
                               {"tasks", p.tasks},
                               {"busy_s", p.busyS},
                               {"busy_fraction", p.busyFraction}});
  j["channels"] = json::array();
  for (const auto &c : r.channels)
    j["channels"].push_back({{"name", c.name},
                             {"channel", c.channel},
                             {"copies", c.copies},
                             {"bytes", c.bytes},
                             {"busy_s", c.busyS},
                             {"busy_fraction", c.busyFraction}});
  j["memories"] = json::array();
  for (const auto &m : r.memories)
    j["memories"].push_back({{"name", m.name},
                             {"kind", support::toString(m.kind)},
                             {"capacity_bytes", m.capacity},
                             {"peak_bytes", m.peak}});
  j["task_stats"] = json::array();
  for (const auto &t : r.taskStats)
    j["task_stats"].push_back({{"name", t.name},
                               {"kind", t.kind},
                               {"variants", t.variants},
                               {"memories", t.memories},
                               {"regions", t.regions},
                               {"points", t.points},
                               {"busy_s", t.busyS},
                               {"access_s", t.accessS},
                               {"compute_s", t.computeS},
                               {"best_variant_s", t.bestVariantS}});
  j["bottlenecks"] = json::array();
  for (const auto &b : r.bottlenecks)
    j["bottlenecks"].push_back(
        {{"kind", toString(b.kind)}, {"resource", b.resource}, {"share", b.share}, {"detail", b.detail}});
  return j;
}

std::string summarize(const Result &r, const Context &cx) {
  std::string out;
  const auto &app = *cx.program().app;
  out += fmt::format("app {} (size {} = {}) on {} ({})\n", app.name, app.sizeName, cx.program().size,
                     cx.machine().name, cx.machine().describe());
  if (!r.ok) {
    out += fmt::format("status: error ({})\n  {}\n  where: {}\n", r.errorKind, r.error, r.errorDetail);
    return out;
  }
  out += fmt::format("status: ok\nelapsed: {}   throughput: {:.4g} {}   lower bound: {} ({:.0f}% of it)\n",
                     timeText(r.timeS), r.throughput, r.throughputUnit, timeText(r.lowerBoundS),
                     r.timeS > 0 ? 100 * r.lowerBoundS / r.timeS : 0);
  out += fmt::format("{} tasks, {} copies moving {}, runtime overhead {}\n", r.tasks, r.copies,
                     bytesText(r.bytesCopied), timeText(r.runtimeOverheadS));
  out += "tasks:\n";
  for (const auto &t : r.taskStats)
    out += fmt::format("  {:<28} {:>5} x on {:<4} busy {:>10}  args in {}\n", t.name, t.points, t.kind,
                       timeText(t.busyS), t.memories.empty() ? "-" : fmt::format("{}", fmt::join(t.memories, ",")));
  std::map<ProcKind, std::pair<double, int>> byKind;
  for (const auto &p : r.processors) {
    byKind[p.kind].first += p.busyFraction;
    byKind[p.kind].second += 1;
  }
  out += "processors:";
  for (const auto &[kind, s] : byKind)
    out += fmt::format("  {} x{} busy {:.0f}%", support::toString(kind), s.second, 100 * s.first / s.second);
  out += "\n";
  if (!r.channels.empty()) {
    out += "busiest channels:\n";
    for (size_t i = 0; i < std::min<size_t>(4, r.channels.size()); ++i)
      out += fmt::format("  {:<40} {:>10} in {:>5} copies, busy {:.0f}%\n", r.channels[i].name,
                         bytesText(r.channels[i].bytes), r.channels[i].copies, 100 * r.channels[i].busyFraction);
  }
  out += "memory peaks:";
  std::map<MemKind, double> peakByKind, capByKind;
  for (const auto &m : r.memories)
    if (m.peak >= peakByKind[m.kind]) {
      peakByKind[m.kind] = m.peak;
      capByKind[m.kind] = m.capacity;
    }
  for (const auto &[kind, peak] : peakByKind)
    out += fmt::format("  {} {}/{}", support::toString(kind), bytesText(peak), bytesText(capByKind[kind]));
  out += "\n";
  if (!r.bottlenecks.empty()) {
    out += "bottlenecks:\n";
    for (const auto &b : r.bottlenecks)
      out += fmt::format("  - {}\n", b.detail);
  }
  return out;
}

} // namespace hone::sim
