// What the profilers share: what their tools' parsers read reports with (numbers, lines, CSV fields,
// C++ names), where a file lies in the project, cachegrind's counts, the units of the numbers findings
// cite, how a finding is added, and the registry of profilers.
#include "kernel/profilers/Profiler.h"

#include "support/FileUtil.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cxxabi.h>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <unistd.h>

// ---- what the tools' parsers share (declared in Profiler.h) ----

namespace hone::kernel {

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

std::vector<std::string> reportLines(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r')
      line.pop_back();
    out.push_back(std::move(line));
  }
  return out;
}

std::string trimBlanks(const std::string &s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string::npos)
    return "";
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

std::optional<double> toNumber(std::string s) {
  s = trimBlanks(s);
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

} // namespace hone::kernel

namespace hone::kernel::profilers {

namespace fs = std::filesystem;

const std::vector<const Profiler *> &profilers() {
  static const std::vector<const Profiler *> all = {&kCachegrind, &kRemarks, &kOmpSchedules, &kPerf,
                                                    &kMca,        &kPtxas,   &kNcu};
  return all;
}

bool onPath(const std::string &tool) {
  const char *path = std::getenv("PATH");
  if (!path)
    return false;
  std::string p(path);
  for (size_t from = 0; from <= p.size();) {
    size_t to = p.find(':', from);
    if (to == std::string::npos)
      to = p.size();
    std::error_code ec;
    fs::path candidate = fs::path(p.substr(from, to - from)) / tool;
    if (fs::exists(candidate, ec) && access(candidate.c_str(), X_OK) == 0)
      return true;
    from = to + 1;
  }
  return false;
}

namespace {

/// `path` relative to the project folder when it lies inside it; empty when it lies outside
/// (system headers, the C library).
std::string projectRelative(const Manifest &m, const std::string &path) {
  std::error_code ec;
  fs::path p = fs::path(path).is_absolute() ? fs::path(path) : fs::path(m.dir) / path;
  if (path.empty() || !fs::is_regular_file(p, ec)) // "???" (no debug information), a library's own sources
    return "";
  fs::path rel = fs::relative(fs::weakly_canonical(p, ec), fs::weakly_canonical(m.dir, ec), ec);
  if (ec || rel.empty())
    return "";
  std::string r = rel.string();
  if (r.rfind("..", 0) == 0) {
    // A header one level up (examples share one) still belongs to the project, and so do the sources
    // the manifest compiles and the headers of its include folders (PolyBench's ../../utilities).
    if (p.extension() != "" && r.rfind("../", 0) == 0 && r.find('/', 3) == std::string::npos)
      return r;
    fs::path canonical = fs::weakly_canonical(p, ec);
    for (const auto &s : m.sources)
      if (fs::weakly_canonical(fs::path(m.dir) / s, ec) == canonical)
        return s;
    for (const auto &d : m.includeDirs) {
      fs::path inside = fs::relative(canonical, fs::weakly_canonical(fs::path(m.dir) / d, ec), ec);
      if (!ec && !inside.empty() && inside.string().rfind("..", 0) != 0)
        return r;
    }
    return "";
  }
  return r;
}

} // namespace

/// The same for a variant profiled in `dir`: an edited file is compiled from the variant's build
/// folder under `dir`, and stands for the project's file of that name.
std::string variantRelative(const Manifest &m, const Variant &v, const std::string &dir, const std::string &path) {
  std::error_code ec;
  std::string abs = fs::weakly_canonical(fs::absolute(path, ec), ec).string();
  std::string root = fs::weakly_canonical(fs::absolute(dir, ec), ec).string() + "/";
  if (abs.rfind(root, 0) == 0)
    for (const auto &[name, text] : v.files)
      if (abs.size() > name.size() && abs.compare(abs.size() - name.size() - 1, std::string::npos, "/" + name) == 0)
        return name;
  return projectRelative(m, path);
}

std::string firstLines(const std::string &text, size_t n) {
  std::string out;
  size_t at = 0;
  for (size_t i = 0; i < n && at < text.size(); ++i) {
    size_t nl = text.find('\n', at);
    out += text.substr(at, nl == std::string::npos ? std::string::npos : nl - at + 1);
    if (nl == std::string::npos)
      break;
    at = nl + 1;
  }
  return out;
}

double event(const CostLine &c, const char *name) {
  auto it = c.events.find(name);
  return it == c.events.end() ? 0 : it->second;
}

std::string where(const CostLine &c) {
  return c.line ? fmt::format("{}:{} ({})", c.file, c.line, c.function) : fmt::format("{} ({})", c.function, c.file);
}

double totalInstructions(const KernelProfile &p) {
  if (!p.cachegrind)
    return 0;
  // Shares of the whole program's instructions (libraries included), as `hone kernel profile` prints them.
  double total = p.cachegrind->totals.count("Ir") ? p.cachegrind->totals.at("Ir") : 0;
  if (total <= 0)
    for (const auto &c : p.cachegrind->functions)
      total += event(c, "Ir");
  return total;
}

std::vector<const CostLine *> hotLines(const KernelProfile &p, const Thresholds &t) {
  std::vector<const CostLine *> hot;
  double total = totalInstructions(p);
  if (total > 0)
    for (const auto &c : p.cachegrind->lines)
      if (event(c, "Ir") / total >= t.hotShare)
        hot.push_back(&c);
  return hot;
}

/// The units of the numbers the findings cite, declared once (a test fails on a number without one).
std::string_view unitOf(std::string_view number) {
  static const std::map<std::string_view, std::string_view> units = {{"instruction_share", "fraction"},
                                                                     {"d1_miss_rate", "fraction"},
                                                                     {"data_refs", "references"},
                                                                     {"d1_misses", "misses"},
                                                                     {"ll_miss_rate", "fraction"},
                                                                     {"hot_share", "fraction"},
                                                                     {"loop_share", "fraction"},
                                                                     {"chunk", "iterations"},
                                                                     {"cpus_utilized", "CPUs"},
                                                                     {"cores", "cores"},
                                                                     {"data_dependencies_pct", "%"},
                                                                     {"cycles_per_iteration", "cycles"},
                                                                     {"block_rthroughput", "cycles"},
                                                                     {"resource_pressure_pct", "%"},
                                                                     {"ipc", "instructions/cycle"},
                                                                     {"registers", "registers"},
                                                                     {"spill_stores", "bytes"},
                                                                     {"spill_loads", "bytes"},
                                                                     {"shared_bytes", "bytes"},
                                                                     {"occupancy_pct", "%"},
                                                                     {"threads", "threads"},
                                                                     {"blocks_per_sm", "blocks"},
                                                                     {"active_warps", "warps"},
                                                                     {"max_warps", "warps"},
                                                                     {"registers_for_more", "registers"},
                                                                     {"best_block", "threads"},
                                                                     {"sectors_per_request", "sectors/request"},
                                                                     {"conflicts", "conflicts"},
                                                                     {"wavefronts", "wavefronts"},
                                                                     {"threads_per_instruction", "threads"},
                                                                     {"dram_pct", "%"},
                                                                     {"sm_pct", "%"}};
  auto it = units.find(number);
  return it == units.end() ? std::string_view() : it->second;
}

support::Bottleneck &Findings::add(FindingKind kind, std::string resource, double share, std::string detail,
                                   const nlohmann::json &numbers, const std::string &file, int line) {
  support::Bottleneck b;
  b.kind = toString(kind);
  b.subject = std::move(resource);
  b.share = std::clamp(share, 0.0, 1.0);
  b.detail = std::move(detail);
  b.file = file;
  b.line = line;
  b.tool = tool;
  for (const auto &[name, value] : numbers.items())
    b.numbers[name] = {value.get<double>(), std::string(unitOf(name))};
  out.push_back(std::move(b));
  return out.back();
}

std::string Findings::whereOf(const CostLine &c) const {
  if (const NestShare *n = p.breakdown ? p.breakdown->nestAt(c.file, c.line) : nullptr; n && !n->function.empty())
    return fmt::format("{}:{} ({})", c.file, c.line, n->function);
  return where(c);
}

} // namespace hone::kernel::profilers
