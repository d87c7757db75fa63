// Machine models: processors, memories and the channels between them, read
// from models/machines/*.toml (format: docs/MODEL.md). A model is the
// data the simulator needs about one machine, nodes times identical node.
#pragma once

#include "model/Kinds.h"
#include "support/Expected.h"

#include <optional>
#include <string>
#include <vector>

namespace hone::model {

struct ProcessorSpec {
  ProcKind kind = ProcKind::CPU;
  int perNode = 0;
  double gflops = 0;      // peak FP64 per processor
  double overheadUs = 0;  // fixed cost of running one task (launch, prologue)
};

/// How fast a processor reaches a memory it has affinity to.
struct MemoryAccess {
  ProcKind proc = ProcKind::CPU;
  bool own = false;         // only the processor the memory belongs to (per = kind)
  double bandwidth = 0;     // bytes per second
  double latencyUs = 0;
  double affinity = 0;      // Legion's relative figure; picks the default memory
};

struct MemorySpec {
  MemKind kind = MemKind::SYSMEM;
  std::optional<ProcKind> per; // one per processor of this kind; nullopt: one per node
  double capacity = 0;         // bytes
  std::vector<MemoryAccess> access;
};

/// A copy path between two memory kinds, on one node or across nodes.
struct ChannelSpec {
  std::string name;
  std::optional<MemKind> a, b; // nullopt: any kind ("*")
  bool network = false;     // between nodes (scope "network") or within one (scope "node")
  double bandwidth = 0;     // bytes per second
  double latencyUs = 0;
  // Contention: a copy occupies one port per endpoint whose memory kind is
  // listed here ("node": the endpoint's node port), and with "link" the
  // point-to-point link from its source to its destination (one per ordered
  // pair of memories: copies between other pairs do not wait for it). No
  // ports: no contention.
  std::vector<MemKind> portKinds;
  bool nodePorts = false;
  bool linkPorts = false;
};

struct RuntimeSpec {
  double taskAnalysisUs = 0; // runtime work per point task (dependence analysis, mapping)
  double copyIssueUs = 0;    // runtime work per copy
};

struct MachineModel {
  std::string name;
  std::string description;
  std::string path;
  int nodes = 1;
  RuntimeSpec runtime;
  std::vector<ProcessorSpec> processors;
  std::vector<MemorySpec> memories;
  std::vector<ChannelSpec> channels;

  const ProcessorSpec *processor(ProcKind kind) const;
  int count(ProcKind kind) const; // per node
  const MemorySpec *memory(MemKind kind) const;
  /// The channel for a copy between two kinds (order does not matter).
  const ChannelSpec *channel(MemKind a, MemKind b, bool network) const;
  /// "1 node x (20 CPU, 4 GPU)".
  std::string describe() const;
};

/// Parses a machine model; errors read "file:line:col: message".
support::Expected<MachineModel> parseMachine(const std::string &path, const std::string &text);
support::Expected<MachineModel> loadMachine(const std::string &path);

} // namespace hone::model
