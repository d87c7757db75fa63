// A kernel project as hone sees it: the manifest `hone.toml` beside the
// sources (format in docs/KERNELS.md). It says how to build and run the
// program, how to read and compare its outputs, how hone times it, and which
// knobs (-D parameters, compiler flag sets, environment variables) a variant
// may set. Loading checks every key (did-you-mean) and value; errors read
// "hone.toml:line:col: message".
#pragma once

#include "support/Executor.h"
#include "support/Expected.h"

#include <map>
#include <memory>
#include <set>
#include <optional>
#include <string>
#include <vector>

namespace hone::kernel {

namespace source {
class Plan;
}

/// Define: -DNAME=value; Flags: compiler flags; Env: the run's environment; Source: one of hone's
/// own source transformations on a loop nest (source/Transform.h), realised as rewritten files.
enum class KnobKind { Define, Flags, Env, Source };
std::string_view toString(KnobKind kind);

/// What a knob does to the program, which decides the transformations it
/// realises (docs/KERNELS.md, "Knob roles"); from `role` in the manifest, else
/// guessed from the knob's name and kind.
enum class KnobRole { Tile, Unroll, LoopOrder, Threads, Schedule, Binding, Flags, Parallel, Simd, Other };
std::string_view toString(KnobRole role);
std::optional<KnobRole> parseKnobRole(std::string_view text);

struct Knob {
  std::string name;
  KnobKind kind = KnobKind::Define;
  KnobRole role = KnobRole::Other;
  std::vector<std::string> values; // as written into -D, the flags or the environment
  size_t defaultIndex = 0;         // the reference's value
  std::string doc;
  // Source knobs: the nest they transform, and the values the dependence test cannot prove legal
  // (value -> why); the guided agent does not propose those.
  std::string nestFile;
  int nestLine = 0, nestEndLine = 0;
  std::map<std::string, std::string> unproven;
  bool numeric() const; // every value is a number
};

/// `lhs OP rhs` over knob names and numbers, OP one of <= < >= > == !=; both sides
/// are arithmetic (+ - * / // % ^, min, max, ...).
struct Constraint {
  std::string text;
  int line = 0;
};

enum class Tolerance { Exact, Abs, Rel, Ulp };
std::string_view toString(Tolerance t);

struct OutputSpec {
  std::string source = "stdout"; // "stdout", "stderr" or "file"
  std::string file;              // source = "file": path relative to the run folder
  std::string format = "text";   // file: "text" (numbers) or "binary"
  std::string dtype = "f64";     // binary: f32 f64 i32 i64 u8
  std::vector<int64_t> shape;    // binary: optional check of the element count
  Tolerance tolerance = Tolerance::Rel;
  double rtol = 0, atol = 0;     // 0 with Rel/Abs: defaults by dtype
  int64_t ulps = 4;
  std::vector<std::string> ignore; // regexes: stdout/stderr lines that are not results
  // A regex (RE2) that some line of a passing run's output (stdout or stderr) matches: the program's own
  // check ("^PASS"). A run without such a line fails; with it set, a run may print no numbers at all.
  std::string verdict;
};

struct TimingSpec {
  std::string mode = "process"; // "process" (hone times the whole run) or "region"
  std::string tag = "HONE_TIME"; // region: the program prints "HONE_TIME <seconds>"
  std::string regex; // region: instead of the tag, one capture group (seconds) matched over stdout and stderr;
                     // the last match of a run counts
  int warmup = 1;
  int minRepeats = 3;
  int maxRepeats = 15;
  double targetCi = 0.02; // stop repeating when the 95% CI half-width / median is below this
  int referenceEvery = 5;  // in a run: time the reference again every this many timed candidates (0: never)
  bool confirmBest = true; // in a run: a would-be new best is timed again beside a fresh reference timing
                           // and beside the best so far, which it must beat there
};

/// `[[gpu.launch]]`: how a CUDA kernel is launched when the source does not say it in literal terms.
struct GpuLaunchSpec {
  std::string kernel;      // its name as launched (no namespace, no template arguments)
  std::string block;       // threads per block: an expression over numbers, knobs and the source's #defines
  std::string sharedBytes; // dynamic shared memory per block (empty: what the launch says, else 0)
  int line = 0;
};

struct Manifest {
  std::string path;           // the hone.toml
  std::string dir;            // its folder (absolute)
  std::string name;
  std::string language = "c"; // c, cpp, cuda
  std::vector<std::string> sources;  // compiled, relative to dir
  std::vector<std::string> editable; // what a code agent may change (default: sources)
  // build
  std::string buildCommand; // {sources} {out} {cflags} {defines} {includes} {dir}
  std::string flags;        // the reference's compiler flags
  // NAME or NAME=VALUE (-D) only for validation runs, and only for timed runs: a program that dumps
  // its outputs and times its kernel itself builds twice, and the timed build has no dump.
  std::vector<std::string> validateDefines, timeDefines;
  std::vector<std::string> defines;     // NAME or NAME=VALUE for every build (a dataset size, ...)
  std::vector<std::string> includeDirs; // -I folders for every build, relative to dir (may lie outside it)
  double buildTimeoutS = 300;
  // run
  std::string runCommand = "{exe} {seed}"; // {exe} {seed} {dir} {rundir}
  std::vector<std::string> env;            // NAME=VALUE, for every run
  std::vector<uint64_t> seeds = {1, 2, 3}; // validation inputs (a run adds fresh ones)
  double runTimeoutS = 120;
  size_t memoryMb = 0;
  OutputSpec output;
  TimingSpec timing;
  std::vector<Knob> knobs;
  std::vector<Constraint> constraints;
  std::vector<std::string> profileDefines; // NAME=VALUE added when profiling (smaller sizes)
  // [gpu]: the architectures the static occupancy is computed for (empty: what the build compiles
  // for), and launches the source does not spell out.
  std::vector<std::string> gpuArchs;
  std::vector<GpuLaunchSpec> gpuLaunches;
  // Where builds and runs execute (not from hone.toml: the caller's --executor); null: here.
  std::shared_ptr<support::CommandExecutor> executor;
  // hone's source transformations of the editable files (not from hone.toml: added by
  // addSourceKnobs); null: none. Its knobs are in `knobs`, of kind Source.
  std::shared_ptr<const source::Plan> plan;

  /// Validation and timing use builds of their own (`validate_defines` or `time_defines` given).
  bool splitBuilds() const { return !validateDefines.empty() || !timeDefines.empty(); }
  const Knob *knob(const std::string &name) const;
  std::vector<std::string> knobNames() const;
};

/// Reads `dir/hone.toml` (or the file itself when `path` names one).
support::Expected<Manifest> loadManifest(const std::string &path);
/// Parses manifest text; `path` names it in errors and gives the project folder.
support::Expected<Manifest> parseManifest(const std::string &path, const std::string &text);

/// A variant: one value per knob (by name). Missing knobs take their defaults.
using KnobValues = std::map<std::string, std::string>;

/// The reference's values.
KnobValues defaultValues(const Manifest &m);
/// Checks that every name is a knob and every value one of its values, and the constraints;
/// the error says which and why.
support::Expected<bool> checkValues(const Manifest &m, const KnobValues &values);

} // namespace hone::kernel
