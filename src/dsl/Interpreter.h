// Interpreter: evaluates a checked policy's globals and placement functions
// for task points on a machine, as the runtime would. Runtime faults
// (division by zero, index out of range, wrong types, points outside the
// machine) are values carrying the source location of the failing expression.
#pragma once

#include "dsl/Ast.h"
#include "dsl/MachineSpace.h"
#include "support/Expected.h"

#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace hone::dsl {

/// A task as placement functions see it.
struct TaskInfo {
  std::string name;
  bool indexLaunch = true;
  std::vector<int64_t> ipoint; // the point in the launch domain (index launches)
  std::vector<int64_t> ispace; // the launch domain's extents (index launches)
  ProcKind kind = ProcKind::GPU;
  std::optional<Point2> processor;          // where it runs, for task.processor(m)
  std::shared_ptr<const TaskInfo> parent;   // for task.parent (single tasks)
};

struct Value;
struct TupleValue {
  std::vector<Value> items;
};
struct StarValue {};
/// One processor, as (node, processor within node), of a kind.
struct PointValue {
  ProcKind kind;
  Point2 point;
};
/// Several processors (an index with '*'): the runtime picks among them.
struct PointSetValue {
  ProcKind kind;
  std::vector<Point2> points;
};
using TaskRef = std::shared_ptr<const TaskInfo>;

struct Value {
  std::variant<int64_t, bool, TupleValue, MachineSpace::Ptr, TaskRef, ProcKind, MemKind, StarValue, PointValue,
               PointSetValue>
      v;
  template <typename T> const T *as() const { return std::get_if<T>(&v); }
  /// "int", "tuple", "machine space", ... for messages.
  std::string typeName() const;
  /// Text form: 3, True, (1, 2), MSpace(GPU; 2, 4), (1, 1) for a point, {(0, 0), (0, 1)} for a set.
  std::string str() const;
};

/// Where a placement function put a task: one processor, or a set to pick from.
struct Placement {
  ProcKind kind;
  std::vector<Point2> points; // one element for a single processor
  bool isSet = false;
  std::string str() const;
};

class Interpreter {
public:
  /// `program` must outlive the interpreter. `printSink` receives print()
  /// output (nullptr: discarded).
  Interpreter(const Program &program, MachineShape machine, std::ostream *printSink = nullptr);
  ~Interpreter();

  /// Runs the top-level assignments and prints, in order. Call once, first.
  support::Expected<bool> initialize();

  const MachineShape &machine() const { return machine_; }
  const std::map<std::string, Value> &globals() const { return globals_; }

  /// The processor kind a task runs on: the first kind of its Task statement
  /// (or of 'Task *') that the machine has; nullopt when none applies.
  std::optional<ProcKind> processorKindFor(const std::string &task) const;
  /// The IndexTaskMap (or SingleTaskMap) function for a task on a kind: a
  /// statement naming the task beats one naming the kind, which beats '*';
  /// among equals, the later statement wins. nullptr when none applies.
  const FuncDef *placementFunctionFor(const std::string &task, ProcKind kind, bool single) const;

  /// Calls a function with arguments.
  support::Expected<Value> call(const FuncDef &function, std::vector<Value> args);
  /// Calls a placement function for `task` and checks that it returns a
  /// processor (or set of processors) inside the machine.
  support::Expected<Placement> place(const FuncDef &function, const TaskInfo &task);

private:
  class Evaluator;
  const Program &program_;
  MachineShape machine_;
  std::ostream *printSink_;
  std::map<std::string, Value> globals_;
  std::map<std::string, const FuncDef *> functions_;
};

} // namespace hone::dsl
