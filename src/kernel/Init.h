// `hone kernel init PROGRAM`: a commented manifest for a single-file program
// that prints its results. Knobs are the program's
//   #ifndef NAME / #define NAME value / #endif
// parameters (those that size the problem are listed, not tuned: changing
// them changes the results); a standard flag set; OpenMP's threads, schedule
// and binding when the program uses OpenMP.
#pragma once

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
  int cores = 1; // OMP_NUM_THREADS values go up to this
};

/// The manifest text for `program` (a file name beside it, e.g. "matmul.c") with `source` its text.
support::Expected<std::string> initManifest(const std::string &program, const std::string &source,
                                            const InitOptions &options);

} // namespace hone::kernel
