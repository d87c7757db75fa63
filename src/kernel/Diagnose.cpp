#include "kernel/Diagnose.h"

#include "kernel/SourceKnobs.h"
#include "kernel/profilers/Profiler.h"
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
#include <map>
#include <set>
#include <unistd.h>
#include <cmath>
#include <filesystem>
#include <thread>

namespace hone::kernel {

namespace fs = std::filesystem;
using nlohmann::json;

KernelProfile profileVariant(const Manifest &m, const Variant &v, const std::string &dir, const ProfileOptions &o) {
  KernelProfile p;
  p.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  p.gpu = m.language == "cuda";
  std::error_code ec;
  fs::create_directories(dir, ec);
  for (const std::string &name : o.off) // a name no profiler has would leave that profiler running
    HONE_CHECK(std::any_of(profilers::profilers().begin(), profilers::profilers().end(),
                           [&](const profilers::Profiler *pr) { return pr->name == name; }),
               ("ProfileOptions::off names no profiler: " + name).c_str());
  for (const profilers::Profiler *profiler : profilers::profilers()) {
    if (o.off.count(std::string(profiler->name)))
      continue;
    if (auto why = profiler->unavailable ? profiler->unavailable(m, o, p) : std::nullopt) {
      if (!why->empty())
        p.skipped.push_back(fmt::format("{}: {}", profiler->name, *why));
      continue;
    }
    profiler->run(m, v, dir, o, p);
  }
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

/// Findings about a loop nest the profile counts as cold are left out of `out`, and said to be (the list
/// returned): a loop with 0.1% of the time is not where a change pays.
json leaveOutCold(std::vector<support::Bottleneck> &out, const KernelProfile &p, const Thresholds &t) {
  json cold = json::array();
  if (p.breakdown) {
    std::vector<support::Bottleneck> kept;
    for (auto &b : out) {
      const NestShare *n = !b.file.empty() && b.line ? p.breakdown->nestAt(b.file, b.line) : nullptr;
      // A nest that calls out may spend its time in the callees (printf's, in a dump): cold only when
      // that cannot be so.
      double callees = n && n->callShare ? *n->callShare : n && n->calls ? p.breakdown->outside : 0.0;
      // A loop whose nest spends its time in the functions it calls (printf's, in a dump): vectorizing
      // it changes nothing.
      bool inCalls = n && n->callShare && *n->callShare >= 0.8 * (n->share + *n->callShare) &&
                     vectorizerKind(parseFindingKind(b.kind).value_or(FindingKind::Serial));
      bool isCold = n && n->share + callees < t.coldShare;
      if (isCold || inCalls)
        cold.push_back({{"kind", b.kind},
                        {"file", n->file},
                        {"line", b.line},
                        {"nest_line", n->line},
                        {"nest_share", n->share},
                        {"why", isCold ? "cold" : "calls"}});
      else
        kept.push_back(std::move(b));
    }
    out = std::move(kept);
  }
  return cold;
}

} // namespace

Diagnosis diagnosis(const KernelProfile &p, const Thresholds &t) {
  profilers::Findings f{p};
  for (const profilers::Profiler *profiler : profilers::profilers()) {
    f.tool = profiler->name;
    profiler->diagnose(f, t);
  }
  Diagnosis d;
  d.evidence.tool = "kernel profilers";
  d.evidence.bottlenecks = std::move(f.out);
  json cold = p.breakdown ? leaveOutCold(d.evidence.bottlenecks, p, t) : json::array();
  std::stable_sort(d.evidence.bottlenecks.begin(), d.evidence.bottlenecks.end(),
                   [](const support::Bottleneck &a, const support::Bottleneck &b) { return a.share > b.share; });
  if (p.breakdown) {
    d.breakdown = toJson(*p.breakdown);
    d.cold = std::move(cold);
  }
  return d;
}

json toJson(const Diagnosis &d) {
  json result{{"schema", 1}, {"bottlenecks", support::toJson(d.evidence.bottlenecks)}};
  if (!d.breakdown.is_null()) {
    result["breakdown"] = d.breakdown;
    result["cold"] = d.cold;
  }
  return result;
}

json diagnose(const KernelProfile &p, const Thresholds &t) { return toJson(diagnosis(p, t)); }

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
