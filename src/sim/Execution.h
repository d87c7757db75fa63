// Execution (internal to src/sim): walks the program's point tasks in issue
// order and, for each, asks the resolver what the policy decides, allocates
// the instances (capacity, reuse, CollectMemory), schedules the copies its
// data needs on the machine's channel ports and the runtime's analysis on its
// node, and runs it on its processor at the earliest time its dependences, its
// processor and the runtime allow. Resources serve requests in issue order
// (list scheduling with insertion). The result is the raw record of the timed
// part; reporting turns it into statistics and bottlenecks.
#pragma once

#include "sim/Resources.h"

#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace hone::sim {

/// One direction of a channel at one endpoint, as used in the timed part.
struct PortUse {
  std::string name, channel;
  double busyS = 0, bytes = 0;
  int copies = 0;
};

/// A task of the app over its timed points.
struct TaskUse {
  int points = 0;
  ProcKind kind = ProcKind::CPU;                 // the kind its last point ran on
  std::vector<std::optional<MemKind>> memKinds;  // per argument, last used; none: not mapped (inner task)
  double busyS = 0, accessS = 0, computeS = 0, bestS = 0;
  double recopiedBytes = 0; // copied again into a memory whose instance CollectMemory had released
  size_t firstPoint = 0;    // a point of the task, to price its other variants
};

struct Execution {
  double startS = 0, endS = 0;      // the timed part
  std::vector<double> procBusyS;    // per processor
  std::vector<int> procTasks;       // per processor
  std::vector<PortUse> ports;       // in order of first use
  std::vector<std::vector<std::pair<double, double>>> memEvents; // per memory: (time, +/- bytes)
  std::vector<TaskUse> tasks;       // per app task
  int copies = 0;
  double bytesCopied = 0;
  double runtimeBusyS = 0; // analysis and copy issue on every node's runtime
};

/// Runs the context's program under `policy`; the Failure when the runtime would stop it.
std::variant<Execution, Failure> execute(const Context &context, const dsl::Program &policy);

} // namespace hone::sim
