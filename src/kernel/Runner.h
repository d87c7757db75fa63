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
/// Fills in the files a variant's source knobs rewrite (Manifest::plan); an error when a value cannot
/// be realised or the variant's own text of such a file differs.
support::Expected<bool> realise(const Manifest &m, Variant &v);
/// The text of the variant with these knob values and files, its source knobs realised as files (so
/// that the stored candidate shows the rewritten source).
std::string renderKnobs(const Manifest &m, const KnobValues &knobs, std::map<std::string, std::string> files = {});

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
/// to `dir` and compiled from there; the project folder stays on the include path. `compiler`, when
/// given, replaces the build command's first word, which must then name a C or C++ compiler
/// (cc, gcc, clang, c++, g++, clang++, versioned or by path); the build fails otherwise.
BuildResult build(const Manifest &m, const Variant &v, const std::string &dir,
                  const std::vector<std::string> &extraFlags = {}, const std::vector<std::string> &extraDefines = {},
                  const std::string &out = "prog", const std::string &compiler = {});

/// The race check of a variant that adds parallelism: built by clang with ThreadSanitizer
/// (`-fsanitize=thread -g`, the validation build's defines) and run once on `seed` with LLVM's
/// OpenMP runtime and its Archer tool, which make OpenMP's synchronisation visible to TSan.
struct RaceCheck {
  bool ran = false;
  std::string skipped; // why it did not run (no clang, no Archer, a build command it cannot retarget)
  std::string race;    // TSan's first report, located ("data race at gemm.c:93 ..."); empty: none
  std::string command; // the build command
};
RaceCheck checkRaces(const Manifest &m, const Variant &v, const std::string &dir, uint64_t seed);
/// Whether `v` adds parallel loops the reference lacks: a source knob's parallel value, or an
/// edited file with more `omp parallel` pragmas than the project's own.
bool addsParallelism(const Manifest &m, const Variant &v);

/// What validation runs (`[build] validate_defines`) into `dir`/prog.
BuildResult buildValidated(const Manifest &m, const Variant &v, const std::string &dir);
/// What timed runs run: with split builds (Manifest::splitBuilds), `dir`/prog-timed with
/// `[build] time_defines`; otherwise `validated` itself.
BuildResult buildTimed(const Manifest &m, const Variant &v, const std::string &dir, const BuildResult &validated);

/// One run's outputs.
struct RunResult {
  support::SubprocessResult process;
  std::vector<double> values; // the outputs read, in order
  std::vector<double> units;  // text outputs: each value's unit in the last printed place (0: an integer,
                              // hex float, nan or inf, exact as printed); binary outputs: none
  std::string error;          // empty: ran and outputs were read
  double regionS = -1;        // the tagged time, in region mode
  std::string stderrText;     // [output] source = "stderr" and the run failed: what it (or a tool before it) wrote there
  bool ok() const { return error.empty(); }
};

/// Runs `exe` on `seed` in `rundir` (created; an output file is removed first).
/// `clearFirst`: files the run writes besides its outputs (a profiler's), removed before it runs.
/// `timed`: a timing run; with split builds it reads no outputs (the timed build prints none), and
/// in region mode every timed run must report its time (so must every run of a single build).
/// With `[output] source = "stderr"` the program's stderr goes to `kStderrFile` in `rundir`, read from
/// there (at most kStderrLimit bytes; more is an error that says so); stdout stays in the result.
RunResult runOnce(const Manifest &m, const Variant &v, const std::string &exe, const std::string &rundir, uint64_t seed,
                  const std::vector<std::string> &prefix = {}, const std::vector<std::string> &clearFirst = {},
                  bool timed = false);
/// The address space a build may use, in MiB (more when the manifest's memory_mb is larger).
inline constexpr size_t kBuildMemoryMb = 16384;
inline constexpr const char *kStderrFile = ".hone-stderr";
inline constexpr size_t kStderrLimit = 64u << 20;
/// The most of a run's stdout (and stderr, when they share it) hone keeps; a run whose outputs are
/// read there and that prints more fails with a reason (all of the outputs are compared, or none).
inline constexpr size_t kStdoutLimit = 64u << 20;
/// The largest `[output] file` hone reads (a candidate that writes more, or a link, a pipe or a
/// device there, fails its run with a reason).
inline constexpr size_t kOutputFileLimit = 1024u << 20;

/// The seconds a program reports in region mode: the number after the last line starting with the
/// tag, or the group of `[timing] regex` on the last line it matches (lines as the ignore regexes
/// see them: `^` and `$` are the line's ends); -1 when none.
double reportedSeconds(const TimingSpec &spec, const std::string &text);

/// The outputs of a program's stdout: the numbers of every line that is not ignored or the timing tag;
/// `units` (when given) gets each one's unit in the last printed place ("12.34" 0.01, "1.5e-3" 1e-4).
std::vector<double> numbersOf(const OutputSpec &spec, const std::string &stdoutText, const std::string &timingTag,
                              std::vector<double> *units = nullptr);
/// The unit in the last place of a number as printed; 0 for integers, hex floats, nan and inf.
double printedUnit(const std::string &word);

/// Outputs printed with few significant digits (the median over the non-integer outputs of
/// |value| / unit below 1e7, fewer than about 7 digits, e.g. "%0.2lf"): a change of the results below
/// the printed precision cannot be caught. The warning to say, with what to do; nullopt when not weak.
/// With `advice`, what the user can do about it (print with full precision, or a binary file).
std::optional<std::string> weakValidation(const std::vector<double> &values, const std::vector<double> &units,
                                          bool advice = true);
/// The elements of a binary output file.
support::Expected<std::vector<double>> readBinary(const OutputSpec &spec, const std::string &bytes);

struct Mismatch {
  size_t index = 0; // the first output that differs
  double expected = 0, actual = 0, allowed = 0;
  std::string message;
};
/// The first output outside tolerance (or a count mismatch); nullopt when all match. With the
/// reference's printed `units`, a tolerance other than exact allows at least one unit in the last
/// printed place (a "%0.2lf" dump whose last digit moves by 0.01 under FMA contraction matches).
std::optional<Mismatch> compareOutputs(const OutputSpec &spec, const std::vector<double> &expected,
                                       const std::vector<double> &actual, const std::vector<double> *units = nullptr);
/// rtol/atol after the dtype's defaults.
/// The tolerance as the model and the user read it, with its numbers ("rel: |got - expected| <= 1e-10 +
/// 1e-08 * |expected|").
std::string toleranceText(const OutputSpec &spec);
std::pair<double, double> tolerances(const OutputSpec &spec);

struct Timing {
  std::vector<double> samples; // seconds, in order
  double median = 0, mean = 0, stddev = 0, ci95 = 0; // ci95: half-width of the mean's 95% interval
  bool converged = false;  // ci95 / median under the target before max_repeats
  double processMedian = 0; // region mode: the whole process's median, for the timer check
  double processCi95 = 0;   // region mode: the 95% half-width of the process's mean (inf: one sample)
};

/// Median, mean, sample standard deviation and the 95% half-width (Student's t) of `samples`.
Timing summarize(std::vector<double> samples, double targetCi);

} // namespace hone::kernel
