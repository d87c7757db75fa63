#include "kernel/Diagnose.h"

#include "kernel/SourceKnobs.h"
#include "support/DataPaths.h"
#include "support/JsonText.h"
#include "support/FileUtil.h"
#include "support/Subprocess.h"
#include "support/TomlReader.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>
#include <set>
#include <unistd.h>
#include <cmath>
#include <filesystem>
#include <thread>

namespace hone::kernel {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

bool onPath(const std::string &tool) {
  const char *path = std::getenv("PATH");
  if (!path)
    return false;
  std::string p(path);
  for (size_t from = 0; from <= p.size();) {
    size_t to = p.find(':', from);
    if (to == std::string::npos)
      to = p.size();
    std::error_code ec;
    fs::path candidate = fs::path(p.substr(from, to - from)) / tool;
    if (fs::exists(candidate, ec) && access(candidate.c_str(), X_OK) == 0)
      return true;
    from = to + 1;
  }
  return false;
}

/// `path` relative to the project folder when it lies inside it; empty when it lies outside
/// (system headers, the C library).
std::string projectRelative(const Manifest &m, const std::string &path) {
  std::error_code ec;
  fs::path p = fs::path(path).is_absolute() ? fs::path(path) : fs::path(m.dir) / path;
  if (path.empty() || !fs::is_regular_file(p, ec)) // "???" (no debug information), a library's own sources
    return "";
  fs::path rel = fs::relative(fs::weakly_canonical(p, ec), fs::weakly_canonical(m.dir, ec), ec);
  if (ec || rel.empty())
    return "";
  std::string r = rel.string();
  if (r.rfind("..", 0) == 0) {
    // A header one level up (examples share one) still belongs to the project, and so do the sources
    // the manifest compiles and the headers of its include folders (PolyBench's ../../utilities).
    if (p.extension() != "" && r.rfind("../", 0) == 0 && r.find('/', 3) == std::string::npos)
      return r;
    fs::path canonical = fs::weakly_canonical(p, ec);
    for (const auto &s : m.sources)
      if (fs::weakly_canonical(fs::path(m.dir) / s, ec) == canonical)
        return s;
    for (const auto &d : m.includeDirs) {
      fs::path inside = fs::relative(canonical, fs::weakly_canonical(fs::path(m.dir) / d, ec), ec);
      if (!ec && !inside.empty() && inside.string().rfind("..", 0) != 0)
        return r;
    }
    return "";
  }
  return r;
}

/// The same for a variant profiled in `dir`: an edited file is compiled from the variant's build
/// folder under `dir`, and stands for the project's file of that name.
std::string variantRelative(const Manifest &m, const Variant &v, const std::string &dir, const std::string &path) {
  std::error_code ec;
  std::string abs = fs::weakly_canonical(fs::absolute(path, ec), ec).string();
  std::string root = fs::weakly_canonical(fs::absolute(dir, ec), ec).string() + "/";
  if (abs.rfind(root, 0) == 0)
    for (const auto &[name, text] : v.files)
      if (abs.size() > name.size() && abs.compare(abs.size() - name.size() - 1, std::string::npos, "/" + name) == 0)
        return name;
  return projectRelative(m, path);
}

std::string firstLines(const std::string &text, size_t n) {
  std::string out;
  size_t at = 0;
  for (size_t i = 0; i < n && at < text.size(); ++i) {
    size_t nl = text.find('\n', at);
    out += text.substr(at, nl == std::string::npos ? std::string::npos : nl - at + 1);
    if (nl == std::string::npos)
      break;
    at = nl + 1;
  }
  return out;
}

/// The schedule an OpenMP loop with this clause runs with, as "kind[,chunk]" (OpenMP 5.2, 2.11.4;
/// libgomp: OMP_SCHEDULE unset, or a dynamic schedule without a chunk, means chunks of 1).
std::string effectiveSchedule(const Manifest &m, const Variant &v, const OmpSchedule &o) {
  std::string kind = o.kind, chunk = o.chunk;
  if (kind == "runtime") {
    std::string value;
    if (const char *inherited = std::getenv("OMP_SCHEDULE"))
      value = inherited;
    std::vector<std::string> env = m.env;
    for (auto &e : expand(m, v).env)
      env.push_back(e);
    for (const auto &e : env)
      if (e.rfind("OMP_SCHEDULE=", 0) == 0)
        value = e.substr(13);
    value.erase(std::remove_if(value.begin(), value.end(), [](unsigned char c) { return std::isspace(c); }),
                value.end());
    std::transform(value.begin(), value.end(), value.begin(), [](unsigned char c) { return std::tolower(c); });
    if (auto colon = value.find(':'); colon != std::string::npos) // a modifier: monotonic:dynamic
      value = value.substr(colon + 1);
    auto comma = value.find(',');
    kind = value.empty() ? "dynamic" : value.substr(0, comma);
    chunk = comma == std::string::npos ? "" : value.substr(comma + 1);
  }
  if ((kind == "dynamic" || kind == "guided") && chunk.empty())
    chunk = "1";
  return chunk.empty() ? kind : kind + "," + chunk;
}

} // namespace

namespace {
double event(const CostLine &c, const char *name) {
  auto it = c.events.find(name);
  return it == c.events.end() ? 0 : it->second;
}
} // namespace

/// Of valgrind's outputs in `dir` named `prefix`*, the program's, not the shell's that started it
/// (with --trace-children both write one, and a small program's may be the smaller): the one whose
/// "cmd:" starts with the program, else the largest; "" when there is none.
std::string programsOutput(const std::string &dir, const std::string &prefix, const std::string &exe) {
  std::error_code ec;
  std::string best;
  uintmax_t bestSize = 0;
  for (const auto &entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().rfind(prefix, 0) != 0)
      continue;
    bool program = false;
    if (auto text = support::readFile(entry.path().string()))
      if (size_t at = text->find("\ncmd:"); at != std::string::npos) {
        std::string cmd = text->substr(at + 5, text->find('\n', at + 1) - at - 5);
        cmd.erase(0, cmd.find_first_not_of(' '));
        program = !exe.empty() && cmd.rfind(exe, 0) == 0;
      }
    uintmax_t size = entry.file_size(ec) + (program ? (uintmax_t{1} << 60) : 0);
    if (size > bestSize) {
      bestSize = size;
      best = entry.path().string();
    }
  }
  return best;
}

/// callgrind on the profiled build: what the calls made at each of the project's lines cost with
/// their callees (files relative to the project); nullopt, with the reason in `p.skipped`, when it
/// does not run or its output does not read.
std::optional<CallCosts> callCostsOf(const Manifest &m, const Variant &v, const std::string &dir,
                                     const std::string &exe, uint64_t seed, KernelProfile &p) {
  std::error_code ec;
  RunResult r = runOnce(m, v, exe, dir + "/cg-run", seed,
                        {"valgrind", "--tool=callgrind", "--trace-children=yes", "--compress-strings=no",
                         "--compress-pos=no", "--callgrind-out-file=" + dir + "/callgrind.out.%p"},
                        {dir + "/callgrind.out.*"}, true);
  std::string best = programsOutput(dir, "callgrind.out.", exe);
  if (best.empty()) {
    p.skipped.push_back("callgrind: no output (" + (r.ok() ? std::string("none written") : r.error) + ")");
    return std::nullopt;
  }
  auto text = support::readFile(best);
  auto parsed = text ? parseCallgrindCalls(*text) : support::Expected<CallCosts>(text.error());
  if (!parsed) {
    p.skipped.push_back("callgrind: " + parsed.error().message);
    return std::nullopt;
  }
  CallCosts mine;
  mine.total = parsed->total;
  for (const auto &[at, ir] : parsed->lines)
    if (std::string rel = variantRelative(m, v, dir, at.first); !rel.empty())
      mine.lines[{rel, at.second}] += ir;
  p.tools.push_back("callgrind");
  return mine;
}

namespace {

/// A profiler of profileVariant: it profiles `v` of `m` in `dir` as `o` asks and adds what it found (or why
/// it could not) to `p`.
using Profiler = void (*)(const Manifest &m, const Variant &v, const std::string &dir, const ProfileOptions &o,
                          KernelProfile &p);

/// cachegrind: exact instruction and cache-miss counts per function and line.
void profileCachegrind(const Manifest &m, const Variant &v, const std::string &dir, const ProfileOptions &o,
                       KernelProfile &p) {
  if (o.cachegrind && !p.gpu) {
    if (!onPath("valgrind")) {
      p.skipped.push_back("cachegrind: valgrind is not installed (apt-get install valgrind)");
    } else {
      // The timed build (`[build] time_defines`): what is profiled is what is timed, not a dump.
      std::vector<std::string> defines = m.profileDefines;
      defines.insert(defines.end(), m.timeDefines.begin(), m.timeDefines.end());
      BuildResult b = build(m, v, dir + "/cg-build", {"-g"}, defines);
      if (!b.ok) {
        p.skipped.push_back("cachegrind: the profiling build failed: " + b.error);
      } else {
        std::string out = dir + "/cachegrind.out.%p";
        auto underValgrind = [&](const std::string &exe) {
          return runOnce(m, v, exe, dir + "/cg-run", o.seed,
                         {"valgrind", "--tool=cachegrind", "--cache-sim=yes", "--trace-children=yes",
                          "--cachegrind-out-file=" + out},
                         {dir + "/cachegrind.out.*"}, true);
        };
        std::string profiled = b.exe;
        RunResult r = underValgrind(b.exe);
        // Valgrind does not decode AVX-512 (EVEX) instructions, which `-march=native` emits on a machine
        // that has them: the run stops at the first one with SIGILL, and its profile would say that no
        // line of the program runs. The same code without AVX-512 has the same lines and loops.
        if (r.process.output.find("Unrecognised instruction") != std::string::npos) {
          BuildResult narrow = build(m, v, dir + "/cg-build", {"-g", "-mno-avx512f"}, defines);
          if (narrow.ok) {
            profiled = narrow.exe;
            r = underValgrind(narrow.exe);
            p.notes.push_back("cachegrind: valgrind cannot run AVX-512 instructions; profiled the build with "
                              "-mno-avx512f added (the same lines and loops, narrower vectors)");
          }
        }
        std::string best = programsOutput(dir, "cachegrind.out.", profiled);
        if (best.empty()) {
          p.skipped.push_back("cachegrind: no output (" + (r.ok() ? std::string("none written") : r.error) + ")");
        } else if (auto text = support::readFile(best)) {
          auto parsed = parseCachegrind(*text);
          if (parsed) {
            // The largest functions outside the project (printf's family when a dump is timed).
            std::vector<std::pair<std::string, double>> outside;
            double total = parsed->totals.count("Ir") ? parsed->totals.at("Ir") : 0;
            for (const auto &c : parsed->functions)
              if (total > 0 && variantRelative(m, v, dir, c.file).empty() && event(c, "Ir") / total >= 0.01 &&
                  c.function != "???" && c.function.rfind("0x", 0) != 0) // (a name, not an address)
                outside.push_back({c.function, event(c, "Ir") / total});
            std::stable_sort(outside.begin(), outside.end(), [](const auto &a, const auto &b) { return a.second > b.second; });
            if (outside.size() > 4)
              outside.resize(4);
            // Keep the project's own code; name files relative to it.
            auto keep = [&](std::vector<CostLine> &lines) {
              std::vector<CostLine> mine;
              for (auto &c : lines) {
                std::string rel = variantRelative(m, v, dir, c.file);
                if (rel.empty())
                  continue;
                c.file = rel;
                mine.push_back(std::move(c));
              }
              lines = std::move(mine);
            };
            keep(parsed->functions);
            keep(parsed->lines);
            p.breakdown = timeBreakdown(m, v, *parsed);
            if (p.breakdown)
              p.breakdown->scope = m.timing.mode == "region" ? "region" : "process";
            // What the nests' calls ran, when it can matter: a nest calls out and the code outside the
            // project (or outside the nests) counts; a pure kernel is not run a second time.
            if (p.breakdown &&
                std::any_of(p.breakdown->nests.begin(), p.breakdown->nests.end(), [](const NestShare &n) { return n.calls; })) {
              double elsewhere = p.breakdown->outside;
              for (const auto &f : p.breakdown->files)
                elsewhere += f.second;
              if (elsewhere >= Thresholds{}.coldShare) {
                p.callCosts = callCostsOf(m, v, dir, profiled, o.seed, p);
                if (p.callCosts)
                  addCallShares(*p.breakdown, *p.callCosts);
              }
            }
            if (!p.callCosts)
              p.skipped.push_back("callgrind: not needed: no loop nest calls out while code outside the nests "
                                  "counts (2% or more)");
            if (p.breakdown)
              p.breakdown->outsideFunctions = std::move(outside);
            p.cachegrind = std::move(*parsed);
            p.tools.push_back("cachegrind");
          } else {
            p.skipped.push_back("cachegrind: " + parsed.error().message);
          }
        }
      }
    }
  }
}

/// perf stat: CPU utilisation, and hardware counters where the machine exposes them.
void profilePerf(const Manifest &m, const Variant &v, const std::string &dir, const ProfileOptions &o,
                 KernelProfile &p) {
  if (o.perf) {
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
}

/// Compiler remarks: which loops vectorized, and why the others did not.
void profileRemarks(const Manifest &m, const Variant &v, const std::string &dir, const ProfileOptions &o,
                    KernelProfile &p) {
  if (o.remarks && !p.gpu) {
    BuildResult b = build(m, v, dir + "/remarks-gcc", {"-fopt-info-vec-all"});
    std::vector<Remark> remarks;
    bool ran = false;
    if (b.ok) {
      if (auto r = parseGccRemarks(b.log); r && !r->empty()) {
        remarks = std::move(*r);
        ran = true;
      }
    }
    if (!ran) {
      BuildResult c = build(m, v, dir + "/remarks-clang",
                            {"-Rpass=loop-vectorize", "-Rpass-missed=loop-vectorize", "-Rpass-analysis=loop-vectorize"});
      if (c.ok)
        if (auto r = parseClangRemarks(c.log); r && !r->empty()) {
          remarks = std::move(*r);
          ran = true;
        }
    }
    if (ran) {
      for (auto &r : remarks) {
        std::string rel = variantRelative(m, v, dir, r.file);
        if (rel.empty() || r.kind == "note")
          continue;
        r.file = rel;
        p.remarks.push_back(std::move(r));
      }
      p.tools.push_back("remarks");
    } else {
      p.skipped.push_back("remarks: the compiler gave none (it takes gcc's -fopt-info-vec-all or clang's -Rpass)");
    }
  }
}

/// OpenMP schedule clauses of the sources, with the schedule this variant runs them with.
void profileOmp(const Manifest &m, const Variant &v, const std::string &/*dir*/, const ProfileOptions &/*o*/,
                KernelProfile &p) {
  std::set<std::string> scanned;
  for (const auto &list : {m.sources, m.editable})
    for (const auto &name : list) {
      if (!scanned.insert(name).second)
        continue;
      auto edited = v.files.find(name);
      auto text = edited != v.files.end() ? support::Expected<std::string>(edited->second)
                                          : support::readFile((fs::path(m.dir) / name).string());
      if (!text)
        continue;
      for (auto &o : findOmpSchedules(name, *text)) {
        o.runs = effectiveSchedule(m, v, o);
        p.ompSchedules.push_back(std::move(o));
      }
    }
}

/// llvm-mca on the innermost loop around the hottest line.
void profileMca(const Manifest &m, const Variant &v, const std::string &dir, const ProfileOptions &o,
                KernelProfile &p) {
  if (o.mca && !p.gpu) {
    if (!onPath("llvm-mca")) {
      p.skipped.push_back("llvm-mca: not installed (apt-get install llvm)");
    } else if (m.sources.size() != 1) {
      p.skipped.push_back("llvm-mca: needs the assembly of one source file; the project has several");
    } else {
      BuildResult s = build(m, v, dir + "/asm", {"-S", "-g"}, {}, "hot.s");
      std::string hotFile;
      int hotLine = 0;
      if (p.cachegrind && !p.cachegrind->lines.empty()) {
        hotFile = p.cachegrind->lines.front().file;
        hotLine = p.cachegrind->lines.front().line;
      }
      auto text = s.ok ? support::readFile(s.exe) : support::Expected<std::string>(support::Error{s.error});
      std::string loop = text ? extractHotLoop(*text, hotFile, hotLine) : "";
      if (loop.empty() && text)
        loop = extractHotLoop(*text, "", 0);
      if (loop.empty()) {
        p.skipped.push_back("llvm-mca: no loop found in the assembly" + (s.ok ? "" : " (" + s.error + ")"));
      } else {
        std::string input = dir + "/hot-loop.s";
        std::string why;
        if (support::writeFileAtomically(input, loop, &why)) {
          support::SubprocessOptions so;
          so.argv = {"llvm-mca", "-bottleneck-analysis", input};
          so.timeoutS = 60;
          auto r = support::runSubprocess(so);
          // The default CPU model has no AVX-512 (what `-march=native` emits on a machine that has it):
          // the host's model, else the first with AVX-512 and a scheduling model in every LLVM since 6.
          for (const char *cpu : {"native", "skylake-avx512"}) {
            if (r.ok() || r.output.find("unsupported instruction") == std::string::npos)
              break;
            so.argv = {"llvm-mca", fmt::format("-mcpu={}", cpu), "-bottleneck-analysis", input};
            r = support::runSubprocess(so);
            if (r.ok())
              p.notes.push_back(fmt::format("llvm-mca: the loop uses instructions its default CPU model lacks; "
                                            "modelled as -mcpu={}",
                                            cpu));
          }
          auto parsed = r.ok() ? parseLlvmMca(r.output) : support::Expected<McaReport>(support::Error{r.describe()});
          if (parsed) {
            p.mca = *parsed;
            p.mcaLoop = hotLine ? fmt::format("{}:{}", hotFile, hotLine) : "the first loop";
            p.tools.push_back("llvm-mca");
          } else {
            p.skipped.push_back("llvm-mca: " + parsed.error().message);
          }
        }
      }
    }
  }
}

/// ptxas: registers, shared memory and spills per CUDA kernel.
void profilePtxas(const Manifest &m, const Variant &v, const std::string &dir, const ProfileOptions &o,
                  KernelProfile &p) {
  if (o.ptxas && p.gpu) {
    // With [gpu] archs, ptxas compiles for each of them too: registers differ between architectures.
    std::vector<std::string> extra = {"-Xptxas", "-v"};
    for (const auto &a : m.gpuArchs)
      if (auto arch = findGpuArch(a)) {
        std::string digits = arch->name.substr(3);
        extra.push_back(fmt::format("--generate-code=arch=compute_{},code={}", digits, arch->name));
      }
    BuildResult b = build(m, v, dir + "/ptxas", extra);
    auto parsed = b.ok ? parsePtxas(b.log) : support::Expected<std::vector<PtxasKernel>>(support::Error{b.error});
    if (parsed) {
      p.ptxas = std::move(*parsed);
      p.occupancy = projectOccupancy(m, v, p.ptxas);
      p.tools.push_back("ptxas");
    } else {
      p.skipped.push_back("ptxas: " + parsed.error().message + (b.ok ? "" : "\n" + firstLines(b.log, 5)));
    }
  }
}

/// The user's Nsight Compute report.
void profileNcu(const Manifest &/*m*/, const Variant &/*v*/, const std::string &/*dir*/, const ProfileOptions &o,
                KernelProfile &p) {
  if (!o.ncuReport.empty()) {
    auto text = support::readFile(o.ncuReport);
    auto parsed = text ? parseNcuCsv(*text) : support::Expected<std::vector<NcuKernel>>(text.error());
    if (parsed) {
      p.ncu = std::move(*parsed);
      p.tools.push_back("ncu");
    } else {
      p.skipped.push_back(fmt::format("ncu: {}: {}", o.ncuReport, parsed.error().message));
    }
  }
}

} // namespace

KernelProfile profileVariant(const Manifest &m, const Variant &v, const std::string &dir, const ProfileOptions &o) {
  KernelProfile p;
  p.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  p.gpu = m.language == "cuda";
  std::error_code ec;
  fs::create_directories(dir, ec);
  // In this order: llvm-mca looks for the loop around cachegrind's hottest line.
  for (Profiler profiler :
       {profileCachegrind, profilePerf, profileRemarks, profileOmp, profileMca, profilePtxas, profileNcu})
    profiler(m, v, dir, o, p);
  return p;
}

// ---- diagnosis -------------------------------------------------------------------------

namespace {
const std::vector<std::pair<FindingKind, std::string_view>> &kindIds() {
  static const std::vector<std::pair<FindingKind, std::string_view>> ids = {
    {FindingKind::CacheMisses, "cache-misses"},
    {FindingKind::MemoryTraffic, "memory-traffic"},
    {FindingKind::NotVectorizedAliasing, "not-vectorized-aliasing"},
    {FindingKind::NotVectorizedStride, "not-vectorized-stride"},
    {FindingKind::NotVectorizedControlFlow, "not-vectorized-control-flow"},
    {FindingKind::NotVectorizedReduction, "not-vectorized-reduction"},
    {FindingKind::NotVectorizedOuter, "not-vectorized-outer"},
    {FindingKind::Serial, "serial"},
    {FindingKind::FineGrainedSchedule, "fine-grained-schedule"},
    {FindingKind::DependencyChain, "dependency-chain"},
    {FindingKind::ResourcePressure, "resource-pressure"},
    {FindingKind::RegisterSpills, "register-spills"},
    {FindingKind::OccupancyRegisters, "occupancy-registers"},
    {FindingKind::OccupancyShared, "occupancy-shared"},
    {FindingKind::OccupancyBlock, "occupancy-block"},
    {FindingKind::LaunchLimit, "launch-limit"},
    {FindingKind::Uncoalesced, "uncoalesced"},
    {FindingKind::BankConflicts, "bank-conflicts"},
    {FindingKind::LowOccupancy, "low-occupancy"},
    {FindingKind::Divergence, "divergence"},
    {FindingKind::MemoryBound, "memory-bound"},
    {FindingKind::ComputeBound, "compute-bound"}};
  return ids;
}
} // namespace

const std::vector<FindingKind> &findingKinds() {
  static const std::vector<FindingKind> kinds = [] {
    std::vector<FindingKind> k;
    for (const auto &[kind, id] : kindIds())
      k.push_back(kind);
    return k;
  }();
  return kinds;
}

std::string_view toString(FindingKind kind) {
  for (const auto &[k, id] : kindIds())
    if (k == kind)
      return id;
  return "unknown";
}

std::optional<FindingKind> parseFindingKind(std::string_view id) {
  for (const auto &[k, name] : kindIds())
    if (name == id)
      return k;
  return std::nullopt;
}

bool vectorizerKind(FindingKind kind) {
  return kind == FindingKind::NotVectorizedAliasing || kind == FindingKind::NotVectorizedStride ||
         kind == FindingKind::NotVectorizedControlFlow || kind == FindingKind::NotVectorizedReduction ||
         kind == FindingKind::NotVectorizedOuter;
}

namespace {

std::string where(const CostLine &c) {
  return c.line ? fmt::format("{}:{} ({})", c.file, c.line, c.function) : fmt::format("{} ({})", c.function, c.file);
}

/// The kind of a vectorizer's "missed" message, by its reason.
std::optional<FindingKind> vectorizeKind(const std::string &message) {
  auto has = [&](const char *w) { return message.find(w) != std::string::npos; };
  if (has("alias") || has("dependence") || has("dependency") || has("unsafe"))
    return FindingKind::NotVectorizedAliasing;
  if (has("stride") || has("complicated access") || has("access pattern") || has("gather") || has("scatter") ||
      has("interleav"))
    return FindingKind::NotVectorizedStride;
  if (has("control flow") || has("if-conver") || has("early exit") || has("multiple exits"))
    return FindingKind::NotVectorizedControlFlow;
  if (has("reduction") || has("reorder floating-point") || has("ffast-math"))
    return FindingKind::NotVectorizedReduction;
  if (has("nested loop"))
    return FindingKind::NotVectorizedOuter;
  return std::nullopt;
}

} // namespace

namespace {

/// The findings as diagnose() makes them, and how they name a line.
struct Findings {
  const KernelProfile &p;
  json out = json::array();

  void add(FindingKind kind, std::string resource, double share, std::string detail, json numbers,
           const std::string &file = "", int line = 0) {
    json b{{"kind", std::string(toString(kind))},
           {"resource", std::move(resource)},
           {"share", std::clamp(share, 0.0, 1.0)},
           {"detail", std::move(detail)},
           {"numbers", std::move(numbers)}};
    if (!file.empty())
      b["file"] = file;
    if (line)
      b["line"] = line;
    out.push_back(std::move(b));
  }
  /// A line as the findings name it: with the function of the source's nest that holds it (the debug
  /// information's, after inlining, is often main).
  std::string whereOf(const CostLine &c) const {
    if (const NestShare *n = p.breakdown ? p.breakdown->nestAt(c.file, c.line) : nullptr; n && !n->function.empty())
      return fmt::format("{}:{} ({})", c.file, c.line, n->function);
    return where(c);
  }
};

/// Hot lines (cachegrind): where the instructions go, and how their data references miss; returns the hot lines.
std::vector<const CostLine *> cachegrindFindings(Findings &f, const Thresholds &t) {
  const KernelProfile &p = f.p;
  std::vector<const CostLine *> hot;
  if (p.cachegrind) {
    // Shares of the whole program's instructions (libraries included), as `hone kernel profile` prints them.
    double total = p.cachegrind->totals.count("Ir") ? p.cachegrind->totals.at("Ir") : 0;
    if (total <= 0)
      for (const auto &c : p.cachegrind->functions)
        total += event(c, "Ir");
    for (const auto &c : p.cachegrind->lines) {
      double ir = event(c, "Ir");
      if (total <= 0 || ir / total < t.hotShare)
        continue;
      hot.push_back(&c);
      double share = ir / total;
      double refs = event(c, "Dr") + event(c, "Dw");
      double d1 = event(c, "D1mr") + event(c, "D1mw"), ll = event(c, "DLmr") + event(c, "DLmw");
      if (refs > 0 && d1 / refs > t.d1MissRate)
        f.add(FindingKind::CacheMisses, f.whereOf(c), share * std::min(1.0, d1 / refs * 4),
            fmt::format("{} has {:.0f}% of the instructions and misses L1 on {:.1f}% of its {:.3g} data references",
                        f.whereOf(c), 100 * share, 100 * d1 / refs, refs),
            {{"instruction_share", share}, {"d1_miss_rate", d1 / refs}, {"data_refs", refs}, {"d1_misses", d1}},
            c.file, c.line);
      if (refs > 0 && ll / refs > t.llMissRate)
        f.add(FindingKind::MemoryTraffic, f.whereOf(c), share * std::min(1.0, ll / refs * 10),
            fmt::format("{} misses the last-level cache on {:.2f}% of its data references: it streams from DRAM",
                        f.whereOf(c), 100 * ll / refs),
            {{"instruction_share", share}, {"ll_miss_rate", ll / refs}}, c.file, c.line);
    }
  }

  return hot;
}

/// Loops the vectorizer left scalar (gcc's and clang's remarks), first those on hot lines.
void remarkFindings(Findings &f, const std::vector<const CostLine *> &hot) {
  const KernelProfile &p = f.p;
  std::set<std::pair<std::string, int>> seen;
  for (const auto &r : p.remarks) {
    if (r.kind != "missed" && r.kind != "analysis")
      continue;
    auto kind = vectorizeKind(r.message);
    if (!kind || !seen.insert({r.file, r.line}).second)
      continue;
    double share = 0.02;
    if (const NestShare *n = p.breakdown ? p.breakdown->nestAt(r.file, r.line) : nullptr)
      share = n->share; // the loop's whole nest, as counted
    else
      for (const CostLine *c : hot)
        if (c->file == r.file && std::abs(c->line - r.line) <= 2)
          share = std::max(share, event(*c, "Ir") / std::max(1.0, p.cachegrind->totals.count("Ir") ? p.cachegrind->totals.at("Ir") : 1.0));
    std::string why = r.message;
    for (const char *prefix : {"not vectorized: ", "loop not vectorized: "})
      if (why.rfind(prefix, 0) == 0)
        why = why.substr(std::strlen(prefix));
    while (!why.empty() && (why.back() == '.' || why.back() == ' '))
      why.pop_back();
    f.add(*kind, fmt::format("{}:{}", r.file, r.line), share * 0.5,
        fmt::format("the loop at {}:{} is not vectorized: {}", r.file, r.line, why), {{"hot_share", share}}, r.file,
        r.line);
  }

}

/// Loops that deal their iterations out one at a time (the sources' OpenMP schedules, with cachegrind's
/// counts), and a program that keeps few of the cores busy (perf stat).
void parallelFindings(Findings &f, const Thresholds &t) {
  const KernelProfile &p = f.p;
  // Loops that deal their iterations out one at a time: every iteration takes a shared counter.
  for (size_t i = 0; i < p.ompSchedules.size(); ++i) {
    const OmpSchedule &o = p.ompSchedules[i];
    if (p.cores < 2 || o.runs != "dynamic,1")
      continue;
    // The loop's instructions: its file's lines after the pragma and before the next one, in
    // the functions the compiler outlines parallel regions into (gcc: ._omp_fn., clang: .omp_outlined).
    int until = std::numeric_limits<int>::max();
    for (const auto &other : p.ompSchedules)
      if (other.file == o.file && other.line > o.line)
        until = std::min(until, other.line);
    double share = 0.05, ir = 0, total = 0;
    if (p.cachegrind) {
      total = p.cachegrind->totals.count("Ir") ? p.cachegrind->totals.at("Ir") : 0;
      for (const auto &c : p.cachegrind->lines)
        if (c.file == o.file && c.line > o.line && c.line < until &&
            (c.function.find("_omp_fn") != std::string::npos || c.function.find("omp_outlined") != std::string::npos))
          ir += event(c, "Ir");
      if (total > 0 && ir > 0)
        share = ir / total;
    }
    std::string clause = o.chunk.empty() ? o.kind : o.kind + ", " + o.chunk;
    f.add(FindingKind::FineGrainedSchedule, fmt::format("{}:{}", o.file, o.line), share * 0.5,
        fmt::format("the loop at {}:{} takes schedule({}) and runs dynamic,1{}: threads take its iterations one "
                    "at a time from a shared counter{}",
                    o.file, o.line, clause, o.kind == "runtime" ? " (OMP_SCHEDULE is unset or names no chunk)" : "",
                    ir > 0 ? fmt::format("; its loop has {:.0f}% of the instructions", 100 * share) : ""),
        {{"loop_share", share}, {"chunk", 1}}, o.file, o.line);
  }


  if (p.perf && !p.gpu && p.cores > 1 && p.perf->cpusUtilized > 0 && p.perf->cpusUtilized < t.usedCoresFraction * p.cores) {
    double used = p.perf->cpusUtilized;
    f.add(FindingKind::Serial, "CPU cores", 1.0 - used / p.cores,
        fmt::format("the program keeps {:.2f} of {} cores busy ({:.0f}%)", used, p.cores, 100 * used / p.cores),
        {{"cpus_utilized", used}, {"cores", p.cores}});
  }

}

/// The hot loop's dependency chains and port pressure (llvm-mca).
void mcaFindings(Findings &f, const Thresholds &t) {
  const KernelProfile &p = f.p;
  if (p.mca) {
    double cpi = p.mca->cyclesPerIteration();
    if (p.mca->dataDependencies >= t.dependencyShare)
      f.add(FindingKind::DependencyChain, p.mcaLoop, p.mca->dataDependencies / 100 * 0.8,
          fmt::format("llvm-mca: the loop at {} stalls on data dependencies {:.0f}% of its cycles ({:.2f} cycles per "
                      "iteration against a throughput bound of {:.2f})",
                      p.mcaLoop, p.mca->dataDependencies, cpi, p.mca->blockRThroughput),
          {{"data_dependencies_pct", p.mca->dataDependencies}, {"cycles_per_iteration", cpi},
           {"block_rthroughput", p.mca->blockRThroughput}});
    if (p.mca->resourcePressure >= t.resourceShare)
      f.add(FindingKind::ResourcePressure, p.mcaLoop, p.mca->resourcePressure / 100 * 0.5,
          fmt::format("llvm-mca: the loop at {} waits on execution ports {:.0f}% of its cycles", p.mcaLoop,
                      p.mca->resourcePressure),
          {{"resource_pressure_pct", p.mca->resourcePressure}, {"ipc", p.mca->ipc}});
  }

}

/// A GPU kernel's registers and shared memory (ptxas), its static occupancy (the launches and the
/// architecture's limits), and what Nsight Compute measured.
void gpuFindings(Findings &f, const Thresholds &t) {
  const KernelProfile &p = f.p;
  for (const auto &k : p.ptxas) {
    if (k.spillStores + k.spillLoads > 0)
      f.add(FindingKind::RegisterSpills, k.name, 0.3,
          fmt::format("{} spills registers ({} bytes stored, {} loaded per thread) with {} registers", k.name,
                      k.spillStores, k.spillLoads, k.registers),
          {{"registers", k.registers}, {"spill_stores", k.spillStores}, {"spill_loads", k.spillLoads}});
    bool computed = std::any_of(p.occupancy.begin(), p.occupancy.end(), [&](const KernelOccupancy &o) {
      auto arch = findGpuArch(k.arch);
      return o.unknown.empty() && o.kernel == kernelBaseName(k.name) && arch && o.arch == arch->name;
    });
    if (computed)
      continue; // the static occupancy below says it with the launch's numbers
    if (k.registers > t.registersFullOccupancy)
      f.add(FindingKind::OccupancyRegisters, k.name, 0.15,
          fmt::format("{} uses {} registers per thread: at most {} threads per SM (of 2048) can be resident", k.name,
                      k.registers, std::min(2048, 65536 / k.registers / 32 * 32)),
          {{"registers", k.registers}});
    if (k.sharedBytes > t.sharedBytesPerBlock)
      f.add(FindingKind::OccupancyShared, k.name, 0.15,
          fmt::format("{} uses {} bytes of shared memory per block, which limits resident blocks", k.name,
                      k.sharedBytes),
          {{"shared_bytes", k.sharedBytes}});
  }


  // Static occupancy: the limit that binds, by how much, and what would lift it.
  for (const auto &o : p.occupancy) {
    if (!o.unknown.empty())
      continue;
    const Occupancy &occ = o.occupancy;
    json numbers{{"occupancy_pct", occ.fraction * 100}, {"threads", o.shape.threads}, {"registers", o.shape.registers},
                 {"shared_bytes", o.shape.staticShared + o.shape.dynamicShared}, {"blocks_per_sm", occ.blocksPerSm},
                 {"active_warps", occ.activeWarps}, {"max_warps", occ.maxWarps}};
    if (o.advice.registers)
      numbers["registers_for_more"] = *o.advice.registers;
    if (!o.advice.blockSizes.empty())
      numbers["best_block"] = o.advice.blockSizes.front();
    FindingKind kind;
    if (!occ.unlaunchable.empty())
      kind = FindingKind::LaunchLimit;
    else if (occ.fraction >= t.staticOccupancy)
      continue;
    else if (std::find(occ.limiting.begin(), occ.limiting.end(), OccupancyLimit::Registers) != occ.limiting.end())
      kind = FindingKind::OccupancyRegisters;
    else if (std::find(occ.limiting.begin(), occ.limiting.end(), OccupancyLimit::SharedMemory) != occ.limiting.end())
      kind = FindingKind::OccupancyShared;
    else
      kind = FindingKind::OccupancyBlock;
    f.add(kind, o.kernel, kind == FindingKind::LaunchLimit ? 1.0 : (1 - occ.fraction) * 0.4, o.text, std::move(numbers));
    if (!o.prefer.empty())
      f.out.back()["prefer"] = o.prefer;
    if (!o.launch.empty()) {
      auto colon = o.launch.rfind(':');
      f.out.back()["file"] = o.launch.substr(0, colon);
      f.out.back()["line"] = std::atoi(o.launch.c_str() + colon + 1);
    }
  }


  for (const auto &k : p.ncu) {
    auto metric = [&](const char *name) -> std::optional<double> {
      auto it = k.metrics.find(name);
      return it == k.metrics.end() ? std::nullopt : std::optional<double>(it->second);
    };
    auto sectors = metric("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum");
    auto requests = metric("l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum");
    if (sectors && requests && *requests > 0 && *sectors / *requests > t.sectorsPerRequest)
      f.add(FindingKind::Uncoalesced, k.name, std::min(0.6, (*sectors / *requests) / 32),
          fmt::format("{}: {:.1f} sectors per global load request (4 when a warp's loads are coalesced)", k.name,
                      *sectors / *requests),
          {{"sectors_per_request", *sectors / *requests}});
    auto conflicts = metric("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum");
    auto wavefronts = metric("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum");
    if (conflicts && wavefronts && *wavefronts > 0 && *conflicts / *wavefronts > t.bankConflictRate)
      f.add(FindingKind::BankConflicts, k.name, std::min(0.5, *conflicts / *wavefronts / 2),
          fmt::format("{}: {:.0f} shared-memory bank conflicts in {:.0f} load wavefronts", k.name, *conflicts,
                      *wavefronts),
          {{"conflicts", *conflicts}, {"wavefronts", *wavefronts}});
    auto occupancy = metric("sm__warps_active.avg.pct_of_peak_sustained_active");
    if (occupancy && *occupancy < t.occupancyPct)
      f.add(FindingKind::LowOccupancy, k.name, (t.occupancyPct - *occupancy) / 100,
          fmt::format("{}: achieved occupancy {:.1f}% of the SM's warps", k.name, *occupancy),
          {{"occupancy_pct", *occupancy}});
    auto threads = metric("smsp__thread_inst_executed_per_inst_executed.ratio");
    if (threads && *threads < t.threadsPerInstruction)
      f.add(FindingKind::Divergence, k.name, (32 - *threads) / 64,
          fmt::format("{}: {:.1f} of 32 threads active per executed instruction", k.name, *threads),
          {{"threads_per_instruction", *threads}});
    auto dram = metric("dram__throughput.avg.pct_of_peak_sustained_elapsed");
    auto sm = metric("sm__throughput.avg.pct_of_peak_sustained_elapsed");
    if (dram && sm && *dram >= t.boundPct && *dram > *sm)
      f.add(FindingKind::MemoryBound, k.name, 0.3,
          fmt::format("{}: DRAM at {:.0f}% of peak, SMs at {:.0f}%: memory-bound by the roofline", k.name, *dram, *sm),
          {{"dram_pct", *dram}, {"sm_pct", *sm}});
    else if (dram && sm && *sm >= t.boundPct && *sm > *dram)
      f.add(FindingKind::ComputeBound, k.name, 0.2,
          fmt::format("{}: SMs at {:.0f}% of peak, DRAM at {:.0f}%: compute-bound by the roofline", k.name, *sm, *dram),
          {{"dram_pct", *dram}, {"sm_pct", *sm}});
  }

}

/// Findings about a loop nest the profile counts as cold are left out of `out`, and said to be (the list
/// returned): a loop with 0.1% of the time is not where a change pays.
json leaveOutCold(json &out, const KernelProfile &p, const Thresholds &t) {
  json cold = json::array();
  if (p.breakdown) {
    json kept = json::array();
    for (auto &b : out) {
      const NestShare *n = b.contains("file") && b.contains("line")
                               ? p.breakdown->nestAt(b["file"].get<std::string>(), b["line"].get<int>())
                               : nullptr;
      // A nest that calls out may spend its time in the callees (printf's, in a dump): cold only when
      // that cannot be so.
      double callees = n && n->callShare ? *n->callShare : n && n->calls ? p.breakdown->outside : 0.0;
      // A loop whose nest spends its time in the functions it calls (printf's, in a dump): vectorizing
      // it changes nothing.
      bool inCalls = n && n->callShare && *n->callShare >= 0.8 * (n->share + *n->callShare) &&
                     vectorizerKind(parseFindingKind(b["kind"].get<std::string>()).value_or(FindingKind::Serial));
      bool isCold = n && n->share + callees < t.coldShare;
      if (isCold || inCalls)
        cold.push_back({{"kind", b["kind"]}, {"file", n->file}, {"line", b["line"]}, {"nest_line", n->line},
                        {"nest_share", n->share}, {"why", isCold ? "cold" : "calls"}});
      else
        kept.push_back(std::move(b));
    }
    out = std::move(kept);
  }
  return cold;
}

} // namespace

json diagnose(const KernelProfile &p, const Thresholds &t) {
  Findings f{p};
  auto hot = cachegrindFindings(f, t);
  remarkFindings(f, hot);
  parallelFindings(f, t);
  mcaFindings(f, t);
  gpuFindings(f, t);
  json &out = f.out;
  json cold = p.breakdown ? leaveOutCold(out, p, t) : json::array();
  std::stable_sort(out.begin(), out.end(),
                   [](const json &a, const json &b) { return a["share"].get<double>() > b["share"].get<double>(); });
  json result{{"schema", 1}, {"bottlenecks", out}};
  if (p.breakdown) {
    result["breakdown"] = toJson(*p.breakdown);
    result["cold"] = cold;
  }
  return result;
}

std::string breakdownText(const json &breakdown, const json &cold, size_t maxNests) {
  if (!breakdown.is_object() || !breakdown.contains("nests") || !breakdown["nests"].is_array())
    return "";
  auto num = [](const json &j, const char *key) {
    return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
  };
  bool inclusive = std::any_of(breakdown["nests"].begin(), breakdown["nests"].end(),
                               [](const json &n) { return n.is_object() && n.contains("call_share"); });
  std::string out = fmt::format("Where the time goes ({} of the timed build, by {}{}):\n",
                                support::textOf(breakdown, "measure", "instructions"),
                                support::textOf(breakdown, "tool", "the profiler"),
                                inclusive ? "; with what a nest's calls ran, by callgrind" : "");
  size_t shown = 0;
  double restShare = 0;
  size_t rest = 0;
  for (const auto &n : breakdown["nests"]) {
    double calls = num(n, "call_share"), share = num(n, "share") + calls; // its lines and what its calls ran
    if (shown < maxNests && share >= 0.02) {
      std::string function = support::textOf(n, "function");
      out += fmt::format("- {:5.1f}%  loop nest {}:{}-{}{}{}\n", 100 * share, support::textOf(n, "file"),
                         static_cast<int64_t>(num(n, "line")), static_cast<int64_t>(num(n, "end_line")),
                         function.empty() ? "" : " in " + function + "()",
                         calls >= 0.005 ? fmt::format(" ({:.1f}% of it in the functions it calls)", 100 * calls) : "");
      ++shown;
    } else {
      restShare += share;
      ++rest;
    }
  }
  if (rest > 0)
    out += fmt::format("- {:5.1f}%  {} other loop nest{}\n", 100 * restShare, rest, rest == 1 ? "" : "s");
  if (breakdown.contains("files") && breakdown["files"].is_array())
    for (const auto &f : breakdown["files"])
      if (num(f, "share") >= 0.02)
        out += fmt::format("- {:5.1f}%  {} outside its loop nests\n", 100 * num(f, "share"), support::textOf(f, "file"));
  std::vector<std::string> largest;
  if (breakdown.contains("outside_functions") && breakdown["outside_functions"].is_array())
    for (const auto &f : breakdown["outside_functions"])
      largest.push_back(fmt::format("{} {:.1f}%", support::textOf(f, "function"), 100 * num(f, "share")));
  out += fmt::format("- {:5.1f}%  outside the project's code (libraries, the loader{}){}\n",
                     100 * num(breakdown, "outside"), inclusive ? "; also counted in the nests that call it" : "",
                     largest.empty() ? "" : fmt::format("; the largest: {}", fmt::join(largest, ", ")));
  if (cold.is_array() && !cold.empty()) {
    std::vector<std::string> where[2]; // cold nests; nests whose time is in their calls
    for (const auto &c : cold)
      where[support::textOf(c, "why") == "calls"].push_back(
          fmt::format("{}:{}", support::textOf(c, "file"), static_cast<int64_t>(num(c, "line"))));
    if (!where[0].empty())
      out += fmt::format("({} finding{} about loops in cold nests left out: {})\n",
                         where[0].size(), where[0].size() == 1 ? "" : "s", fmt::join(where[0], ", "));
    if (!where[1].empty())
      out += fmt::format("({} vectorizer finding{} left out: the loops' nests spend their time in the functions they "
                         "call: {})\n",
                         where[1].size(), where[1].size() == 1 ? "" : "s", fmt::join(where[1], ", "));
  }
  if (support::textOf(breakdown, "scope") == "region")
    out += "(Counts of the whole run: the score times only the region the program times itself.)\n";
  return out;
}

// ---- catalogue ---------------------------------------------------------------------------

support::Expected<std::vector<Transformation>> parseCatalogue(const std::string &path, const std::string &text) {
  return support::parseTomlDocument<std::vector<Transformation>>(path, text, [&](support::TableReader &top) {
    std::vector<Transformation> out;
    for (auto &r : top.tables("transformation")) {
      Transformation t;
      t.id = r.string("id");
      if (std::any_of(out.begin(), out.end(), [&](const Transformation &o) { return o.id == t.id; }))
        r.failAt("id", fmt::format("'{}' is defined twice", t.id));
      t.name = r.string("name");
      t.target = r.string("target");
      if (t.target != "cpu" && t.target != "gpu")
        r.failAt("target", "must be \"cpu\" or \"gpu\"");
      t.changes = r.string("changes");
      t.effect = r.string("effect");
      t.risk = r.string("risk");
      t.reference = r.string("reference");
      for (const auto &role : r.strings("knob_roles", false)) {
        auto parsed = parseKnobRole(role);
        if (!parsed)
          r.failAt("knob_roles", fmt::format("unknown knob role '{}'", role));
        t.knobRoles.push_back(*parsed);
      }
      t.valueHints = r.strings("value_hints", false);
      r.finish();
      out.push_back(std::move(t));
    }
    top.finish();
    return out;
  });
}

support::Expected<std::vector<Transformation>> loadCatalogue() {
  const char *env = std::getenv("HONE_CATALOGUE");
  std::string path = env && *env ? std::string(env) : support::dataDir("catalogue") + "/transformations.toml";
  auto text = support::readTomlFile(path);
  if (!text)
    return text.error();
  return parseCatalogue(path, *text);
}

} // namespace hone::kernel
