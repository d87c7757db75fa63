// llvm-mca on the innermost loop around the hottest line (cachegrind's, else the first loop of the
// assembly). Findings: dependency chains and execution-port pressure.
#include "kernel/profilers/Profiler.h"

#include "support/FileUtil.h"
#include "support/Subprocess.h"

#include <fmt/format.h>

namespace hone::kernel::profilers {

namespace {

/// llvm-mca on the innermost loop around the hottest line.
void mcaRun(const Manifest &m, const Variant &v, const std::string &dir, const ProfileOptions & /*o*/,
            KernelProfile &p) {
  if (!p.gpu) {
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

} // namespace

const Profiler kMca{"llvm-mca", mcaRun, mcaDiagnose};

} // namespace hone::kernel::profilers
