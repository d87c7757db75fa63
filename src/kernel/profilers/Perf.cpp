// perf stat: CPU utilisation, and hardware counters where the machine exposes them. Findings: a
// program that keeps few of the cores busy.
#include "kernel/profilers/Profiler.h"

#include "support/FileUtil.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace hone::kernel::profilers {

namespace {

/// perf stat: CPU utilisation, and hardware counters where the machine exposes them.
void perfRun(const Manifest &m, const Variant &v, const std::string &dir, const ProfileOptions &o, KernelProfile &p) {
  if (!onPath("perf")) {
    p.skipped.push_back("perf: not installed (apt-get install linux-perf)");
  } else {
    BuildResult b = build(m, v, dir + "/perf-build", {}, m.timeDefines);
    if (b.ok) {
      std::string csv = dir + "/perf.csv";
      RunResult r = runOnce(m, v, b.exe, dir + "/perf-run", o.seed,
                            {"perf", "stat", "-x,", "-o", csv, "-e",
                             "task-clock,cycles,instructions,cache-references,cache-misses,branch-misses"},
                            {csv}, true);
      auto text = support::readFile(csv);
      auto parsed = text ? parsePerfStat(*text) : support::Expected<PerfStat>(support::Error{text.error().message});
      if (!r.ok()) {
        p.skipped.push_back("perf: the program failed under perf stat: " + r.error);
      } else if (parsed) {
        if (!parsed->unsupported.empty())
          p.skipped.push_back(fmt::format("perf: hardware counters not supported here ({}); software events only",
                                          fmt::join(parsed->unsupported, ", ")));
        p.perf = std::move(*parsed);
        p.tools.push_back("perf");
      } else {
        p.skipped.push_back("perf: " + (r.ok() ? parsed.error().message : r.error) +
                            " (perf_event_paranoid may forbid it)");
      }
    } else {
      p.skipped.push_back("perf: the build failed: " + b.error);
    }
  }
}

/// A program that keeps few of the cores busy.
void perfDiagnose(Findings &f, const Thresholds &t) {
  const KernelProfile &p = f.p;
  if (p.perf && !p.gpu && p.cores > 1 && p.perf->cpusUtilized > 0 &&
      p.perf->cpusUtilized < t.usedCoresFraction * p.cores) {
    double used = p.perf->cpusUtilized;
    f.add(FindingKind::Serial, "CPU cores", 1.0 - used / p.cores,
          fmt::format("the program keeps {:.2f} of {} cores busy ({:.0f}%)", used, p.cores, 100 * used / p.cores),
          {{"cpus_utilized", used}, {"cores", p.cores}});
  }
}

} // namespace

const Profiler kPerf{"perf", perfRun, perfDiagnose};

} // namespace hone::kernel::profilers
