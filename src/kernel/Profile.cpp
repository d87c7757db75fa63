// What the profile's schema computes: the loop nest holding a line, and a profile as JSON. The
// parsers are with their profilers, in kernel/profilers/.
#include "kernel/Profile.h"

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
  auto costs = [](const std::vector<CostLine> &v, size_t n) {
    json a = json::array();
    for (size_t i = 0; i < v.size() && i < n; ++i) {
      json c{{"file", v[i].file}, {"function", v[i].function}, {"events", v[i].events}};
      if (v[i].line)
        c["line"] = v[i].line;
      a.push_back(std::move(c));
    }
    return a;
  };
  if (p.breakdown)
    j["breakdown"] = toJson(*p.breakdown);
  if (p.cachegrind)
    j["cachegrind"] = {{"totals", p.cachegrind->totals},
                       {"functions", costs(p.cachegrind->functions, 10)},
                       {"lines", costs(p.cachegrind->lines, 20)}};
  json remarks = json::array();
  for (const auto &r : p.remarks)
    remarks.push_back({{"file", r.file}, {"line", r.line}, {"column", r.column}, {"kind", r.kind}, {"message", r.message}});
  j["remarks"] = remarks;
  if (p.perf)
    j["perf"] = {{"counters", p.perf->counters}, {"unsupported", p.perf->unsupported},
                 {"cpus_utilized", p.perf->cpusUtilized}};
  if (p.mca)
    j["mca"] = {{"loop", p.mcaLoop},
                {"iterations", p.mca->iterations},
                {"cycles_per_iteration", p.mca->cyclesPerIteration()},
                {"block_rthroughput", p.mca->blockRThroughput},
                {"ipc", p.mca->ipc},
                {"backend_pressure", p.mca->pressure},
                {"resource_pressure", p.mca->resourcePressure},
                {"data_dependencies", p.mca->dataDependencies}};
  json ptx = json::array();
  for (const auto &k : p.ptxas)
    ptx.push_back({{"kernel", k.name}, {"arch", k.arch}, {"registers", k.registers}, {"shared_bytes", k.sharedBytes},
                   {"spill_stores", k.spillStores}, {"spill_loads", k.spillLoads}, {"stack_bytes", k.stackBytes}});
  j["ptxas"] = ptx;
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
  json omp = json::array();
  for (const auto &o : p.ompSchedules)
    omp.push_back({{"file", o.file}, {"line", o.line}, {"kind", o.kind}, {"chunk", o.chunk}, {"runs", o.runs}});
  j["omp_schedules"] = omp;
  json ncu = json::array();
  for (const auto &k : p.ncu)
    ncu.push_back({{"id", k.id}, {"kernel", k.name}, {"block", k.blockSize}, {"grid", k.gridSize}, {"metrics", k.metrics}});
  j["ncu"] = ncu;
  return j;
}

} // namespace hone::kernel
