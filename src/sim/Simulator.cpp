// The simulator in three stages (docs/ARCHITECTURE.md, docs/MODEL.md):
//   Resources.cpp  - Context: the machine's instances (typed ids), reach tables, lower bound;
//   Resolution.cpp - Resolver: what the policy decides for each point task, and its errors;
//   Execution.cpp  - execute(): list scheduling of analysis, copies and tasks on timelines;
//   Report.cpp     - report(): statistics and bottlenecks from the execution's record.
#include "sim/Simulator.h"

#include "sim/Report.h"

#include <array>
#include <variant>

namespace hone::sim {

namespace {
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

Result simulate(const Context &context, const dsl::Program &policy, const Options &options) {
  auto run = execute(context, policy);
  if (const Failure *f = std::get_if<Failure>(&run))
    return failed(context, *f);
  return report(context, std::get<Execution>(run), options);
}

} // namespace hone::sim
