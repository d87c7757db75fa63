// From a kernel project to evidence: run the profilers that this machine has
// on a variant (cachegrind, perf stat, compiler remarks, llvm-mca on the hot
// loop, ptxas for CUDA; Nsight Compute reports from a file), then turn the
// profile into findings -- each of a kind AutoGuide's kernel rules
// (rules/kernel.toml) explain, citing its numbers, and naming the catalogue's
// transformations that address it (catalogue/transformations.toml).
#pragma once

#include "kernel/Manifest.h"
#include "kernel/Profile.h"
#include "kernel/Runner.h"
#include "support/Evidence.h"
#include "support/Expected.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace hone::kernel {

/// When a number is worth a finding. Named defaults; docs/KERNELS.md explains each.
struct Thresholds {
  double hotShare = 0.10;          // a function or line with at least this share of instructions is hot
  double coldShare = 0.02;         // a finding in a loop nest with less than this share is left out (cold)
  double d1MissRate = 0.05;        // D1 misses per data reference above this: locality
  double llMissRate = 0.01;        // LL misses per data reference above this: memory traffic
  double usedCoresFraction = 0.6;  // CPUs utilized below this fraction of the cores: serial
  double dependencyShare = 30;     // llvm-mca: % of cycles stalled on data dependencies
  double resourceShare = 50;       // llvm-mca: % of cycles stalled on a resource
  int registersFullOccupancy = 32; // ptxas: above this many registers a thread cannot reach full occupancy
  int64_t sharedBytesPerBlock = 24 * 1024; // ptxas: shared memory that limits resident blocks
  double staticOccupancy = 0.75; // below this theoretical occupancy (ptxas + launch), a finding
  double sectorsPerRequest = 8;    // ncu: global load sectors per request above this: uncoalesced
  double bankConflictRate = 0.1;   // ncu: shared-memory bank conflicts per wavefront
  double occupancyPct = 50;        // ncu: achieved occupancy below this
  double threadsPerInstruction = 24; // ncu: of 32; below this: divergence
  double boundPct = 60;            // ncu: % of peak that makes a kernel memory- or compute-bound
};

struct ProfileOptions {
  /// Profilers left out, by name ("cachegrind", "remarks", "omp-schedules", "perf", "llvm-mca", "ptxas",
  /// "ncu": kernel/profilers/).
  std::set<std::string> off;
  std::string ncuReport; // a CSV file from `ncu --csv`, when the user has one
  uint64_t seed = 1;
};

/// Profiles `v` with every profiler (kernel/profilers/) not left out, working in `dir`. Tools that are
/// missing or fail are listed in `skipped` with the reason; never an error for that.
KernelProfile profileVariant(const Manifest &m, const Variant &v, const std::string &dir, const ProfileOptions &o);

/// Every kind of finding the diagnosis makes, declared here once: a finding's "kind" is its id, and
/// rules/kernel.toml's bottleneck rules name these ids (tests fail on a rule that names another id, and
/// on a kind no rule explains).
enum class FindingKind {
  CacheMisses,
  MemoryTraffic,
  NotVectorizedAliasing,
  NotVectorizedStride,
  NotVectorizedControlFlow,
  NotVectorizedReduction,
  NotVectorizedOuter,
  Serial,
  FineGrainedSchedule,
  DependencyChain,
  ResourcePressure,
  RegisterSpills,
  OccupancyRegisters,
  OccupancyShared,
  OccupancyBlock,
  LaunchLimit,
  Uncoalesced,
  BankConflicts,
  LowOccupancy,
  Divergence,
  MemoryBound,
  ComputeBound // the last: tests walk the kinds up to it
};
/// The kinds in declaration order.
const std::vector<FindingKind> &findingKinds();
/// "cache-misses", "not-vectorized-stride", ...
std::string_view toString(FindingKind kind);
std::optional<FindingKind> parseFindingKind(std::string_view id);
/// Whether a kind is one of the vectorizer's (a loop it left scalar, for one of its reasons).
bool vectorizerKind(FindingKind kind);

/// The findings of a profile, typed: each a bottleneck whose kind is a FindingKind's id, citing its
/// numbers with their units and the tool that measured them, ranked by `share` (the fraction of the
/// time it could save); where the time goes (`breakdown`, null when the profile has none) and the
/// findings left out as cold (`cold`: [{kind, file, line, nest_line, nest_share, why}]).
struct Diagnosis {
  support::Evidence evidence;
  nlohmann::json breakdown;
  nlohmann::json cold;
};
Diagnosis diagnosis(const KernelProfile &p, const Thresholds &t = {});
/// Its JSON (`hone kernel profile --json`): {"schema": 1, "bottlenecks": [...], "breakdown", "cold"}.
nlohmann::json toJson(const Diagnosis &d);
/// toJson(diagnosis(p, t)).
nlohmann::json diagnose(const KernelProfile &p, const Thresholds &t = {});

/// Where the time goes, for a reader (`hone kernel profile`, the LLM prompt): the diagnosis's
/// "breakdown" (every loop nest, the rest of each file, the code outside the project) and the
/// findings left out as cold; "" when the profile has no breakdown. Reads what `diagnose` wrote,
/// tolerating anything else.
std::string breakdownText(const nlohmann::json &breakdown, const nlohmann::json &cold, size_t maxNests = 8);

/// One entry of the transformation catalogue.
struct Transformation {
  std::string id, name, target; // target: "cpu" or "gpu"
  std::string changes, effect, risk, reference;
  std::vector<KnobRole> knobRoles; // knobs that realise it, when a project has them
  std::vector<std::string> valueHints; // knob values containing one of these realise it best (e.g. "-ffast-math")
};
support::Expected<std::vector<Transformation>> parseCatalogue(const std::string &path, const std::string &text);
/// The shipped catalogue.
support::Expected<std::vector<Transformation>> loadCatalogue();

} // namespace hone::kernel
