// The performance model: applies a mapper policy to an application model on
// a machine model and executes the resulting program as a discrete-event
// simulation (docs/MODEL.md). Knows no application by name: everything comes
// from the model files and the policy.
//
// A Context holds what depends only on (machine, program): processor and
// memory instances, the best memory of each kind per processor, the lower
// bound. Build it once and simulate many policies against it.
#pragma once

#include "dsl/Ast.h"
#include "dsl/MachineSpace.h"
#include "model/App.h"
#include "model/Machine.h"
#include "support/Evidence.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hone::sim {

using model::MemKind;
using model::ProcKind;

struct Options {
  double noiseSigma = 0; // multiplicative log-normal noise on the elapsed time
  uint64_t seed = 1;
};

struct ProcessorStat {
  std::string name; // "node0 GPU1"
  ProcKind kind = ProcKind::CPU;
  int tasks = 0;
  double busyS = 0;
  double busyFraction = 0;
};

struct ChannelStat {
  std::string name; // "nvlink port FBMEM node0 GPU1"
  std::string channel;
  int copies = 0;
  double bytes = 0;
  double busyS = 0;
  double busyFraction = 0;
};

struct MemoryStat {
  std::string name; // "FBMEM node0 GPU1"
  MemKind kind = MemKind::SYSMEM;
  double capacity = 0;
  double peak = 0;
};

/// How a task of the app was mapped, aggregated over its points.
struct TaskStat {
  std::string name;
  std::string kind;                   // processor kind it ran on
  std::vector<std::string> variants;  // kinds it has variants for
  std::vector<std::string> memories;  // per argument: memory kind used
  std::vector<std::string> regions;   // per argument: the region name
  int points = 0;
  double busyS = 0;        // summed task time (timed part)
  double accessS = 0;      // of which moving data through its arguments
  double computeS = 0;     // of which computing
  double bestVariantS = 0; // summed time at its fastest variant and memories (lower bound material)
  double recopiedBytes = 0; // bytes copied again into memories whose instances CollectMemory had released
};

/// What a bottleneck is about: the contract between the simulator, AutoGuide's mapping rules
/// (`match = "bottleneck"`, pattern = the kind's name) and the guided agent.
enum class BottleneckKind { Channel, Processor, Idle, Runtime, Memory, Variant, Access };
std::string_view toString(BottleneckKind kind);
std::optional<BottleneckKind> parseBottleneckKind(std::string_view text);

/// When a number becomes a bottleneck: named defaults, documented in docs/MODEL.md.
struct BottleneckThresholds {
  double channelBusy = 0.1;     // a copy channel busy at least this fraction of the time
  double processorBusy = 0.5;   // the busiest processor of a kind at least this busy
  double imbalanceRatio = 0.7;  // ... and the kind's mean below this fraction of it: imbalance
  double idleBusy = 0.05;       // a processor kind busy below this on average is idle...
  double otherBusy = 0.3;       // ... while another kind is busy at least this
  double runtimeShare = 0.1;    // the runtime's analysis per node at least this fraction of the time
  double memoryPeak = 0.8;      // a memory's peak at least this fraction of its capacity
  double variantRatio = 0.5;    // another variant would take less than this fraction of the time per point
  double accessRatio = 1.5;     // moving data takes more than this multiple of its fastest memories' time
  size_t keep = 6;              // the largest this many, by share
};

struct Bottleneck {
  BottleneckKind kind = BottleneckKind::Processor;
  std::string resource; // what it is about
  double share = 0;     // fraction of the elapsed time it accounts for (or of capacity, for memory)
  std::string detail;   // a sentence citing the numbers
};

struct Result {
  bool ok = false;
  std::string error;      // the runtime's failure message
  std::string errorKind;  // "layout", "variant", "placement", "memory", "policy"
  std::string errorDetail; // where: task, argument, memory
  double timeS = 0;
  double throughput = 0;
  std::string throughputUnit;
  double lowerBoundS = 0;
  int tasks = 0;
  int copies = 0;
  double bytesCopied = 0;
  double runtimeOverheadS = 0; // runtime analysis work (all nodes)
  std::vector<ProcessorStat> processors;
  std::vector<ChannelStat> channels;
  std::vector<MemoryStat> memories;
  std::vector<TaskStat> taskStats;
  std::vector<Bottleneck> bottlenecks;
};

class Context {
public:
  Context(const model::MachineModel &machine, const model::Program &program);
  ~Context();
  const model::MachineModel &machine() const { return machine_; }
  const model::Program &program() const { return program_; }
  /// The interpreter's view of the machine.
  const dsl::MachineShape &shape() const { return shape_; }
  double lowerBoundS() const { return lowerBound_; }

  struct Tables;
  const Tables &tables() const { return *tables_; }

private:
  const model::MachineModel &machine_;
  const model::Program &program_;
  dsl::MachineShape shape_;
  double lowerBound_ = 0;
  std::unique_ptr<Tables> tables_;
};

/// Simulates `policy` (a checked program) on the context's app and machine.
Result simulate(const Context &context, const dsl::Program &policy, const Options &options = {});

/// The machine shape the DSL interpreter needs, from a machine model.
dsl::MachineShape shapeOf(const model::MachineModel &machine);

nlohmann::json toJson(const Result &result);
/// Bottlenecks as typed evidence measured by `tool` ("simulator"; "legion-prof" for a real run's logs).
support::Evidence toEvidence(const std::vector<Bottleneck> &bottlenecks, std::string tool);
/// A readable summary for a terminal.
std::string summarize(const Result &result, const Context &context);

} // namespace hone::sim
