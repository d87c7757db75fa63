// libFuzzer targets over the kernel domain's parsers, one binary each
// (HONE_FUZZ_PARSER selects): the manifest, a variant, and every profiler
// report hone reads (and the OpenMP schedule clauses and CUDA launches of a source), and what the LLM code agent reads from a model: unified
// diffs (split and applied strictly) and whole replies. Each parser must return a value or an error on any
// input -- never crash, hang, leak or trip a sanitizer -- and what it
// returns must be usable (the diagnosis runs on every profile it yields).
#include "kernel/CodeAgent.h"
#include "kernel/Diagnose.h"
#include "kernel/Manifest.h"
#include "kernel/Occupancy.h"
#include "kernel/Profile.h"
#include "kernel/Runner.h"
#include "support/Diff.h"

#include <cstddef>
#include <cstdint>
#include <string>

using namespace hone::kernel;

namespace {
[[maybe_unused]] const Manifest &fixedManifest() {
  static const Manifest m = [] {
    auto parsed = parseManifest("/fuzz/hone.toml", "[project]\nsources = [\"k.c\"]\neditable = [\"k.c\"]\n"
                                                   "[build]\ncommand = \"cc {sources} -o {out}\"\n[run]\n"
                                                   "[[knob]]\nname = \"TILE\"\nvalues = [1, 2, 4]\n"
                                                   "constraints = [\"TILE * 2 <= 8\"]\n");
    return parsed ? *parsed : Manifest{};
  }();
  return m;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 256 * 1024)
    return 0;
  std::string text(reinterpret_cast<const char *>(data), size);
  KernelProfile p;
#if HONE_FUZZ_PARSER == 0
  if (auto m = parseManifest("/fuzz/hone.toml", text)) {
    (void)checkValues(*m, defaultValues(*m));
    (void)renderVariant(referenceVariant(*m));
  }
  return 0;
#elif HONE_FUZZ_PARSER == 1
  if (auto v = parseVariant(fixedManifest(), text))
    (void)parseVariant(fixedManifest(), renderVariant(*v)); // what it renders, it reads
  return 0;
#elif HONE_FUZZ_PARSER == 2
  if (auto c = parseCachegrind(text))
    p.cachegrind = *c;
#elif HONE_FUZZ_PARSER == 3
  if (auto r = parseGccRemarks(text))
    p.remarks = *r;
  if (auto r = parseClangRemarks(text))
    p.remarks.insert(p.remarks.end(), r->begin(), r->end());
#elif HONE_FUZZ_PARSER == 4
  if (auto s = parsePerfStat(text))
    p.perf = *s;
#elif HONE_FUZZ_PARSER == 5
  if (auto m = parseLlvmMca(text))
    p.mca = *m;
  (void)extractHotLoop(text, "k.c", 3);
#elif HONE_FUZZ_PARSER == 6
  if (auto k = parsePtxas(text))
    p.ptxas = *k;
#elif HONE_FUZZ_PARSER == 7
  if (auto k = parseNcuCsv(text))
    p.ncu = *k;
#elif HONE_FUZZ_PARSER == 8
  static const std::string file = "int main() {\n  int a = 1;\n  return a;\n}\n";
  if (auto parts = hone::support::splitPatch(text))
    for (const auto &part : *parts)
      if (auto applied = hone::support::applyPatch(file, part.hunks))
        (void)hone::support::changedLines(file, *applied);
  (void)enclosingBlock(text, 3);
  return 0;
#elif HONE_FUZZ_PARSER == 9
  static const KernelCodec codec(fixedManifest(), {}, "/nonexistent/hone-fuzz", {}, "fuzz");
  static const std::string base = renderVariant(referenceVariant(fixedManifest()));
  static const hone::support::Feedback feedback = [] {
    hone::support::Feedback f;
    f.given = true;
    hone::support::Finding finding;
    finding.rule = "r";
    finding.explanation = "x";
    finding.subject = hone::support::Bottleneck{};
    finding.subject->file = "k.c";
    finding.subject->line = 2;
    f.findings.push_back(finding);
    return f;
  }();
  (void)codec.read(text, base, feedback);
  (void)codec.readInsight(text);
  return 0;
#elif HONE_FUZZ_PARSER == 10
  p.ompSchedules = findOmpSchedules("k.c", text);
  for (auto &o : p.ompSchedules)
    o.runs = o.kind == "runtime" ? "dynamic,1" : o.kind;
  p.cores = 2;
#elif HONE_FUZZ_PARSER == 11
  // A CUDA source's launches, resolved through its own #defines, and their occupancy on every architecture.
  auto lookup = [](const std::string &n) -> std::optional<double> {
    return n == "KNOB" ? std::optional<double>(64) : std::nullopt;
  };
  for (const auto &l : findLaunches("k.cu", text, lookup))
    for (const auto &name : knownGpuArchs()) {
      GpuArch a = *findGpuArch(name);
      BlockShape shape{l.threads.value_or(1), 40, 1024, l.dynamicShared.value_or(0), 1};
      Occupancy o = occupancy(a, shape);
      (void)describeOccupancy(l.kernel, a, shape, o, adviseOccupancy(a, shape));
    }
  (void)findGpuArch(text);
#endif
  (void)diagnose(p);
  (void)toJson(p);
  return 0;
}
