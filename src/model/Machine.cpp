#include "model/Machine.h"

#include "model/ModelToml.h"
#include "support/StringUtil.h"

#include <fmt/format.h>

#include <cmath>

#include <algorithm>
#include <set>

namespace hone::model {

using detail::TomlError;
using detail::TableReader;
using support::Error;
using support::Expected;

const ProcessorSpec *MachineModel::processor(ProcKind kind) const {
  for (const auto &p : processors)
    if (p.kind == kind)
      return &p;
  return nullptr;
}

int MachineModel::count(ProcKind kind) const {
  const ProcessorSpec *p = processor(kind);
  return p ? p->perNode : 0;
}

const MemorySpec *MachineModel::memory(MemKind kind) const {
  for (const auto &m : memories)
    if (m.kind == kind)
      return &m;
  return nullptr;
}

const ChannelSpec *MachineModel::channel(MemKind a, MemKind b, bool network) const {
  const ChannelSpec *best = nullptr;
  int bestScore = -1;
  for (const auto &c : channels) {
    if (c.network != network)
      continue;
    auto matches = [](const std::optional<MemKind> &k, MemKind m) { return !k || *k == m; };
    if (!((matches(c.a, a) && matches(c.b, b)) || (matches(c.a, b) && matches(c.b, a))))
      continue;
    int score = (c.a ? 1 : 0) + (c.b ? 1 : 0); // exact kinds beat wildcards
    if (score > bestScore) {
      best = &c;
      bestScore = score;
    }
  }
  return best;
}

std::string MachineModel::describe() const {
  std::vector<std::string> parts;
  for (const auto &p : processors)
    if (p.perNode > 0)
      parts.push_back(fmt::format("{} {}", p.perNode, model::toString(p.kind)));
  return fmt::format("{} node{} x ({})", nodes, nodes == 1 ? "" : "s", fmt::join(parts, ", "));
}

namespace {

// The largest machine the model simulates (docs/DEVELOPING.md lists hone's limits).
constexpr double kMaxNodes = 4096, kMaxPerNode = 1024, kMaxProcessors = 65536;

ProcKind procKind(TableReader &r, const char *key) {
  std::string text = r.string(key);
  auto kind = model::parseProcKind(text);
  if (!kind)
    r.failAt(key, fmt::format("unknown processor kind '{}' (known: CPU, GPU, IO, PY, PROC, OMP)", text));
  return *kind;
}

std::optional<MemKind> memKindOrAny(TableReader &r, const char *key, const std::string &text) {
  if (text == "*")
    return std::nullopt;
  auto kind = model::parseMemKind(text);
  if (!kind || *kind == MemKind::VIRTUAL)
    r.failAt(key, fmt::format("unknown memory kind '{}' (known: SYSMEM, FBMEM, RDMEM, ZCMEM, SOCKMEM)", text));
  return *kind;
}

double positive(TableReader &r, const char *key) {
  double v = r.number(key);
  if (!(v > 0))
    r.failAt(key, "must be greater than 0");
  return v;
}

// A count read as a number: whole and within [lo, hi] (checked before any conversion to int).
int wholeNumber(TableReader &r, const char *key, double lo, double hi) {
  double v = r.number(key);
  if (!(v >= lo && v <= hi) || v != std::floor(v))
    r.failAt(key, fmt::format("must be a whole number from {:g} to {:g}", lo, hi));
  return static_cast<int>(v);
}

double nonNegative(TableReader &r, const char *key, double fallback) {
  double v = r.number(key, fallback);
  if (v < 0)
    r.failAt(key, "must not be negative");
  return v;
}

MachineModel readMachine(TableReader &top) {
  MachineModel m;
  m.name = top.string("name");
  m.description = top.string("description", "");
  m.nodes = wholeNumber(top, "nodes", 1, kMaxNodes);

  TableReader runtime = top.table("runtime");
  m.runtime.taskAnalysisUs = nonNegative(runtime, "task_analysis_us", 0);
  m.runtime.copyIssueUs = nonNegative(runtime, "copy_issue_us", 0);
  runtime.finish();

  for (TableReader &r : top.tables("processor")) {
    ProcessorSpec p;
    p.kind = procKind(r, "kind");
    if (m.processor(p.kind))
      r.failAt("kind", fmt::format("processor kind {} is listed twice", model::toString(p.kind)));
    p.perNode = wholeNumber(r, "per_node", 0, kMaxPerNode);
    if (static_cast<double>(p.perNode) * m.nodes > kMaxProcessors)
      r.failAt("per_node", fmt::format("{} nodes x {} processors is more than the {} processors of a kind the model "
                                       "simulates",
                                       m.nodes, p.perNode, kMaxProcessors));
    p.gflops = positive(r, "gflops");
    p.overheadUs = nonNegative(r, "overhead_us", 0);
    r.finish();
    m.processors.push_back(p);
  }
  if (m.processors.empty())
    top.failHere("a machine needs at least one [[processor]]");

  for (TableReader &r : top.tables("memory")) {
    MemorySpec mem;
    mem.kind = *memKindOrAny(r, "kind", r.string("kind"));
    if (m.memory(mem.kind))
      r.failAt("kind", fmt::format("memory kind {} is listed twice", model::toString(mem.kind)));
    std::string per = r.string("per", "node");
    if (per != "node") {
      auto kind = model::parseProcKind(per);
      if (!kind || !m.processor(*kind))
        r.failAt("per", fmt::format("'{}' is neither \"node\" nor a processor kind of this machine", per));
      mem.per = *kind;
    }
    mem.capacity = positive(r, "capacity_gb") * 1e9;
    for (TableReader &a : r.tables("access")) {
      MemoryAccess access;
      access.proc = procKind(a, "proc");
      if (!m.processor(access.proc))
        a.failAt("proc", fmt::format("the machine has no {} processors", model::toString(access.proc)));
      std::string scope = a.string("scope", "node");
      if (scope != "node" && scope != "own")
        a.failAt("scope", "must be \"own\" (the processor the memory belongs to) or \"node\"");
      access.own = scope == "own";
      if (access.own && (!mem.per || *mem.per != access.proc))
        a.failAt("scope", "\"own\" needs a memory that belongs to processors of this kind (per = the kind)");
      access.bandwidth = positive(a, "bandwidth_gbs") * 1e9;
      access.latencyUs = nonNegative(a, "latency_us", 0);
      access.affinity = positive(a, "affinity");
      a.finish();
      mem.access.push_back(access);
    }
    if (mem.access.empty())
      r.failHere("a memory needs at least one [[memory.access]] (which processors reach it)");
    r.finish();
    m.memories.push_back(mem);
  }
  if (m.memories.empty())
    top.failHere("a machine needs at least one [[memory]]");

  for (TableReader &r : top.tables("channel")) {
    ChannelSpec c;
    c.name = r.string("name");
    auto between = r.strings("between");
    if (between.size() != 2)
      r.failAt("between", "expected two memory kinds, e.g. [\"FBMEM\", \"SYSMEM\"]");
    c.a = memKindOrAny(r, "between", between[0]);
    c.b = memKindOrAny(r, "between", between[1]);
    for (const auto &k : {c.a, c.b})
      if (k && !m.memory(*k))
        r.failAt("between", fmt::format("the machine has no {} memory", model::toString(*k)));
    std::string scope = r.string("scope");
    if (scope != "node" && scope != "network")
      r.failAt("scope", "must be \"node\" (within a node) or \"network\" (between nodes)");
    c.network = scope == "network";
    c.bandwidth = positive(r, "bandwidth_gbs") * 1e9;
    c.latencyUs = nonNegative(r, "latency_us", 0);
    for (const std::string &port : r.strings("ports", false)) {
      if (port == "node") {
        c.nodePorts = true;
        continue;
      }
      if (port == "link") {
        c.linkPorts = true;
        continue;
      }
      auto k = model::parseMemKind(port);
      if (!k || *k == MemKind::VIRTUAL) {
        static const std::vector<std::string> words = {"node", "link", "SYSMEM", "FBMEM", "RDMEM", "ZCMEM", "SOCKMEM"};
        auto near = support::closestMatch(port, words);
        r.failAt("ports", fmt::format("unknown port '{}': a port is a memory kind (SYSMEM, FBMEM, RDMEM, ZCMEM, "
                                      "SOCKMEM), \"node\" or \"link\"{}",
                                      port, near ? fmt::format("; did you mean '{}'?", *near) : ""));
      }
      c.portKinds.push_back(*k);
    }
    r.finish();
    m.channels.push_back(c);
  }

  // Every copy the simulator may need must have a path.
  for (const auto &x : m.memories)
    for (const auto &y : m.memories) {
      bool several = x.kind != y.kind || x.per.has_value();
      if (several && !m.channel(x.kind, y.kind, false))
        top.failHere(fmt::format("no [[channel]] with scope \"node\" between {} and {}", model::toString(x.kind),
                                 model::toString(y.kind)));
      if (m.nodes > 1 && !m.channel(x.kind, y.kind, true))
        top.failHere(fmt::format("no [[channel]] with scope \"network\" between {} and {} (the machine has {} nodes)",
                                 model::toString(x.kind), model::toString(y.kind), m.nodes));
    }
  top.finish();
  return m;
}

} // namespace

Expected<MachineModel> parseMachine(const std::string &path, const std::string &text) {
  return support::parseTomlDocument<MachineModel>(path, text, [&](TableReader &top) {
    MachineModel m = readMachine(top);
    m.path = path;
    return m;
  });
}

Expected<MachineModel> loadMachine(const std::string &path) {
  auto text = support::readTomlFile(path);
  if (!text)
    return text.error();
  return parseMachine(path, *text);
}

} // namespace hone::model
