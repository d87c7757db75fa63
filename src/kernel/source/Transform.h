// hone's own source transformations (docs/KERNELS.md, "Source
// transformations"): on a loop nest of the source model, as text rewrites of
// the editable files --
//   parallel  `#pragma omp parallel for` on the outermost loops the
//             dependence test proves parallel, with private, lastprivate and
//             reduction clauses (OpenMP 5.1, 2.11.4); "exact": only loops
//             that need no reduction, so the results stay bit-identical;
//   order     interchange of a perfect, rectangular band (Allen & Kennedy):
//             the nest's own band from its outermost loop, and each perfect
//             band inside it (lu's `for j: for k` under `for i`);
//   tile      strip-mining and interchange of such a band (Wolf & Lam 1991);
//   unroll    `#pragma GCC unroll N` on the innermost loops;
//   simd      `#pragma omp simd` on innermost loops the test proves free of
//             loop-carried dependences, with reduction clauses; an array
//             element the loop only accumulates into is kept in a local and
//             reduced (scalar replacement, Carr & Kennedy 1994).
// A Plan turns the nests worth transforming into knobs ("gemm.c:84.tile" =
// "32"), which every agent tunes like the manifest's own; a value the
// dependence test cannot prove legal is marked unproven (the guided agent
// skips it; the search agents may try it, and validation and the race check
// judge it).
#pragma once

#include "kernel/source/Model.h"
#include "support/Expected.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace hone::kernel::source {

enum class Action { Parallel, Order, Tile, Unroll, Simd };
std::string_view toString(Action a);

/// How to reorder one perfect band of a nest.
struct BandChoice {
  std::vector<int> order; // a permutation of the band's positions; empty: as written
  int64_t tile = 0;       // tile size of every band loop; 0: none
  bool identity() const;  // the loops as written
};

/// What to do to one nest.
struct NestChoice {
  bool parallel = false, simd = false;
  int unroll = 0;                  // 0: none
  std::map<int, BandChoice> bands; // by the band's outermost loop: 0 is the nest's own band, others
                                   // the bands of Nest::innerBands()
  bool exact = false;              // parallel: only loops that need no reduction (results bit-identical)
};

support::Expected<std::string> rewrite(const FileModel &file, const std::map<size_t, NestChoice> &choices);

struct SourceKnob {
  std::string name; // "<file>:<line>.<action>", the line of the loop it acts on
  std::string file;
  size_t nest = 0;  // index in the file's nests
  int line = 0, endLine = 0; // the nest's
  int band = 0;     // order and tile: the band's outermost loop (index into the nest's loops)
  Action action = Action::Parallel;
  std::vector<std::string> values; // the first is the source as written
  std::map<std::string, std::string> unproven; // value -> why the dependence test cannot prove it legal
  std::string doc;
};

struct PlanOptions {
  size_t maxNests = 6; // the nests given knobs, weightiest first
  std::set<std::string> hotFiles; // when set: only nests touching these lines count (file:line)
  std::map<std::string, double> lineShares; // "file:line" -> share of the instructions, to rank nests
};

class Plan {
public:
  Plan() = default;
  Plan(Program program, const PlanOptions &options);
  const Program &program() const { return program_; }
  const std::vector<SourceKnob> &knobs() const { return knobs_; }
  /// The files the knob values change (name -> rewritten text); values of other knobs are ignored.
  support::Expected<std::map<std::string, std::string>> render(const std::map<std::string, std::string> &values) const;
  /// Compiler flags the values need (-fopenmp for a parallel loop, -fopenmp-simd for simd alone).
  std::vector<std::string> flags(const std::map<std::string, std::string> &values) const;
  /// Whether the values parallelise a loop (the race check runs then).
  bool parallel(const std::map<std::string, std::string> &values) const;
  /// Per nest: its loops, accesses, and which transformations are legal or why not (for
  /// `hone kernel profile` and the code agent's prompt).
  std::string describe(const std::map<std::string, double> &lineShares = {}) const;
  /// The nest holding `file`:`line`, as "file:line" of the nest; "" when none.
  std::string nestAt(const std::string &file, int line) const;

private:
  Program program_;
  std::vector<SourceKnob> knobs_;
  std::vector<std::string> leftToOpenMp_; // "file:line" of nests the program's own OpenMP covers
};

} // namespace hone::kernel::source
