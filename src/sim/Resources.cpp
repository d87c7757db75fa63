// The machine's instances and reach tables, the cost of a point task, and the
// lower bound: what depends only on (machine, program), built once per Context.
#include "sim/Resources.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

namespace hone::sim {

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

TaskTime taskTime(const model::Task &task, const model::PointTask &pt, const ProcInst &proc,
                  const ReachByKind &reach, std::span<const std::optional<MemKind>> memKinds) {
  TaskTime t;
  t.overhead = proc.spec->overheadUs * kUs;
  auto eff = task.efficiency.find(proc.kind);
  double efficiency = eff == task.efficiency.end() ? 1.0 : eff->second;
  t.compute = pt.flops / (proc.spec->gflops * 1e9 * efficiency);
  for (size_t a = 0; a < pt.accesses.size(); ++a) {
    const Reach *r = nullptr;
    if (a < memKinds.size() && memKinds[a]) {
      r = &reach[static_cast<size_t>(*memKinds[a])];
    } else {
      for (const auto &candidate : reach)
        if (candidate.mem.valid() && (!r || candidate.bandwidth > r->bandwidth))
          r = &candidate;
    }
    if (r && r->mem.valid() && pt.accesses[a].trafficBytes > 0)
      t.access += r->latencyUs * kUs + pt.accesses[a].trafficBytes / r->bandwidth;
  }
  return t;
}

Context::Context(const model::MachineModel &machine, const model::Program &program)
    : machine_(machine), program_(program), shape_(shapeOf(machine)), tables_(std::make_unique<Tables>()) {
  Tables &tb = *tables_;
  for (const auto &spec : machine.processors) {
    if (spec.perNode == 0)
      continue;
    tb.procBase[spec.kind] = static_cast<int>(tb.procs.size());
    for (int n = 0; n < machine.nodes; ++n)
      for (int i = 0; i < spec.perNode; ++i)
        tb.procs.push_back({spec.kind, n, i, &spec, fmt::format("node{} {}{}", n, model::toString(spec.kind), i)});
  }
  for (const auto &spec : machine.memories)
    for (int n = 0; n < machine.nodes; ++n) {
      if (!spec.per) {
        tb.mems.push_back({spec.kind, n, ProcId(), &spec, fmt::format("{} node{}", model::toString(spec.kind), n)});
        continue;
      }
      for (int i = 0; i < machine.count(*spec.per); ++i)
        tb.mems.push_back({spec.kind, n, tb.procId(*spec.per, n, i), &spec,
                           fmt::format("{} node{} {}{}", model::toString(spec.kind), n,
                                       model::toString(*spec.per), i)});
    }
  tb.reach.resize(tb.procs.size());
  tb.defaultMem.assign(tb.procs.size(), MemId());
  for (size_t p = 0; p < tb.procs.size(); ++p) {
    double bestAffinity = -1, bestBandwidth = -1;
    for (size_t m = 0; m < tb.mems.size(); ++m) {
      const MemInst &mem = tb.mems[m];
      if (mem.node != tb.procs[p].node)
        continue;
      for (const auto &a : mem.spec->access) {
        if (a.proc != tb.procs[p].kind || (a.own && mem.owner != ProcId(static_cast<int>(p))))
          continue;
        Reach &r = tb.reach[p][static_cast<size_t>(mem.kind)];
        if (a.bandwidth > r.bandwidth)
          r = {MemId(static_cast<int>(m)), a.bandwidth, a.latencyUs};
        if (a.affinity > bestAffinity || (a.affinity == bestAffinity && a.bandwidth > bestBandwidth)) {
          bestAffinity = a.affinity;
          bestBandwidth = a.bandwidth;
          tb.defaultMem[p] = MemId(static_cast<int>(m));
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
    const model::PointTask &pt = program.tasks[i];
    const model::Task &task = app.tasks[static_cast<size_t>(pt.task)];
    std::vector<double> times;
    double best = INFINITY;
    for (ProcKind k : kinds) {
      double t = INFINITY;
      if (task.hasVariant(k)) {
        ProcId p = tb.firstOf(k);
        t = taskTime(task, pt, tb.proc(p), tb.reachOf(p)).total();
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

} // namespace hone::sim
