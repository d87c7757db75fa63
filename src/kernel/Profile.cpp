#include "kernel/Profile.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <cxxabi.h>
#include <memory>
#include <regex>
#include <sstream>

namespace hone::kernel {

namespace {

/// A count a tool's report prints (digits), saturated at 10^15 -- no real report holds more -- instead
/// of overflowing (std::atoll and std::atoi are undefined beyond their range: the ptxas fuzzer found it).
int64_t countOf(const std::string &digits) {
  constexpr int64_t kMax = 1'000'000'000'000'000;
  int64_t v = 0;
  for (char c : digits) {
    if (c < '0' || c > '9')
      break;
    if (v > kMax / 10)
      return kMax;
    v = v * 10 + (c - '0');
  }
  return std::min(v, kMax);
}

int intOf(const std::string &digits) { return static_cast<int>(std::min<int64_t>(countOf(digits), INT32_MAX)); }

} // namespace

using support::Error;
using support::Expected;

namespace {

std::vector<std::string> splitLines(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    out.push_back(std::move(line));
  }
  return out;
}

std::string trim(const std::string &s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos)
    return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

/// A number as tools print it: "1,234.5", "12.3%", quoted; nullopt for "n/a" and words.
std::optional<double> toNumber(std::string s) {
  s = trim(s);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"')
    s = s.substr(1, s.size() - 2);
  s.erase(std::remove(s.begin(), s.end(), ','), s.end());
  if (!s.empty() && s.back() == '%')
    s.pop_back();
  if (s.empty())
    return std::nullopt;
  char *end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v))
    return std::nullopt;
  return v;
}

std::string demangle(const std::string &name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void *)> d(abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : name;
}

} // namespace

// ---- cachegrind ----------------------------------------------------------------------

Expected<CachegrindData> parseCachegrind(const std::string &text) {
  CachegrindData d;
  std::map<std::string, std::string> names[2]; // compressed names: fl/fi/fe share one table, fn the other
  std::string file, function;
  std::map<std::pair<std::string, std::string>, CostLine> functions;
  std::map<std::tuple<std::string, std::string, int>, CostLine> lines;
  auto lines_ = splitLines(text);
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
      std::string rest = trim(value.substr(close + 1));
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

// ---- compiler remarks ------------------------------------------------------------------

namespace {
/// The remarks of `text`: each line `re` matches becomes one through `make`; other lines
/// (continuations, warnings, the compiler's other output) are skipped.
template <typename Make> std::vector<Remark> remarks(const std::string &text, const std::regex &re, Make make) {
  std::vector<Remark> out;
  for (const auto &l : splitLines(text)) {
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

// ---- perf stat -------------------------------------------------------------------------

namespace {
/// One CSV record (RFC 4180 quoting); fields keep no quotes.
std::vector<std::string> csvFields(const std::string &line, bool *ok) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false, wasQuoted = false;
  *ok = true;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cur += c;
      }
    } else if (c == '"' && cur.empty() && !wasQuoted) {
      quoted = wasQuoted = true;
    } else if (c == ',') {
      out.push_back(std::move(cur));
      cur.clear();
      wasQuoted = false;
    } else {
      cur += c;
    }
  }
  if (quoted)
    *ok = false;
  out.push_back(std::move(cur));
  return out;
}
} // namespace

Expected<PerfStat> parsePerfStat(const std::string &text) {
  PerfStat p;
  int lineNo = 0;
  bool any = false;
  for (const auto &l : splitLines(text)) {
    ++lineNo;
    if (trim(l).empty() || l[0] == '#')
      continue;
    bool ok;
    auto f = csvFields(l, &ok);
    if (!ok || f.size() < 3)
      continue; // the program's own stderr shares the stream
    std::string value = trim(f[0]), event = trim(f[2]);
    if (event.empty())
      continue;
    if (value == "<not supported>" || value == "<not counted>") {
      p.unsupported.push_back(event);
      any = true;
      continue;
    }
    auto v = toNumber(value);
    if (!v)
      continue;
    any = true;
    p.counters[event] = *v;
    p.units[event] = trim(f[1]);
    if (f.size() >= 7 && trim(f[6]) == "CPUs utilized")
      if (auto u = toNumber(f[5]))
        p.cpusUtilized = *u;
  }
  if (!any)
    return Error{"no perf stat counters in the output (expected `perf stat -x,` CSV lines)"};
  return p;
}

// ---- llvm-mca --------------------------------------------------------------------------

Expected<McaReport> parseLlvmMca(const std::string &text) {
  McaReport r;
  bool any = false;
  bool critical = false;
  auto bracket = [](const std::string &l) -> double {
    size_t a = l.find('['), b = l.find(']');
    if (a == std::string::npos || b == std::string::npos || b < a)
      return 0;
    return toNumber(l.substr(a + 1, b - a - 1)).value_or(0);
  };
  for (const auto &raw : splitLines(text)) {
    std::string l = trim(raw);
    auto field = [&](const char *name, double &into) {
      if (l.rfind(name, 0) == 0) {
        if (auto v = toNumber(l.substr(std::strlen(name)))) {
          into = *v;
          any = true;
        }
        return true;
      }
      return false;
    };
    if (field("Iterations:", r.iterations) || field("Instructions:", r.instructions) ||
        field("Total Cycles:", r.totalCycles) || field("IPC:", r.ipc) || field("Block RThroughput:", r.blockRThroughput))
      continue;
    if (l.rfind("Cycles with backend pressure increase", 0) == 0)
      r.pressure = bracket(l);
    else if (l.rfind("Resource Pressure", 0) == 0)
      r.resourcePressure = bracket(l);
    else if (l.rfind("Data Dependencies:", 0) == 0)
      r.dataDependencies = bracket(l);
    else if (l.rfind("- Register Dependencies", 0) == 0)
      r.registerDependencies = bracket(l);
    else if (l.rfind("- Memory Dependencies", 0) == 0)
      r.memoryDependencies = bracket(l);
    else if (l.rfind("Critical sequence", 0) == 0)
      critical = true;
    else if (l.rfind("Instruction Info:", 0) == 0)
      critical = false;
    else if (critical && l.find("##") != std::string::npos && r.criticalSequence.size() < 32)
      r.criticalSequence.push_back(l);
  }
  if (!any || r.iterations <= 0)
    return Error{"not an llvm-mca report: no 'Iterations:' summary"};
  return r;
}

std::string extractHotLoop(const std::string &assembly, const std::string &file, int line) {
  struct Insn {
    std::string text;
    int file = 0, line = 0;
  };
  std::map<int, std::string> files;
  std::map<std::string, size_t> labels; // label -> index of the next instruction
  std::vector<Insn> insns;
  std::vector<std::pair<size_t, std::string>> jumps; // instruction index, target
  int curFile = 0, curLine = 0;
  static const std::regex fileRe(R"re(^\s*\.file\s+(\d+)\s+"([^"]*)"(?:\s+"([^"]*)")?)re");
  static const std::regex locRe(R"(^\s*\.loc\s+(\d+)\s+(\d+))");
  static const std::regex labelRe(R"(^([.A-Za-z_$][\w.$]*):)");
  static const std::regex jumpRe(R"(^\s*j[a-z]+\s+([.A-Za-z_$][\w.$]*)\s*$)");
  for (const auto &l : splitLines(assembly)) {
    if (l.size() > 4096)
      continue;
    std::smatch m;
    if (std::regex_search(l, m, fileRe)) {
      files[intOf(m[1].str())] = m[3].matched ? m[3].str() : m[2].str();
    } else if (std::regex_search(l, m, locRe)) {
      curFile = intOf(m[1].str());
      curLine = intOf(m[2].str());
    } else if (std::regex_search(l, m, labelRe)) {
      labels[m[1].str()] = insns.size();
    } else {
      std::string t = trim(l);
      if (t.empty() || t[0] == '.' || t[0] == '#' || t[0] == '/')
        continue;
      if (std::regex_match(l, m, jumpRe))
        jumps.push_back({insns.size(), m[1].str()});
      insns.push_back({t, curFile, curLine});
    }
  }
  auto fileMatches = [&](int id) {
    if (file.empty())
      return true;
    auto it = files.find(id);
    if (it == files.end())
      return false;
    const std::string &f = it->second;
    return f == file || (f.size() > file.size() && f.compare(f.size() - file.size(), file.size(), file) == 0 &&
                         f[f.size() - file.size() - 1] == '/') ||
           (file.size() > f.size() && file.compare(file.size() - f.size(), f.size(), f) == 0);
  };
  size_t bestFrom = 0, bestTo = 0;
  bool found = false;
  for (const auto &[at, target] : jumps) {
    auto it = labels.find(target);
    if (it == labels.end() || it->second > at)
      continue; // forward jump: not a loop
    size_t from = it->second, to = at;
    bool holds = false;
    for (size_t i = from; i <= to && !holds; ++i)
      holds = (line == 0 || insns[i].line == line) && fileMatches(insns[i].file);
    if (holds && (!found || to - from < bestTo - bestFrom)) {
      bestFrom = from;
      bestTo = to;
      found = true;
    }
  }
  if (!found)
    return "";
  std::string out;
  for (size_t i = bestFrom; i <= bestTo; ++i)
    out += insns[i].text + "\n";
  return out;
}

// ---- ptxas -----------------------------------------------------------------------------

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
  for (const auto &l : splitLines(text)) {
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

// ---- Nsight Compute --------------------------------------------------------------------

Expected<std::vector<NcuKernel>> parseNcuCsv(const std::string &text) {
  std::vector<std::vector<std::string>> rows;
  int lineNo = 0, headerLine = 0;
  for (const auto &l : splitLines(text)) {
    ++lineNo;
    if (l.rfind("==PROF==", 0) == 0 || l.rfind("==WARNING==", 0) == 0 || l.rfind("==ERROR==", 0) == 0 ||
        trim(l).empty())
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
  auto at = [](const std::vector<std::string> &r, int c) { return c >= 0 && c < static_cast<int>(r.size()) ? r[c] : ""; };
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

// ---- OpenMP schedule clauses -------------------------------------------------------------

namespace {
/// `text` from `at` past blanks, then `word` (a name: not followed by an identifier character).
bool wordAt(const std::string &text, size_t &at, const char *word) {
  while (at < text.size() && (text[at] == ' ' || text[at] == '\t'))
    ++at;
  size_t n = std::strlen(word);
  if (text.compare(at, n, word) != 0)
    return false;
  bool identifier = std::isalnum(static_cast<unsigned char>(word[n - 1]));
  if (identifier && at + n < text.size() && (std::isalnum(static_cast<unsigned char>(text[at + n])) || text[at + n] == '_'))
    return false;
  at += n;
  return true;
}
} // namespace

std::vector<OmpSchedule> findOmpSchedules(const std::string &file, const std::string &text) {
  std::vector<OmpSchedule> out;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    int first = ++number;
    size_t at = 0;
    if (!wordAt(line, at, "#") || !wordAt(line, at, "pragma") || !wordAt(line, at, "omp"))
      continue;
    std::string next;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) // CRLF files
      line.pop_back();
    while (!line.empty() && line.back() == '\\' && std::getline(in, next)) {
      ++number;
      line.pop_back();
      line += " " + next;
      while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
        line.pop_back();
    }
    // schedule([modifier[, modifier]:] kind[, chunk])
    for (size_t s = line.find("schedule", at); s != std::string::npos; s = line.find("schedule", s + 1)) {
      if (s > 0 && (std::isalnum(static_cast<unsigned char>(line[s - 1])) || line[s - 1] == '_'))
        continue;
      size_t open = s + 8;
      if (!wordAt(line, open, "("))
        continue;
      size_t close = line.find(')', open);
      if (close == std::string::npos)
        break;
      std::string inside = line.substr(open, close - open);
      if (auto colon = inside.rfind(':'); colon != std::string::npos)
        inside = inside.substr(colon + 1);
      size_t comma = inside.find(',');
      std::string kind = trim(inside.substr(0, comma));
      std::string chunk = comma == std::string::npos ? "" : trim(inside.substr(comma + 1));
      for (const char *k : {"static", "dynamic", "guided", "auto", "runtime"})
        if (kind == k) {
          out.push_back({file, first, kind, chunk, ""});
          break;
        }
      break; // one schedule clause per directive
    }
  }
  return out;
}

// ---- JSON --------------------------------------------------------------------------------

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
          std::all_of(value.begin() + 1, value.begin() + static_cast<long>(close), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); })) {
        std::string id = value.substr(1, close - 1), rest = trim(value.substr(close + 1));
        if (!rest.empty())
          return files[id] = rest;
        auto it = files.find(id);
        return it != files.end() ? it->second : std::string("???");
      }
    }
    return value;
  };
  auto lines = splitLines(text);
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
