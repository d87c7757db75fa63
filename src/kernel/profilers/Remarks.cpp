// Compiler remarks (gcc's -fopt-info-vec-all, else clang's -Rpass=loop-vectorize): which loops
// vectorized, and why the others did not. Findings: loops left scalar, by the vectorizer's reason.
// Here too: the parsers of gcc's and clang's remarks, and its part of the profile's JSON.
#include "kernel/profilers/Profiler.h"

#include <fmt/format.h>

#include <cstring>
#include <regex>
#include <set>

// ---- the parsers (declared in kernel/Profile.h) ----

namespace hone::kernel {

using support::Error;
using support::Expected;

namespace {
/// The remarks of `text`: each line `re` matches becomes one through `make`; other lines
/// (continuations, warnings, the compiler's other output) are skipped.
template <typename Make> std::vector<Remark> remarks(const std::string &text, const std::regex &re, Make make) {
  std::vector<Remark> out;
  for (const auto &l : reportLines(text)) {
    std::smatch m;
    if (l.size() > 8192 || !std::regex_match(l, m, re))
      continue;
    Remark r;
    r.file = m[1].str();
    r.line = intOf(m[2].str());
    r.column = intOf(m[3].str());
    make(m, r);
    out.push_back(std::move(r));
  }
  return out;
}
} // namespace

Expected<std::vector<Remark>> parseGccRemarks(const std::string &text) {
  static const std::regex re(R"(^(.+?):(\d+):(\d+): (optimized|missed|note): (.*)$)");
  return remarks(text, re, [](const std::smatch &m, Remark &r) {
    r.kind = m[4].str();
    r.message = m[5].str();
  });
}

Expected<std::vector<Remark>> parseClangRemarks(const std::string &text) {
  static const std::regex re(R"(^(.+?):(\d+):(\d+): remark: (.*?) \[-Rpass(-missed|-analysis)?=([A-Za-z0-9_-]+)\]$)");
  return remarks(text, re, [](const std::smatch &m, Remark &r) {
    r.message = m[4].str();
    r.kind = m[5].str() == "-missed" ? "missed" : m[5].str() == "-analysis" ? "analysis" : "optimized";
    r.pass = m[6].str();
  });
}

void to_json(nlohmann::json &j, const Remark &r) {
  j = {{"file", r.file}, {"line", r.line}, {"column", r.column}, {"kind", r.kind}, {"message", r.message}};
}

} // namespace hone::kernel

namespace hone::kernel::profilers {

namespace {

/// Compiler remarks: which loops vectorized, and why the others did not.
/// The host compiler's vectorizer remarks are about CPU code.
std::optional<std::string> remarksUnavailable(const Manifest &, const ProfileOptions &, const KernelProfile &p) {
  return p.gpu ? std::optional<std::string>("") : std::nullopt;
}

void remarksRun(const Manifest &m, const Variant &v, const std::string &dir, const ProfileOptions & /*o*/,
                KernelProfile &p) {
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
    BuildResult c =
        build(m, v, dir + "/remarks-clang",
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

/// Loops the vectorizer left scalar (gcc's and clang's remarks), first those on hot lines.
void remarksDiagnose(Findings &f, const Thresholds &t) {
  const KernelProfile &p = f.p;
  std::vector<const CostLine *> hot = hotLines(p, t);
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
          share = std::max(share,
                           event(*c, "Ir") /
                               std::max(1.0, p.cachegrind->totals.count("Ir") ? p.cachegrind->totals.at("Ir") : 1.0));
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

/// Its part of the profile's JSON: the remarks of the project's files (an empty list when none).
void remarksJson(const KernelProfile &p, json &j) { j["remarks"] = p.remarks; }

} // namespace

const Profiler kRemarks{"remarks", remarksUnavailable, remarksRun, remarksDiagnose, remarksJson};

} // namespace hone::kernel::profilers
