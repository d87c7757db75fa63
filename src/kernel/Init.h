// `hone kernel init PROGRAM`: a commented manifest for a program that prints
// its results, with the headers, include folders, companion sources, output
// stream, seed use, dataset size and split validation/timing builds that
// ProgramScan finds. Every value written is escaped (tomlString). Knobs are the program's
//   #ifndef NAME / #define NAME value / #endif
// parameters (those that size the problem are listed, not tuned: changing
// them changes the results); a standard flag set; OpenMP's threads, schedule
// and binding when the program uses OpenMP.
#pragma once

#include "kernel/ProgramScan.h"
#include "support/Expected.h"

#include <string>
#include <vector>

namespace hone::kernel {

/// A tunable parameter found in a source: `#ifndef NAME` / `#define NAME value` / `#endif`.
struct SourceParameter {
  std::string name, value;
  int line = 0;
  bool sizesProblem = false; // a problem size or iteration count: not a knob
};
std::vector<SourceParameter> findParameters(const std::string &source);

struct InitOptions {
  InitOptions() = default;
  InitOptions(int cores) : cores(cores) {} // NOLINT: {4} reads as "4 cores"
  int cores = 1; // OMP_NUM_THREADS values go up to this
  ScanOptions scan; // --include, --source; the search for the program's headers
  std::vector<std::string> defines; // --define NAME[=VALUE]: for every build
};

struct InitResult {
  std::string text;               // the manifest
  std::vector<std::string> notes; // what was found and guessed, for the terminal (warnings first)
  ProgramFacts facts;
};

/// The manifest for `program` (its path; its headers are searched from its folder) with `source` its
/// text. Errors: a file type init does not know, names that a manifest cannot hold (control
/// characters), --include/--source paths that do not exist, a --define that is not NAME[=VALUE].
support::Expected<InitResult> initProject(const std::string &program, const std::string &source,
                                          const InitOptions &options);
/// initProject's text.
support::Expected<std::string> initManifest(const std::string &program, const std::string &source,
                                            const InitOptions &options);
/// `text` as a TOML basic string, quotes included: backslashes, quotes and control characters escaped.
std::string tomlString(const std::string &text);

} // namespace hone::kernel
