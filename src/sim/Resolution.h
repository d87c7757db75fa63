// Policy resolution (internal to src/sim): what the mapper policy decides for
// each point task -- its processor kind, its processor (the placement
// functions, evaluated by the DSL interpreter, or Legion's defaults), the
// memories each argument may go to, the layout each instance gets and whether
// it satisfies the task's variant -- and the runtime errors those decisions
// raise (thrown as a Failure). It knows nothing of time: execution asks it.
#pragma once

#include "dsl/Interpreter.h"
#include "sim/Resources.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

namespace hone::sim {

/// The statements that apply to a task on a kind, looked up once per run.
struct TaskPolicy {
  bool resolved = false;
  std::optional<int64_t> limit;                     // InstanceLimit
  bool replicated = false;                          // as a parent: its children are analysed on their node
  std::vector<const dsl::RegionStmt *> region;      // per argument
  std::vector<bool> collects;                       // per argument
  std::vector<std::array<const dsl::LayoutStmt *, kMemKinds>> layout; // per argument, per memory kind
};

/// The memory kinds an argument may be placed in, in order of preference.
struct MemoryChoice {
  std::vector<MemKind> wanted;
  int line = 0; // of the Region statement; 0: Legion's default memory
};

class Resolver {
public:
  Resolver(const Context &cx, const dsl::Program &policy);
  /// Evaluates the policy's globals; a failure is the run's.
  std::optional<Failure> initialize();

  ProcKind kindFor(const model::PointTask &pt);
  /// The processor of a point task; `parent` is its parent's processor (none for the top task)
  /// and `parentInfo` what the placement functions see of the parent.
  ProcId place(const model::PointTask &pt, ProcKind kind, ProcId parent,
               const std::shared_ptr<const dsl::TaskInfo> &parentInfo);
  const TaskPolicy &policyFor(int task, ProcKind kind);
  MemoryChoice memoriesFor(const model::PointTask &pt, const model::Access &a, ProcId proc, ProcKind kind);
  /// Throws the runtime's layout error when the instance's layout does not suit the variant.
  void checkLayout(const model::PointTask &pt, const model::Access &a, MemKind mem, ProcKind kind);
  bool topReplicated() const { return topReplicated_; }

private:
  struct KindChoice {
    std::optional<ProcKind> kind;
    std::optional<Failure> failure;
  };
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
  KindChoice resolveKind(const model::Task &task) const;

  const Context &cx_;
  const Context::Tables &tb_;
  const model::AppModel &app_;
  const dsl::Program &policy_;
  dsl::Interpreter interp_;
  std::vector<KindChoice> kindChoice_; // per app task
  std::vector<TaskPolicy> taskPolicy_; // per (task, kind)
  std::unordered_map<PlacementKey, dsl::Placement, PlacementKeyHash> placements_;
  std::map<std::pair<int, int>, int> roundRobin_; // (kind, node) -> next processor
  std::map<int, int> setRoundRobin_;              // task -> next of a '*' placement
  bool topReplicated_ = false;
};

} // namespace hone::sim
