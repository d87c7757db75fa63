// What `hone kernel init` learns about a program from its files, before it
// writes a manifest: the headers it includes that are not the system's (found
// by searching the program's folder and its ancestors), the companion source
// beside each found header, where it prints its results, whether it reads its
// arguments, its dataset-size macros, and the macros that switch on a dump of
// its outputs and a report of its own kernel time. Text scans, no parser: each
// fact is a guess the manifest's comments state.
//
// Conventions recognised (docs/KERNELS.md, "What hone kernel init writes"):
//   - macros named *_DATASET tested with #ifdef / defined(...): dataset sizes
//     (PolyBench/C's MINI_DATASET ... EXTRALARGE_DATASET);
//   - a macro whose name contains DUMP tested the same way: it enables the
//     output dump (PolyBench's POLYBENCH_DUMP_ARRAYS);
//   - a macro whose name ends in _TIME tested the same way, when a found
//     source prints a bare "%0.6f\n"-like number: the kernel's own timer
//     (PolyBench's POLYBENCH_TIME).
#pragma once

#include "support/Expected.h"

#include <string>
#include <vector>

namespace hone::kernel {

struct ScanOptions {
  int ancestors = 4; // folders above the program's searched for headers (stops after one holding .git)
  std::vector<std::string> includeDirs; // --include: searched first (absolute or relative to the cwd)
  std::vector<std::string> sources;     // --source: compiled too
};

/// What one command-line argument of `main` sets, as far as the text of `main` shows.
struct Argument {
  enum class Role { Seed, Parameter, Unknown };
  int index = 0;           // argv[index]
  Role role = Role::Unknown;
  std::string variable;    // what it is read into ("" unknown)
  std::string fallback;    // the value main uses when it is not given ("" none seen)
  bool optional = false;   // main runs without it (a test of argc guards the read)
};

struct ProgramFacts {
  std::vector<std::string> includeDirs;  // -I folders, relative to the program's folder
  std::vector<std::string> extraSources; // companion and --source files, relative to the program's folder
  std::vector<std::string> foundHeaders; // "name -> path" for the manifest's comments
  std::vector<std::string> missingHeaders; // included, neither the system's nor found
  bool printsToStderr = false; // fprintf(stderr, ...) or a macro the headers define as stderr
  bool printsToStdout = false; // printf / puts / fprintf(stdout, ...)
  bool readsArguments = true;  // main uses argv/argc in its body (a seed can reach it)
  std::vector<Argument> arguments; // what main's arguments set, where the text shows it
  std::vector<std::string> datasets; // *_DATASET macros, in the order first seen
  std::string defaultDataset;        // the one the headers define when none is given ("" unknown)
  std::string dumpDefine;            // enables the output dump for validation
  std::string timeDefine;            // makes the program print its kernel time
  std::string timeRegex;             // how that time reads (one group: seconds)
  std::string verdict; // the program prints its own check ("PASS" or "FAIL"): the regex of a pass
  std::vector<std::string> timingLines; // regexes of printed lines that report a time or a rate (not results)
  bool singlePrecision = false; // the program computes in float more than in double
  int printedDecimals = -1;          // the fewest decimals a %.Nf format of the found files prints (-1: none)
};

/// Scans `program` (a path) whose text is `source`. Errors: an --include or --source that does not
/// exist.
support::Expected<ProgramFacts> scanProgram(const std::string &program, const std::string &source,
                                            const ScanOptions &options);

/// Whether `main` in `source` reads its arguments (its second parameter, or its first, in its body).
bool mainReadsArguments(const std::string &source);

/// The arguments `main` reads by index (argv[1], argv[2], ...), in index order. A seed is an argument
/// read into a variable named like one or handed to a random generator's seeding (srand, srand48,
/// std::mt19937 and the other engines, .seed()); any other argument read into a variable is a
/// parameter (a size, a step count). Empty when main reads no argument by a constant index.
std::vector<Argument> mainArguments(const std::string &source);

} // namespace hone::kernel
