// Building, running, validating and timing one variant of a kernel project,
// for real: hone's commands (from the manifest), hone's clock, the
// reference's outputs as the truth. Nothing here decides what to try next.
//
// A variant is the manifest's knob values plus, optionally, new contents of
// editable files; its text form (the candidate's artifact) is TOML:
//   [knobs]
//   TILE = "64"
//   [files]
//   "matmul.c" = '''...'''
#pragma once

#include "kernel/Manifest.h"
#include "support/Expected.h"
#include "support/Subprocess.h"

#include <map>
#include <string>
#include <vector>

namespace hone::kernel {

struct Variant {
  KnobValues knobs;                         // every knob (defaults filled in)
  std::map<std::string, std::string> files; // editable file -> new contents; empty: the project's own
};

std::string renderVariant(const Variant &v);
/// Parses a variant's text; unknown knobs, values outside a knob's list, files the manifest does not
/// let a variant change and violated constraints are errors that say which.
support::Expected<Variant> parseVariant(const Manifest &m, const std::string &text);
Variant referenceVariant(const Manifest &m);

/// "-DTILE=64 ..." of the define knobs, the flag knobs' flags, and NAME=VALUE of the env knobs.
struct Expansion {
  std::vector<std::string> defines, flags, env;
};
Expansion expand(const Manifest &m, const Variant &v);

struct BuildResult {
  bool ok = false;
  std::string exe;     // the program built
  std::string command; // the exact command run (sh -c)
  std::string log;     // the compiler's output (bounded)
  std::string error;   // why not ok: "exit 1", "timed out after ..."
  double seconds = 0;
};

/// The first lines of a compiler log that carry errors (else its first `n` lines).
std::string firstCompilerErrors(const std::string &log, size_t n = 12);

/// The build.sh written beside a best variant in `dir`: it enters the project and builds `v` into
/// `dir`/prog. Every value is quoted for the shell, and the comments (`header`, the folders, the
/// environment) have their control characters escaped, so that no name or knob value can end a
/// comment line or run a command.
std::string buildScript(const Manifest &m, const Variant &v, const std::string &dir, const std::string &header);

/// The exact shell command that builds `v` into `dir`/`out` (edited files read from `dir`).
std::string buildCommand(const Manifest &m, const Variant &v, const std::string &dir,
                         const std::vector<std::string> &extraFlags = {}, const std::vector<std::string> &extraDefines = {},
                         const std::string &out = "prog");

/// Builds `v` into `dir` (created). `extraFlags` are appended (remarks, -S). Edited files are written
/// to `dir` and compiled from there; the project folder stays on the include path.
BuildResult build(const Manifest &m, const Variant &v, const std::string &dir,
                  const std::vector<std::string> &extraFlags = {}, const std::vector<std::string> &extraDefines = {},
                  const std::string &out = "prog");

/// One run's outputs.
struct RunResult {
  support::SubprocessResult process;
  std::vector<double> values; // the outputs read, in order
  std::string error;          // empty: ran and outputs were read
  double regionS = -1;        // the tagged time, in region mode
  bool ok() const { return error.empty(); }
};

/// Runs `exe` on `seed` in `rundir` (created; an output file is removed first).
/// `clearFirst`: files the run writes besides its outputs (a profiler's), removed before it runs.
RunResult runOnce(const Manifest &m, const Variant &v, const std::string &exe, const std::string &rundir, uint64_t seed,
                  const std::vector<std::string> &prefix = {}, const std::vector<std::string> &clearFirst = {});

/// The outputs of a program's stdout: the numbers of every line that is not ignored or the timing tag.
std::vector<double> numbersOf(const OutputSpec &spec, const std::string &stdoutText, const std::string &timingTag);
/// The elements of a binary output file.
support::Expected<std::vector<double>> readBinary(const OutputSpec &spec, const std::string &bytes);

struct Mismatch {
  size_t index = 0; // the first output that differs
  double expected = 0, actual = 0, allowed = 0;
  std::string message;
};
/// The first output outside tolerance (or a count mismatch); nullopt when all match.
std::optional<Mismatch> compareOutputs(const OutputSpec &spec, const std::vector<double> &expected,
                                       const std::vector<double> &actual);
/// rtol/atol after the dtype's defaults.
std::pair<double, double> tolerances(const OutputSpec &spec);

struct Timing {
  std::vector<double> samples; // seconds, in order
  double median = 0, mean = 0, stddev = 0, ci95 = 0; // ci95: half-width of the mean's 95% interval
  bool converged = false;  // ci95 / median under the target before max_repeats
  double processMedian = 0; // region mode: the whole process's median, for the timer check
};

/// Median, mean, sample standard deviation and the 95% half-width (Student's t) of `samples`.
Timing summarize(std::vector<double> samples, double targetCi);

} // namespace hone::kernel
