// The dependence test behind hone's source transformations: which loops of a
// nest can run their iterations in parallel, and which reorderings of a
// perfect band keep every dependence (interchange, tiling).
//
// Method (Allen & Kennedy 2001, ch. 2-3; Wolfe 1996): for every pair of
// accesses to one array, at least one a write, each subscript pair is tested
// -- ZIV, strong SIV (exact distance), GCD for the rest -- giving, per common
// loop, the directions (<, =, >) a dependence can have; a subscript that is
// not affine constrains nothing. Scalars written in a loop are either its own
// (declared inside, or written before any read in every iteration:
// privatised), reductions (only `s op= e`), or dependences. Calls of
// functions that are not pure, I/O, jumps out of the nest and accesses
// through pointers hone cannot follow make a loop not provably parallel.
// Distinct arrays are assumed not to overlap, as polyhedral compilers assume;
// validation on several inputs and the race check catch a program where they
// do.
#pragma once

#include "kernel/source/Model.h"

#include <string>
#include <vector>

namespace hone::kernel::source {

/// Whether a loop's iterations are independent, and the OpenMP clauses that make them so.
struct Parallelism {
  bool legal = false;
  std::vector<std::string> privates;     // scalars each iteration writes before reading
  std::vector<std::string> lastprivates; // the same, read after the loop
  std::vector<std::pair<char, std::string>> reductions; // (op, scalar)
  std::string why; // when not legal: the first reason
  std::string schedule; // "static, 1" for a triangle (inner bounds that use the loop's variable), else ""
  /// With `elements`: array elements the loop only accumulates into, reduced in a local the rewrite
  /// declares before the loop and stores back after it (`omp simd` only).
  struct Element {
    char op = '+';
    std::vector<size_t> refs; // the element's references in the loop (indices into Nest::accesses)
    std::string local;        // "hone_acc0"
  };
  std::vector<Element> elements;
  std::string clauses() const;    // " private(j) reduction(+:s)": what `omp simd` takes too
  std::string forClauses() const; // the same and the schedule: for `omp parallel for`
};

/// Can `loop`'s iterations run in any order, the loops enclosing it each at one iteration? With
/// `outer`, those loops instead (the loop moved outward by an interchange). With `elements`, an array
/// element the loop only accumulates into (`A[i][j] -= A[i][k] * A[k][j]` in `for k`) is a reduction
/// too, in a local (Parallelism::elements): for `omp simd`, whose reduction may reassociate.
Parallelism parallelism(const Nest &nest, int loop, const std::vector<int> *outer = nullptr, bool elements = false);

/// Whether the loops of `band` (a perfect band, outermost first) may run in the order `order`
/// (a permutation of band's positions): every dependence stays lexicographically positive. `why`
/// names the first dependence that would turn backwards.
bool permutationLegal(const Nest &nest, const std::vector<int> &band, const std::vector<int> &order, std::string *why);

/// Whether `band` is fully permutable (no dependence has a '>' direction on its loops): tiling is legal.
bool tilingLegal(const Nest &nest, const std::vector<int> &band, std::string *why);

/// Whether the loops of `band` have bounds that use no other loop of the band and nothing the nest
/// writes (a rectangular band, as interchange and tiling of the text need), and unit steps.
bool rectangular(const Nest &nest, const std::vector<int> &band, std::string *why);

} // namespace hone::kernel::source
