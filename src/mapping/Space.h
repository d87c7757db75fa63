// The decision space of mapping an application on a machine, derived from
// the app model: per task, a processor priority list over its variants; per
// task and region argument, a memory priority list; per task, a layout; per
// launched task, a placement function from a library written in the DSL
// (block, cyclic, hierarchical, linearised, auto_split-based tiles, the
// parent's processor); InstanceLimit and CollectMemory for tasks launched by
// inner tasks. An assignment (one value per parameter) renders to a readable
// DSL mapper. The same space is exported for external tuners (`hone space`).
#pragma once

#include "model/App.h"
#include "model/Machine.h"
#include "support/Expected.h"
#include "tune/Domain.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace hone::mapping {

enum class ParamKind { Processor, Memory, Layout, IndexPlacement, SinglePlacement, InstanceLimit, Collect };
std::string_view toString(ParamKind kind);

struct Param {
  std::string name; // "task_4.memory.A_sub": task, what, region
  ParamKind kind = ParamKind::Processor;
  std::string task;
  std::string region;              // Memory only
  int dims = 0;                    // IndexPlacement: the launch's dimensions
  std::vector<std::string> values; // categorical, the first is the default
  std::string doc;
};

/// A relation between parameters or a restriction the model knows of, for external tuners.
struct Constraint {
  std::string param;
  std::string dependsOn;            // the parameter whose value decides it; may be empty
  std::vector<std::string> allowed; // values that cannot fail for this reason; empty: see `rule`
  std::string rule;                 // the reason, in words
};

/// One value index per parameter of a Space.
using Assignment = std::vector<int>;

/// A placement function of the library, rendered for a processor kind.
struct LibraryFunction {
  std::string name; // "hone_tile2_GPU"
  std::string text; // its definition
  std::string space; // the machine-space global it uses ("hone_GPU")
};

/// The placement patterns for a launch of `dims` dimensions; `child` adds
/// those only a task launched by another task can use (the parent's processor).
std::vector<std::string> placementPatterns(int dims, bool child, bool single);
/// The definition of `pattern` for `dims`-D launches on processors of `kind`. Besides the
/// patterns above, "block" spells out Legion's default (blocks of the linearised launch).
LibraryFunction libraryFunction(const std::string &pattern, int dims, model::ProcKind kind);
/// "hone_GPU = Machine(GPU);"
std::string machineGlobal(model::ProcKind kind);

class Space final : public tune::CategoricalSpace {
public:
  static Space build(const model::AppModel &app, const model::MachineModel &machine);

  const std::vector<Param> &params() const { return params_; }
  const std::vector<Constraint> &constraints() const { return constraints_; }
  const std::string &app() const { return app_; }
  const std::string &machine() const { return machine_; }
  int find(const std::string &name) const; // index or -1
  /// log10 of the number of assignments.
  double log10Size() const;

  Assignment defaults() const { return Assignment(params_.size(), 0); }
  /// The processor kind a task runs on under `a` (the first listed kind it has a variant for).
  model::ProcKind kindOf(const std::string &task, const Assignment &a) const;
  /// Memory kinds a processor kind reaches, by affinity; `nodeShared`: only
  /// those with one memory per node (zero-copy, system), which every processor reads.
  std::vector<std::string> memoryKinds(model::ProcKind kind, bool nodeShared = false) const;
  /// The mapper for an assignment, as DSL text.
  std::string render(const Assignment &a) const override;
  /// The number of values of each parameter.
  std::vector<size_t> sizes() const override;

  /// {"name": value} with values as strings (or indices).
  nlohmann::json toJson(const Assignment &a) const;
  /// Reads {"name": "value" | index}; parameters not named take their default.
  /// Unknown names and values are errors naming the parameter and listing the choices.
  support::Expected<Assignment> fromJson(const nlohmann::json &j) const;
  /// The space for external tuners: parameters (name, kind, type, values, default, doc) and constraints.
  nlohmann::json describe() const;

private:
  std::string app_, machine_;
  std::vector<Param> params_;
  std::vector<Constraint> constraints_;
  std::vector<std::string> taskOrder_;                 // tasks in model order
  std::vector<std::vector<model::ProcKind>> variants_; // per task: its kinds present on the machine
  struct Reach {
    model::ProcKind proc;
    model::MemKind mem;
    double affinity;
    bool nodeShared;
  };
  std::vector<Reach> reach_;
};

} // namespace hone::mapping
