// llvm-mca on the innermost loop around the hottest line (cachegrind's, else the first loop of the
// assembly). Findings: dependency chains and execution-port pressure.
// Here too: the parser of llvm-mca's report, extractHotLoop (the loop llvm-mca is given), and its part
// of the profile's JSON.
#include "kernel/profilers/Profiler.h"

#include "support/FileUtil.h"
#include "support/Subprocess.h"

#include <fmt/format.h>

#include <cstring>
#include <map>
#include <regex>

// ---- the parser and extractHotLoop (declared in kernel/Profile.h) ----

namespace hone::kernel {

using support::Error;
using support::Expected;

Expected<McaReport> parseLlvmMca(const std::string &text) {
  McaReport r;
  bool any = false;
  bool critical = false;
  auto bracket = [](const std::string &l) -> double {
    size_t a = l.find('['), b = l.find(']');
    if (a == std::string::npos || b == std::string::npos || b < a)
      return 0;
    return toNumber(l.substr(a + 1, b - a - 1)).value_or(0);
  };
  for (const auto &raw : reportLines(text)) {
    std::string l = trimBlanks(raw);
    auto field = [&](const char *name, double &into) {
      if (l.rfind(name, 0) == 0) {
        if (auto v = toNumber(l.substr(std::strlen(name)))) {
          into = *v;
          any = true;
        }
        return true;
      }
      return false;
    };
    if (field("Iterations:", r.iterations) || field("Instructions:", r.instructions) ||
        field("Total Cycles:", r.totalCycles) || field("IPC:", r.ipc) ||
        field("Block RThroughput:", r.blockRThroughput))
      continue;
    if (l.rfind("Cycles with backend pressure increase", 0) == 0)
      r.pressure = bracket(l);
    else if (l.rfind("Resource Pressure", 0) == 0)
      r.resourcePressure = bracket(l);
    else if (l.rfind("Data Dependencies:", 0) == 0)
      r.dataDependencies = bracket(l);
    else if (l.rfind("- Register Dependencies", 0) == 0)
      r.registerDependencies = bracket(l);
    else if (l.rfind("- Memory Dependencies", 0) == 0)
      r.memoryDependencies = bracket(l);
    else if (l.rfind("Critical sequence", 0) == 0)
      critical = true;
    else if (l.rfind("Instruction Info:", 0) == 0)
      critical = false;
    else if (critical && l.find("##") != std::string::npos && r.criticalSequence.size() < 32)
      r.criticalSequence.push_back(l);
  }
  if (!any || r.iterations <= 0)
    return Error{"not an llvm-mca report: no 'Iterations:' summary"};
  return r;
}

std::string extractHotLoop(const std::string &assembly, const std::string &file, int line) {
  struct Insn {
    std::string text;
    int file = 0, line = 0;
  };
  std::map<int, std::string> files;
  std::map<std::string, size_t> labels; // label -> index of the next instruction
  std::vector<Insn> insns;
  std::vector<std::pair<size_t, std::string>> jumps; // instruction index, target
  int curFile = 0, curLine = 0;
  static const std::regex fileRe(R"re(^\s*\.file\s+(\d+)\s+"([^"]*)"(?:\s+"([^"]*)")?)re");
  static const std::regex locRe(R"(^\s*\.loc\s+(\d+)\s+(\d+))");
  static const std::regex labelRe(R"(^([.A-Za-z_$][\w.$]*):)");
  static const std::regex jumpRe(R"(^\s*j[a-z]+\s+([.A-Za-z_$][\w.$]*)\s*$)");
  for (const auto &l : reportLines(assembly)) {
    if (l.size() > 4096)
      continue;
    std::smatch m;
    if (std::regex_search(l, m, fileRe)) {
      files[intOf(m[1].str())] = m[3].matched ? m[3].str() : m[2].str();
    } else if (std::regex_search(l, m, locRe)) {
      curFile = intOf(m[1].str());
      curLine = intOf(m[2].str());
    } else if (std::regex_search(l, m, labelRe)) {
      labels[m[1].str()] = insns.size();
    } else {
      std::string t = trimBlanks(l);
      if (t.empty() || t[0] == '.' || t[0] == '#' || t[0] == '/')
        continue;
      if (std::regex_match(l, m, jumpRe))
        jumps.push_back({insns.size(), m[1].str()});
      insns.push_back({t, curFile, curLine});
    }
  }
  auto fileMatches = [&](int id) {
    if (file.empty())
      return true;
    auto it = files.find(id);
    if (it == files.end())
      return false;
    const std::string &f = it->second;
    return f == file ||
           (f.size() > file.size() && f.compare(f.size() - file.size(), file.size(), file) == 0 &&
            f[f.size() - file.size() - 1] == '/') ||
           (file.size() > f.size() && file.compare(file.size() - f.size(), f.size(), f) == 0);
  };
  size_t bestFrom = 0, bestTo = 0;
  bool found = false;
  for (const auto &[at, target] : jumps) {
    auto it = labels.find(target);
    if (it == labels.end() || it->second > at)
      continue; // forward jump: not a loop
    size_t from = it->second, to = at;
    bool holds = false;
    for (size_t i = from; i <= to && !holds; ++i)
      holds = (line == 0 || insns[i].line == line) && fileMatches(insns[i].file);
    if (holds && (!found || to - from < bestTo - bestFrom)) {
      bestFrom = from;
      bestTo = to;
      found = true;
    }
  }
  if (!found)
    return "";
  std::string out;
  for (size_t i = bestFrom; i <= bestTo; ++i)
    out += insns[i].text + "\n";
  return out;
}

} // namespace hone::kernel

namespace hone::kernel::profilers {

namespace {

/// llvm-mca models CPU code, of one source file's assembly.
std::optional<std::string> mcaUnavailable(const Manifest &m, const ProfileOptions &, const KernelProfile &p) {
  if (p.gpu)
    return "";
  if (!onPath("llvm-mca"))
    return "not installed (apt-get install llvm)";
  if (m.sources.size() != 1)
    return "needs the assembly of one source file; the project has several";
  return std::nullopt;
}

/// llvm-mca on the innermost loop around the hottest line.
void mcaRun(const Manifest &m, const Variant &v, const std::string &dir, const ProfileOptions & /*o*/,
            KernelProfile &p) {
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

/// The hot loop's dependency chains and port pressure (llvm-mca).
void mcaDiagnose(Findings &f, const Thresholds &t) {
  const KernelProfile &p = f.p;
  if (p.mca) {
    double cpi = p.mca->cyclesPerIteration();
    if (p.mca->dataDependencies >= t.dependencyShare)
      f.add(FindingKind::DependencyChain, p.mcaLoop, p.mca->dataDependencies / 100 * 0.8,
            fmt::format("llvm-mca: the loop at {} stalls on data dependencies {:.0f}% of its cycles ({:.2f} cycles per "
                        "iteration against a throughput bound of {:.2f})",
                        p.mcaLoop, p.mca->dataDependencies, cpi, p.mca->blockRThroughput),
            {{"data_dependencies_pct", p.mca->dataDependencies},
             {"cycles_per_iteration", cpi},
             {"block_rthroughput", p.mca->blockRThroughput}});
    if (p.mca->resourcePressure >= t.resourceShare)
      f.add(FindingKind::ResourcePressure, p.mcaLoop, p.mca->resourcePressure / 100 * 0.5,
            fmt::format("llvm-mca: the loop at {} waits on execution ports {:.0f}% of its cycles", p.mcaLoop,
                        p.mca->resourcePressure),
            {{"resource_pressure_pct", p.mca->resourcePressure}, {"ipc", p.mca->ipc}});
  }
}

/// Its part of the profile's JSON: the analysed loop's cycles, throughput and backend pressure.
void mcaJson(const KernelProfile &p, json &j) {
  if (p.mca)
    j["mca"] = {{"loop", p.mcaLoop},
                {"iterations", p.mca->iterations},
                {"cycles_per_iteration", p.mca->cyclesPerIteration()},
                {"block_rthroughput", p.mca->blockRThroughput},
                {"ipc", p.mca->ipc},
                {"backend_pressure", p.mca->pressure},
                {"resource_pressure", p.mca->resourcePressure},
                {"data_dependencies", p.mca->dataDependencies}};
}

} // namespace

const Profiler kMca{"llvm-mca", mcaUnavailable, mcaRun, mcaDiagnose, mcaJson};

} // namespace hone::kernel::profilers
