#include "support/Diff.h"

#include <dtl/dtl.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <set>
#include <sstream>

namespace hone::support {

std::vector<std::string> splitLines(const std::string &text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

std::string unifiedDiff(const std::string &from, const std::string &to, const std::string &fromLabel,
                        const std::string &toLabel) {
  std::vector<std::string> a = splitLines(from), b = splitLines(to);
  dtl::Diff<std::string, std::vector<std::string>> diff(a, b);
  diff.onHuge();
  diff.compose();
  diff.composeUnifiedHunks();
  std::ostringstream os;
  os << "--- " << fromLabel << "\n+++ " << toLabel << "\n";
  diff.printUnifiedFormat(os);
  return os.str();
}

std::vector<int> changedLines(const std::string &from, const std::string &to) {
  std::vector<std::string> a = splitLines(from), b = splitLines(to);
  dtl::Diff<std::string, std::vector<std::string>> diff(a, b);
  diff.onHuge();
  diff.compose();
  std::set<int> touched;
  long lastA = 0;         // the last line of `from` passed (kept or removed)
  bool replacing = false; // insertions right after removals replace them
  for (const auto &[line, info] : diff.getSes().getSequence()) {
    if (info.type == dtl::SES_DELETE) {
      touched.insert(static_cast<int>(info.beforeIdx));
      lastA = info.beforeIdx;
      replacing = true;
    } else if (info.type == dtl::SES_COMMON) {
      lastA = info.beforeIdx;
      replacing = false;
    } else if (!replacing) { // a pure insertion after line lastA touches it and the next
      if (lastA > 0)
        touched.insert(static_cast<int>(lastA));
      if (lastA + 1 <= static_cast<long>(a.size()))
        touched.insert(static_cast<int>(lastA + 1));
    }
  }
  return {touched.begin(), touched.end()};
}

namespace {

std::string stripLabel(std::string path) {
  if (size_t tab = path.find('\t'); tab != std::string::npos) // "x.c\t2026-01-01 ..." (diff -u's timestamps)
    path.resize(tab);
  while (!path.empty() && (path.back() == ' ' || path.back() == '\r'))
    path.pop_back();
  if (path.rfind("a/", 0) == 0 || path.rfind("b/", 0) == 0)
    path = path.substr(2);
  return path;
}

struct Hunk {
  std::string header;
  long oldStart = 0; // 1-based; 0: the hunk inserts at the top of an empty range
  std::vector<std::string> before, after;
};

std::optional<long> number(const std::string &text, size_t &at) {
  size_t start = at;
  while (at < text.size() && text[at] >= '0' && text[at] <= '9')
    ++at;
  if (at == start || at - start > 9)
    return std::nullopt;
  return std::strtol(text.substr(start, at - start).c_str(), nullptr, 10);
}

/// "@@ -a[,b] +c[,d] @@ ..." -> a.
std::optional<long> parseHeader(const std::string &line) {
  size_t at = 3;
  if (line.rfind("@@ -", 0) != 0)
    return std::nullopt;
  ++at;
  auto a = number(line, at);
  if (!a)
    return std::nullopt;
  if (at < line.size() && line[at] == ',' && !number(line, ++at))
    return std::nullopt;
  if (line.compare(at, 2, " +") != 0)
    return std::nullopt;
  return a;
}

std::string shown(const std::string &line) {
  constexpr size_t kMax = 120;
  return line.size() <= kMax ? line : line.substr(0, kMax) + "...";
}

} // namespace

Expected<std::vector<FilePatch>> splitPatch(const std::string &diff) {
  std::vector<FilePatch> out;
  std::vector<std::string> lines = splitLines(diff);
  bool inHunks = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string &line = lines[i];
    if (line.rfind("--- ", 0) == 0 && i + 1 < lines.size() && lines[i + 1].rfind("+++ ", 0) == 0) {
      std::string path = stripLabel(lines[i + 1].substr(4));
      if (path == "/dev/null")
        path = stripLabel(line.substr(4));
      out.push_back({path, ""});
      inHunks = false;
      ++i;
      continue;
    }
    if (line.rfind("@@ ", 0) == 0) {
      if (out.empty())
        out.push_back({"", ""});
      inHunks = true;
    }
    if (inHunks)
      out.back().hunks += line + "\n";
  }
  if (out.empty())
    return Error{"the diff has no hunk (no line starting with '@@ -')"};
  for (const auto &f : out)
    if (f.hunks.empty())
      return Error{fmt::format("the diff's part for '{}' has no hunk", f.path)};
  return out;
}

Expected<std::string> applyPatch(const std::string &text, const std::string &hunkText) {
  std::vector<Hunk> hunks;
  for (const std::string &line : splitLines(hunkText)) {
    if (line.rfind("@@", 0) == 0) {
      auto start = parseHeader(line);
      if (!start)
        return Error{fmt::format("hunk {}: '{}' is not a hunk header (@@ -LINE,COUNT +LINE,COUNT @@)",
                                 hunks.size() + 1, shown(line))};
      hunks.push_back({line.substr(0, line.find("@@", 2) == std::string::npos ? line.size() : line.find("@@", 2) + 2),
                       *start,
                       {},
                       {}});
      continue;
    }
    if (hunks.empty())
      continue;
    Hunk &h = hunks.back();
    if (line.empty()) { // an empty context line whose leading space was lost
      h.before.emplace_back();
      h.after.emplace_back();
    } else if (line[0] == ' ') {
      h.before.push_back(line.substr(1));
      h.after.push_back(line.substr(1));
    } else if (line[0] == '-') {
      h.before.push_back(line.substr(1));
    } else if (line[0] == '+') {
      h.after.push_back(line.substr(1));
    } else if (line[0] == '\\') { // "\ No newline at end of file"
      continue;
    } else {
      return Error{fmt::format("{}: the line '{}' starts with none of ' ', '-', '+'", h.header, shown(line))};
    }
  }
  if (hunks.empty())
    return Error{"no hunk to apply"};

  std::vector<std::string> file = splitLines(text);
  bool finalNewline = text.empty() || text.back() == '\n';
  // A model's diff against a large file of repeated lines could make the search quadratic: bounded.
  constexpr size_t kMaxCompared = 20'000'000;
  size_t compared = 0;
  long delta = 0; // how far earlier hunks moved the lines
  long floor = 0; // hunks apply in order: never before the end of the previous one
  for (size_t n = 0; n < hunks.size(); ++n) {
    const Hunk &h = hunks[n];
    auto fits = [&](long at) {
      if (at < floor || at + static_cast<long>(h.before.size()) > static_cast<long>(file.size()))
        return false;
      for (size_t k = 0; k < h.before.size(); ++k, ++compared)
        if (file[static_cast<size_t>(at) + k] != h.before[k])
          return false;
      return true;
    };
    long expected = std::max(0L, (h.oldStart > 0 ? h.oldStart - 1 : 0) + delta);
    std::optional<long> at;
    long span = std::max(static_cast<long>(file.size()), expected) + 1;
    for (long d = 0; d <= span && !at; ++d) { // the nearest exact match, after the stated line first
      if (compared > kMaxCompared)
        return Error{fmt::format("hunk {} ({}) does not apply: no exact match near line {} within the search "
                                 "limit ({} line comparisons)",
                                 n + 1, h.header, expected + 1, kMaxCompared)};
      if (fits(expected + d))
        at = expected + d;
      else if (d > 0 && fits(expected - d))
        at = expected - d;
    }
    if (!at) {
      std::string why = fmt::format("hunk {} ({}) does not apply: its lines are nowhere in the file", n + 1, h.header);
      if (expected < static_cast<long>(file.size())) {
        for (size_t k = 0; k < h.before.size(); ++k) {
          long line = expected + static_cast<long>(k);
          if (line >= static_cast<long>(file.size())) {
            why += fmt::format("; at line {} the file has ended", line + 1);
            break;
          }
          if (file[static_cast<size_t>(line)] != h.before[k]) {
            why += fmt::format("; at line {} the hunk expects '{}', the file has '{}'", line + 1, shown(h.before[k]),
                               shown(file[static_cast<size_t>(line)]));
            break;
          }
        }
      }
      return Error{why};
    }
    file.erase(file.begin() + *at, file.begin() + *at + static_cast<long>(h.before.size()));
    file.insert(file.begin() + *at, h.after.begin(), h.after.end());
    delta = *at - (h.oldStart > 0 ? h.oldStart - 1 : 0) + static_cast<long>(h.after.size()) -
            static_cast<long>(h.before.size());
    floor = *at + static_cast<long>(h.after.size());
  }
  std::string out;
  for (size_t i = 0; i < file.size(); ++i) {
    out += file[i];
    if (i + 1 < file.size() || finalNewline)
      out += '\n';
  }
  return out;
}

} // namespace hone::support
