#include "kernel/SourceKnobs.h"

#include "kernel/Runner.h"
#include "kernel/source/Model.h"

#include <fmt/format.h>

#include "support/FileUtil.h"

#include <algorithm>
#include <atomic>
#include <unistd.h>
#include <cstring>
#include <filesystem>
#include <optional>
#include <tuple>

namespace hone::kernel {

namespace fs = std::filesystem;

namespace {

/// Whether two project-relative names are the same file ("./a.c" and "a.c").
bool sameFile(const std::string &a, const std::string &b) {
  return a == b || fs::path(a).lexically_normal() == fs::path(b).lexically_normal();
}

/// Words of a shell command line (quotes and backslashes as sh reads them; no expansions), split at
/// control operators too (`;`, `&`, `|`), unlike MakeBuild.h's shellWords.
std::vector<std::string> commandWords(const std::string &s) {
  std::vector<std::string> out;
  std::string cur;
  bool any = false;
  char quote = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (quote) {
      if (c == quote)
        quote = 0;
      else if (c == '\\' && quote == '"' && i + 1 < s.size())
        cur += s[++i];
      else
        cur += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      any = true;
    } else if (c == '\\' && i + 1 < s.size()) {
      cur += s[++i];
      any = true;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&' || c == '|') {
      if (any || !cur.empty())
        out.push_back(cur);
      cur.clear();
      any = false;
    } else {
      cur += c;
    }
  }
  if (any || !cur.empty())
    out.push_back(cur);
  return out;
}

KnobRole roleOf(source::Action a) {
  switch (a) {
  case source::Action::Parallel: return KnobRole::Parallel;
  case source::Action::Order: return KnobRole::LoopOrder;
  case source::Action::Tile: return KnobRole::Tile;
  case source::Action::Unroll: return KnobRole::Unroll;
  case source::Action::Simd: return KnobRole::Simd;
  }
  return KnobRole::Other;
}

} // namespace

std::vector<std::string> parseArguments(const Manifest &m) {
  Variant ref = referenceVariant(m);
  auto words = commandWords(buildCommand(m, ref, (fs::path(m.dir) / ".hone" / "parse").string()));
  std::vector<std::string> out;
  auto absolute = [&](const std::string &p) { return fs::path(p).is_absolute() ? p : (fs::path(m.dir) / p).string(); };
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string &w = words[i];
    for (const char *opt : {"-I", "-isystem", "-iquote", "-include"}) {
      size_t n = std::strlen(opt);
      if (w == opt && i + 1 < words.size()) {
        out.push_back(opt);
        out.push_back(absolute(words[++i]));
        break;
      }
      if (w.size() > n && w.compare(0, n, opt) == 0 && std::string(opt) == "-I") {
        out.push_back("-I" + absolute(w.substr(n)));
        break;
      }
    }
    if (w.rfind("-D", 0) == 0 || w.rfind("-U", 0) == 0 || w.rfind("-std=", 0) == 0) {
      if ((w == "-D" || w == "-U") && i + 1 < words.size())
        out.push_back(w + words[++i]);
      else
        out.push_back(w);
    }
  }
  out.push_back("-I" + m.dir);
  return out;
}

support::Expected<std::string> addSourceKnobs(Manifest &m, const source::PlanOptions &options) {
  if (m.language != "c" && m.language != "cpp")
    return std::string("source transformations: none for a ") + m.language + " project (CUDA keeps its knobs)\n";
  std::vector<std::pair<std::string, std::string>> files;
  for (const auto &e : m.editable) {
    std::string ext = fs::path(e).extension().string();
    if (ext == ".c" || ext == ".cc" || ext == ".cpp" || ext == ".cxx" || ext == ".C")
      files.push_back({e, (fs::path(m.dir) / e).string()});
  }
  if (files.empty())
    return std::string("source transformations: no editable C/C++ file\n");
  auto program = source::analyze(files, parseArguments(m));
  if (!program)
    return program.error();
  auto plan = std::make_shared<source::Plan>(std::move(*program), options);
  std::string out;
  for (const auto &w : plan->program().warnings)
    out += "source transformations: " + w + "\n";
  for (const auto &k : plan->knobs()) {
    if (m.knob(k.name))
      continue; // the manifest names it already
    Knob knob;
    knob.name = k.name;
    knob.kind = KnobKind::Source;
    knob.role = roleOf(k.action);
    knob.values = k.values;
    knob.defaultIndex = 0;
    knob.doc = k.doc;
    knob.nestFile = k.file;
    knob.nestLine = k.line;
    knob.nestEndLine = k.endLine;
    knob.unproven = k.unproven;
    m.knobs.push_back(std::move(knob));
  }
  out += plan->describe();
  m.plan = std::move(plan);
  return out;
}

void addCallShares(TimeBreakdown &b, const CallCosts &calls) {
  if (calls.total <= 0)
    return;
  for (auto &n : b.nests)
    n.callShare = 0.0;
  for (const auto &[at, ir] : calls.lines)
    for (auto &n : b.nests)
      if (at.second >= n.line && at.second <= n.endLine && sameFile(at.first, n.file))
        *n.callShare += ir / calls.total;
  auto weight = [](const NestShare &n) { return n.share + n.callShare.value_or(0.0); };
  std::stable_sort(b.nests.begin(), b.nests.end(), [&](const NestShare &a, const NestShare &c) { return weight(a) > weight(c); });
}

std::optional<TimeBreakdown> timeBreakdown(const Manifest &m, const Variant &v, const CachegrindData &cg,
                                           const CallCosts *calls) {
  double total = cg.totals.count("Ir") ? cg.totals.at("Ir") : 0;
  if (total <= 0 || (m.language != "c" && m.language != "cpp"))
    return std::nullopt;
  // The editable files as this variant builds them (its edits, or what its source knobs make).
  std::vector<std::pair<std::string, std::string>> files;
  static std::atomic<int> parses{0}; // profiles of a parallel run parse in folders of their own
  fs::path scratch = fs::path(m.dir) / ".hone" / fmt::format("breakdown-{}-{}", ::getpid(), parses++);
  std::error_code ec;
  for (const auto &e : m.editable) {
    std::string ext = fs::path(e).extension().string();
    if (ext != ".c" && ext != ".cc" && ext != ".cpp" && ext != ".cxx" && ext != ".C")
      continue;
    auto it = v.files.find(e);
    if (it == v.files.end()) {
      files.push_back({e, (fs::path(m.dir) / e).string()});
      continue;
    }
    // Parsed in a scratch folder (-I of the project comes with the arguments), under the file's own
    // name; a name that would climb out of it (an editable "../x.c") is copied flat instead.
    fs::path name = fs::path(e).lexically_normal();
    if (name.is_absolute() || name.begin() == name.end() || *name.begin() == "..")
      name = fs::path("flat") / fmt::format("{}-{}", files.size(), fs::path(e).filename().string());
    fs::path copy = scratch / name;
    fs::create_directories(copy.parent_path(), ec);
    if (!support::writeFileAtomically(copy.string(), it->second, nullptr))
      return std::nullopt;
    files.push_back({e, copy.string()});
  }
  if (files.empty())
    return std::nullopt;
  auto program = source::analyze(files, parseArguments(m));
  fs::remove_all(scratch, ec);
  if (!program)
    return std::nullopt;
  TimeBreakdown b;
  for (const auto &f : program->files)
    for (const auto &n : f.nests)
      b.nests.push_back({f.name, n.function, n.line, n.endLine, 0, !n.calls.empty() || n.unknownCalls, std::nullopt});
  std::map<std::string, double> rest; // per project file, outside the nests
  double inProject = 0;
  for (const auto &c : cg.lines) {
    double ir = c.events.count("Ir") ? c.events.at("Ir") : 0;
    inProject += ir;
    auto nest = std::find_if(b.nests.begin(), b.nests.end(), [&](const NestShare &n) {
      return c.line >= n.line && c.line <= n.endLine && sameFile(c.file, n.file);
    });
    if (nest != b.nests.end())
      nest->share += ir / total;
    else
      rest[c.file] += ir / total;
  }
  std::stable_sort(b.nests.begin(), b.nests.end(), [](const NestShare &a, const NestShare &b) { return a.share > b.share; });
  if (calls)
    addCallShares(b, *calls);
  for (const auto &[file, share] : rest)
    b.files.push_back({file, share});
  std::stable_sort(b.files.begin(), b.files.end(), [](const auto &a, const auto &b) { return a.second > b.second; });
  b.outside = std::max(0.0, 1.0 - inProject / total);
  return b;
}

nlohmann::json nestHeat(const Manifest &m, const CachegrindData &cg, const TimeBreakdown *asBuilt) {
  struct Range {
    std::string file;
    int line, end;
    double ir = 0;
    std::optional<double> share = std::nullopt; // from the variant's own nests, when they match
  };
  std::vector<Range> nests;
  for (const auto &k : m.knobs)
    if (k.kind == KnobKind::Source &&
        std::none_of(nests.begin(), nests.end(), [&](const Range &r) { return r.file == k.nestFile && r.line == k.nestLine; }))
      nests.push_back({k.nestFile, k.nestLine, k.nestEndLine});
  // The variant's lines are not the plan's when its source knobs rewrote a file (a pragma above a
  // loop, a tiled nest's new loops), but a rewrite keeps the order and number of a file's top-level
  // nests, each in its function: the k-th nest as built is the k-th as the plan parsed it.
  if (asBuilt && m.plan)
    for (const auto &f : m.plan->program().files) {
      std::vector<const NestShare *> built;
      for (const auto &n : asBuilt->nests)
        if (sameFile(n.file, f.name))
          built.push_back(&n);
      std::stable_sort(built.begin(), built.end(), [](const NestShare *a, const NestShare *b) {
        return std::tie(a->line, a->endLine) < std::tie(b->line, b->endLine);
      });
      bool matches = built.size() == f.nests.size();
      for (size_t i = 0; matches && i < built.size(); ++i)
        matches = built[i]->function == f.nests[i].function;
      if (!matches)
        continue; // line ranges below
      for (size_t i = 0; i < built.size(); ++i)
        for (auto &r : nests)
          if (r.line == f.nests[i].line && sameFile(r.file, f.name)) // two nests on one line: one knob's
            r.share = r.share.value_or(0.0) + built[i]->share;
    }
  double total = cg.totals.count("Ir") ? cg.totals.at("Ir") : 0;
  if (total <= 0)
    for (const auto &f : cg.functions)
      total += f.events.count("Ir") ? f.events.at("Ir") : 0;
  for (const auto &c : cg.lines)
    for (auto &r : nests)
      if (!r.share && c.line >= r.line && c.line <= r.end && sameFile(c.file, r.file))
        r.ir += c.events.count("Ir") ? c.events.at("Ir") : 0;
  for (auto &r : nests)
    if (!r.share)
      r.share = total > 0 ? r.ir / total : 0.0;
  // A program that times its own region (PolyBench's kernel timer) is scored on code of its editable
  // files: what runs outside them (the harness's cache flush before the timer starts, the loader) is
  // not in the score, and would make the kernel's nests look cold (PolyBench trisolv's: 4.7% of the
  // whole run, 88% in polybench.c's flush). There the shares are of the editable files' instructions.
  if (m.timing.mode == "region" && total > 0) {
    double editable = 0;
    for (const auto &c : cg.lines)
      if (std::any_of(m.editable.begin(), m.editable.end(), [&](const std::string &e) { return sameFile(c.file, e); }))
        editable += c.events.count("Ir") ? c.events.at("Ir") : 0;
    if (editable > 0)
      for (auto &r : nests)
        r.share = std::min(1.0, *r.share * total / editable);
  }
  std::stable_sort(nests.begin(), nests.end(), [](const Range &a, const Range &b) { return *a.share > *b.share; });
  nlohmann::json out = nlohmann::json::array();
  for (const auto &r : nests)
    out.push_back({{"nest", fmt::format("{}:{}", r.file, r.line)},
                   {"file", r.file},
                   {"line", r.line},
                   {"end_line", r.end},
                   {"share", *r.share}});
  return out;
}

} // namespace hone::kernel
