// Nsight Compute: the user's report (`ncu --csv`), read, never run (no GPU is assumed). Findings:
// uncoalesced loads, bank conflicts, low achieved occupancy, divergence, the roofline's bound.
// Here too: the parser of `ncu --csv` (either page), and its part of the profile's JSON.
#include "kernel/profilers/Profiler.h"

#include "support/FileUtil.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

// ---- the parser (declared in kernel/Profile.h) ----

namespace hone::kernel {

using support::Error;
using support::Expected;

Expected<std::vector<NcuKernel>> parseNcuCsv(const std::string &text) {
  std::vector<std::vector<std::string>> rows;
  int lineNo = 0, headerLine = 0;
  for (const auto &l : reportLines(text)) {
    ++lineNo;
    if (l.rfind("==PROF==", 0) == 0 || l.rfind("==WARNING==", 0) == 0 || l.rfind("==ERROR==", 0) == 0 ||
        trimBlanks(l).empty())
      continue;
    bool ok;
    auto f = csvFields(l, &ok);
    if (!ok)
      return Error{fmt::format("line {}: unterminated quoted field", lineNo), lineNo, 1};
    if (rows.empty()) {
      if (std::find(f.begin(), f.end(), "ID") == f.end())
        continue; // the program's own output before the report
      headerLine = lineNo;
    }
    rows.push_back(std::move(f));
  }
  if (rows.empty())
    return Error{"no Nsight Compute CSV header (a row with an \"ID\" column) in the file"};
  const auto &header = rows[0];
  auto col = [&](const char *name) -> int {
    auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : static_cast<int>(it - header.begin());
  };
  int id = col("ID"), kname = col("Kernel Name"), block = col("Block Size"), grid = col("Grid Size");
  int mname = col("Metric Name"), munit = col("Metric Unit"), mvalue = col("Metric Value");
  std::vector<NcuKernel> out;
  std::map<std::string, size_t> byId;
  auto at = [](const std::vector<std::string> &r, int c) {
    return c >= 0 && c < static_cast<int>(r.size()) ? r[c] : "";
  };
  auto kernelOf = [&](const std::vector<std::string> &r) -> NcuKernel & {
    std::string key = at(r, id);
    auto it = byId.find(key);
    if (it != byId.end())
      return out[it->second];
    byId[key] = out.size();
    out.push_back({key, at(r, kname), at(r, block), at(r, grid), {}, {}});
    return out.back();
  };
  if (mname >= 0 && mvalue >= 0) { // --page details
    for (size_t i = 1; i < rows.size(); ++i) {
      const auto &r = rows[i];
      if (static_cast<int>(r.size()) != static_cast<int>(header.size()))
        return Error{fmt::format("row {} has {} fields; the header has {}", i + 1, r.size(), header.size()),
                     headerLine + static_cast<int>(i), 1};
      NcuKernel &k = kernelOf(r);
      if (auto v = toNumber(at(r, mvalue))) {
        k.metrics[at(r, mname)] = *v;
        k.units[at(r, mname)] = at(r, munit);
      }
    }
  } else { // --page raw: one row per kernel; a units row (empty ID) after the header
    std::vector<std::string> units;
    for (size_t i = 1; i < rows.size(); ++i) {
      const auto &r = rows[i];
      if (r.size() != header.size())
        return Error{fmt::format("row {} has {} fields; the header has {}", i + 1, r.size(), header.size()),
                     headerLine + static_cast<int>(i), 1};
      if (at(r, id).empty()) {
        units = r;
        continue;
      }
      NcuKernel &k = kernelOf(r);
      for (size_t c = 0; c < header.size(); ++c) {
        if (static_cast<int>(c) == id || static_cast<int>(c) == kname)
          continue;
        if (auto v = toNumber(r[c])) {
          k.metrics[header[c]] = *v;
          if (c < units.size())
            k.units[header[c]] = units[c];
        }
      }
    }
  }
  if (out.empty())
    return Error{"the Nsight Compute CSV has a header but no kernel rows"};
  return out;
}

void to_json(nlohmann::json &j, const NcuKernel &k) {
  j = {{"id", k.id}, {"kernel", k.name}, {"block", k.blockSize}, {"grid", k.gridSize}, {"metrics", k.metrics}};
}

} // namespace hone::kernel

namespace hone::kernel::profilers {

namespace {

/// The user's Nsight Compute report.
/// Nsight Compute's report is read from a file taken on a GPU machine, when the user gives one.
std::optional<std::string> ncuUnavailable(const Manifest &, const ProfileOptions &o, const KernelProfile &) {
  return o.ncuReport.empty() ? std::optional<std::string>("") : std::nullopt;
}

void ncuRun(const Manifest & /*m*/, const Variant & /*v*/, const std::string & /*dir*/, const ProfileOptions &o,
            KernelProfile &p) {
  auto text = support::readFile(o.ncuReport);
  auto parsed = text ? parseNcuCsv(*text) : support::Expected<std::vector<NcuKernel>>(text.error());
  if (parsed) {
    p.ncu = std::move(*parsed);
    p.tools.push_back("ncu");
  } else {
    p.skipped.push_back(fmt::format("ncu: {}: {}", o.ncuReport, parsed.error().message));
  }
}

/// What Nsight Compute measured.
void ncuDiagnose(Findings &f, const Thresholds &t) {
  const KernelProfile &p = f.p;
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
      f.add(
          FindingKind::MemoryBound, k.name, 0.3,
          fmt::format("{}: DRAM at {:.0f}% of peak, SMs at {:.0f}%: memory-bound by the roofline", k.name, *dram, *sm),
          {{"dram_pct", *dram}, {"sm_pct", *sm}});
    else if (dram && sm && *sm >= t.boundPct && *sm > *dram)
      f.add(
          FindingKind::ComputeBound, k.name, 0.2,
          fmt::format("{}: SMs at {:.0f}% of peak, DRAM at {:.0f}%: compute-bound by the roofline", k.name, *sm, *dram),
          {{"dram_pct", *dram}, {"sm_pct", *sm}});
  }
}

/// Its part of the profile's JSON: each kernel's metrics from the report (an empty list when none).
void ncuJson(const KernelProfile &p, json &j) { j["ncu"] = p.ncu; }

} // namespace

const Profiler kNcu{"ncu", ncuUnavailable, ncuRun, ncuDiagnose, ncuJson};

} // namespace hone::kernel::profilers
