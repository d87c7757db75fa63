// How a program's own Makefile builds and runs it, as `hone kernel init` reads
// it: make itself prints the commands (`make -n -B` for the default target,
// `make -n run` for a run target), so variables, conditionals and pattern rules
// are make's business, never re-implemented here. From the line that compiles
// the program come the compiler and its flags (the reference's flags, what the
// project builds with), from the link line the libraries, from the other
// compile lines the companion sources, and from the run target the program's
// arguments.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace hone::kernel {

struct MakeFacts {
  std::string makefile;               // its file name, in the program's folder
  std::string compiler;               // "nvcc", "g++", ...
  std::vector<std::string> flags;     // of the program's compile line (no sources, -c, -o)
  std::vector<std::string> linkFlags; // -l, -L, -Wl, -pthread of the link line
  std::vector<std::string> sources;   // other sources it compiles, relative to the folder
  std::vector<std::string> runArgs;   // the run target's arguments to the program
  std::string program;                // the program's name in the link line (-o NAME)
  std::vector<std::string> notes;     // what was read or dropped, for the manifest's comments
};

/// Splits a command line as a POSIX shell splits words (quotes and backslashes;
/// no expansion).
std::vector<std::string> shellWords(const std::string &line);

/// Reads make's dry-run output: `build` of the default target, `run` of the run
/// target (may be empty). `programFile` is the program's source file name;
/// nullopt when no line compiles it.
std::optional<MakeFacts> parseMakeDryRun(const std::string &build, const std::string &run,
                                         const std::string &programFile);

/// Runs make (dry runs only, bounded in time) in `dir` when it holds a Makefile
/// and make is installed; for an nvcc build, drops a -arch/-gencode the
/// installed nvcc does not support (and says so).
std::optional<MakeFacts> readMakefile(const std::string &dir, const std::string &programFile);

} // namespace hone::kernel
