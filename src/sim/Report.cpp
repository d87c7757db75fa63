#include "sim/Report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

namespace hone::sim {

namespace {

/// The bottlenecks of a run, each with the numbers behind it, largest share first; `fasterVariant`:
/// per task statistic, its fastest other variant and the time of one point there.
void findBottlenecks(Result &r, const Context &cx, const Execution &ex, double elapsed,
                     const std::vector<std::pair<ProcKind, double>> &fasterVariant, const BottleneckThresholds &th) {
  auto add = [&](BottleneckKind kind, std::string resource, double share, std::string detail) {
    r.bottlenecks.push_back({kind, std::move(resource), share, std::move(detail)});
  };
  for (const ChannelStat &c : r.channels)
    if (c.busyFraction >= th.channelBusy)
      add(BottleneckKind::Channel, c.name, c.busyFraction,
          fmt::format("{} is busy {:.0f}% of the time: {} in {} copies", c.name, 100 * c.busyFraction,
                      bytesText(c.bytes), c.copies));
  std::map<ProcKind, std::pair<double, int>> byKind; // busy sum, count
  for (const ProcessorStat &p : r.processors) {
    byKind[p.kind].first += p.busyFraction;
    byKind[p.kind].second += 1;
  }
  for (const auto &[kind, sum] : byKind) {
    double mean = sum.first / sum.second;
    double max = 0;
    std::string busiest;
    for (const ProcessorStat &p : r.processors)
      if (p.kind == kind && p.busyFraction > max) {
        max = p.busyFraction;
        busiest = p.name;
      }
    if (max >= th.processorBusy && mean < th.imbalanceRatio * max)
      add(BottleneckKind::Processor, busiest, max,
          fmt::format("load imbalance on {} processors: {} is busy {:.0f}% of the time, the {} average {:.0f}%",
                      model::toString(kind), busiest, 100 * max, model::toString(kind), 100 * mean));
    else if (max >= th.processorBusy)
      add(BottleneckKind::Processor, fmt::format("{} processors", model::toString(kind)), mean,
          fmt::format("the {} {} processors are busy {:.0f}% of the time on average", sum.second,
                      model::toString(kind), 100 * mean));
  }
  for (const auto &[kind, sum] : byKind)
    if (sum.first / sum.second < th.idleBusy)
      for (const auto &[other, osum] : byKind)
        if (other != kind && osum.first / osum.second >= th.otherBusy) {
          add(BottleneckKind::Idle, fmt::format("{} processors", model::toString(kind)), 1 - sum.first / sum.second,
              fmt::format("the {} {} processors are idle {:.0f}% of the time while the {} processors are busy "
                          "{:.0f}%",
                          sum.second, model::toString(kind), 100 * (1 - sum.first / sum.second),
                          model::toString(other), 100 * osum.first / osum.second));
          break;
        }
  if (elapsed > 0 && ex.runtimeBusyS / cx.machine().nodes / elapsed >= th.runtimeShare)
    add(BottleneckKind::Runtime, "runtime overhead", ex.runtimeBusyS / elapsed,
        fmt::format("the runtime spends {} analysing {} tasks and {} copies ({:.0f}% of the elapsed time{})",
                    timeText(ex.runtimeBusyS), r.tasks, r.copies, 100 * ex.runtimeBusyS / elapsed,
                    cx.machine().nodes > 1 ? ", summed over nodes" : ""));
  for (const MemoryStat &m : r.memories)
    if (m.peak >= th.memoryPeak * m.capacity)
      add(BottleneckKind::Memory, m.name, m.peak / m.capacity,
          fmt::format("{} peaks at {} of {} ({:.0f}%)", m.name, bytesText(m.peak), bytesText(m.capacity),
                      100 * m.peak / m.capacity));
  for (size_t i = 0; i < r.taskStats.size(); ++i) {
    const TaskStat &s = r.taskStats[i];
    double here = s.busyS / s.points;
    if (elapsed > 0 && fasterVariant[i].second < th.variantRatio * here)
      add(BottleneckKind::Variant, s.name, s.busyS / elapsed / std::max(1.0, static_cast<double>(r.processors.size())),
          fmt::format("{} runs on {} at {} per point; its {} variant would take about {}", s.name, s.kind,
                      timeText(here), model::toString(fasterVariant[i].first), timeText(fasterVariant[i].second)));
    if (s.accessS > 0 && s.accessS >= s.computeS && s.busyS > 0 && s.accessS > th.accessRatio * s.bestVariantS) {
      add(BottleneckKind::Access, s.name, elapsed > 0 ? s.accessS / elapsed : 0,
          fmt::format("{} spends {} moving data through its arguments in {} (regions {}); its fastest memories "
                      "would take about {} in total",
                      s.name, timeText(s.accessS), fmt::join(s.memories, ","), fmt::join(s.regions, ","),
                      timeText(s.bestVariantS)));
    }
  }
  std::stable_sort(r.bottlenecks.begin(), r.bottlenecks.end(),
                   [](const Bottleneck &a, const Bottleneck &b) { return a.share > b.share; });
  if (r.bottlenecks.size() > th.keep)
    r.bottlenecks.resize(th.keep);
}

} // namespace

Result report(const Context &cx, const Execution &ex, const Options &options, const BottleneckThresholds &th) {
  const Context::Tables &tb = cx.tables();
  const model::Program &prog = cx.program();
  const model::AppModel &app = *prog.app;
  Result r;
  r.ok = true;
  double t0 = ex.startS, t1 = ex.endS;
  double elapsed = t1 - t0;
  if (options.noiseSigma > 0) {
    std::mt19937_64 rng(options.seed);
    // Box-Muller on the raw engine output: identical on every platform.
    double u1 = (static_cast<double>(rng() >> 11) + 1.0) / 9007199254740993.0;
    double u2 = static_cast<double>(rng() >> 11) / 9007199254740992.0;
    double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
    elapsed *= std::exp(options.noiseSigma * z);
  }
  r.timeS = elapsed;
  r.lowerBoundS = cx.lowerBoundS();
  if (app.gflopsMetric) {
    r.throughputUnit = "GFLOP/s";
    r.throughput = elapsed > 0 ? prog.flops / elapsed / 1e9 : 0;
  } else {
    r.throughputUnit = "iterations/s";
    r.throughput = elapsed > 0 ? prog.iterations / elapsed : 0;
  }
  r.tasks = static_cast<int>(std::count_if(prog.tasks.begin(), prog.tasks.end(), [](const auto &t) { return t.timed; }));
  r.copies = ex.copies;
  r.bytesCopied = ex.bytesCopied;
  r.runtimeOverheadS = ex.runtimeBusyS;
  double span = elapsed > 0 ? (t1 - t0) : 1;

  for (size_t p = 0; p < tb.procs.size(); ++p)
    r.processors.push_back({tb.procs[p].name, tb.procs[p].kind, ex.procTasks[p], ex.procBusyS[p], ex.procBusyS[p] / span});
  for (const PortUse &p : ex.ports)
    if (p.copies > 0)
      r.channels.push_back({p.name, p.channel, p.copies, p.bytes, p.busyS, p.busyS / span});
  std::sort(r.channels.begin(), r.channels.end(), [](const auto &a, const auto &b) { return a.bytes > b.bytes; });
  for (size_t m = 0; m < tb.mems.size(); ++m) {
    auto events = ex.memEvents[m];
    std::sort(events.begin(), events.end(), [](const auto &a, const auto &b) {
      return a.first != b.first ? a.first < b.first : a.second < b.second; // frees first at equal times
    });
    double use = 0, peak = 0;
    for (const auto &[t, delta] : events) {
      use += delta;
      peak = std::max(peak, use);
    }
    r.memories.push_back({tb.mems[m].name, tb.mems[m].kind, tb.mems[m].spec->capacity, peak});
  }
  std::vector<std::pair<ProcKind, double>> fasterVariant; // per task stat
  for (size_t t = 0; t < app.tasks.size(); ++t) {
    const TaskUse &ag = ex.tasks[t];
    if (ag.points == 0)
      continue;
    TaskStat s;
    s.name = app.tasks[t].name;
    s.kind = std::string(model::toString(ag.kind));
    for (ProcKind k : app.tasks[t].variants)
      s.variants.emplace_back(model::toString(k));
    for (size_t a = 0; a < ag.memKinds.size(); ++a) {
      s.memories.emplace_back(ag.memKinds[a] ? model::toString(*ag.memKinds[a]) : "virtual");
      s.regions.push_back(app.tasks[t].args[a].region);
    }
    s.points = ag.points;
    s.busyS = ag.busyS;
    s.accessS = ag.accessS;
    s.computeS = ag.computeS;
    s.bestVariantS = ag.bestS;
    s.recopiedBytes = ag.recopiedBytes;
    // The fastest other variant for one of its points, for the "variant" bottleneck.
    std::pair<ProcKind, double> other{ag.kind, INFINITY};
    for (ProcKind k : app.tasks[t].variants)
      if (k != ag.kind && cx.machine().count(k) > 0) {
        ProcId p = tb.firstOf(k);
        double alt = taskTime(app.tasks[t], prog.tasks[ag.firstPoint], tb.proc(p), tb.reachOf(p)).total();
        if (alt < other.second)
          other = {k, alt};
      }
    fasterVariant.push_back(other);
    r.taskStats.push_back(std::move(s));
  }

  findBottlenecks(r, cx, ex, elapsed, fasterVariant, th);
  return r;
}

Result failed(const Context &cx, const Failure &failure) {
  Result r;
  r.errorKind = failure.kind;
  r.error = failure.message;
  r.errorDetail = failure.detail;
  r.lowerBoundS = cx.lowerBoundS();
  return r;
}

nlohmann::json toJson(const Result &r) {
  using nlohmann::json;
  json j;
  j["status"] = r.ok ? "ok" : "error";
  j["error"] = r.ok ? json(nullptr) : json(r.error);
  if (!r.ok) {
    j["error_kind"] = r.errorKind;
    j["error_detail"] = r.errorDetail;
  }
  j["time_s"] = r.ok ? json(r.timeS) : json(nullptr);
  j["throughput"] = r.ok ? json(r.throughput) : json(0);
  j["throughput_unit"] = r.throughputUnit;
  j["lower_bound_s"] = r.lowerBoundS;
  j["tasks"] = r.tasks;
  j["copies"] = r.copies;
  j["bytes_copied"] = r.bytesCopied;
  j["runtime_overhead_s"] = r.runtimeOverheadS;
  j["processors"] = json::array();
  for (const auto &p : r.processors)
    j["processors"].push_back({{"name", p.name},
                               {"kind", model::toString(p.kind)},
                               {"tasks", p.tasks},
                               {"busy_s", p.busyS},
                               {"busy_fraction", p.busyFraction}});
  j["channels"] = json::array();
  for (const auto &c : r.channels)
    j["channels"].push_back({{"name", c.name},
                             {"channel", c.channel},
                             {"copies", c.copies},
                             {"bytes", c.bytes},
                             {"busy_s", c.busyS},
                             {"busy_fraction", c.busyFraction}});
  j["memories"] = json::array();
  for (const auto &m : r.memories)
    j["memories"].push_back({{"name", m.name},
                             {"kind", model::toString(m.kind)},
                             {"capacity_bytes", m.capacity},
                             {"peak_bytes", m.peak}});
  j["task_stats"] = json::array();
  for (const auto &t : r.taskStats)
    j["task_stats"].push_back({{"name", t.name},
                               {"kind", t.kind},
                               {"variants", t.variants},
                               {"memories", t.memories},
                               {"regions", t.regions},
                               {"points", t.points},
                               {"busy_s", t.busyS},
                               {"access_s", t.accessS},
                               {"compute_s", t.computeS},
                               {"best_variant_s", t.bestVariantS},
                               {"recopied_bytes", t.recopiedBytes}});
  j["bottlenecks"] = support::toJson(toEvidence(r.bottlenecks, "simulator").bottlenecks);
  return j;
}

support::Evidence toEvidence(const std::vector<Bottleneck> &bottlenecks, std::string tool) {
  support::Evidence e;
  e.tool = std::move(tool);
  for (const auto &b : bottlenecks) {
    support::Bottleneck typed;
    typed.kind = toString(b.kind);
    typed.subject = b.resource;
    typed.share = b.share;
    typed.detail = b.detail;
    e.bottlenecks.push_back(std::move(typed));
  }
  return e;
}

std::string summarize(const Result &r, const Context &cx) {
  std::string out;
  const auto &app = *cx.program().app;
  out += fmt::format("app {} (size {} = {}) on {} ({})\n", app.name, app.sizeName, cx.program().size,
                     cx.machine().name, cx.machine().describe());
  if (!r.ok) {
    out += fmt::format("status: error ({})\n  {}\n  where: {}\n", r.errorKind, r.error, r.errorDetail);
    return out;
  }
  out += fmt::format("status: ok\nelapsed: {}   throughput: {:.4g} {}   lower bound: {} ({:.0f}% of it)\n",
                     timeText(r.timeS), r.throughput, r.throughputUnit, timeText(r.lowerBoundS),
                     r.timeS > 0 ? 100 * r.lowerBoundS / r.timeS : 0);
  out += fmt::format("{} tasks, {} copies moving {}, runtime overhead {}\n", r.tasks, r.copies,
                     bytesText(r.bytesCopied), timeText(r.runtimeOverheadS));
  out += "tasks:\n";
  for (const auto &t : r.taskStats)
    out += fmt::format("  {:<28} {:>5} x on {:<4} busy {:>10}  args in {}{}\n", t.name, t.points, t.kind,
                       timeText(t.busyS), t.memories.empty() ? "-" : fmt::format("{}", fmt::join(t.memories, ",")),
                       t.recopiedBytes > 0 ? fmt::format("  ({} copied again after CollectMemory released it)",
                                                         bytesText(t.recopiedBytes))
                                           : "");
  std::map<ProcKind, std::pair<double, int>> byKind;
  for (const auto &p : r.processors) {
    byKind[p.kind].first += p.busyFraction;
    byKind[p.kind].second += 1;
  }
  out += "processors:";
  for (const auto &[kind, s] : byKind)
    out += fmt::format("  {} x{} busy {:.0f}%", model::toString(kind), s.second, 100 * s.first / s.second);
  out += "\n";
  if (!r.channels.empty()) {
    out += "busiest channels:\n";
    for (size_t i = 0; i < std::min<size_t>(4, r.channels.size()); ++i)
      out += fmt::format("  {:<40} {:>10} in {:>5} copies, busy {:.0f}%\n", r.channels[i].name,
                         bytesText(r.channels[i].bytes), r.channels[i].copies, 100 * r.channels[i].busyFraction);
  }
  out += "memory peaks:";
  std::map<MemKind, double> peakByKind, capByKind;
  for (const auto &m : r.memories)
    if (m.peak >= peakByKind[m.kind]) {
      peakByKind[m.kind] = m.peak;
      capByKind[m.kind] = m.capacity;
    }
  for (const auto &[kind, peak] : peakByKind)
    out += fmt::format("  {} {}/{}", model::toString(kind), bytesText(peak), bytesText(capByKind[kind]));
  out += "\n";
  if (!r.bottlenecks.empty()) {
    out += "bottlenecks:\n";
    for (const auto &b : r.bottlenecks)
      out += fmt::format("  - {}\n", b.detail);
  }
  return out;
}

} // namespace hone::sim
