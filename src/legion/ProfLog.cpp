#include "legion/ProfLog.h"

#include "sim/Simulator.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>

namespace hone::legion {

namespace {

/// One field of a record type, as the preamble declares it.
struct FieldSpec {
  std::string name;
  std::string type;
  int bytes = 0; // -1: a NUL-terminated string
};
struct RecordSpec {
  std::string name;
  std::vector<FieldSpec> fields;
};

/// A field's value: integers (and timestamps) as 64-bit, strings as text.
struct Value {
  uint64_t u = 0;
  int64_t i = 0;
  std::string text;
};

class GzReader {
public:
  explicit GzReader(const std::string &path) : path_(path), f_(gzopen(path.c_str(), "rb")) {}
  ~GzReader() {
    if (f_)
      gzclose(f_);
  }
  GzReader(const GzReader &) = delete;
  GzReader &operator=(const GzReader &) = delete;
  bool ok() const { return f_ != nullptr; }
  uint64_t offset() const { return offset_; }

  /// Reads exactly n bytes; false at the end of the data (or on a read error, in `error`).
  bool read(void *out, size_t n) {
    size_t got = 0;
    while (got < n) {
      if (pos_ == len_ && !fill())
        return false;
      size_t take = std::min(n - got, len_ - pos_);
      std::memcpy(static_cast<char *>(out) + got, buf_ + pos_, take);
      pos_ += take;
      got += take;
      offset_ += take;
    }
    return true;
  }
  /// A line without its newline; nullopt at the end.
  std::optional<std::string> line(size_t max = 1 << 16) {
    std::string s;
    char c;
    while (read(&c, 1)) {
      if (c == '\n')
        return s;
      if (s.size() >= max)
        return s; // not a text line: the caller reports it
      s += c;
    }
    return s.empty() ? std::nullopt : std::optional<std::string>(s);
  }
  std::string error;

private:
  bool fill() {
    int n = gzread(f_, buf_, sizeof(buf_));
    if (n < 0) {
      int code = 0;
      const char *msg = gzerror(f_, &code);
      error = msg ? msg : "read error";
      return false;
    }
    pos_ = 0;
    len_ = static_cast<size_t>(n);
    return n > 0;
  }
  std::string path_;
  gzFile f_;
  char buf_[1 << 16];
  size_t pos_ = 0, len_ = 0;
  uint64_t offset_ = 0;
};

bool isSigned(const std::string &type) {
  return type == "long long" || type == "int" || type == "maxdim" || type == "ProcKind" || type == "MemKind" ||
         type == "MappingCallKind" || type == "RuntimeCallKind" || type == "DepPartOpKind";
}

/// `Name {id:N, field:type:bytes, ...}`
std::optional<std::pair<int, RecordSpec>> parsePreambleLine(const std::string &line, std::string *why) {
  size_t brace = line.find(" {id:");
  if (brace == std::string::npos || line.empty() || line.back() != '}') {
    *why = "expected 'Name {id:N, field:type:bytes, ...}'";
    return std::nullopt;
  }
  RecordSpec spec;
  spec.name = line.substr(0, brace);
  std::string body = line.substr(brace + 5, line.size() - brace - 6);
  size_t comma = body.find(", ");
  std::string idText = body.substr(0, comma);
  char *end = nullptr;
  long id = std::strtol(idText.c_str(), &end, 10);
  if (idText.empty() || *end != '\0' || id < 0 || id > 1 << 20) {
    *why = "the record type's id '" + idText + "' is not a number";
    return std::nullopt;
  }
  while (comma != std::string::npos) {
    size_t next = body.find(", ", comma + 2);
    std::string item = body.substr(comma + 2, next == std::string::npos ? std::string::npos : next - comma - 2);
    comma = next;
    // name:type:bytes, where a type may contain spaces ("unsigned long long") but no colon.
    size_t c1 = item.find(':'), c2 = item.rfind(':');
    if (c1 == std::string::npos || c1 == c2) {
      *why = "field '" + item + "' is not name:type:bytes";
      return std::nullopt;
    }
    FieldSpec f{item.substr(0, c1), item.substr(c1 + 1, c2 - c1 - 1), 0};
    std::string bytes = item.substr(c2 + 1);
    long b = std::strtol(bytes.c_str(), &end, 10);
    if (bytes.empty() || *end != '\0' || b < -1 || b == 0 || b > 16 || (b == -1 && f.type != "string")) {
      *why = fmt::format("field '{}' has an impossible size '{}'", f.name, bytes);
      return std::nullopt;
    }
    f.bytes = static_cast<int>(b);
    spec.fields.push_back(std::move(f));
  }
  return std::make_pair(static_cast<int>(id), std::move(spec));
}

const char *procKindName(int64_t k) {
  switch (k) {
  case 1: return "GPU";
  case 2: return "CPU";
  case 3: return "UTIL";
  case 4: return "IO";
  case 5: return "PROC_GROUP";
  case 6: return "PROC_SET";
  case 7: return "OMP";
  case 8: return "PY";
  default: return "OTHER";
  }
}

struct OpRun {
  uint32_t task = 0;
  uint64_t proc = 0;
  uint64_t ready = 0, start = 0, stop = 0;
};

/// Everything gathered from all files, before aggregation.
struct Gathered {
  std::map<uint32_t, std::string> taskNames;
  std::map<uint64_t, std::pair<int64_t, int64_t>> procs; // id -> (kind, node)
  std::unordered_map<uint64_t, OpRun> ops;                // op id -> its run (with the file's node)
  std::unordered_map<uint64_t, uint64_t> waits;           // op id -> ns spent blocked
  uint64_t firstStart = UINT64_MAX, lastStop = 0;
  LegionProfile out;
};

/// What the files read so far have taken, against the limits.
struct Budget {
  const ProfLogLimits &limits;
  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
  uint64_t bytesBefore = 0; // the earlier files' uncompressed bytes
  /// Why reading must stop now ("" when it need not).
  std::string exceeded(uint64_t bytesHere) const {
    if (bytesBefore + bytesHere > limits.uncompressedBytes)
      return fmt::format("the logs hold more than {} bytes uncompressed (a Legion Prof log of a real run is far "
                         "smaller: is it one?)",
                         limits.uncompressedBytes);
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > limits.seconds)
      return fmt::format("reading the logs took longer than {:g} s; stopped", limits.seconds);
    return "";
  }
};

/// What one record says, added to `g`; `node`: the node of the records that follow a MachineDesc.
void gather(const RecordSpec &spec, const std::vector<Value> &values, int64_t &node, Gathered &g) {
  auto field = [&](const char *name) -> const Value * {
    for (size_t f = 0; f < spec.fields.size(); ++f)
      if (spec.fields[f].name == name)
        return &values[f];
    return nullptr;
  };
  auto num = [&](const char *name) {
    const Value *v = field(name);
    return v ? v->u : 0;
  };
  auto duration = [&]() {
    uint64_t s = num("start"), e = num("stop");
    return e > s ? static_cast<double>(e - s) * 1e-9 : 0.0;
  };
  const std::string &n = spec.name;
  if (n == "MaxDimDesc") {
    // read above: it sizes the point and array fields of later records
  } else if (n == "MachineDesc") {
    node = static_cast<int64_t>(num("node_id"));
  } else if (n == "ProcDesc") {
    const Value *k = field("kind");
    g.procs[num("proc_id")] = {k ? k->i : 0, node};
  } else if (n == "TaskKind") {
    const Value *name = field("name"), *overwrite = field("overwrite"); // (older logs have no overwrite)
    if (name && (!g.taskNames.count(static_cast<uint32_t>(num("task_id"))) || (overwrite && overwrite->u)))
      g.taskNames[static_cast<uint32_t>(num("task_id"))] = name->text;
  } else if (n == "TaskInfo" || n == "GPUTaskInfo") { // (ImplicitTaskInfo: the program's own thread)
    OpRun r{static_cast<uint32_t>(num("task_id")), num("proc_id"), num("ready"), num("start"), num("stop")};
    if (n == "GPUTaskInfo" && num("gpu_stop") > num("gpu_start")) {
      r.start = num("gpu_start");
      r.stop = num("gpu_stop");
    }
    g.ops[num("op_id")] = r;
    if (r.stop > r.start) {
      g.firstStart = std::min(g.firstStart, r.start);
      g.lastStop = std::max(g.lastStop, r.stop);
    }
  } else if (n == "TaskWaitInfo") {
    uint64_t s = num("wait_start"), e = num("wait_end");
    if (e > s)
      g.waits[num("op_id")] += e - s;
  } else if (n == "MetaInfo" || n == "MessageInfo") {
    g.out.metaS += duration();
  } else if (n == "CopyInfo") {
    ++g.out.copies;
    g.out.bytesCopied += static_cast<double>(num("size"));
    g.out.copyBusyS += duration();
  } else if (n == "FillInfo") {
    ++g.out.fills;
  } else if (n == "MapperCallInfo") {
    g.out.mapperS += duration();
  } else if (n == "RuntimeCallInfo") {
    g.out.runtimeCallS += duration();
  } else {
    ++g.out.skipped;
  }
}

support::Expected<bool> readOne(const std::string &path, int64_t fileIndex, Gathered &g,
                                std::vector<std::string> *warnings, Budget &budget) {
  auto fail = [&](uint64_t at, const std::string &what) {
    return support::Error{fmt::format("{}: at byte {} (uncompressed): {}", path, at, what)};
  };
  GzReader in(path);
  if (!in.ok())
    return support::Error{fmt::format("{}: cannot open: {}", path, std::strerror(errno))};
  auto first = in.line(256);
  if (!first)
    return fail(0, in.error.empty() ? "the file is empty" : in.error);
  if (first->rfind("FileType: BinaryLegionProf", 0) != 0)
    return fail(0, fmt::format("not a Legion Prof binary log (its first line is '{}'; expected 'FileType: "
                               "BinaryLegionProf v: 1.0'). Run the program with -lg:prof N -lg:prof_logfile FILE",
                               first->substr(0, 80)));
  std::unordered_map<int, RecordSpec> specs;
  for (;;) {
    uint64_t at = in.offset();
    auto line = in.line();
    if (!line)
      return fail(at, "the preamble does not end (no empty line before the records)");
    if (line->empty())
      break;
    std::string why;
    auto parsed = parsePreambleLine(*line, &why);
    if (!parsed)
      return fail(at, "preamble line '" + line->substr(0, 120) + "': " + why);
    specs[parsed->first] = std::move(parsed->second);
  }
  int64_t maxDim = 1, uuidSize = 0, node = fileIndex;
  std::vector<Value> values;
  for (uint64_t record = 0;; ++record) {
    uint64_t at = in.offset();
    if (record % 4096 == 0)
      if (std::string why = budget.exceeded(at); !why.empty())
        return fail(at, why);
    int32_t id;
    if (!in.read(&id, sizeof(id))) {
      if (!in.error.empty())
        return fail(at, in.error);
      break; // the end
    }
    auto it = specs.find(id);
    if (it == specs.end())
      return fail(at, fmt::format("a record of type {}, which the preamble does not declare", id));
    const RecordSpec &spec = it->second;
    values.assign(spec.fields.size(), Value{});
    bool cut = false;
    for (size_t f = 0; f < spec.fields.size() && !cut; ++f) {
      const FieldSpec &fs = spec.fields[f];
      Value &v = values[f];
      if (fs.type == "string") {
        char c;
        for (size_t length = 0;; ++length) {
          if (!in.read(&c, 1)) {
            cut = true;
            break;
          }
          if (c == '\0')
            break;
          if (length >= (1u << 20))
            return fail(at, fmt::format("{}.{}: a string longer than 1 MiB", spec.name, fs.name));
          if (v.text.size() < budget.limits.nameChars)
            v.text += c;
          else if (v.text.size() == budget.limits.nameChars)
            v.text += " ..."; // the rest is read, not kept
        }
        continue;
      }
      int64_t count = 1;
      if (fs.type == "point")
        count = maxDim;
      else if (fs.type == "array")
        count = 2 * maxDim;
      else if (fs.type == "uuid")
        count = uuidSize;
      for (int64_t k = 0; k < count; ++k) {
        unsigned char raw[16] = {};
        if (!in.read(raw, static_cast<size_t>(fs.bytes))) {
          cut = true;
          break;
        }
        uint64_t u = 0;
        for (int b = std::min(fs.bytes, 8) - 1; b >= 0; --b) // little-endian, as Legion writes
          u = (u << 8) | raw[b];
        int64_t i = static_cast<int64_t>(u);
        if (isSigned(fs.type) && fs.bytes < 8 && (raw[fs.bytes - 1] & 0x80))
          i = static_cast<int64_t>(u | (~uint64_t(0) << (8 * fs.bytes)));
        if (k == 0) {
          v.u = u;
          v.i = i;
        }
      }
      if (fs.type == "maxdim") {
        if (v.i < 1 || v.i > 9)
          return fail(at, fmt::format("{}.{} = {}: not a number of dimensions", spec.name, fs.name, v.i));
        maxDim = v.i;
      } else if (fs.type == "uuid_size") {
        if (v.u > 64)
          return fail(at, fmt::format("{}.{} = {}: not a device id size", spec.name, fs.name, v.u));
        uuidSize = static_cast<int64_t>(v.u);
      }
    }
    if (cut) {
      if (warnings)
        warnings->push_back(fmt::format("{}: cut short at byte {} (in a {} record); using what came before", path,
                                        in.offset(), spec.name));
      break;
    }
    ++g.out.records;
    gather(spec, values, node, g);
  }
  budget.bytesBefore += in.offset();
  return true;
}

} // namespace

support::Expected<LegionProfile> readLegionProfile(const std::vector<std::string> &files,
                                                   std::vector<std::string> *warnings, const ProfLogLimits &limits) {
  if (files.empty())
    return support::Error{"no Legion Prof log given"};
  Gathered g;
  Budget budget{limits};
  for (size_t i = 0; i < files.size(); ++i) {
    auto r = readOne(files[i], static_cast<int64_t>(i), g, warnings, budget);
    if (!r)
      return r.error();
  }
  LegionProfile &p = g.out;
  p.nodes = static_cast<int64_t>(files.size());
  p.spanS = g.lastStop > g.firstStart ? static_cast<double>(g.lastStop - g.firstStart) * 1e-9 : 0;
  // Processors, numbered as hone numbers them: by id within (node, kind).
  std::map<uint64_t, size_t> procIndex;
  std::map<std::pair<int64_t, std::string>, int64_t> counters;
  for (const auto &[id, kn] : g.procs) {
    LegionProfile::Processor pr;
    pr.id = id;
    pr.kind = procKindName(kn.first);
    pr.node = kn.second;
    pr.index = counters[{pr.node, pr.kind}]++;
    procIndex[id] = p.processors.size();
    p.processors.push_back(pr);
  }
  std::map<std::string, LegionProfile::Task> tasks;
  std::map<std::string, std::map<std::string, double>> kindTime;
  for (const auto &[op, r] : g.ops) {
    auto nameIt = g.taskNames.find(r.task);
    std::string name = nameIt != g.taskNames.end() ? nameIt->second : fmt::format("task {}", r.task);
    double busy = r.stop > r.start ? static_cast<double>(r.stop - r.start) * 1e-9 : 0;
    if (auto w = g.waits.find(op); w != g.waits.end())
      busy = std::max(0.0, busy - static_cast<double>(w->second) * 1e-9);
    LegionProfile::Task &t = tasks[name];
    t.name = name;
    ++t.points;
    t.busyS += busy;
    if (r.start > r.ready && r.ready > 0)
      t.waitS += static_cast<double>(r.start - r.ready) * 1e-9;
    std::string kind = "OTHER";
    if (auto pi = procIndex.find(r.proc); pi != procIndex.end()) {
      LegionProfile::Processor &pr = p.processors[pi->second];
      ++pr.tasks;
      pr.busyS += busy;
      kind = pr.kind;
    }
    kindTime[name][kind] += busy + 1e-12;
  }
  for (auto &[name, t] : tasks) {
    double best = -1;
    for (const auto &[kind, s] : kindTime[name])
      if (s > best) {
        best = s;
        t.kind = kind;
      }
    p.tasks.push_back(t);
  }
  std::stable_sort(p.tasks.begin(), p.tasks.end(),
                   [](const LegionProfile::Task &a, const LegionProfile::Task &b) { return a.busyS > b.busyS; });
  for (auto &pr : p.processors)
    pr.busyFraction = p.spanS > 0 ? std::min(1.0, pr.busyS / p.spanS) : 0;
  return p;
}

namespace {

std::string seconds(double s) {
  if (s >= 1)
    return fmt::format("{:.3g} s", s);
  if (s >= 1e-3)
    return fmt::format("{:.3g} ms", s * 1e3);
  return fmt::format("{:.3g} us", s * 1e6);
}

std::string procName(const LegionProfile::Processor &p) { return fmt::format("{} ({},{})", p.kind, p.node, p.index); }

/// Processors that ran application work (utility processors run the runtime's).
bool appKind(const std::string &kind) { return kind != "UTIL" && kind != "PROC_GROUP" && kind != "PROC_SET"; }

} // namespace

support::Evidence evidenceOf(const LegionProfile &p) {
  // As the simulator finds them: the same kinds, thresholds and shares.
  using B = sim::Bottleneck;
  const sim::BottleneckThresholds th;
  std::vector<B> found;
  std::map<std::string, std::pair<double, int>> byKind;
  for (const auto &pr : p.processors)
    if (appKind(pr.kind)) {
      byKind[pr.kind].first += pr.busyFraction;
      byKind[pr.kind].second += 1;
    }
  for (const auto &[kind, sum] : byKind) {
    double mean = sum.first / sum.second, max = 0;
    std::string busiest;
    for (const auto &pr : p.processors)
      if (pr.kind == kind && pr.busyFraction > max) {
        max = pr.busyFraction;
        busiest = procName(pr);
      }
    if (max >= th.processorBusy && mean < th.imbalanceRatio * max)
      found.push_back({sim::BottleneckKind::Processor, busiest, max,
                       fmt::format("load imbalance on {} processors: {} is busy {:.0f}% of the time, the {} average "
                                   "{:.0f}% (measured)",
                                   kind, busiest, 100 * max, kind, 100 * mean)});
    else if (max >= th.processorBusy)
      found.push_back({sim::BottleneckKind::Processor, kind + " processors", mean,
                       fmt::format("the {} {} processors are busy {:.0f}% of the time on average (measured)",
                                   sum.second, kind, 100 * mean)});
    // Processors of a kind that work while others of the same kind stay idle.
    int idle = 0;
    for (const auto &pr : p.processors)
      idle += pr.kind == kind && pr.busyFraction < th.idleBusy;
    if (idle > 0 && max >= th.otherBusy)
      found.push_back({sim::BottleneckKind::Idle, kind + " processors", static_cast<double>(idle) / sum.second,
                       fmt::format("{} of the {} {} processors ran (almost) nothing while {} was busy {:.0f}% of the "
                                   "time (measured)",
                                   idle, sum.second, kind, busiest, 100 * max)});
  }
  double overhead = p.mapperS + p.runtimeCallS + p.metaS;
  if (p.spanS > 0 && overhead / std::max<int64_t>(1, p.nodes) / p.spanS >= th.runtimeShare)
    found.push_back({sim::BottleneckKind::Runtime, "runtime overhead", overhead / p.spanS,
                     fmt::format("the runtime's work takes {} ({:.0f}% of the run's span): mapper calls {}, runtime "
                                 "calls {}, meta-tasks {} (measured)",
                                 seconds(overhead), 100 * overhead / p.spanS, seconds(p.mapperS),
                                 seconds(p.runtimeCallS), seconds(p.metaS))});
  if (p.spanS > 0 && p.copyBusyS / p.spanS >= th.channelBusy)
    found.push_back({sim::BottleneckKind::Channel, "copies", p.copyBusyS / p.spanS,
                     fmt::format("copies are in flight {} ({:.0f}% of the run's span): {} copies moving {:.3g} MB "
                                 "(measured)",
                                 seconds(p.copyBusyS), 100 * p.copyBusyS / p.spanS, p.copies, p.bytesCopied / 1e6)});
  std::stable_sort(found.begin(), found.end(), [](const B &a, const B &b) { return a.share > b.share; });
  if (found.size() > th.keep)
    found.resize(th.keep);
  return sim::toEvidence(found, "legion-prof");
}

nlohmann::json toProfileJson(const LegionProfile &p) {
  using nlohmann::json;
  json j;
  j["status"] = "ok";
  j["source"] = "legion-prof";
  j["time_s"] = p.spanS;
  j["tasks"] = 0;
  int64_t points = 0;
  for (const auto &t : p.tasks)
    points += t.points;
  j["tasks"] = points;
  j["copies"] = p.copies;
  j["bytes_copied"] = p.bytesCopied;
  j["copy_busy_s"] = p.copyBusyS;
  j["runtime_overhead_s"] = p.mapperS + p.runtimeCallS + p.metaS;
  j["mapper_s"] = p.mapperS;
  j["runtime_calls_s"] = p.runtimeCallS;
  j["meta_tasks_s"] = p.metaS;
  j["processors"] = json::array();
  for (const auto &pr : p.processors)
    j["processors"].push_back({{"name", procName(pr)},
                               {"kind", pr.kind},
                               {"node", pr.node},
                               {"index", pr.index},
                               {"tasks", pr.tasks},
                               {"busy_s", pr.busyS},
                               {"busy_fraction", pr.busyFraction}});
  j["task_stats"] = json::array();
  for (const auto &t : p.tasks)
    j["task_stats"].push_back(
        {{"name", t.name}, {"kind", t.kind}, {"points", t.points}, {"busy_s", t.busyS}, {"wait_s", t.waitS}});

  j["bottlenecks"] = support::toJson(evidenceOf(p).bottlenecks);
  return j;
}

std::string summarize(const LegionProfile &p) {
  std::string out = fmt::format("Legion Prof: {} log(s), {} records ({} of kinds hone does not use)\n", p.nodes,
                                p.records, p.skipped);
  out += fmt::format("span {} (first task start to last task end)\n", seconds(p.spanS));
  out += "tasks (busiest first):\n";
  for (const auto &t : p.tasks)
    out += fmt::format("  {:<28} {:>6} x on {:<4} busy {:>10}  waited {}\n", t.name, t.points, t.kind,
                       seconds(t.busyS), seconds(t.waitS));
  out += "processors:\n";
  for (const auto &pr : p.processors)
    if (pr.tasks > 0 || appKind(pr.kind))
      out += fmt::format("  {:<14} {:>6} tasks  busy {:>10} ({:.0f}%)\n", procName(pr), pr.tasks, seconds(pr.busyS),
                         100 * pr.busyFraction);
  out += fmt::format("copies: {} moving {:.3g} MB, in flight {}; fills: {}\n", p.copies, p.bytesCopied / 1e6,
                     seconds(p.copyBusyS), p.fills);
  out += fmt::format("runtime: mapper calls {}, runtime calls {}, meta-tasks {}\n", seconds(p.mapperS),
                     seconds(p.runtimeCallS), seconds(p.metaS));
  return out;
}

} // namespace hone::legion
