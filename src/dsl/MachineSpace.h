// Machine spaces: the DSL's view of a machine as an N-dimensional grid of
// processors of one kind. Machine(K) is the 2-D root (nodes, processors of
// kind K per node); every transform returns a new space naming the same
// processors, remembered as a chain back to the root. Indexing a space maps
// the point back through the chain and checks it only at the root, exactly
// as the runtime does (docs/DSL.md, "Machine spaces").
#pragma once

#include "dsl/Ast.h"
#include "support/Expected.h"

#include <array>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace hone::dsl {

using support::Error;
using support::Expected;

/// What the interpreter needs to know of a machine: node count, processors
/// per node of each kind, and which memory kinds each processor kind reaches.
struct MachineShape {
  int64_t nodes = 1;
  std::map<ProcKind, int64_t> procsPerNode;
  std::map<ProcKind, std::set<MemKind>> memories;

  /// Parses "nodes=2,gpus=4,cpus=8" (keys: nodes, cpus, gpus, omps, ios, pys, procs).
  /// Memory kinds follow a usual Legion GPU node: GPUs reach FBMEM and ZCMEM;
  /// CPUs reach SYSMEM, ZCMEM, RDMEM and SOCKMEM; other kinds SYSMEM.
  static Expected<MachineShape> parse(std::string_view spec);

  int64_t count(ProcKind kind) const;
  bool hasMemory(ProcKind proc, MemKind mem) const;
  std::string describe() const; // "2 nodes x (4 GPU, 8 CPU)"
};

using Point2 = std::array<int64_t, 2>; // (node, processor within the node)

class MachineSpace : public std::enable_shared_from_this<MachineSpace> {
public:
  using Ptr = std::shared_ptr<const MachineSpace>;

  /// Machine(K): dims (nodes, processors of K per node).
  static Ptr root(ProcKind kind, int64_t nodes, int64_t procsPerNode);

  ProcKind kind() const { return kind_; }
  const std::vector<int64_t> &dims() const { return dims_; }
  int64_t volume() const;

  // Transforms (docs/DSL.md has each one's contract). Invalid arguments are errors.
  Expected<Ptr> merge(int64_t d1, int64_t d2) const;
  Expected<Ptr> split(int64_t d, int64_t factor) const;
  Expected<Ptr> swap(int64_t d1, int64_t d2) const;
  Expected<Ptr> slice(int64_t d, int64_t low, int64_t high) const;
  Expected<Ptr> reverse(int64_t d) const;
  Expected<Ptr> balanceSplit(int64_t d, int64_t parts) const;
  Expected<Ptr> autoSplit(int64_t d, const std::vector<int64_t> &workload) const;
  Expected<Ptr> greedySplit(int64_t d, const std::vector<int64_t> &workload) const;

  /// The root (node, processor) of a full point of this space. The bounds
  /// are checked at the root only: "Sharding node index out of bound" or
  /// "Slice processor index out of bound".
  Expected<Point2> toRoot(const std::vector<int64_t> &point) const;
  /// The point of this space naming root processor (node, proc); the inverse of toRoot.
  Expected<std::vector<int64_t>> fromRoot(const Point2 &rootPoint) const;

  /// "MSpace(GPU; 2, 1, 4)" for messages and print.
  std::string describe() const;

private:
  enum class Op { Root, Merge, Split, Swap, Slice, Reverse, Factor };
  MachineSpace() = default;
  Expected<Ptr> derive(Op op, std::vector<int64_t> dims, int64_t a, int64_t b, std::vector<int64_t> factors) const;
  Expected<int64_t> checkDim(int64_t d, std::string_view what) const;
  Expected<Ptr> workloadSplit(int64_t d, const std::vector<int64_t> &workload, std::string_view what,
                              bool greedy) const;

  // Maps a point of this space to its parent's space (one step toward the root) and back.
  std::vector<int64_t> toParent(const std::vector<int64_t> &p) const;
  std::vector<int64_t> fromParent(const std::vector<int64_t> &p) const;

  ProcKind kind_ = ProcKind::GPU;
  std::vector<int64_t> dims_;
  Ptr parent_;
  Op op_ = Op::Root;
  int64_t a_ = 0, b_ = 0;         // Merge: d1, d2 | Split: d, factor | Swap: d1, d2 | Slice: d, low | Reverse: d | Factor: d
  std::vector<int64_t> factors_;  // Factor: the new extents, first one varying fastest
};

/// Prime factors in ascending order, with multiplicity (1 has none).
std::vector<int64_t> primeFactors(int64_t n);

/// auto_split's choice: the factorisation O_1..O_k of `extent` (k = |workload|)
/// minimising sum_i O_i / L_i (equivalently, for k = 3, the sum over pairs of
/// W_i W_j with W_i = L_i / O_i). Ties keep the runtime's enumeration order and
/// prefer the greedy split when it is among the best.
std::vector<int64_t> autoSplitFactors(int64_t extent, const std::vector<int64_t> &workload);

/// greedy_split's choice (Legion's default-mapper heuristic): primes from the
/// largest down, each to the dimension with the most remaining work.
std::vector<int64_t> greedySplitFactors(int64_t extent, const std::vector<int64_t> &workload);

/// balance_split's choice: primes from the smallest up, each multiplied into
/// the currently smallest part; parts sorted in decreasing order (6 -> 3, 2).
std::vector<int64_t> balanceSplitFactors(int64_t extent, int64_t parts);

} // namespace hone::dsl
