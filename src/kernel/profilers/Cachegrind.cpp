// cachegrind: exact instruction and cache-miss counts per function and line of the timed build, the
// breakdown of the time over the project's loop nests, and (when a nest calls out) callgrind's
// inclusive costs of its calls. Findings: L1 misses and DRAM traffic on the hot lines.
// Here too: the parsers of cachegrind's and callgrind's output files, and its part of the profile's JSON.
#include "kernel/profilers/Profiler.h"

#include "kernel/SourceKnobs.h"
#include "support/FileUtil.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <sstream>
#include <string_view>
#include <tuple>

// ---- the parsers (declared in kernel/Profile.h) ----

namespace hone::kernel {

using support::Error;
using support::Expected;

Expected<CachegrindData> parseCachegrind(const std::string &text) {
  CachegrindData d;
  std::map<std::string, std::string> names[2]; // compressed names: fl/fi/fe share one table, fn the other
  std::string file, function;
  std::map<std::pair<std::string, std::string>, CostLine> functions;
  std::map<std::tuple<std::string, std::string, int>, CostLine> lines;
  auto lines_ = reportLines(text);
  bool sawEvents = false, sawCmd = false;
  // "fl=(3) name" defines 3; "fl=(3)" refers to it; "fl=name" is plain.
  auto nameOf = [&](int table, const std::string &value, int lineNo) -> Expected<std::string> {
    size_t digits = 1;
    while (digits < value.size() && std::isdigit(static_cast<unsigned char>(value[digits])))
      ++digits;
    // "(12)" or "(12) name": a compressed name; "(below main)" is a plain name.
    if (!value.empty() && value[0] == '(' && digits > 1 && digits < value.size() && value[digits] == ')') {
      size_t close = digits;
      std::string id = value.substr(1, close - 1);
      std::string rest = trimBlanks(value.substr(close + 1));
      if (!rest.empty()) {
        names[table][id] = rest;
        return rest;
      }
      auto it = names[table].find(id);
      if (it == names[table].end())
        return Error{fmt::format("line {}: name ({}) used before it is defined", lineNo, id), lineNo, 1};
      return it->second;
    }
    return value;
  };
  for (size_t i = 0; i < lines_.size(); ++i) {
    const std::string &l = lines_[i];
    int lineNo = static_cast<int>(i + 1);
    if (l.empty() || l[0] == '#')
      continue;
    if (l.rfind("events:", 0) == 0) {
      std::istringstream words(l.substr(7));
      d.events.clear();
      for (std::string w; words >> w;)
        d.events.push_back(w);
      if (d.events.empty())
        return Error{fmt::format("line {}: 'events:' names no events", lineNo), lineNo, 1};
      sawEvents = true;
      continue;
    }
    if (l.rfind("cmd:", 0) == 0) {
      sawCmd = true;
      continue;
    }
    if (l.rfind("desc:", 0) == 0 || l.rfind("version:", 0) == 0 || l.rfind("creator:", 0) == 0 ||
        l.rfind("pid:", 0) == 0 || l.rfind("positions:", 0) == 0)
      continue;
    if (sawCmd && !sawEvents) // valgrind writes the command verbatim: a shell script's newlines too
      continue;
    if (l.rfind("summary:", 0) == 0 || l.rfind("totals:", 0) == 0) {
      std::istringstream words(l.substr(l.find(':') + 1));
      size_t k = 0;
      for (std::string w; words >> w; ++k) {
        auto v = toNumber(w);
        if (!v || k >= d.events.size())
          return Error{fmt::format("line {}: bad summary value '{}'", lineNo, w), lineNo, 1};
        d.totals[d.events[k]] = *v;
      }
      continue;
    }
    if (l.size() > 3 && l[2] == '=' && (l.rfind("fl", 0) == 0 || l.rfind("fi", 0) == 0 || l.rfind("fe", 0) == 0)) {
      auto n = nameOf(0, l.substr(3), lineNo);
      if (!n)
        return n.error();
      file = *n;
      continue;
    }
    if (l.rfind("fn=", 0) == 0) {
      auto n = nameOf(1, l.substr(3), lineNo);
      if (!n)
        return n.error();
      function = demangle(*n);
      continue;
    }
    if (!std::isdigit(static_cast<unsigned char>(l[0])))
      return Error{fmt::format("line {}: not a cachegrind line: '{}'", lineNo, l.substr(0, 80)), lineNo, 1};
    if (!sawEvents)
      return Error{fmt::format("line {}: counts before the 'events:' line", lineNo), lineNo, 1};
    std::istringstream words(l);
    std::string first;
    words >> first;
    auto ln = toNumber(first);
    if (!ln || *ln < 0 || *ln > 1e9)
      return Error{fmt::format("line {}: bad line number '{}'", lineNo, first), lineNo, 1};
    CostLine &fnCost = functions[{file, function}];
    fnCost.file = file;
    fnCost.function = function;
    CostLine &lnCost = lines[{file, function, static_cast<int>(*ln)}];
    lnCost.file = file;
    lnCost.function = function;
    lnCost.line = static_cast<int>(*ln);
    size_t k = 0;
    for (std::string w; words >> w; ++k) {
      auto v = toNumber(w);
      if (!v || *v < 0)
        return Error{fmt::format("line {}: bad count '{}'", lineNo, w), lineNo, 1};
      if (k >= d.events.size())
        return Error{fmt::format("line {}: more counts than events ({})", lineNo, d.events.size()), lineNo, 1};
      fnCost.events[d.events[k]] += *v;
      lnCost.events[d.events[k]] += *v;
    }
  }
  if (!sawEvents)
    return Error{"not a cachegrind output file: no 'events:' line"};
  if (d.totals.empty()) // older files carry only per-line counts
    for (const auto &[key, c] : functions)
      for (const auto &[e, v] : c.events)
        d.totals[e] += v;
  auto byIr = [](const CostLine &a, const CostLine &b) {
    double x = a.events.count("Ir") ? a.events.at("Ir") : 0, y = b.events.count("Ir") ? b.events.at("Ir") : 0;
    return x > y;
  };
  for (auto &[k, c] : functions)
    d.functions.push_back(std::move(c));
  for (auto &[k, c] : lines)
    d.lines.push_back(std::move(c));
  std::stable_sort(d.functions.begin(), d.functions.end(), byIr);
  std::stable_sort(d.lines.begin(), d.lines.end(), byIr);
  return d;
}

Expected<CallCosts> parseCallgrindCalls(const std::string &text) {
  CallCosts c;
  std::map<std::string, std::string> files; // compressed names "(3) /path" of fl, fi, fe, cfi, cfl
  std::string file, costFile;
  bool sawHeader = false, callNext = false;
  int lastLine = 0;
  auto nameOf = [&](const std::string &value) {
    if (value.size() > 2 && value[0] == '(') {
      size_t close = value.find(')');
      if (close != std::string::npos && close > 1 &&
          std::all_of(value.begin() + 1, value.begin() + static_cast<long>(close),
                      [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); })) {
        std::string id = value.substr(1, close - 1), rest = trimBlanks(value.substr(close + 1));
        if (!rest.empty())
          return files[id] = rest;
        auto it = files.find(id);
        return it != files.end() ? it->second : std::string("???");
      }
    }
    return value;
  };
  auto lines = reportLines(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string &l = lines[i];
    int lineNo = static_cast<int>(i + 1);
    if (l.empty() || l[0] == '#')
      continue;
    if (l.rfind("version:", 0) == 0 || l.rfind("creator:", 0) == 0 || l.rfind("events:", 0) == 0) {
      sawHeader = true;
      continue;
    }
    if (l.rfind("summary:", 0) == 0 || l.rfind("totals:", 0) == 0) {
      std::istringstream words(l.substr(l.find(':') + 1));
      double ir = 0;
      if (!(words >> ir))
        return Error{fmt::format("line {}: '{}' has no count", lineNo, l.substr(0, l.find(':'))), lineNo, 1};
      c.total = std::max(c.total, ir);
      continue;
    }
    if (l.rfind("fl=", 0) == 0) {
      file = costFile = nameOf(l.substr(3));
      continue;
    }
    if (l.rfind("fi=", 0) == 0 || l.rfind("fe=", 0) == 0) {
      costFile = nameOf(l.substr(3)); // inlined code: its costs are the inlined file's lines
      continue;
    }
    if (l.rfind("fn=", 0) == 0) {
      costFile = file;
      continue;
    }
    if (l.rfind("cfi=", 0) == 0 || l.rfind("cfl=", 0) == 0) {
      nameOf(l.substr(4)); // defines a compressed name the callee's file may use later
      continue;
    }
    if (l.rfind("calls=", 0) == 0) {
      callNext = true;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(l[0])) || l[0] == '+' || l[0] == '-' || l[0] == '*') {
      // "<line> <Ir> ...": with --compress-pos, "+N", "-N" and "*" are relative to the last line.
      std::istringstream words(l);
      std::string pos;
      double ir = 0;
      words >> pos;
      int line = 0;
      try {
        line = pos == "*" ? lastLine : pos[0] == '+' || pos[0] == '-' ? lastLine + std::stoi(pos) : std::stoi(pos);
      } catch (const std::exception &) {
        return Error{fmt::format("line {}: '{}' is not a position", lineNo, pos), lineNo, 1};
      }
      lastLine = line;
      words >> ir;
      if (callNext && !costFile.empty())
        c.lines[{costFile, line}] += ir;
      callNext = false;
      continue;
    }
    // ob=, cob=, cfn=, jump=, part:, pid:, cmd:, positions:, desc:... say nothing of call costs.
  }
  if (!sawHeader)
    return Error{"not a callgrind profile (no 'version:', 'creator:' or 'events:' line)", 1, 1};
  return c;
}

} // namespace hone::kernel

namespace hone::kernel::profilers {

namespace fs = std::filesystem;

namespace {

/// Of valgrind's outputs in `dir` named `prefix`*, the program's, not the shell's that started it
/// (with --trace-children both write one, and a small program's may be the smaller): the one whose
/// "cmd:" starts with the program, else the largest; "" when there is none.
std::string programsOutput(const std::string &dir, const std::string &prefix, const std::string &exe) {
  std::error_code ec;
  std::string best;
  uintmax_t bestSize = 0;
  for (const auto &entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().rfind(prefix, 0) != 0)
      continue;
    bool program = false;
    if (auto text = support::readFile(entry.path().string()))
      if (size_t at = text->find("\ncmd:"); at != std::string::npos) {
        std::string cmd = text->substr(at + 5, text->find('\n', at + 1) - at - 5);
        cmd.erase(0, cmd.find_first_not_of(' '));
        program = !exe.empty() && cmd.rfind(exe, 0) == 0;
      }
    uintmax_t size = entry.file_size(ec) + (program ? (uintmax_t{1} << 60) : 0);
    if (size > bestSize) {
      bestSize = size;
      best = entry.path().string();
    }
  }
  return best;
}

/// callgrind on the profiled build: what the calls made at each of the project's lines cost with
/// their callees (files relative to the project); nullopt, with the reason in `p.skipped`, when it
/// does not run or its output does not read.
std::optional<CallCosts> callCostsOf(const Manifest &m, const Variant &v, const std::string &dir,
                                     const std::string &exe, uint64_t seed, KernelProfile &p) {
  std::error_code ec;
  RunResult r = runOnce(m, v, exe, dir + "/cg-run", seed,
                        {"valgrind", "--tool=callgrind", "--trace-children=yes", "--compress-strings=no",
                         "--compress-pos=no", "--callgrind-out-file=" + dir + "/callgrind.out.%p"},
                        {dir + "/callgrind.out.*"}, true);
  std::string best = programsOutput(dir, "callgrind.out.", exe);
  if (!r.process.ok()) {
    p.skipped.push_back("callgrind: the program did not finish under valgrind (" + r.error + ")");
    return std::nullopt;
  }
  if (best.empty()) {
    p.skipped.push_back("callgrind: no output (" + (r.ok() ? std::string("none written") : r.error) + ")");
    return std::nullopt;
  }
  auto text = support::readFile(best);
  auto parsed = text ? parseCallgrindCalls(*text) : support::Expected<CallCosts>(text.error());
  if (!parsed) {
    p.skipped.push_back("callgrind: " + parsed.error().message);
    return std::nullopt;
  }
  CallCosts mine;
  mine.total = parsed->total;
  for (const auto &[at, ir] : parsed->lines)
    if (std::string rel = variantRelative(m, v, dir, at.first); !rel.empty())
      mine.lines[{rel, at.second}] += ir;
  p.tools.push_back("callgrind");
  return mine;
}

/// cachegrind runs CPU programs, under valgrind.
std::optional<std::string> cachegrindUnavailable(const Manifest &, const ProfileOptions &, const KernelProfile &p) {
  if (p.gpu)
    return "";
  if (!onPath("valgrind"))
    return "valgrind is not installed (apt-get install valgrind)";
  return std::nullopt;
}

/// cachegrind: exact instruction and cache-miss counts per function and line.
void cachegrindRun(const Manifest &m, const Variant &v, const std::string &dir, const ProfileOptions &o,
                   KernelProfile &p) {
  // The timed build (`[build] time_defines`): what is profiled is what is timed, not a dump.
  std::vector<std::string> defines = m.profileDefines;
  defines.insert(defines.end(), m.timeDefines.begin(), m.timeDefines.end());
  BuildResult b = build(m, v, dir + "/cg-build", {"-g"}, defines);
  if (!b.ok) {
    p.skipped.push_back("cachegrind: the profiling build failed: " + b.error);
  } else {
    std::string out = dir + "/cachegrind.out.%p";
    auto underValgrind = [&](const std::string &exe) {
      return runOnce(m, v, exe, dir + "/cg-run", o.seed,
                     {"valgrind", "--tool=cachegrind", "--cache-sim=yes", "--trace-children=yes",
                      "--cachegrind-out-file=" + out},
                     {dir + "/cachegrind.out.*"}, true);
    };
    std::string profiled = b.exe;
    RunResult r = underValgrind(b.exe);
    // Valgrind does not decode AVX-512 (EVEX) instructions, which `-march=native` emits on a machine
    // that has them: the run stops at the first one with SIGILL, and its profile would say that no
    // line of the program runs. The same code without AVX-512 has the same lines and loops. Valgrind
    // says so on stderr: the program's output when the manifest reads stderr.
    auto unrecognised = [](const RunResult &run) {
      constexpr std::string_view said = "Unrecognised instruction";
      return run.process.output.find(said) != std::string::npos || run.stderrText.find(said) != std::string::npos;
    };
    if (unrecognised(r)) {
      BuildResult narrow = build(m, v, dir + "/cg-build", {"-g", "-mno-avx512f"}, defines);
      if (narrow.ok) {
        profiled = narrow.exe;
        r = underValgrind(narrow.exe);
        p.notes.push_back("cachegrind: valgrind cannot run AVX-512 instructions; profiled the build with "
                          "-mno-avx512f added (the same lines and loops, narrower vectors)");
      }
    }
    std::string best = programsOutput(dir, "cachegrind.out.", profiled);
    if (!r.process.ok()) {
      // What valgrind counted of a run that failed (an instruction it could not run, a crash) is not
      // where the program's time goes; a run stopped at the timeout is killed before valgrind writes
      // its counts, and another file of the prefix (a helper the run command started) is not the
      // program's.
      p.skipped.push_back("cachegrind: the program did not finish under valgrind (" + r.error + ")");
    } else if (best.empty()) {
      p.skipped.push_back("cachegrind: no output (" + (r.ok() ? std::string("none written") : r.error) + ")");
    } else if (auto text = support::readFile(best)) {
      auto parsed = parseCachegrind(*text);
      if (parsed) {
        // The largest functions outside the project (printf's family when a dump is timed).
        std::vector<std::pair<std::string, double>> outside;
        double total = parsed->totals.count("Ir") ? parsed->totals.at("Ir") : 0;
        for (const auto &c : parsed->functions)
          if (total > 0 && variantRelative(m, v, dir, c.file).empty() && event(c, "Ir") / total >= 0.01 &&
              c.function != "???" && c.function.rfind("0x", 0) != 0) // (a name, not an address)
            outside.push_back({c.function, event(c, "Ir") / total});
        std::stable_sort(outside.begin(), outside.end(),
                         [](const auto &a, const auto &b) { return a.second > b.second; });
        if (outside.size() > 4)
          outside.resize(4);
        // Keep the project's own code; name files relative to it.
        auto keep = [&](std::vector<CostLine> &lines) {
          std::vector<CostLine> mine;
          for (auto &c : lines) {
            std::string rel = variantRelative(m, v, dir, c.file);
            if (rel.empty())
              continue;
            c.file = rel;
            mine.push_back(std::move(c));
          }
          lines = std::move(mine);
        };
        keep(parsed->functions);
        keep(parsed->lines);
        p.breakdown = timeBreakdown(m, v, *parsed);
        if (p.breakdown)
          p.breakdown->scope = m.timing.mode == "region" ? "region" : "process";
        // What the nests' calls ran, when it can matter: a nest calls out and the code outside the
        // project (or outside the nests) counts; a pure kernel is not run a second time.
        if (p.breakdown && std::any_of(p.breakdown->nests.begin(), p.breakdown->nests.end(),
                                       [](const NestShare &n) { return n.calls; })) {
          double elsewhere = p.breakdown->outside;
          for (const auto &f : p.breakdown->files)
            elsewhere += f.second;
          if (elsewhere >= Thresholds{}.coldShare) {
            p.callCosts = callCostsOf(m, v, dir, profiled, o.seed, p);
            if (p.callCosts)
              addCallShares(*p.breakdown, *p.callCosts);
          }
        }
        if (!p.callCosts)
          p.skipped.push_back("callgrind: not needed: no loop nest calls out while code outside the nests "
                              "counts (2% or more)");
        if (p.breakdown)
          p.breakdown->outsideFunctions = std::move(outside);
        p.cachegrind = std::move(*parsed);
        p.tools.push_back("cachegrind");
      } else {
        p.skipped.push_back("cachegrind: " + parsed.error().message);
      }
    }
  }
}

/// Hot lines: where the instructions go, and how their data references miss.
void cachegrindDiagnose(Findings &f, const Thresholds &t) {
  for (const CostLine *line : hotLines(f.p, t)) {
    const CostLine &c = *line;
    double share = event(c, "Ir") / totalInstructions(f.p);
    double refs = event(c, "Dr") + event(c, "Dw");
    double d1 = event(c, "D1mr") + event(c, "D1mw"), ll = event(c, "DLmr") + event(c, "DLmw");
    if (refs > 0 && d1 / refs > t.d1MissRate)
      f.add(FindingKind::CacheMisses, f.whereOf(c), share * std::min(1.0, d1 / refs * 4),
            fmt::format("{} has {:.0f}% of the instructions and misses L1 on {:.1f}% of its {:.3g} data references",
                        f.whereOf(c), 100 * share, 100 * d1 / refs, refs),
            {{"instruction_share", share}, {"d1_miss_rate", d1 / refs}, {"data_refs", refs}, {"d1_misses", d1}}, c.file,
            c.line);
    if (refs > 0 && ll / refs > t.llMissRate)
      f.add(FindingKind::MemoryTraffic, f.whereOf(c), share * std::min(1.0, ll / refs * 10),
            fmt::format("{} misses the last-level cache on {:.2f}% of its data references: it streams from DRAM",
                        f.whereOf(c), 100 * ll / refs),
            {{"instruction_share", share}, {"ll_miss_rate", ll / refs}}, c.file, c.line);
  }
}

/// Its part of the profile's JSON: the breakdown over the loop nests, and the counts of the hottest
/// functions and lines.
void cachegrindJson(const KernelProfile &p, json &j) {
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
}

} // namespace

const Profiler kCachegrind{"cachegrind", cachegrindUnavailable, cachegrindRun, cachegrindDiagnose, cachegrindJson};

} // namespace hone::kernel::profilers
