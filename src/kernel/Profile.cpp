// What the profile's schema computes: the loop nest holding a line, the breakdown as JSON, and a
// profile as JSON: its common fields here, each profiler's own part written by that profiler
// (kernel/profilers/). The parsers are with their profilers too.
#include "kernel/Profile.h"

#include "kernel/profilers/Profiler.h"

#include <nlohmann/json.hpp>

namespace hone::kernel {

const NestShare *TimeBreakdown::nestAt(const std::string &file, int line) const {
  for (const auto &n : nests)
    if (n.file == file && line >= n.line && line <= n.endLine)
      return &n;
  return nullptr;
}

nlohmann::json toJson(const TimeBreakdown &b) {
  using nlohmann::json;
  json nests = json::array();
  for (const auto &n : b.nests)
  {
    nests.push_back({{"file", n.file}, {"function", n.function}, {"line", n.line}, {"end_line", n.endLine},
                     {"share", n.share}, {"calls", n.calls}});
    if (n.callShare)
      nests.back()["call_share"] = *n.callShare;
  }
  json files = json::array();
  for (const auto &[file, share] : b.files)
    files.push_back({{"file", file}, {"share", share}});
  json outside = json::array();
  for (const auto &[function, share] : b.outsideFunctions)
    outside.push_back({{"function", function}, {"share", share}});
  return {{"measure", b.measure}, {"tool", b.tool},       {"scope", b.scope}, {"nests", nests},
          {"files", files},       {"outside", b.outside}, {"outside_functions", outside}};
}

nlohmann::json toJson(const KernelProfile &p) {
  using nlohmann::json;
  json j{{"schema", 1}, {"tools", p.tools}, {"skipped", p.skipped}, {"cores", p.cores}, {"gpu", p.gpu}};
  if (!p.notes.empty())
    j["notes"] = p.notes;
  for (const profilers::Profiler *profiler : profilers::profilers()) // each writes keys of its own
    profiler->toJson(p, j);
  return j;
}

} // namespace hone::kernel
