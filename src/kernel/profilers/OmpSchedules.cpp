// The OpenMP schedule clauses of the project's sources, with the schedule this variant runs each loop
// with (OMP_SCHEDULE from the manifest, the variant or hone's environment). Findings: loops that deal
// their iterations out one at a time from a shared counter.
// Here too: what reads the clauses of a source file (findOmpSchedules), and its part of the profile's
// JSON.
#include "kernel/profilers/Profiler.h"

#include "support/FileUtil.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <set>
#include <sstream>

// ---- what reads the clauses (declared in kernel/Profile.h) ----

namespace hone::kernel {

namespace {
/// `text` from `at` past blanks, then `word` (a name: not followed by an identifier character).
bool wordAt(const std::string &text, size_t &at, const char *word) {
  while (at < text.size() && (text[at] == ' ' || text[at] == '\t'))
    ++at;
  size_t n = std::strlen(word);
  if (text.compare(at, n, word) != 0)
    return false;
  bool identifier = std::isalnum(static_cast<unsigned char>(word[n - 1]));
  if (identifier && at + n < text.size() &&
      (std::isalnum(static_cast<unsigned char>(text[at + n])) || text[at + n] == '_'))
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
      std::string kind = trimBlanks(inside.substr(0, comma));
      std::string chunk = comma == std::string::npos ? "" : trimBlanks(inside.substr(comma + 1));
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

void to_json(nlohmann::json &j, const OmpSchedule &o) {
  j = {{"file", o.file}, {"line", o.line}, {"kind", o.kind}, {"chunk", o.chunk}, {"runs", o.runs}};
}

} // namespace hone::kernel

namespace hone::kernel::profilers {

namespace fs = std::filesystem;

namespace {

/// The schedule an OpenMP loop with this clause runs with, as "kind[,chunk]" (OpenMP 5.2, 2.11.4;
/// libgomp: OMP_SCHEDULE unset, or a dynamic schedule without a chunk, means chunks of 1).
std::string effectiveSchedule(const Manifest &m, const Variant &v, const OmpSchedule &o) {
  std::string kind = o.kind, chunk = o.chunk;
  if (kind == "runtime") {
    std::string value;
    if (const char *inherited = std::getenv("OMP_SCHEDULE"))
      value = inherited;
    std::vector<std::string> env = m.env;
    for (auto &e : expand(m, v).env)
      env.push_back(e);
    for (const auto &e : env)
      if (e.rfind("OMP_SCHEDULE=", 0) == 0)
        value = e.substr(13);
    value.erase(std::remove_if(value.begin(), value.end(), [](unsigned char c) { return std::isspace(c); }),
                value.end());
    std::transform(value.begin(), value.end(), value.begin(), [](unsigned char c) { return std::tolower(c); });
    if (auto colon = value.find(':'); colon != std::string::npos) // a modifier: monotonic:dynamic
      value = value.substr(colon + 1);
    auto comma = value.find(',');
    kind = value.empty() ? "dynamic" : value.substr(0, comma);
    chunk = comma == std::string::npos ? "" : value.substr(comma + 1);
  }
  if ((kind == "dynamic" || kind == "guided") && chunk.empty())
    chunk = "1";
  return chunk.empty() ? kind : kind + "," + chunk;
}

/// OpenMP schedule clauses of the sources, with the schedule this variant runs them with.
void ompRun(const Manifest &m, const Variant &v, const std::string & /*dir*/, const ProfileOptions & /*o*/,
            KernelProfile &p) {
  std::set<std::string> scanned;
  for (const auto &list : {m.sources, m.editable})
    for (const auto &name : list) {
      if (!scanned.insert(name).second)
        continue;
      auto edited = v.files.find(name);
      auto text = edited != v.files.end() ? support::Expected<std::string>(edited->second)
                                          : support::readFile((fs::path(m.dir) / name).string());
      if (!text)
        continue;
      for (auto &o : findOmpSchedules(name, *text)) {
        o.runs = effectiveSchedule(m, v, o);
        p.ompSchedules.push_back(std::move(o));
      }
    }
}

/// Loops that deal their iterations out one at a time (with cachegrind's counts of the loop's
/// instructions, when it ran).
void ompDiagnose(Findings &f, const Thresholds &) {
  const KernelProfile &p = f.p;
  // Loops that deal their iterations out one at a time: every iteration takes a shared counter.
  for (size_t i = 0; i < p.ompSchedules.size(); ++i) {
    const OmpSchedule &o = p.ompSchedules[i];
    if (p.cores < 2 || o.runs != "dynamic,1")
      continue;
    // The loop's instructions: its file's lines after the pragma and before the next one, in
    // the functions the compiler outlines parallel regions into (gcc: ._omp_fn., clang: .omp_outlined).
    int until = std::numeric_limits<int>::max();
    for (const auto &other : p.ompSchedules)
      if (other.file == o.file && other.line > o.line)
        until = std::min(until, other.line);
    double share = 0.05, ir = 0, total = 0;
    if (p.cachegrind) {
      total = p.cachegrind->totals.count("Ir") ? p.cachegrind->totals.at("Ir") : 0;
      for (const auto &c : p.cachegrind->lines)
        if (c.file == o.file && c.line > o.line && c.line < until &&
            (c.function.find("_omp_fn") != std::string::npos || c.function.find("omp_outlined") != std::string::npos))
          ir += event(c, "Ir");
      if (total > 0 && ir > 0)
        share = ir / total;
    }
    std::string clause = o.chunk.empty() ? o.kind : o.kind + ", " + o.chunk;
    f.add(FindingKind::FineGrainedSchedule, fmt::format("{}:{}", o.file, o.line), share * 0.5,
          fmt::format("the loop at {}:{} takes schedule({}) and runs dynamic,1{}: threads take its iterations one "
                      "at a time from a shared counter{}",
                      o.file, o.line, clause, o.kind == "runtime" ? " (OMP_SCHEDULE is unset or names no chunk)" : "",
                      ir > 0 ? fmt::format("; its loop has {:.0f}% of the instructions", 100 * share) : ""),
          {{"loop_share", share}, {"chunk", 1}}, o.file, o.line);
  }
}

/// Its part of the profile's JSON: the schedule clauses, with what each runs with (an empty list when
/// none).
void ompJson(const KernelProfile &p, json &j) { j["omp_schedules"] = p.ompSchedules; }

} // namespace

const Profiler kOmpSchedules{"omp-schedules", nullptr, ompRun, ompDiagnose, ompJson};

} // namespace hone::kernel::profilers
