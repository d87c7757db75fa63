// ptxas: registers, shared memory and spills per CUDA kernel (for each of the manifest's [gpu] archs),
// and the static occupancy of the project's launches. Findings: spills, and the occupancy limit that
// binds, by how much, and the knob values predicted to lift it.
// Here too: the parser of `nvcc -Xptxas -v`'s report, and its part of the profile's JSON.
#include "kernel/profilers/Profiler.h"

#include "kernel/Occupancy.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <regex>

// ---- the parser (declared in kernel/Profile.h) ----

namespace hone::kernel {

using support::Error;
using support::Expected;

Expected<std::vector<PtxasKernel>> parsePtxas(const std::string &text) {
  static const std::regex entryRe(R"(Compiling entry function '([^']+)' for '([^']+)')");
  static const std::regex propsRe(R"(Function properties for (\S+))");
  static const std::regex frameRe(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex usedRe(R"(Used (\d+) registers)");
  static const std::regex barRe(R"(used (\d+) barriers)");
  static const std::regex smemRe(R"((\d+) bytes smem)");
  static const std::regex cmemRe(R"((\d+) bytes cmem\[0\])");
  std::vector<PtxasKernel> out;
  std::map<std::string, size_t> index;
  std::string current, arch; // the mangled name the following lines describe, and the architecture
  // One entry per kernel and architecture (nvcc compiles each for every -gencode target).
  auto kernel = [&](const std::string &mangled) -> PtxasKernel & {
    auto it = index.find(mangled + "@" + arch);
    if (it != index.end())
      return out[it->second];
    index[mangled + "@" + arch] = out.size();
    out.push_back({});
    out.back().name = demangle(mangled);
    out.back().arch = arch;
    return out.back();
  };
  for (const auto &l : reportLines(text)) {
    if (l.size() > 8192)
      continue;
    std::smatch m;
    if (std::regex_search(l, m, entryRe)) {
      current = m[1].str();
      arch = m[2].str();
      kernel(current);
    } else if (std::regex_search(l, m, propsRe)) {
      current = m[1].str();
    } else if (std::regex_search(l, m, frameRe) && !current.empty()) {
      PtxasKernel &k = kernel(current);
      k.stackBytes = countOf(m[1].str());
      k.spillStores = countOf(m[2].str());
      k.spillLoads = countOf(m[3].str());
    } else if (std::regex_search(l, m, usedRe) && !current.empty()) {
      PtxasKernel &k = kernel(current);
      k.registers = intOf(m[1].str());
      if (std::regex_search(l, m, barRe))
        k.barriers = intOf(m[1].str());
      if (std::regex_search(l, m, smemRe))
        k.sharedBytes = countOf(m[1].str());
      if (std::regex_search(l, m, cmemRe))
        k.constantBytes = countOf(m[1].str());
    }
  }
  if (out.empty())
    return Error{"no kernel in the ptxas output (expected 'ptxas info : Compiling entry function ...' lines from "
                 "nvcc -Xptxas -v)"};
  return out;
}

void to_json(nlohmann::json &j, const PtxasKernel &k) {
  j = {{"kernel", k.name},
       {"arch", k.arch},
       {"registers", k.registers},
       {"shared_bytes", k.sharedBytes},
       {"spill_stores", k.spillStores},
       {"spill_loads", k.spillLoads},
       {"stack_bytes", k.stackBytes}};
}

} // namespace hone::kernel

namespace hone::kernel::profilers {

namespace {

/// ptxas: registers, shared memory and spills per CUDA kernel.
/// ptxas reports what CUDA kernels use.
std::optional<std::string> ptxasUnavailable(const Manifest &, const ProfileOptions &, const KernelProfile &p) {
  return p.gpu ? std::nullopt : std::optional<std::string>("");
}

void ptxasRun(const Manifest &m, const Variant &v, const std::string &dir, const ProfileOptions & /*o*/,
              KernelProfile &p) {
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

/// A kernel's registers and shared memory, and its static occupancy.
void ptxasDiagnose(Findings &f, const Thresholds &t) {
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
    json numbers{{"occupancy_pct", occ.fraction * 100},
                 {"threads", o.shape.threads},
                 {"registers", o.shape.registers},
                 {"shared_bytes", o.shape.staticShared + o.shape.dynamicShared},
                 {"blocks_per_sm", occ.blocksPerSm},
                 {"active_warps", occ.activeWarps},
                 {"max_warps", occ.maxWarps}};
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
    support::Bottleneck &b = f.add(kind, o.kernel, kind == FindingKind::LaunchLimit ? 1.0 : (1 - occ.fraction) * 0.4,
                                   o.text, std::move(numbers));
    b.prefer = o.prefer;
    if (!o.launch.empty()) {
      auto colon = o.launch.rfind(':');
      b.file = o.launch.substr(0, colon);
      b.line = std::atoi(o.launch.c_str() + colon + 1);
    }
  }
}

/// Its part of the profile's JSON: each kernel's registers, shared memory and spills, and the static
/// occupancy of each launch (empty lists when none).
void ptxasJson(const KernelProfile &p, json &j) {
  j["ptxas"] = p.ptxas;
  json occ = json::array();
  for (const auto &o : p.occupancy) {
    json item{{"kernel", o.kernel}, {"arch", o.arch}, {"launch", o.launch}, {"text", o.text}};
    if (!o.unknown.empty()) {
      item["unknown"] = o.unknown;
    } else {
      json limits = json::array();
      for (auto l : o.occupancy.limiting)
        limits.push_back(std::string(toString(l)));
      item["threads"] = o.shape.threads;
      item["registers"] = o.shape.registers;
      item["shared_bytes"] = o.shape.staticShared + o.shape.dynamicShared;
      item["blocks_per_sm"] = o.occupancy.blocksPerSm;
      item["active_warps"] = o.occupancy.activeWarps;
      item["max_warps"] = o.occupancy.maxWarps;
      item["occupancy"] = o.occupancy.fraction;
      item["limiting"] = limits;
      if (!o.occupancy.unlaunchable.empty())
        item["unlaunchable"] = o.occupancy.unlaunchable;
      if (!o.prefer.empty())
        item["prefer"] = o.prefer;
    }
    occ.push_back(std::move(item));
  }
  j["occupancy"] = occ;
}

} // namespace

const Profiler kPtxas{"ptxas", ptxasUnavailable, ptxasRun, ptxasDiagnose, ptxasJson};

} // namespace hone::kernel::profilers
