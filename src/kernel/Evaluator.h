// The kernel domain's evaluator: a candidate (a variant's text) is parsed,
// built, validated against the unmodified project's outputs on several
// seeded inputs, timed by hone, and -- when it is the fastest so far --
// profiled and diagnosed. Every failure is a result with the reason: the
// compiler's first errors, the first output outside tolerance, the signal,
// the time limit. Guards against results that only look right:
//   - the reference is the unmodified project (default knobs, baseline flags);
//   - a run gets seeds of its own (manifest seeds + 1000 x run seed), and
//     output files are removed before each run;
//   - outputs that do not change with the input (the reference's do) fail;
//   - a speedup over 3x the best so far is re-validated on new seeds and
//     re-measured before it counts;
//   - a would-be new best is timed again beside a fresh timing of the
//     reference and beside the best so far, and must beat that best there;
//   - hone times the whole process (or checks a reported region against it),
//     each timed run on an input of its own that validation never uses, so a
//     program that keeps results across runs gains nothing.
// A shared machine drifts over a run, so the reference is timed again every
// few candidates (`[timing] reference_every`), just before a candidate, and a
// score is the median of the reference's last three timings over the
// candidate's median: one lucky or unlucky timing of the reference at the
// start does not set the scale of the whole run.
// The evaluator's clock is its manifest's executor: a timed run's time is the
// `seconds` of the executor's result (or, in region mode, what the program
// reports, checked against it). Tests of the timing policy inject an executor
// whose times they decide (tests/kernel/EvaluatorTest.cpp, ClaimedTime), so no
// unit test's verdict depends on the machine's load.
#pragma once

#include "engine/Engine.h"
#include "kernel/Diagnose.h"
#include "kernel/Manifest.h"
#include "kernel/Runner.h"

#include <map>
#include <mutex>
#include <random>
#include <string>
#include <vector>

namespace hone::kernel {

/// Timed runs take fresh seeds from [kTimingSeedOffset, kTimingSeedOffset + kTimingSeedSpan), drawn
/// unpredictably, one per run.
inline constexpr uint64_t kTimingSeedOffset = 100000;
inline constexpr uint64_t kTimingSeedSpan = 1000000000;
/// How many of a timing's runs have their outputs compared with the reference's on the same input
/// (chosen at random once the runs are done; every run when the outputs do not depend on the input).
inline constexpr size_t kTimedRunsChecked = 1;
/// The start of a timing's error when a timed run's outputs are wrong (the step is invalid, not failed).
inline constexpr const char *kTimedWrongResult = "wrong result on a timed run";
/// The start of a timing's error when the program's own timer (region mode) reports a time it cannot
/// have taken: more than the whole process, or none at all (the step is invalid, not failed).
inline constexpr const char *kUntrustedTimer = "the reported time is not trusted";
/// Whether an invalid step's error blames the variant's own results: outputs wrong, outputs that do not
/// follow the input, or a race ThreadSanitizer saw (not the timer's trust check, nor a reference that fails).
bool variantComputesWrongly(const std::string &error);

struct EvaluatorSettings {
  std::string workdir;     // candidates build and run in workdir/<hash>/
  uint64_t runSeed = 1;    // picks this run's validation seeds
  bool profile = true;     // profile and diagnose each new best
  ProfileOptions profileOptions;
  Thresholds thresholds;
  double suspiciousSpeedup = 3; // over the best so far: re-validate and re-measure first
};

/// What a score is the time of ("the whole process, timed by hone", "the time the program reports
/// (regex ...)"), for every output that shows a time.
std::string timedWhat(const Manifest &m);

/// Whether `v` differs from the reference only by compiler flags and hone's own loop rewrites (its
/// files are what its source knobs render): the program's timer then times what the project's code
/// times, and region mode's process-time check is skipped.
bool timerUntouched(const Manifest &m, const Variant &v);

/// The region-timing trust check: a reported time that claims a real saving (under 0.8 of the
/// reference's region) must be matched by the whole process, at least half of it, within the
/// process times' noise (their 95% half-widths combined, at least 2% of the reference's process time
/// and at most a quarter of the claimed saving; an unknown half-width counts as that 2%). The reason when not trusted.
std::optional<std::string> regionDistrusted(double refRegion, double refProcess, double refProcessCi,
                                            const Timing &candidate);
/// Timings of one program over rounds as one, each side at its least loaded (load only adds time): the
/// least region median, and as the process time that plus the least time outside the region (process
/// less region, per round: the kernel's own variation cancels), whose spread is the 95% half-width.
Timing leastLoaded(const std::vector<Timing> &rounds);
/// Region mode: a candidate whose timer claims a saving and the reference run alternately this many
/// times each, and the least loaded runs of both decide whether the timer is believed.
inline constexpr int kRegionRecheckRounds = 5;

class KernelEvaluator {
public:
  KernelEvaluator(Manifest manifest, EvaluatorSettings settings);

  /// Builds the reference and records its outputs on the validation seeds; an error when the
  /// unmodified project itself does not build or run (nothing can be validated then).
  support::Expected<bool> prepare();
  /// The seeds candidates are validated on.
  const std::vector<uint64_t> &seeds() const { return seeds_; }
  const Manifest &manifest() const { return manifest_; }
  /// After prepare(): the warning that validation is weak (outputs printed with few digits), or "".
  const std::string &weakValidationNote() const { return weakNote_; }

  /// Seconds of the reference that score 1.0; 0: scores are 1 / seconds.
  void setBaseline(double seconds) {
    std::lock_guard<std::mutex> lock(mutex_);
    baseline_ = seconds;
    referenceTimes_.clear();
    if (seconds > 0)
      referenceTimes_.push_back(seconds);
    sinceReference_ = 0;
    bestScore_ = 0; // scores change scale: the next result is the first of the run proper
    incumbent_ = {};
  }
  /// The reference's seconds a score is relative to now: the median of its last three timings
  /// (the baseline, then each re-timing); 0 without a baseline.
  double referenceSeconds() const;
  /// How often the reference's programs were found changed by a candidate's run and put back.
  int referenceRestored() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return referenceRestored_;
  }
  engine::EvalResult evaluate(const engine::Candidate &candidate);

  /// Validates a built program on `seeds`; the failure as a result (status and error), or nullopt.
  std::optional<engine::EvalResult> validate(const Variant &v, const std::string &exe, const std::string &dir,
                                             const std::vector<uint64_t> &seeds);
  /// Times a built program: warm-up, then repeats until the 95% CI is tight enough or the cap. Every
  /// run takes a fresh input drawn at random (no program can have kept results for it) in a folder
  /// named like a validation run's, and the outputs of a random sample of the runs are compared with
  /// the reference's on the same inputs: a variant that computes only when validated fails
  /// (kTimedWrongResult). Neither the reference's own timings nor any before prepare() are checked.
  support::Expected<Timing> time(const Variant &v, const std::string &exe, const std::string &dir);
  /// The same under `spec` (warm-up and repeats), the timed runs' outputs checked or not.
  support::Expected<Timing> time(const Variant &v, const std::string &exe, const std::string &dir,
                                 const TimingSpec &spec, bool checkTimedOutputs);

  /// A built program to time side by side with others.
  struct Contender {
    const Variant *variant = nullptr;
    std::string exe, dir;
  };
  /// Each contender timed once per round (its median) for `rounds` interleaved rounds, the order
  /// rotated from round to round: drift of a shared machine hits all alike, and none always runs
  /// first. The samples per contender, in the contenders' order.
  support::Expected<std::vector<std::vector<double>>> interleaved(const std::vector<Contender> &contenders, int rounds);

  /// The best of a run against the compiler-only baseline: the unmodified program, the same with
  /// the flags knob's `-O3 -march=native` value, and `best`, built, validated and timed side by side
  /// over `rounds` interleaved rounds. {"rounds", "reference_s", "compiler_only": {"flags",
  /// "median_s", "speedup"} or {"error"}, "best": {"median_s", "speedup", "over_compiler_only"}};
  /// {"skipped": why} when the manifest has no such flags value.
  nlohmann::json compareWithCompilerOnly(const Variant &best, int rounds);

private:
  /// Region mode: the failure when the reported time is not trusted (judged side by side with the
  /// reference whenever `timing` claims a saving; with split builds the process times are the
  /// validated builds', `validationExe` the candidate's); nullopt otherwise.
  std::optional<engine::EvalResult> checkRegion(const Variant &v, const std::string &exe,
                                                const std::string &validationExe, const std::string &dir,
                                                const Timing &timing);
  std::vector<double> referenceOutputs(uint64_t seed, std::string *error);
  /// The reference's printed units on `seed` (null: none recorded, binary outputs).
  const std::vector<double> *unitsOf(uint64_t seed) const;
  /// Before a candidate is timed: times the reference again when `reference_every` candidates have
  /// been timed since it last was; the seconds to score against (0: raw scores).
  double referenceForScoring();
  /// A would-be new best (`score` over the best so far) timed again beside a fresh timing of the reference
  /// and beside the incumbent: `score` and `timing` become what holds; the second reference time and the
  /// side-by-side ratio to the incumbent are returned through the last two (0 when not taken). A failure
  /// to time the candidate again is the step's result.
  std::optional<engine::EvalResult> confirmNewBest(const Variant &v, const std::string &exe, const std::string &dir,
                                                   double &score, Timing &timing, double &confirmReference,
                                                   double &incumbentRatio);
  /// The step's output line: how it was validated and timed, and what the run's guards noted.
  std::string evaluationText(const Timing &timing, const std::string &raceNote);
  /// Puts the reference's programs back as built where a candidate's run changed them (counted in
  /// referenceRestored()).
  void guardReference();

  Manifest manifest_;
  EvaluatorSettings settings_;
  Variant reference_;
  std::string referenceExe_;      // validated
  std::string referenceTimedExe_; // timed (the same program unless the manifest splits builds)
  std::vector<uint64_t> seeds_;
  struct Pristine {
    std::string path, bytes;
  };
  std::vector<Pristine> pristine_; // the reference's programs as built
  int referenceRestored_ = 0;
  std::map<uint64_t, std::vector<double>> refOutputs_;
  std::map<uint64_t, std::vector<double>> refUnits_; // each output's unit in the last printed place
  std::string weakNote_, weakStepNote_; // the latter without the advice: in every step's output
  double baseline_ = 0;
  double refRegionS_ = 0, refProcessS_ = 0; // region mode: the reference's medians (the timer check)
  double refProcessCi_ = 0;                  // and its process time's 95% half-width
  bool fixedInputs_ = false; // the reference's outputs are the same on every seed: that guard cannot fire
  std::vector<double> referenceTimes_; // the baseline, then each re-timing of the reference (medians)
  int sinceReference_ = 0;             // candidates timed since the reference last was
  double bestScore_ = 0;
  struct Incumbent { // the best so far, built: a would-be new best is timed beside it
    Variant variant;
    std::string exe, dir;
    double score = 0; // 0: none yet
  } incumbent_;
  mutable std::mutex mutex_; // reference outputs and times, best score, the seed generator
  std::mt19937_64 seedGenerator_{std::random_device{}()}; // timed runs' inputs: not the candidates' to know
  std::mutex timing_; // one timed run at a time: parallel timing would measure the contention
};

} // namespace hone::kernel
