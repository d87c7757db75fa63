// The source model of a kernel project: its editable C/C++ files parsed with
// Clang (libclang), and the loop nests in them as hone's transformations and
// its dependence test need them (docs/KERNELS.md, "Source transformations"):
// each loop's induction variable, bounds and step as written, where its
// header and body are in the file, whether the nest is perfect, and every
// memory access of the nest -- the array, its subscripts as affine forms of
// the loop variables where they are affine, read or written -- with the
// scalars written and the functions called.
//
// The model is read-only and built once per project; the rewriter
// (Rewrite.h) edits the file text at the offsets it records.
#pragma once

#include "support/Expected.h"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace hone::kernel::source {

/// sum(coefficient * variable) + constant over named integer variables (loop induction variables,
/// and invariants such as a size parameter, kept by name).
struct Affine {
  std::map<std::string, int64_t> terms; // no zero coefficients
  int64_t constant = 0;
  int64_t coefficient(const std::string &var) const {
    auto it = terms.find(var);
    return it == terms.end() ? 0 : it->second;
  }
  bool operator==(const Affine &o) const { return terms == o.terms && constant == o.constant; }
  std::string toString() const;
};

/// One reference to memory in a nest.
struct Access {
  std::string base;                           // the array or scalar named
  std::vector<std::optional<Affine>> subscripts; // empty: a scalar; nullopt: a subscript that is not affine
  /// For a subscript written linearised (`a[i * n + j]`) and read back as [i][j]: the row lengths
  /// ("n"), outermost first; two accesses compare dimension by dimension only with equal layouts.
  std::vector<std::string> layout;
  bool read = false, write = false;
  bool indirect = false;  // through a pointer expression or a member: where it points is not known
  char updateOp = 0;      // '+', '*', ... for `x op= e` (and both x of `x = x op e`): a candidate reduction
  bool plainAssign = false; // `x = e` with x not read by e
  int line = 0;
  int loop = -1;          // the innermost loop of the nest holding it (index into Nest::loops)
  size_t order = 0;       // textual order within the nest
  bool inCondition = false; // under an if/?:/while inside the nest: it may not execute
  size_t begin = 0, end = 0; // the access's text in the file (equal: written by a macro, not rewritten)
};

/// One `for` loop of a nest.
struct Loop {
  int parent = -1;                  // index into Nest::loops; -1: the nest's outermost loop
  std::vector<int> children;        // loops directly inside it, in order
  int depth = 0;                    // 0: outermost
  std::string var;                  // the induction variable ("" when the header is not canonical)
  std::string varType;              // its declared type ("int")
  bool declaresVar = false;         // `for (int i = ...)`
  std::string lower, upper;         // as written: i = LOWER; i < UPPER (an inclusive bound is made exclusive)
  std::optional<Affine> lowerAffine, upperAffine; // the same where affine (upper exclusive)
  int64_t step = 0;                 // 1 for i++; 0 when not a constant increment
  bool canonical = false;           // var = lower; var < or <= upper; var += constant step > 0
  std::set<std::string> boundNames; // identifiers the bounds use
  int line = 0, endLine = 0;
  size_t begin = 0, end = 0;        // byte offsets of `for` and one past the statement's end
  size_t bodyBegin = 0, bodyEnd = 0; // the body statement
  bool bodyIsCompound = false;
  bool onlyChildLoop = false;       // the body is just children[0] (perhaps in braces): a perfect step
  bool inMacro = false;             // written by a macro: not rewritten
};

struct Nest {
  std::string file, function;
  int line = 0, endLine = 0;
  std::vector<Loop> loops;   // loops[0] is the outermost; a loop's children come after it
  std::vector<Access> accesses;
  std::map<std::string, int> locals; // declared inside the nest -> the loop whose body declares it
  std::vector<std::string> calls; // functions called, in order (no repeats)
  /// Every call that may have an effect (not a pure function), with the innermost loop holding it.
  struct CallSite {
    std::string name;
    int loop = -1;
    int line = 0;
    bool io = false;
  };
  std::vector<CallSite> effects;
  bool unknownCalls = false;      // calls a function that may write memory or keep state
  bool io = false;                // prints, reads or writes files
  bool jumps = false;             // return, break out of a loop, goto
  bool irregular = false;         // while/do/switch inside: fine for parallel tests, never rewritten
  /// The program's own OpenMP already covers the nest: a directive on its loop or inside it. hone adds
  /// no pragma and no rewrite there (a second `parallel for` would nest teams; a pragma between a
  /// directive and its loop does not compile; libclang shows nothing under a directive).
  bool openmp = false;
  /// The loops of the perfect band from the outermost loop down (each the only statement of the one
  /// above); at least one.
  std::vector<int> band() const { return bandFrom(0); }
  /// The same from loop `loop` down.
  std::vector<int> bandFrom(int loop) const;
  /// The outermost loops of the perfect bands of two or more loops below the nest's own band (a
  /// loop that is not the only statement of its parent's body, with one loop as its own body).
  std::vector<int> innerBands() const;
  std::string label() const; // "file:line"
};

struct FileModel {
  std::string name; // as the manifest names it
  std::string text; // the file as parsed
  std::vector<Nest> nests; // top-level loops of every function, in order
};

struct Program {
  std::vector<FileModel> files;
  std::vector<std::string> warnings; // the parser's errors, files skipped
  const FileModel *file(const std::string &name) const;
};

/// Parses `files` (name -> path on disk) with Clang, as compiled with `args` (-I, -D, -std=...).
/// A file Clang cannot parse is listed in `warnings` with its first error and has no nests; an
/// error only when libclang itself cannot start.
support::Expected<Program> analyze(const std::vector<std::pair<std::string, std::string>> &files,
                                   const std::vector<std::string> &args);

/// Functions that read their arguments only and keep no state (libm): a call to one is no side effect.
bool isPureFunction(const std::string &name);

} // namespace hone::kernel::source
