#include "sim/Execution.h"

#include "sim/Resolution.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <map>
#include <set>
#include <unordered_map>

namespace hone::sim {

using model::Access;
using model::PointTask;
using model::Privilege;

namespace {

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


class Executor {
public:
  Executor(const Context &cx, const dsl::Program &policy)
      : cx_(cx), tb_(cx.tables()), prog_(cx.program()), app_(*prog_.app), resolver_(cx, policy) {}

  std::variant<Execution, Failure> run();

private:
  struct Valid {
    MemId mem;
    double ready;
    double fraction; // of the datum (ghost copies hold part of it)
  };
  struct Pending {
    MemId mem;
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
    double allocated = 0;                         // live instances, including ones with a scheduled free
    std::vector<std::pair<double, double>> frees; // (time, bytes) not yet applied
  };
  struct Port {
    PortUse use;
    Timeline line;
  };

  MemId allocate(const PointTask &pt, const Access &a, ProcId proc, double mapped, ProcKind kind);
  double copy(MemId src, MemId dst, double bytes, double ready);
  PortId port(const model::ChannelSpec &channel, bool node, bool out, const MemInst &end);
  PortId link(const model::ChannelSpec &channel, const MemInst &src, const MemInst &dst);
  double usage(MemId mem, double at);
  double bringIn(uint32_t datum, double fraction, MemId mem, double floor);
  void step(size_t index);
  double analyze(const PointTask &pt, ProcId parent, int node);
  void release(const PointTask &pt, ProcKind kind, const std::vector<MemId> &memOf, double end);
  void flushReductions();
  static uint64_t instanceKey(const Access &a, MemId m) {
    return (static_cast<uint64_t>(a.view) << 20) | static_cast<uint64_t>(m.value());
  }

  const Context &cx_;
  const Context::Tables &tb_;
  const model::Program &prog_;
  const model::AppModel &app_;
  Resolver resolver_;
  Execution out_;

  std::vector<Timeline> procLine_;
  // The runtime of each node: task analysis in program order (analysisEnd_),
  // copy issue work whenever the data is ready, both on one timeline.
  std::vector<Timeline> utilLine_;
  std::vector<double> analysisEnd_;
  std::vector<Port> ports_;
  std::unordered_map<uint64_t, PortId> portIndex_;
  std::vector<DatumState> data_;
  std::vector<MemState> mems_;
  // (datum, memory) whose valid copy went with an instance CollectMemory released: bringing it
  // back is a copy again (recopied_ counts those bytes for the task being stepped).
  std::set<std::pair<uint32_t, int>> collected_;
  double recopied_ = 0;
  std::unordered_map<uint64_t, Instance> instances_;
  std::vector<double> start_, end_;                        // per point task
  std::vector<ProcId> procOf_;                             // per point task
  std::vector<std::shared_ptr<const dsl::TaskInfo>> info_; // per point task with children
  std::shared_ptr<dsl::TaskInfo> top_;
  std::map<std::pair<int, int>, std::deque<double>> inFlight_; // (task, processor) -> ends, for InstanceLimit
  double barrier_ = -1; // when the timed part starts
  double flushEnd_ = 0; // when the reductions outstanding at the end of the timed part are applied
  bool timed_ = false;
  bool trace_ = std::getenv("HONE_SIM_TRACE") != nullptr; // developer aid: every copy and task on stderr
};

double Executor::usage(MemId mem, double at) {
  MemState &ms = mems_[mem.index()];
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

// The instance of an argument: the first memory the policy allows that the
// processor reaches and that holds it (an instance already there is reused).
MemId Executor::allocate(const PointTask &pt, const Access &a, ProcId proc, double mapped, ProcKind kind) {
  const model::Task &task = app_.tasks[static_cast<size_t>(pt.task)];
  const std::string &regionName = task.args[static_cast<size_t>(a.arg)].region;
  MemoryChoice choice = resolver_.memoriesFor(pt, a, proc, kind);
  auto where = [&] { // only for messages: formatting on every call costs more than the rest
    return fmt::format("region {} (argument {}) of task {} on {}", regionName, a.arg, task.name, tb_.proc(proc).name);
  };
  std::vector<std::string> unreachable;
  MemId full;
  for (MemKind k : choice.wanted) {
    if (k == MemKind::VIRTUAL)
      fail("policy",
           fmt::format("Invalid mapper output: a virtual instance for {}; a task that accesses its data needs a "
                       "physical instance",
                       where()),
           fmt::format("Region statement at policy line {}", choice.line));
    const Reach &r = tb_.reachOf(proc)[static_cast<size_t>(k)];
    if (!r.mem.valid()) {
      unreachable.emplace_back(model::toString(k));
      continue;
    }
    Instance &inst = instances_[instanceKey(a, r.mem)];
    MemState &ms = mems_[r.mem.index()];
    std::vector<std::pair<double, double>> &events = out_.memEvents[r.mem.index()];
    if (inst.live && inst.freeAt > mapped) {
      if (std::isfinite(inst.freeAt)) { // mapped before its release: the release waits for this task
        auto f = std::find(ms.frees.begin(), ms.frees.end(), std::make_pair(inst.freeAt, inst.bytes));
        if (f != ms.frees.end())
          ms.frees.erase(f);
        auto e = std::find(events.begin(), events.end(), std::make_pair(inst.freeAt, -inst.bytes));
        if (e != events.end())
          events.erase(e);
        inst.freeAt = INFINITY;
      }
      return r.mem;
    }
    bool recreated = inst.live; // released earlier: its data went with it
    const MemInst &mem = tb_.mem(r.mem);
    if (usage(r.mem, mapped) + a.instanceBytes <= mem.spec->capacity) {
      ms.allocated += a.instanceBytes;
      events.emplace_back(mapped, a.instanceBytes);
      inst = {a.instanceBytes, true, INFINITY};
      if (recreated)
        for (const auto &[datum, fraction] : a.data) {
          auto &valid = data_[datum].valid;
          auto gone = std::remove_if(valid.begin(), valid.end(), [&](const Valid &v) { return v.mem == r.mem; });
          if (gone != valid.end())
            collected_.insert({datum, r.mem.value()});
          valid.erase(gone, valid.end());
        }
      return r.mem;
    }
    if (!full.valid())
      full = r.mem;
  }
  if (full.valid()) {
    const MemInst &mem = tb_.mem(full);
    fail("memory",
         fmt::format("Out of memory: failed to allocate {} for {} in {} ({} of {} in use)", bytesText(a.instanceBytes),
                     where(), mem.name, bytesText(usage(full, mapped)), bytesText(mem.spec->capacity)),
         choice.line == 0         ? "no Region statement applies; Legion's default memory has no fallback"
         : choice.wanted.size() > 1 ? "every memory the Region statement lists is full"
                                    : fmt::format("the Region statement at policy line {} lists no fallback memory",
                                                  choice.line));
  }
  fail("memory",
       fmt::format("No memory of kind {} has affinity to {} (needed for {})", fmt::join(unreachable, " or "),
                   tb_.proc(proc).name, where()),
       choice.line ? fmt::format("Region statement at policy line {}", choice.line) : "Legion's default memory choice");
}

// Links are full duplex: an endpoint has an outgoing and an incoming port per
// channel, of its node (`node`) or of its memory.
PortId Executor::port(const model::ChannelSpec &channel, bool node, bool out, const MemInst &end) {
  uint64_t id = node ? static_cast<uint64_t>(end.node) : static_cast<uint64_t>(&end - tb_.mems.data());
  uint64_t key = (static_cast<uint64_t>(&channel - cx_.machine().channels.data()) << 32) |
                 (static_cast<uint64_t>(node) << 31) | (static_cast<uint64_t>(out) << 30) | id;
  auto [it, inserted] = portIndex_.emplace(key, PortId(static_cast<int>(ports_.size())));
  if (inserted)
    ports_.push_back({{fmt::format("{} {} {}", channel.name, out ? "out of" : "into",
                                   node ? fmt::format("node{}", end.node) : end.name),
                       channel.name},
                      {}});
  return it->second;
}

// A point-to-point link from one memory to another (one direction of it).
PortId Executor::link(const model::ChannelSpec &channel, const MemInst &src, const MemInst &dst) {
  auto a = static_cast<uint64_t>(&src - tb_.mems.data());
  auto b = static_cast<uint64_t>(&dst - tb_.mems.data());
  uint64_t key = (uint64_t{1} << 63) |
                 (static_cast<uint64_t>(&channel - cx_.machine().channels.data()) << 48) | (a << 24) | b;
  auto [it, inserted] = portIndex_.emplace(key, PortId(static_cast<int>(ports_.size())));
  if (inserted)
    ports_.push_back({{fmt::format("{} from {} to {}", channel.name, src.name, dst.name), channel.name}, {}});
  return it->second;
}

double Executor::copy(MemId src, MemId dst, double bytes, double ready) {
  if (src == dst || bytes <= 0)
    return ready;
  const MemInst &a = tb_.mem(src);
  const MemInst &b = tb_.mem(dst);
  bool network = a.node != b.node;
  const model::ChannelSpec *ch = cx_.machine().channel(a.kind, b.kind, network);
  HONE_CHECK(ch != nullptr, "machine model without a channel (validated at load)");
  std::array<Timeline *, 5> lines{};
  std::array<PortId, 5> used{};
  size_t count = 0;
  for (const MemInst *end : {&a, &b}) {
    bool out = end == &a;
    if (ch->nodePorts)
      used[count++] = port(*ch, true, out, *end);
    if (std::find(ch->portKinds.begin(), ch->portKinds.end(), end->kind) != ch->portKinds.end())
      used[count++] = port(*ch, false, out, *end);
  }
  if (ch->linkPorts)
    used[count++] = link(*ch, a, b);
  for (size_t i = 0; i < count; ++i)
    lines[i] = &ports_[used[i].index()].line;
  // The runtime of the destination's node issues the copy (its utility
  // work serialises with task analysis), then the channel carries it.
  double issue = cx_.machine().runtime.copyIssueUs * kUs;
  Timeline &util = utilLine_[static_cast<size_t>(b.node)];
  double issueStart = util.earliest(ready, issue);
  util.reserve(issueStart, issueStart + issue);
  if (timed_)
    out_.runtimeBusyS += issue;
  double duration = ch->latencyUs * kUs + bytes / ch->bandwidth;
  double start = earliestOnAll({lines.data(), count}, issueStart + issue, duration);
  double end = start + duration;
  for (size_t i = 0; i < count; ++i) {
    Port &pp = ports_[used[i].index()];
    pp.line.reserve(start, end);
    if (timed_) {
      pp.use.busyS += duration;
      pp.use.bytes += bytes;
      ++pp.use.copies;
    }
  }
  if (timed_) {
    ++out_.copies;
    out_.bytesCopied += bytes;
  }
  if (trace_)
    fmt::print(stderr, "copy {} -> {} {} [{:.1f}, {:.1f}] us\n", a.name, b.name, bytesText(bytes), start * 1e6,
               end * 1e6);
  return end;
}

// Makes `datum` (the fraction an argument covers) valid in `mem`; returns when it is.
// `floor`: the copy cannot start before the task is mapped.
double Executor::bringIn(uint32_t datum, double fraction, MemId mem, double floor) {
  DatumState &st = data_[datum];
  double bytes = prog_.data[datum].bytes * fraction;
  double ready = st.lastWrite;
  Valid *here = nullptr;
  const Valid *src = nullptr;
  int node = tb_.mem(mem).node;
  for (Valid &v : st.valid) {
    if (v.fraction + 1e-12 < fraction)
      continue;
    if (v.mem == mem)
      here = &v;
    // Copy from a copy on the same node when there is one.
    else if (!src || (tb_.mem(v.mem).node == node && tb_.mem(src->mem).node != node))
      src = &v;
  }
  if (here) {
    ready = std::max(ready, here->ready);
  } else if (src) {
    double end = copy(src->mem, mem, bytes, std::max({floor, st.lastWrite, src->ready}));
    if (collected_.erase({datum, mem.value()}))
      recopied_ += bytes;
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
void Executor::flushReductions() {
  timed_ = true;
  for (uint32_t d = 0; d < data_.size(); ++d) {
    DatumState &st = data_[d];
    if (st.reductions.empty())
      continue;
    MemId target = st.valid.empty() ? st.reductions.front().mem : st.valid.front().mem;
    flushEnd_ = std::max(flushEnd_, bringIn(d, 1.0, target, 0));
  }
}

void Executor::step(size_t index) {
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
  ProcId parent = pt.parent >= 0 ? procOf_[static_cast<size_t>(pt.parent)] : ProcId();
  ProcKind kind = resolver_.kindFor(pt);
  ProcId proc = resolver_.place(pt, kind, parent,
                                pt.parent >= 0 ? info_[static_cast<size_t>(pt.parent)]
                                               : std::shared_ptr<const dsl::TaskInfo>(top_));
  const ProcInst &pi = tb_.proc(proc);
  kind = pi.kind;
  procOf_[index] = proc;
  int node = pi.node;

  double mapped = analyze(pt, parent, node);

  // InstanceLimit: at most N of this task mapped and unfinished. Each
  // processor's mapper counts its own (as the compiled mapper does).
  std::deque<double> *flight = nullptr;
  if (auto limit = resolver_.policyFor(pt.task, kind).limit; limit && *limit > 0) {
    flight = &inFlight_[{pt.task, proc.value()}];
    if (static_cast<int64_t>(flight->size()) >= *limit)
      mapped = std::max(mapped, (*flight)[flight->size() - static_cast<size_t>(*limit)]);
  }

  double ready = mapped;
  double recopiedBefore = recopied_;
  std::vector<MemId> memOf(pt.accesses.size());
  std::vector<std::optional<MemKind>> memKinds(pt.accesses.size());
  if (!task.inner()) {
    for (size_t i = 0; i < pt.accesses.size(); ++i) {
      const Access &a = pt.accesses[i];
      MemId m = allocate(pt, a, proc, mapped, kind);
      memOf[i] = m;
      memKinds[i] = tb_.mem(m).kind;
      resolver_.checkLayout(pt, a, tb_.mem(m).kind, kind);
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

  Timeline &procLine = procLine_[proc.index()];
  TaskTime tt;
  if (task.inner())
    tt.overhead = pi.spec->overheadUs * kUs;
  else
    tt = taskTime(task, pt, pi, tb_.reachOf(proc), memKinds);
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
    out_.procBusyS[proc.index()] += duration;
    ++out_.procTasks[proc.index()];
    TaskUse &use = out_.tasks[static_cast<size_t>(pt.task)];
    if (use.points++ == 0)
      use.firstPoint = index;
    use.kind = kind;
    use.memKinds = memKinds;
    use.busyS += duration;
    use.accessS += tt.access;
    use.computeS += tt.compute;
    use.bestS += tb_.bestTaskS[index];
    use.recopiedBytes += recopied_ - recopiedBefore;
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

  release(pt, kind, memOf, end);
}

// The runtime's analysis of the point task on the node of its parent, or on its own node when the
// parent is control-replicated; returns when the task is mapped.
double Executor::analyze(const PointTask &pt, ProcId parent, int node) {
  double issue = pt.parent >= 0 ? start_[static_cast<size_t>(pt.parent)] : std::max(barrier_, 0.0);
  bool replicated =
      pt.parent >= 0
          ? resolver_.policyFor(prog_.tasks[static_cast<size_t>(pt.parent)].task, tb_.proc(parent).kind).replicated
          : resolver_.topReplicated();
  int parentNode = parent.valid() ? tb_.proc(parent).node : 0;
  int util = replicated ? node : parentNode;
  double analysis = cx_.machine().runtime.taskAnalysisUs * kUs;
  Timeline &line = utilLine_[static_cast<size_t>(util)];
  double aStart = line.earliest(std::max(analysisEnd_[static_cast<size_t>(util)], issue), analysis);
  line.reserve(aStart, aStart + analysis);
  analysisEnd_[static_cast<size_t>(util)] = aStart + analysis;
  if (timed_)
    out_.runtimeBusyS += analysis;
  return aStart + analysis;
}

// After the task ends at `end`: what it wrote is valid where it wrote it, its reductions wait to be
// folded, and CollectMemory releases its read-only instances.
void Executor::release(const PointTask &pt, ProcKind kind, const std::vector<MemId> &memOf, double end) {
  for (size_t i = 0; i < pt.accesses.size(); ++i) {
    const Access &a = pt.accesses[i];
    MemId m = memOf[i];
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
        auto same =
            std::find_if(st.reductions.begin(), st.reductions.end(), [&](const Pending &p) { return p.mem == m; });
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
    if (a.privilege == Privilege::Read && resolver_.policyFor(pt.task, kind).collects[static_cast<size_t>(a.arg)]) {
      Instance &inst = instances_[instanceKey(a, m)];
      if (inst.live && !std::isfinite(inst.freeAt)) {
        inst.freeAt = end;
        mems_[m.index()].frees.emplace_back(end, inst.bytes);
        out_.memEvents[m.index()].emplace_back(end, -inst.bytes);
      }
    }
  }
}

std::variant<Execution, Failure> Executor::run() {
  size_t n = prog_.tasks.size();
  size_t nodes = static_cast<size_t>(cx_.machine().nodes);
  procLine_.assign(tb_.procs.size(), Timeline());
  utilLine_.assign(nodes, Timeline());
  analysisEnd_.assign(nodes, 0);
  data_.assign(prog_.data.size(), {});
  mems_.assign(tb_.mems.size(), {});
  start_.assign(n, 0);
  end_.assign(n, 0);
  procOf_.assign(n, ProcId());
  info_.assign(n, nullptr);
  top_ = std::make_shared<dsl::TaskInfo>();
  top_->name = app_.topTask;
  top_->indexLaunch = false;
  top_->kind = ProcKind::CPU;
  top_->processor = dsl::Point2{0, 0};
  out_.procBusyS.assign(tb_.procs.size(), 0);
  out_.procTasks.assign(tb_.procs.size(), 0);
  out_.memEvents.assign(tb_.mems.size(), {});
  out_.tasks.assign(app_.tasks.size(), {});

  if (auto failure = resolver_.initialize())
    return *failure;
  try {
    bool flushed = false;
    for (size_t i = 0; i < n; ++i) {
      if (!flushed && barrier_ >= 0 && !prog_.tasks[i].timed) {
        flushReductions();
        flushed = true;
      }
      step(i);
    }
    if (!flushed)
      flushReductions();
  } catch (const Failure &f) {
    return f;
  }
  out_.startS = std::max(barrier_, 0.0);
  out_.endS = std::max(out_.startS, flushEnd_);
  for (size_t i = 0; i < n; ++i)
    if (prog_.tasks[i].timed)
      out_.endS = std::max(out_.endS, end_[i]);
  for (Port &p : ports_)
    out_.ports.push_back(std::move(p.use));
  return std::move(out_);
}

} // namespace

std::variant<Execution, Failure> execute(const Context &context, const dsl::Program &policy) {
  return Executor(context, policy).run();
}

} // namespace hone::sim
