// perf stat: CPU utilisation, and hardware counters where the machine exposes them. Findings: a
// program that keeps few of the cores busy.
// Here too: the parser of `perf stat -x,` CSV, and its part of the profile's JSON.
#include "kernel/profilers/Profiler.h"

#include "support/FileUtil.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

// ---- the parser (declared in kernel/Profile.h) ----

namespace hone::kernel {

using support::Error;
using support::Expected;

Expected<PerfStat> parsePerfStat(const std::string &text) {
  PerfStat p;
  int lineNo = 0;
  bool any = false;
  for (const auto &l : reportLines(text)) {
    ++lineNo;
    if (trimBlanks(l).empty() || l[0] == '#')
      continue;
    bool ok;
    auto f = csvFields(l, &ok);
    if (!ok || f.size() < 3)
      continue; // the program's own stderr shares the stream
    std::string value = trimBlanks(f[0]), event = trimBlanks(f[2]);
    if (event.empty())
      continue;
    if (value == "<not supported>" || value == "<not counted>") {
      p.unsupported.push_back(event);
      any = true;
      continue;
    }
    auto v = toNumber(value);
    if (!v)
      continue;
    any = true;
    p.counters[event] = *v;
    p.units[event] = trimBlanks(f[1]);
    if (f.size() >= 7 && trimBlanks(f[6]) == "CPUs utilized")
      if (auto u = toNumber(f[5]))
        p.cpusUtilized = *u;
  }
  if (!any)
    return Error{"no perf stat counters in the output (expected `perf stat -x,` CSV lines)"};
  return p;
}

} // namespace hone::kernel

namespace hone::kernel::profilers {

namespace {

/// perf stat needs perf (its counters may still be refused: said by the run).
std::optional<std::string> perfUnavailable(const Manifest &, const ProfileOptions &, const KernelProfile &) {
  if (!onPath("perf"))
    return "not installed (apt-get install linux-perf)";
  return std::nullopt;
}

/// perf stat: CPU utilisation, and hardware counters where the machine exposes them.
void perfRun(const Manifest &m, const Variant &v, const std::string &dir, const ProfileOptions &o, KernelProfile &p) {
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

/// Its part of the profile's JSON: the counters, those not supported, and the CPUs utilized.
void perfJson(const KernelProfile &p, json &j) {
  if (p.perf)
    j["perf"] = {
        {"counters", p.perf->counters}, {"unsupported", p.perf->unsupported}, {"cpus_utilized", p.perf->cpusUtilized}};
}

} // namespace

const Profiler kPerf{"perf", perfUnavailable, perfRun, perfDiagnose, perfJson};

} // namespace hone::kernel::profilers
