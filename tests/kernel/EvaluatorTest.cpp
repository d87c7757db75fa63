// The kernel evaluator on real programs, built with the system's C compiler
// in a temporary folder: a correct variant is validated and timed; each
// guard catches what it is for -- a wrong result (an unroll remainder bug),
// outputs that ignore the input, an edited timer, a crash, a timeout, a
// build failure, and a speedup too good to be true that holds only on the
// seeds it was shown. A machine that slows down during a run does not
// leave every later score on the scale of the reference's first timing, and
// a would-be best that is slower than the best so far side by side does not
// replace it.
#include "autoguide/AutoGuide.h"
#include "kernel/Evaluator.h"
#include "support/Executor.h"
#include "support/FileUtil.h"
#include "support/Subprocess.h"

#include "TestUtil.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <sstream>
#include <string>
#include <unistd.h>
#include <utility>
#include <vector>

#include <fmt/format.h>

using namespace hone::kernel;
using hone::engine::Candidate;
using hone::engine::EvalStatus;
namespace fs = std::filesystem;

namespace {

const char *kProgram = R"(#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifndef LEN
#define LEN 6000000
#endif
#ifndef UNROLL
#define UNROLL 1
#endif
#ifndef MODE
#define MODE 0
#endif
#if MODE == 6
#include "cheat.h"
#endif
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
int main(int argc, char **argv) {
  unsigned long seed = argc > 1 ? strtoul(argv[1], 0, 10) : 1;
#if MODE == 8 /* takes a time of its own (a file's seconds), whatever the machine's drift */
  const char *drift = getenv("HONE_TEST_FIXED");
#else
  const char *drift = getenv("HONE_TEST_DRIFT"); /* a file with the seconds each run waits: a machine slowing down */
#endif
  int lucky = 0;
#if MODE == 7 /* a lucky streak: no wait while a counter file is positive; each run counts it down */
  const char *streak = getenv("HONE_TEST_LUCKY");
  FILE *c = streak ? fopen(streak, "r+") : 0;
  if (c) { long n = 0; if (fscanf(c, "%ld", &n) == 1 && n > 0) { lucky = 1; rewind(c); fprintf(c, "%ld\n", n - 1); } fclose(c); }
#endif
  double d = 0;
  if (drift && !lucky) {
    FILE *f = fopen(drift, "r");
    if (f) { if (fscanf(f, "%lf", &d) != 1) d = 0; fclose(f); }
#if MODE == 9 /* four times quicker than the reference on any machine */
    d /= 4;
#endif
  }
  /* Under the tests' timer (HONE_TEST_CLAIM: see ClaimedTime) the wait is claimed, not slept. */
  const char *claim = getenv("HONE_TEST_CLAIM");
  FILE *cf = claim ? fopen(claim, "a") : 0;
  if (cf) { fprintf(cf, "%.17g\n", d); fclose(cf); }
  else if (d > 0) { struct timespec w = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)}; nanosleep(&w, 0); }
#if MODE == 1 /* ignores its input */
  printf("1\n2\n");
  return 0;
#elif MODE == 2
  abort();
#elif MODE == 3
  for (volatile int spin = 1; spin;) {}
#elif MODE == 4
  this does not compile;
#elif MODE == 10 /* computes only when validated: the timed runs' seeds used to start at 100000 */
  if (seed >= 100000) { printf("0\n%lu\n", seed % 7); return 0; }
#elif MODE == 11 /* notes the folder of each run, then computes */
  {
    char cwd[4096], path[4200];
    const char *notes = getenv("HONE_TEST_CACHE");
    snprintf(path, sizeof path, "%s/folders", notes ? notes : "/nonexistent");
    FILE *f = fopen(path, "a");
    if (f && getcwd(cwd, sizeof cwd)) { fprintf(f, "%s\n", strrchr(cwd, '/') + 1); }
    if (f) fclose(f);
  }
#elif MODE == 12 /* keeps its results in a folder every variant shares, keyed by its input */
  char cached[4200];
  {
    const char *cache = getenv("HONE_TEST_CACHE");
    snprintf(cached, sizeof cached, "%s/%lu", cache ? cache : "/nonexistent", seed);
    FILE *hit = fopen(cached, "r");
    if (hit) { char line[256]; while (fgets(line, sizeof line, hit)) fputs(line, stdout); fclose(hit); return 0; }
  }
#elif MODE == 13 /* puts a slow wrapper in the place of the reference's program, then computes */
  if (access("../../reference/prog.orig", F_OK) != 0 && rename("../../reference/prog", "../../reference/prog.orig") == 0) {
    FILE *w = fopen("../../reference/prog", "w");
    if (w) { fprintf(w, "#!/bin/sh\nsleep 0.3\nexec \"$(dirname \"$0\")/prog.orig\" \"$@\"\n"); fclose(w); }
    chmod("../../reference/prog", 0755);
  }
#elif MODE == 6 /* knows the answers for the seeds it was validated on, nothing else */
  if (seed >= 1001 && seed <= 1003) { printf("%.17g\n%lu\n", cheat[seed - 1001], seed % 7); return 0; }
  printf("0\n%lu\n", seed % 7);
  return 0;
#endif
  double t0 = now();
  double *a = malloc(LEN * sizeof(double));
  for (long i = 0; i < LEN; ++i) a[i] = (double)((i * 7 + seed) % 13);
  double s = 0;
  for (long i = 0; i + UNROLL <= LEN; i += UNROLL) /* no remainder loop: right only when UNROLL divides LEN */
    for (int u = 0; u < UNROLL; ++u) s += a[i + u];
  printf("%.17g\n%lu\n", s, seed % 7);
#if MODE == 12
  FILE *keep = fopen(cached, "w");
  if (keep) { fprintf(keep, "%.17g\n%lu\n", s, seed % 7); fclose(keep); }
#endif
#if MODE == 5 /* reports a time it did not take */
  printf("HONE_TIME %g\n", 1e-6);
#elif MODE == 14 /* a clock too coarse for the region: no time at all */
  printf("HONE_TIME %g\n", 0.0);
#else
  printf("HONE_TIME %g\n", now() - t0);
#endif
  free(a);
  return 0;
}
)";

struct Project {
  fs::path dir;
  Manifest manifest;
  explicit Project(const std::string &timing = "process") {
    dir = fs::temp_directory_path() / ("hone-kernel-test-" + std::to_string(::getpid()) + "-" +
                                       std::to_string(counter()++));
    fs::create_directories(dir);
    std::ofstream(dir / "k.c") << kProgram;
    std::string toml = R"([project]
name = "k"
sources = ["k.c"]
[build]
command = "cc {cflags} {defines} {includes} {sources} -o {out}"
flags = "-O1"
[run]
command = "{exe} {seed}"
timeout_s = 2
[output]
tolerance = "exact"
ignore = ["^HONE_TIME"]
[timing]
mode = ")" + timing + R"("
warmup = 0
min_repeats = 3
max_repeats = 5
target_ci = 0.5
[[knob]]
name = "UNROLL"
values = [1, 2, 4, 7]
[[knob]]
name = "MODE"
role = "other"
values = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14]
)";
    std::ofstream(dir / "hone.toml") << toml;
    auto m = loadManifest(dir.string());
    EXPECT_TRUE(m) << m.error().message;
    manifest = *m;
  }
  ~Project() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  static int &counter() {
    static int n = 0;
    return n;
  }
  EvaluatorSettings settings() const {
    EvaluatorSettings s;
    s.workdir = (dir / ".hone").string();
    s.profile = false;
    return s;
  }
  Candidate variant(const std::string &unroll, const std::string &mode) const {
    return Candidate::make(renderVariant({{{"UNROLL", unroll}, {"MODE", mode}}, {}}));
  }
  /// Evaluates the reference's own code and makes its time the run's baseline, as a run starts.
  hone::engine::EvalResult startRun(KernelEvaluator &ev) const {
    auto ref = ev.evaluate(variant("1", "0"));
    if (ref.ok())
      ev.setBaseline(ref.metrics.at("time_s"));
    return ref;
  }
};

/// Points the test program's environment variables at files for one test (HONE_TEST_DRIFT: the
/// seconds each run waits; HONE_TEST_LUCKY, HONE_TEST_FIXED: see the program), unset at its end.
struct TestEnv {
  std::vector<std::string> names;
  explicit TestEnv(std::initializer_list<std::pair<const char *, fs::path>> vars) {
    for (const auto &[name, file] : vars) {
      ::setenv(name, file.c_str(), 1);
      names.push_back(name);
    }
  }
  ~TestEnv() {
    for (const auto &n : names)
      ::unsetenv(n.c_str());
  }
};

/// The tests' timer, injected as the manifest's executor: every command runs here for real (outputs are
/// real and validated), but a run of the test program takes exactly what it claims -- 0.01 s of work
/// plus the seconds it would have waited (written to the file HONE_TEST_CLAIM names) -- never what the
/// machine's load makes of it. Builds keep their real times. Timing policy is tested on this clock;
/// ACorrectVariantIsValidatedAndTimed (and the e2e tests) time for real.
class ClaimedTime : public hone::support::CommandExecutor {
public:
  explicit ClaimedTime(fs::path dir) : dir_(std::move(dir)) {}
  hone::support::SubprocessResult run(const hone::support::SubprocessOptions &options, const std::string &) override {
    fs::path claim = dir_ / fmt::format("claim-{}", n_++);
    hone::support::SubprocessOptions o = options;
    o.argv.insert(o.argv.begin(), {"env", "HONE_TEST_CLAIM=" + claim.string()});
    auto r = hone::support::runSubprocess(o);
    if (auto text = hone::support::readFile(claim.string())) {
      std::istringstream in(*text);
      r.seconds = 0.01;
      for (double d; in >> d;)
        r.seconds += d;
      fs::remove(claim);
    }
    return r;
  }
  std::string describe() const override { return "local, with the tests' timer"; }

private:
  fs::path dir_;
  std::atomic<int> n_{0};
};

/// `m` timed by ClaimedTime, its claims kept in `dir`.
Manifest onTheTestsTimer(Manifest m, const fs::path &dir) {
  fs::create_directories(dir);
  m.executor = std::make_shared<ClaimedTime>(dir);
  return m;
}

} // namespace

TEST(KernelEvaluator, ACorrectVariantIsValidatedAndTimed) {
  Project p;
  KernelEvaluator ev(p.manifest, p.settings());
  ASSERT_TRUE(ev.prepare());
  EXPECT_EQ(ev.seeds(), (std::vector<uint64_t>{1001, 1002, 1003})); // a run's own seeds
  auto ref = p.startRun(ev);
  ASSERT_TRUE(ref.ok()) << ref.error;
  auto r = ev.evaluate(p.variant("4", "0"));
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_GT(r.score, 0.3);
  EXPECT_LT(r.score, 4);
  for (const char *m : {"time_s", "ci95_s", "repeats", "build_s", "stddev_s"})
    EXPECT_TRUE(r.metrics.count(m)) << m;
  EXPECT_GE(r.metrics.at("repeats"), 3);
  EXPECT_NE(r.rawOutput.find("validated on 3 seeded inputs"), std::string::npos) << r.rawOutput;
  // The seeds are the user's to see (the profile), never part of what a model is told (the output).
  for (uint64_t seed : ev.seeds())
    EXPECT_EQ(r.rawOutput.find(std::to_string(seed)), std::string::npos) << r.rawOutput;
  EXPECT_EQ(r.profile["validation"]["seeds"].size(), ev.seeds().size());
}

TEST(KernelEvaluator, TheReferenceIsTimedAgainWhenTheMachineDrifts) {
  Project p;
  fs::path wait = p.dir / "wait";
  TestEnv env({{"HONE_TEST_DRIFT", wait}});
  // On the tests' timer: the reference is timed on a quick machine (0.02 s a run), which then slows
  // down by 0.3 s a run; the candidates are the reference's own code (other unroll factors of a loop
  // that is a small part of the time). Two validation inputs keep the test short.
  auto run = [&](int every, size_t candidates) {
    Manifest m = onTheTestsTimer(p.manifest, p.dir / "claims");
    m.timing.referenceEvery = every;
    m.seeds = {1, 2};
    EvaluatorSettings s = p.settings();
    s.workdir += std::to_string(every);
    KernelEvaluator ev(m, s);
    EXPECT_TRUE(ev.prepare());
    std::ofstream(wait) << "0.01";
    auto ref = ev.evaluate(p.variant("1", "0"));
    EXPECT_TRUE(ref.ok()) << ref.error;
    ev.setBaseline(ref.metrics.at("time_s"));
    std::ofstream(wait) << "0.31";
    std::vector<hone::engine::EvalResult> out;
    for (const char *unroll : {"2", "4", "1"})
      if (out.size() < candidates)
        out.push_back(ev.evaluate(p.variant(unroll, "0")));
    return std::make_pair(ref.metrics.at("time_s"), out);
  };
  auto [first, fixed] = run(0, 1);
  EXPECT_NEAR(first, 0.02, 1e-12);
  ASSERT_TRUE(fixed.back().ok()) << fixed.back().error;
  EXPECT_DOUBLE_EQ(fixed.back().metrics.at("reference_s"), first); // never re-timed
  EXPECT_NEAR(fixed.back().score, 0.02 / 0.32, 1e-9);              // on the quick machine's scale
  auto [start, drifting] = run(1, 3);
  ASSERT_EQ(drifting.size(), 3u);
  for (const auto &r : drifting)
    ASSERT_TRUE(r.ok()) << r.error;
  // Re-timed before every candidate but the first (timed right after it): after two re-timings the
  // median of its last three timings is a slow one, and the reference's own code scores 1.
  EXPECT_NEAR(drifting.front().metrics.at("reference_s"), 0.02, 1e-12);
  EXPECT_NEAR(drifting.back().metrics.at("reference_s"), 0.32, 1e-12);
  EXPECT_NEAR(drifting.back().score, 1.0, 1e-9);
}

TEST(KernelEvaluator, ANewBestIsTimedTwiceBeforeItCounts) {
  Project p;
  fs::path wait = p.dir / "wait", lucky = p.dir / "lucky";
  TestEnv env({{"HONE_TEST_DRIFT", wait}, {"HONE_TEST_LUCKY", lucky}});
  std::ofstream(wait) << "0.4"; // on the tests' timer: 0.41 s a run, 0.01 s a lucky one
  // The candidate is the reference's own code; it is quick only while the counter lasts: through its
  // two validation runs and its first timing (three runs), then as slow as the reference.
  auto run = [&](bool confirm) {
    Manifest m = onTheTestsTimer(p.manifest, p.dir / "claims");
    m.seeds = {1, 2};
    m.timing.minRepeats = m.timing.maxRepeats = 3;
    m.timing.referenceEvery = 0;
    m.timing.confirmBest = confirm;
    EvaluatorSettings s = p.settings();
    s.workdir += confirm ? "-confirm" : "-once";
    s.suspiciousSpeedup = 1000; // this test is about ordinary gains
    KernelEvaluator ev(m, s);
    EXPECT_TRUE(ev.prepare());
    std::ofstream(lucky) << "0";
    auto ref = ev.evaluate(p.variant("1", "0"));
    EXPECT_TRUE(ref.ok()) << ref.error;
    ev.setBaseline(ref.metrics.at("time_s"));
    std::ofstream(lucky) << "5\n";
    return ev.evaluate(p.variant("1", "7"));
  };
  auto once = run(false), twice = run(true);
  ASSERT_TRUE(once.ok()) << once.error;
  ASSERT_TRUE(twice.ok()) << twice.error;
  EXPECT_NEAR(once.score, 41, 1e-9); // the lucky timing alone: a "gain" of 0.41 / 0.01
  EXPECT_EQ(once.metrics.count("first_score"), 0u);
  ASSERT_EQ(twice.metrics.count("first_score"), 1u);
  EXPECT_NEAR(twice.metrics.at("first_score"), 41, 1e-9); // the same luck the first time
  EXPECT_NEAR(twice.metrics.at("confirm_reference_s"), 0.41, 1e-12);
  // Timed again beside the reference, the variant is what it is: the reference's own speed.
  EXPECT_NEAR(twice.score, 1.0, 1e-9);
}

TEST(KernelEvaluator, ANewBestMustBeatTheBestSoFarSideBySide) {
  Project p;
  fs::path wait = p.dir / "wait", fixed = p.dir / "fixed";
  TestEnv env({{"HONE_TEST_DRIFT", wait}, {"HONE_TEST_FIXED", fixed}});
  Manifest m = onTheTestsTimer(p.manifest, p.dir / "claims");
  m.seeds = {1, 2};
  m.timing.minRepeats = m.timing.maxRepeats = 3;
  m.timing.referenceEvery = 1;
  EvaluatorSettings s = p.settings();
  s.suspiciousSpeedup = 1000; // this test is about ordinary gains
  KernelEvaluator ev(m, s);
  ASSERT_TRUE(ev.prepare());
  // On the tests' timer: the best so far takes 0.11 s a run, the reference 0.31 s.
  std::ofstream(fixed) << "0.1";
  std::ofstream(wait) << "0.3";
  auto ref = p.startRun(ev);
  ASSERT_TRUE(ref.ok()) << ref.error;
  auto incumbent = ev.evaluate(p.variant("1", "8"));
  ASSERT_TRUE(incumbent.ok()) << incumbent.error;
  EXPECT_NEAR(incumbent.score, 0.31 / 0.11, 1e-9);
  // The machine slows down for everything but the incumbent (1.01 s a run); two candidates (the
  // reference's own code) re-time the reference on the slow machine.
  std::ofstream(wait) << "1.0";
  for (const char *unroll : {"2", "4"})
    ASSERT_TRUE(ev.evaluate(p.variant(unroll, "0")).ok());
  // Four times quicker than the reference (0.26 s), so against the reference it looks like a new best;
  // but slower than the incumbent's 0.11 s, and side by side it loses.
  auto challenger = ev.evaluate(p.variant("1", "9"));
  ASSERT_TRUE(challenger.ok()) << challenger.error;
  ASSERT_EQ(challenger.metrics.count("first_score"), 1u);
  EXPECT_GT(challenger.metrics.at("first_score"), incumbent.score); // a new best by its ratios to the reference
  EXPECT_NEAR(challenger.metrics.at("confirm_reference_s") / challenger.metrics.at("time_s"), 1.01 / 0.26, 1e-9);
  ASSERT_EQ(challenger.metrics.count("incumbent_ratio"), 1u);
  EXPECT_NEAR(challenger.metrics.at("incumbent_ratio"), 0.11 / 0.26, 1e-9);
  EXPECT_LT(challenger.score, incumbent.score); // not the new best
  EXPECT_NEAR(challenger.score, incumbent.score * challenger.metrics.at("incumbent_ratio"), 1e-9);
  // Once the incumbent is the slower of the two (0.61 s against 0.26 s), the same code beats it side
  // by side and keeps the lower of its ratios to the reference.
  std::ofstream(fixed) << "0.6";
  auto winner = ev.evaluate(p.variant("2", "9"));
  ASSERT_TRUE(winner.ok()) << winner.error;
  ASSERT_EQ(winner.metrics.count("incumbent_ratio"), 1u);
  EXPECT_NEAR(winner.metrics.at("incumbent_ratio"), 0.61 / 0.26, 1e-9);
  EXPECT_GT(winner.score, incumbent.score);
  EXPECT_LE(winner.score, winner.metrics.at("first_score"));
}

TEST(KernelEvaluator, AKnobValueThatBreaksTheResultIsRejected) {
  Project p;
  KernelEvaluator ev(p.manifest, p.settings());
  ASSERT_TRUE(ev.prepare());
  auto r = ev.evaluate(p.variant("7", "0")); // 6000000 % 7 != 0: the remainder is dropped
  EXPECT_EQ(r.status, EvalStatus::Invalid);
  EXPECT_NE(r.error.find("wrong result on input 1 of 3: output 0 is"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("exact match required"), std::string::npos) << r.error;
  for (uint64_t seed : ev.seeds())
    EXPECT_EQ(r.error.find(std::to_string(seed)), std::string::npos) << r.error;
}

TEST(KernelEvaluator, OutputsThatIgnoreTheInputAreRejected) {
  Project p;
  // The reference's outputs must differ between seeds for the guard to apply: they do (seed % 7).
  Manifest m = p.manifest;
  KernelEvaluator ev(m, p.settings());
  ASSERT_TRUE(ev.prepare());
  auto r = ev.evaluate(p.variant("1", "1"));
  EXPECT_EQ(r.status, EvalStatus::Invalid);
  EXPECT_NE(r.error.find("outputs do not change with the input: inputs 1 and 2 of 3"), std::string::npos) << r.error;
  // The constant-output guard proper: same count, same values for every seed, where the reference's differ.
  std::ofstream(p.dir / "cheat.h") << "static const double cheat[3] = {0, 0, 0};\n";
  auto c = ev.evaluate(p.variant("1", "6"));
  EXPECT_EQ(c.status, EvalStatus::Invalid);
}

TEST(KernelEvaluator, CrashesTimeoutsAndBuildFailuresAreData) {
  Project p;
  KernelEvaluator ev(p.manifest, p.settings());
  ASSERT_TRUE(ev.prepare());
  auto crash = ev.evaluate(p.variant("1", "2"));
  EXPECT_EQ(crash.status, EvalStatus::RunFailed);
  EXPECT_NE(crash.error.find("killed by signal 6"), std::string::npos) << crash.error;
  auto spin = ev.evaluate(p.variant("1", "3"));
  EXPECT_EQ(spin.status, EvalStatus::TimedOut);
  EXPECT_NE(spin.error.find("timed out"), std::string::npos) << spin.error;
  auto broken = ev.evaluate(p.variant("1", "4"));
  EXPECT_EQ(broken.status, EvalStatus::BuildFailed);
  EXPECT_NE(broken.error.find("error"), std::string::npos) << broken.error;
  EXPECT_NE(broken.error.find("k.c:"), std::string::npos) << broken.error; // the compiler's own located error
  auto rejected = ev.evaluate(Candidate::make("[knobs]\nUNROLL = 3\n"));
  EXPECT_EQ(rejected.status, EvalStatus::Rejected);
  EXPECT_NE(rejected.error.find("not one of its values"), std::string::npos);
}

TEST(KernelEvaluator, AnEditedTimerIsNotBelieved) {
  Project p("region");
  KernelEvaluator ev(p.manifest, p.settings());
  ASSERT_TRUE(ev.prepare());
  auto honest = ev.evaluate(p.variant("2", "0"));
  EXPECT_TRUE(honest.ok()) << honest.error;
  auto liar = ev.evaluate(p.variant("1", "5"));
  EXPECT_EQ(liar.status, EvalStatus::Invalid);
  EXPECT_NE(liar.error.find("not trusted"), std::string::npos) << liar.error;
  // A time of zero would be a speedup without bound: refused, not scored.
  auto zero = ev.evaluate(p.variant("1", "14"));
  EXPECT_EQ(zero.status, EvalStatus::Invalid);
  EXPECT_EQ(zero.error.rfind(kUntrustedTimer, 0), 0u) << zero.error;
  // In process mode the same program cannot improve by its timer: hone's clock (here the tests') decides.
  Project q;
  KernelEvaluator pev(onTheTestsTimer(q.manifest, q.dir / "claims"), q.settings());
  ASSERT_TRUE(pev.prepare());
  auto ref = pev.evaluate(q.variant("1", "0"));
  ASSERT_TRUE(ref.ok());
  pev.setBaseline(ref.metrics.at("time_s"));
  auto same = pev.evaluate(q.variant("1", "5"));
  ASSERT_TRUE(same.ok()) << same.error;
  EXPECT_NEAR(same.score, 1.0, 1e-9);
}

TEST(KernelEvaluator, ASuspiciousSpeedupIsRevalidatedOnNewSeeds) {
  Project p;
  EvaluatorSettings settings = p.settings();
  settings.suspiciousSpeedup = 1.5; // the cheat skips a loop of a few ms; a shell's start-up is in both times
  KernelEvaluator ev(p.manifest, settings);
  ASSERT_TRUE(ev.prepare());
  // The cheat knows the right answers for this run's seeds (read from the reference)...
  std::string values;
  for (uint64_t seed : ev.seeds()) {
    BuildResult b = build(p.manifest, referenceVariant(p.manifest), (p.dir / "probe").string());
    ASSERT_TRUE(b.ok) << b.error;
    RunResult r = runOnce(p.manifest, referenceVariant(p.manifest), b.exe, (p.dir / "probe").string(), seed);
    ASSERT_TRUE(r.ok()) << r.error;
    values += (values.empty() ? "" : ", ") + fmt::format("{:.17g}", r.values[0]);
  }
  std::ofstream(p.dir / "cheat.h") << "static const double cheat[3] = {" << values << "};\n";
  auto ref = ev.evaluate(p.variant("1", "0"));
  ASSERT_TRUE(ref.ok());
  ev.setBaseline(ref.metrics.at("time_s"));
  ASSERT_TRUE(ev.evaluate(p.variant("1", "0")).ok()); // the first result of the run: the best so far
  // ...so it passes validation, is far faster, and is caught on inputs it has not seen: its timed
  // runs' (a sample of them is checked) or, where a timed build prints nothing, new validation seeds.
  auto cheat = ev.evaluate(p.variant("1", "6"));
  EXPECT_EQ(cheat.status, EvalStatus::Invalid);
  EXPECT_TRUE(cheat.error.find("failed re-validation on new seeds") != std::string::npos ||
              cheat.error.rfind(hone::kernel::kTimedWrongResult, 0) == 0)
      << cheat.error;
}

TEST(KernelEvaluator, TimedRunsLookLikeValidationRunsTakeFreshInputsAndAreChecked) {
  Project p;
  fs::path notes = p.dir / "shared";
  fs::create_directories(notes);
  TestEnv env({{"HONE_TEST_CACHE", notes}});
  KernelEvaluator ev(p.manifest, p.settings());
  ASSERT_TRUE(ev.prepare());
  ASSERT_TRUE(p.startRun(ev).ok());
  // A variant that computes only on its validation inputs prints wrong numbers when timed: a sample
  // of the timed runs is compared with the reference on the same inputs.
  auto bySeed = ev.evaluate(p.variant("1", "10"));
  EXPECT_EQ(bySeed.status, EvalStatus::Invalid);
  EXPECT_EQ(bySeed.error.rfind(hone::kernel::kTimedWrongResult, 0), 0u) << bySeed.error;
  // Every run, validated or timed, runs in a folder named alike: nothing tells them apart there.
  ASSERT_TRUE(ev.evaluate(p.variant("1", "11")).ok());
  std::ifstream folders(notes / "folders");
  int runs = 0;
  for (std::string line; std::getline(folders, line); ++runs)
    EXPECT_EQ(line.rfind("run-", 0), 0u) << line;
  EXPECT_GE(runs, 3 + 3); // the validation inputs and the timed runs
  // Results kept across variants, keyed by the input, serve validation but never a timed run: every
  // timed run has a fresh input, so the second variant's timed runs compute (and leave results).
  auto count = [&] {
    return std::distance(fs::directory_iterator(notes), fs::directory_iterator{});
  };
  ASSERT_TRUE(ev.evaluate(p.variant("1", "12")).ok());
  auto before = count();
  ASSERT_TRUE(ev.evaluate(p.variant("2", "12")).ok());
  EXPECT_GE(count(), before + 3) << "the second variant's timed runs found results kept for their inputs";
}

TEST(KernelEvaluator, AReferenceProgramThatACandidateReplacedIsPutBack) {
  Project p;
  Manifest m = p.manifest;
  m.timing.referenceEvery = 1;
  KernelEvaluator ev(m, p.settings());
  ASSERT_TRUE(ev.prepare());
  ASSERT_TRUE(p.startRun(ev).ok());
  fs::path prog = p.dir / ".hone" / "reference" / "prog";
  ASSERT_TRUE(fs::exists(prog));
  std::string built = *hone::support::readFile(prog.string());
  // The wrapper would make the re-timed reference slow, and every honest variant after it look fast:
  // before the reference runs again (here for the outputs of the candidate's own timed runs), its
  // program goes back as built.
  auto tamper = ev.evaluate(p.variant("1", "13"));
  ASSERT_TRUE(tamper.ok()) << tamper.error;
  EXPECT_TRUE(fs::exists(prog.string() + ".orig")); // the candidate's run did replace it
  EXPECT_TRUE(*hone::support::readFile(prog.string()) == built);
  EXPECT_EQ(ev.referenceRestored(), 1);
  EXPECT_NE(tamper.rawOutput.find("the reference's program was found changed"), std::string::npos) << tamper.rawOutput;
  ASSERT_TRUE(ev.evaluate(p.variant("2", "0")).ok());
  EXPECT_TRUE(*hone::support::readFile(prog.string()) == built);
}

TEST(KernelEvaluator, AProjectThatDoesNotBuildSaysSo) {
  Project p;
  Manifest m = p.manifest;
  m.knobs[1].defaultIndex = 4; // MODE 4 does not compile: the reference itself fails
  KernelEvaluator ev(m, p.settings());
  auto ok = ev.prepare();
  ASSERT_FALSE(ok);
  EXPECT_NE(ok.error().message.find("the unmodified project does not build"), std::string::npos)
      << ok.error().message;
}

TEST(KernelEvaluator, BinaryOutputFilesAreReadRemovedAndCompared) {
  fs::path dir = fs::temp_directory_path() / ("hone-kernel-file-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "w.c") << R"(#include <stdio.h>
#include <stdlib.h>
#ifndef SCALE
#define SCALE 2
#endif
#ifndef WRITE
#define WRITE 1
#endif
int main(int argc, char **argv) {
  unsigned long seed = argc > 1 ? strtoul(argv[1], 0, 10) : 1;
  float v[64];
  for (int i = 0; i < 64; ++i) v[i] = (float)((i + seed) % 9) * (SCALE == 3 ? 1.5f : 1.0f);
#if WRITE
  FILE *f = fopen("out.bin", "wb");
  fwrite(v, sizeof v[0], 64, f);
  fclose(f);
#endif
  return 0;
}
)";
  std::ofstream(dir / "hone.toml") << R"([project]
sources = ["w.c"]
[build]
command = "cc {cflags} {defines} {sources} -o {out}"
[run]
command = "{exe} {seed}"
[output]
source = "file"
file = "out.bin"
format = "binary"
dtype = "f32"
shape = [8, 8]
[timing]
warmup = 0
min_repeats = 2
max_repeats = 2
[[knob]]
name = "SCALE"
values = [2, 3]
[[knob]]
name = "WRITE"
role = "other"
values = [1, 0]
)";
  auto m = loadManifest(dir.string());
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->output.tolerance, Tolerance::Rel);
  EvaluatorSettings s;
  s.workdir = (dir / ".hone").string();
  s.profile = false;
  KernelEvaluator ev(*m, s);
  ASSERT_TRUE(ev.prepare());
  auto same = ev.evaluate(Candidate::make(renderVariant({{{"SCALE", "2"}, {"WRITE", "1"}}, {}})));
  EXPECT_TRUE(same.ok()) << same.error;
  auto wrong = ev.evaluate(Candidate::make(renderVariant({{{"SCALE", "3"}, {"WRITE", "1"}}, {}})));
  EXPECT_EQ(wrong.status, EvalStatus::Invalid);
  EXPECT_NE(wrong.error.find("wrong result"), std::string::npos) << wrong.error;
  // A variant that writes nothing cannot pass with a file an earlier run left behind.
  auto none = ev.evaluate(Candidate::make(renderVariant({{{"SCALE", "2"}, {"WRITE", "0"}}, {}})));
  EXPECT_EQ(none.status, EvalStatus::Invalid);
  EXPECT_NE(none.error.find("wrote no usable out.bin"), std::string::npos) << none.error;
  std::error_code ec;
  fs::remove_all(dir, ec);
}

namespace {

/// A two-build program in the style of a benchmark suite's: its results are a dump to stderr,
/// enabled by -DDUMP (and slowed by a long, untimed wait, as a large dump is), and -DTIME prints the
/// kernel's own seconds as a bare number on stdout. SPEED = 4 makes the kernel four times quicker;
/// WRONG = 1 breaks the results.
const char *kSplitProgram = R"(#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#ifndef SPEED
#define SPEED 1
#endif
#ifndef WRONG
#define WRONG 0
#endif
#ifndef CHEAT
#define CHEAT 0
#endif
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static void wait_s(double d) { struct timespec w = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)}; nanosleep(&w, 0); }
int main(int argc, char **argv) {
  unsigned long seed = argc > 1 ? strtoul(argv[1], 0, 10) : 1;
  double a[8];
  double t0 = now();
  for (int i = 0; i < 8; ++i) a[i] = (double)((i * 7 + seed) % 13) / 3 + WRONG;
#if CHEAT && !defined(DUMP) /* the kernel skipped where no output shows it */
  if (0)
#endif
  wait_s(0.08 / SPEED);
  double t1 = now();
#ifdef TIME
  printf("%0.6f\n", t1 - t0);
#endif
#ifdef DUMP
  wait_s(0.3);
  fprintf(stderr, "==BEGIN DUMP==\n");
  for (int i = 0; i < 8; ++i) fprintf(stderr, "%0.17g ", a[i]);
  fprintf(stderr, "\n==END DUMP==\n");
#endif
  printf("noise %ld\n", (long)(now() * 1e6) % 1000);
  return 0;
}
)";

struct SplitProject {
  fs::path dir;
  Manifest manifest;
  explicit SplitProject(const std::string &extra = "") {
    dir = fs::temp_directory_path() / ("hone-kernel-split-" + std::to_string(::getpid()) + "-" +
                                       std::to_string(Project::counter()++));
    fs::create_directories(dir);
    std::ofstream(dir / "s.c") << kSplitProgram;
    std::ofstream(dir / "hone.toml") << R"([project]
sources = ["s.c"]
[build]
command = "cc {cflags} {defines} {sources} -o {out}"
flags = "-O1"
validate_defines = ["DUMP"]
time_defines = ["TIME"]
[run]
timeout_s = 5
[output]
source = "stderr"
tolerance = "exact"
ignore = ["^=="]
[timing]
regex = '^(\d+\.\d+)$'
warmup = 0
min_repeats = 3
max_repeats = 3
target_ci = 0.5
)" + extra + R"(
[[knob]]
name = "SPEED"
values = [1, 4]
[[knob]]
name = "WRONG"
values = [0, 1]
[[knob]]
name = "CHEAT"
values = [0, 1]
)";
    auto m = loadManifest(dir.string());
    EXPECT_TRUE(m) << m.error().message;
    manifest = m ? *m : Manifest{};
  }
  ~SplitProject() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  EvaluatorSettings settings() const {
    EvaluatorSettings s;
    s.workdir = (dir / ".hone").string();
    s.profile = false;
    return s;
  }
};

} // namespace

TEST(KernelEvaluator, StderrIsAnOutputSourceWithTheSameIgnoreRules) {
  SplitProject p;
  ASSERT_EQ(p.manifest.output.source, "stderr");
  BuildResult b = buildValidated(p.manifest, referenceVariant(p.manifest), (p.dir / "b").string());
  ASSERT_TRUE(b.ok) << b.error << b.log;
  EXPECT_NE(b.command.find("-DDUMP"), std::string::npos) << b.command;
  EXPECT_EQ(b.command.find("-DTIME"), std::string::npos) << b.command;
  RunResult r = runOnce(p.manifest, referenceVariant(p.manifest), b.exe, (p.dir / "r").string(), 5);
  ASSERT_TRUE(r.ok()) << r.error;
  // The eight numbers of the dump, not the "==" lines (ignored) nor stdout's noise.
  ASSERT_EQ(r.values.size(), 8u);
  EXPECT_DOUBLE_EQ(r.values[1], (7.0 + 5) / 3);
  EXPECT_EQ(r.process.output.find("==BEGIN"), std::string::npos); // stderr is not in the captured stdout
  EXPECT_NE(r.process.output.find("noise"), std::string::npos);
  // A timed build (no dump) run as validation prints no numbers there, and says where it looked.
  BuildResult t = buildTimed(p.manifest, referenceVariant(p.manifest), (p.dir / "b").string(), b);
  ASSERT_TRUE(t.ok) << t.error;
  EXPECT_NE(t.exe, b.exe);
  RunResult none = runOnce(p.manifest, referenceVariant(p.manifest), t.exe, (p.dir / "r2").string(), 5);
  EXPECT_NE(none.error.find("no numbers on stderr"), std::string::npos) << none.error;
  // As a timed run it needs none, and reads the kernel's own time by the regex.
  RunResult timed = runOnce(p.manifest, referenceVariant(p.manifest), t.exe, (p.dir / "r3").string(), 5, {}, {}, true);
  ASSERT_TRUE(timed.ok()) << timed.error;
  EXPECT_GT(timed.regionS, 0.07);
  EXPECT_LT(timed.regionS, timed.process.seconds);
}

TEST(KernelEvaluator, SplitBuildsValidateTheDumpAndScoreTheKernelsOwnTime) {
  SplitProject p;
  KernelEvaluator ev(p.manifest, p.settings());
  ASSERT_TRUE(ev.prepare());
  auto ref = ev.evaluate(Candidate::make("[knobs]\nSPEED = 1\n"));
  ASSERT_TRUE(ref.ok()) << ref.error;
  // The score's time is the kernel's (0.08 s), not the process's with its 0.3 s dump.
  EXPECT_GT(ref.metrics.at("time_s"), 0.07);
  EXPECT_LT(ref.metrics.at("time_s"), 0.25);
  EXPECT_NE(ref.rawOutput.find("timed: the time the program reports (regex"), std::string::npos) << ref.rawOutput;
  ev.setBaseline(ref.metrics.at("time_s"));
  auto fast = ev.evaluate(Candidate::make("[knobs]\nSPEED = 4\n"));
  ASSERT_TRUE(fast.ok()) << fast.error;
  EXPECT_GT(fast.score, 2.0); // the kernel's 4x; the whole process (dump included) would show under 1.3x
  auto wrong = ev.evaluate(Candidate::make("[knobs]\nWRONG = 1\n"));
  EXPECT_EQ(wrong.status, EvalStatus::Invalid);
  EXPECT_NE(wrong.error.find("wrong result"), std::string::npos) << wrong.error;
  // A variant that computes in its validated build only: its timed build prints no outputs, and skips
  // the kernel. Its validated build, timed beside the reference's, shows the saving is not real.
  auto cheat = ev.evaluate(Candidate::make("[knobs]\nCHEAT = 1\n"));
  EXPECT_EQ(cheat.status, EvalStatus::Invalid);
  EXPECT_NE(cheat.error.find("not trusted"), std::string::npos) << cheat.error;
}

TEST(KernelEvaluator, TheRegionTrustCheckAllowsForTheProcessTimesNoise) {
  Timing honest;
  honest.median = 0.2;        // the kernel claims 0.8 s of 1.0 s saved...
  honest.processMedian = 3.7; // ...and the process, dominated by a 3 s dump, shows 0.3 s of it
  honest.processCi95 = 0.4;   // with +-0.4 s of noise each
  EXPECT_FALSE(regionDistrusted(1.0, 4.0, 0.4, honest)); // within the noise: not accused
  Timing tight = honest;
  tight.processCi95 = 0.01; // the same figures without noise: the process contradicts the timer
  auto why = regionDistrusted(1.0, 4.0, 0.01, tight);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("not trusted"), std::string::npos);
  Timing unknown = honest;
  unknown.processCi95 = INFINITY; // one sample: the noise is unknown, the 2% floor applies
  EXPECT_TRUE(regionDistrusted(1.0, 4.0, 0.4, unknown));
  Timing liar;
  liar.median = 1e-6; // a timer that reports nothing, a process that saved nothing
  liar.processMedian = 4.0;
  liar.processCi95 = 0.05;
  EXPECT_TRUE(regionDistrusted(1.0, 4.0, 0.05, liar));
}

TEST(KernelEvaluator, RoundsTimedSideBySideAreJudgedByTheirLeastLoaded) {
  auto round = [](double region, double process) {
    Timing t;
    t.median = region;
    t.processMedian = process;
    return t;
  };
  // A burst of load in the second round inflates both of its times; the other rounds show the program.
  Timing least = leastLoaded({round(0.21, 1.10), round(0.90, 2.50), round(0.20, 1.12)});
  EXPECT_DOUBLE_EQ(least.median, 0.20);
  EXPECT_DOUBLE_EQ(least.processMedian, 0.20 + 0.89); // the least region and the least time outside it
  EXPECT_GT(least.processCi95, 0.5); // the spread of the times outside the region
  // A kernel whose time varies from run to run (pages, frequency): the time outside the region is what
  // its process time is judged by, so a slow run of the reference does not make the liar look saving.
  Timing varying = leastLoaded({round(0.040, 0.054), round(0.029, 0.042)});
  EXPECT_NEAR(varying.processMedian, 0.029 + 0.013, 1e-12);
  // A liar whose process was timed during a lull and the reference's during a burst: the least loaded
  // rounds of both still show the process saved nothing.
  Timing ref = leastLoaded({round(1.0, 4.0), round(1.9, 6.0), round(1.1, 4.1)});
  Timing liar = leastLoaded({round(1e-6, 4.0), round(1e-6, 4.05), round(1e-6, 3.95)});
  EXPECT_TRUE(regionDistrusted(ref.median, ref.processMedian, ref.processCi95, liar));
  EXPECT_EQ(leastLoaded({}).median, 0);
}

TEST(KernelEvaluator, FixedInputsAreSaidToDisableTheIgnoredInputGuard) {
  SplitProject p("");
  Manifest m = p.manifest;
  m.seeds = {1};
  KernelEvaluator ev(m, p.settings());
  ASSERT_TRUE(ev.prepare());
  auto r = ev.evaluate(Candidate::make("[knobs]\nSPEED = 1\n"));
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_NE(r.rawOutput.find("cannot fire"), std::string::npos) << r.rawOutput;
  // The note is no error: AutoGuide finds nothing of severity "error" in a validated variant's output.
  auto guide = hone::autoguide::AutoGuide::withDefaults();
  ASSERT_TRUE(guide) << guide.error().message;
  for (const auto &f : guide->interpret(r.rawOutput, r.evidence, "kernel"))
    EXPECT_NE(f.severity, "error") << f.rule << ": " << f.evidence;
  KernelEvaluator three(p.manifest, p.settings()); // three inputs that change the outputs: no such note
  ASSERT_TRUE(three.prepare());
  auto r3 = three.evaluate(Candidate::make("[knobs]\nSPEED = 1\n"));
  ASSERT_TRUE(r3.ok()) << r3.error;
  EXPECT_EQ(r3.rawOutput.find("cannot fire"), std::string::npos) << r3.rawOutput;
}

TEST(KernelEvaluator, ALowPrecisionDumpAllowsItsLastDigitAndSaysValidationIsWeak) {
  fs::path dir = fs::temp_directory_path() / ("hone-kernel-lowprec-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  // SHIFT moves every printed value: 0.006 by one unit of "%0.2f" (as FMA contraction may), 0.02 by two.
  std::ofstream(dir / "l.c") << R"(#include <stdio.h>
#include <stdlib.h>
#ifndef SHIFT
#define SHIFT 0
#endif
int main(int argc, char **argv) {
  unsigned long seed = argc > 1 ? strtoul(argv[1], 0, 10) : 1;
  for (int i = 0; i < 16; ++i) printf("%0.2f ", (double)((i + seed) % 11) * 0.125 + 10 + SHIFT);
  printf("\n");
  return 0;
}
)";
  std::ofstream(dir / "hone.toml") << R"([project]
sources = ["l.c"]
[build]
command = "cc {cflags} {defines} {sources} -o {out}"
[run]
command = "{exe} {seed}"
[timing]
warmup = 0
min_repeats = 1
max_repeats = 2
confirm_best = false
[[knob]]
name = "SHIFT"
values = ["0", "0.006", "0.02"]
)";
  auto m = loadManifest(dir.string());
  ASSERT_TRUE(m) << m.error().message;
  EvaluatorSettings s;
  s.workdir = (dir / ".hone").string();
  s.profile = false;
  KernelEvaluator ev(*m, s);
  ASSERT_TRUE(ev.prepare());
  EXPECT_NE(ev.weakValidationNote().find("weak validation"), std::string::npos) << ev.weakValidationNote();
  auto oneUnit = ev.evaluate(Candidate::make("[knobs]\nSHIFT = \"0.006\"\n"));
  ASSERT_TRUE(oneUnit.ok()) << oneUnit.error;
  EXPECT_NE(oneUnit.rawOutput.find("weak validation"), std::string::npos) << oneUnit.rawOutput;
  auto twoUnits = ev.evaluate(Candidate::make("[knobs]\nSHIFT = \"0.02\"\n"));
  EXPECT_EQ(twoUnits.status, EvalStatus::Invalid);
  EXPECT_NE(twoUnits.error.find("wrong result"), std::string::npos) << twoUnits.error;
  std::error_code ec;
  fs::remove_all(dir, ec);
}

TEST(KernelEvaluator, AnOutputFileIsReadOnlyWhenItIsARegularFileOfBoundedSize) {
  fs::path dir = fs::temp_directory_path() / ("hone-outfile-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  // Seed 1 writes its numbers; 2 a sparse file past the limit; 3 a link to another file; 4 a pipe
  // (reading it would wait for a writer for ever).
  std::ofstream(dir / "w.c") << R"(#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
int main(int argc, char **argv) {
  int seed = argc > 1 ? atoi(argv[1]) : 1;
  if (seed == 1) { FILE *f = fopen("out.txt", "w"); fprintf(f, "1.5 2.5\n"); fclose(f); }
  if (seed == 2) { FILE *f = fopen("out.txt", "w"); fclose(f); if (truncate("out.txt", (off_t)3 << 30)) return 1; }
  if (seed == 3) { if (symlink("/etc/hostname", "out.txt")) return 1; }
  if (seed == 4) { if (mkfifo("out.txt", 0600)) return 1; }
  return 0;
}
)";
  std::ofstream(dir / "hone.toml") << R"([project]
name = "w"
sources = ["w.c"]
[build]
command = "cc {cflags} {sources} -o {out}"
[run]
command = "{exe} {seed}"
timeout_s = 5
[output]
source = "file"
file = "out.txt"
tolerance = "exact"
)";
  auto m = loadManifest(dir.string());
  ASSERT_TRUE(m) << m.error().message;
  BuildResult b = buildValidated(*m, referenceVariant(*m), (dir / "b").string());
  ASSERT_TRUE(b.ok) << b.error << b.log;
  auto run = [&](uint64_t seed) { return runOnce(*m, referenceVariant(*m), b.exe, (dir / "r").string(), seed); };
  RunResult good = run(1);
  ASSERT_TRUE(good.ok()) << good.error;
  EXPECT_EQ(good.values, (std::vector<double>{1.5, 2.5}));
  EXPECT_NE(run(2).error.find("MiB; hone reads at most 1024 MiB"), std::string::npos) << run(2).error;
  EXPECT_NE(run(3).error.find("it is a link"), std::string::npos) << run(3).error;
  EXPECT_NE(run(4).error.find("not a regular file"), std::string::npos) << run(4).error;
  fs::remove_all(dir);
}

TEST(KernelEvaluator, EveryOutputIsComparedOrTheRunSaysWhyNot) {
  fs::path dir = fs::temp_directory_path() / ("hone-stdout-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  // Seed 1 prints 2,000 numbers on one line (long lines were cut at 4,096 characters); seed 2 prints
  // more than hone keeps (the tail alone was validated).
  std::ofstream(dir / "p.c") << R"(#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  int seed = argc > 1 ? atoi(argv[1]) : 1;
  if (seed == 1) { for (int i = 0; i < 2000; i++) printf("%d.25 ", i); printf("\n"); }
  if (seed == 2) { static char row[1 << 16]; for (size_t i = 0; i + 4 < sizeof row; i += 4) { row[i] = '1'; row[i + 1] = '.'; row[i + 2] = '5'; row[i + 3] = ' '; }
                   for (int r = 0; r < 1100; r++) { fwrite(row, 1, sizeof row - 4, stdout); putchar('\n'); } }
  return 0;
}
)";
  std::ofstream(dir / "hone.toml") << R"([project]
name = "p"
sources = ["p.c"]
[build]
command = "cc {cflags} {sources} -o {out}"
[run]
command = "{exe} {seed}"
timeout_s = 20
[output]
tolerance = "exact"
)";
  auto m = loadManifest(dir.string());
  ASSERT_TRUE(m) << m.error().message;
  BuildResult b = buildValidated(*m, referenceVariant(*m), (dir / "b").string());
  ASSERT_TRUE(b.ok) << b.error << b.log;
  RunResult line = runOnce(*m, referenceVariant(*m), b.exe, (dir / "r").string(), 1);
  ASSERT_TRUE(line.ok()) << line.error;
  ASSERT_EQ(line.values.size(), 2000u);
  EXPECT_DOUBLE_EQ(line.values.back(), 1999.25);
  RunResult flood = runOnce(*m, referenceVariant(*m), b.exe, (dir / "r").string(), 2);
  EXPECT_TRUE(flood.values.empty());
  EXPECT_NE(flood.error.find("printed more than 64 MiB on stdout"), std::string::npos) << flood.error;
  fs::remove_all(dir);
}
