// The simulator's view of the machine (internal to src/sim): typed ids for
// processors, memories and channel ports, the instances a machine model
// expands to, what each processor reaches, the cost of one point task, and
// the failure a run stops with. Resolution, execution and reporting share it.
#pragma once

#include "sim/Simulator.h"
#include "support/Check.h"
#include "model/Kinds.h"

#include <array>
#include <compare>
#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace hone::sim {

/// An index into one table of the simulation, typed by what it indexes: a processor id cannot be
/// used as a memory id. Default-constructed ids are "none".
template <class Tag> class Id {
public:
  constexpr Id() = default;
  constexpr explicit Id(int value) : value_(value) {}
  constexpr bool valid() const { return value_ >= 0; }
  constexpr int value() const { return value_; }
  size_t index() const {
    HONE_CHECK(value_ >= 0, "an id of nothing used as an index");
    return static_cast<size_t>(value_);
  }
  friend constexpr auto operator<=>(Id, Id) = default;

private:
  int value_ = -1;
};
using ProcId = Id<struct ProcTag>; // a processor instance
using MemId = Id<struct MemTag>;   // a memory instance
using PortId = Id<struct PortTag>; // one direction of a channel at one endpoint (a node or a memory)

inline constexpr double kUs = 1e-6;
inline constexpr size_t kMemKinds = model::kMemKindNames.size();

struct ProcInst {
  ProcKind kind;
  int node;
  int index; // within its node
  const model::ProcessorSpec *spec;
  std::string name;
};

struct MemInst {
  MemKind kind;
  int node;
  ProcId owner; // none: the node's
  const model::MemorySpec *spec;
  std::string name;
};

/// The fastest memory of a kind a processor reaches.
struct Reach {
  MemId mem;
  double bandwidth = 0;
  double latencyUs = 0;
};
using ReachByKind = std::array<Reach, kMemKinds>;

struct Context::Tables {
  std::vector<ProcInst> procs;
  std::map<ProcKind, int> procBase;
  std::vector<MemInst> mems;
  std::vector<ReachByKind> reach;  // per processor, per memory kind: the fastest one
  std::vector<MemId> defaultMem;   // per processor: the highest-affinity memory
  std::vector<double> bestTaskS;   // per point task: time at its fastest variant

  const ProcInst &proc(ProcId p) const { return procs[p.index()]; }
  const MemInst &mem(MemId m) const { return mems[m.index()]; }
  const ReachByKind &reachOf(ProcId p) const { return reach[p.index()]; }
  ProcId procId(ProcKind kind, int node, int index) const {
    auto base = procBase.find(kind);
    HONE_CHECK(base != procBase.end(), "no processors of a kind");
    return ProcId(base->second + node * procs[static_cast<size_t>(base->second)].spec->perNode + index);
  }
  /// The first processor of a kind (the one that prices a kind's variants).
  ProcId firstOf(ProcKind kind) const { return ProcId(procBase.at(kind)); }
};

/// Time of one point task on a processor: overhead + max(compute, moving its data).
struct TaskTime {
  double compute = 0;
  double access = 0;
  double overhead = 0;
  double total() const { return overhead + std::max(compute, access); }
};

/// `memKinds`: per access, the memory kind its data is in; empty or none: the fastest reachable.
TaskTime taskTime(const model::Task &task, const model::PointTask &pt, const ProcInst &proc,
                  const ReachByKind &reach, std::span<const std::optional<MemKind>> memKinds = {});

/// Why a run stops: the runtime's error, classified (thrown inside a run, a Result outside).
struct Failure {
  std::string kind, message, detail;
};
[[noreturn]] inline void fail(std::string kind, std::string message, std::string detail) {
  throw Failure{std::move(kind), std::move(message), std::move(detail)};
}

std::string bytesText(double bytes);
std::string timeText(double s);

} // namespace hone::sim
