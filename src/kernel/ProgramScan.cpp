#include "kernel/ProgramScan.h"

#include "support/FileUtil.h"
#include "support/Regex.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>

namespace hone::kernel {

namespace fs = std::filesystem;

namespace {

/// Every group-1 text of `pattern` in `text`, in order (RE2: a source may hold any line).
std::vector<std::string> captures(const std::string &pattern, const std::string &text) {
  auto re = support::Regex::compile(pattern);
  std::vector<std::string> out;
  if (!re)
    return out;
  for (const auto &m : re->findAll(text))
    if (m.groups.size() > 1)
      out.push_back(m.groups[1]);
  return out;
}

bool contains(const std::string &pattern, const std::string &text) {
  auto re = support::Regex::compile(pattern);
  return re && !re->findAll(text, 1).empty();
}

struct Include {
  std::string name;
  bool angled = false;
};

std::vector<Include> includesOf(const std::string &text) {
  std::vector<Include> out;
  auto re = support::Regex::compile(R"((?m)^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"])");
  if (!re)
    return out;
  for (const auto &m : re->findAll(text))
    out.push_back({m.groups[2], m.groups[1] == "<"});
  return out;
}

/// The folders the system compiler searches for <...> headers (the usual ones on Debian).
const std::vector<fs::path> &systemIncludeDirs() {
  static const std::vector<fs::path> dirs = [] {
    std::vector<fs::path> d = {"/usr/include", "/usr/local/include"};
    std::error_code ec;
    for (const auto &e : fs::directory_iterator("/usr/include", ec))
      if (e.is_directory(ec) && e.path().filename().string().find("-linux-") != std::string::npos) {
        d.push_back(e.path());
        for (const auto &version : fs::directory_iterator(e.path() / "c++", ec))
          d.push_back(version.path()); // libstdc++'s target headers (bits/c++config.h)
      }
    for (const auto &version : fs::directory_iterator("/usr/include/c++", ec)) {
      d.push_back(version.path()); // the C++ standard library: <vector>, <cstdio>
      d.push_back(version.path() / "backward");
    }
    // The CUDA toolkit's headers (cuda_runtime.h, cooperative_groups.h): nvcc's own include folders.
    std::vector<fs::path> cudaRoots = {"/usr/local/cuda"};
    if (const char *home = std::getenv("CUDA_HOME"))
      cudaRoots.emplace_back(home);
    if (const char *path = std::getenv("PATH")) {
      std::istringstream dirs(path);
      for (std::string dir; std::getline(dirs, dir, ':');)
        if (!dir.empty() && fs::is_regular_file(fs::path(dir) / "nvcc", ec))
          cudaRoots.push_back(fs::path(dir).parent_path());
    }
    for (const auto &root : cudaRoots) {
      if (fs::is_directory(root / "include", ec))
        d.push_back(root / "include");
      for (const auto &target : fs::directory_iterator(root / "targets", ec))
        d.push_back(target.path() / "include");
    }
    for (const char *root : {"/usr/lib/gcc", "/usr/lib/llvm-14/lib/clang", "/usr/lib/clang"})
      for (const auto &target : fs::directory_iterator(root, ec))
        for (const auto &version : fs::directory_iterator(target.path(), ec))
          d.push_back(version.path() / "include");
    return d;
  }();
  return dirs;
}

bool isSystemHeader(const std::string &name) {
  std::error_code ec;
  return std::any_of(systemIncludeDirs().begin(), systemIncludeDirs().end(),
                     [&](const fs::path &d) { return fs::is_regular_file(d / name, ec); });
}

/// `name` under `dir` or one of its immediate subfolders (a bounded number, in name order).
std::optional<fs::path> findBelow(const fs::path &dir, const std::string &name) {
  std::error_code ec;
  if (fs::is_regular_file(dir / name, ec))
    return dir / name;
  std::vector<fs::path> children;
  for (const auto &e : fs::directory_iterator(dir, ec)) {
    if (children.size() >= 256)
      break;
    std::string leaf = e.path().filename().string();
    if (!leaf.empty() && leaf[0] != '.' && e.is_directory(ec))
      children.push_back(e.path());
  }
  std::sort(children.begin(), children.end());
  for (const auto &c : children)
    if (fs::is_regular_file(c / name, ec))
      return c / name;
  return std::nullopt;
}

/// The folder that, given as -I, makes `name` resolve to `found`.
fs::path includeRoot(const fs::path &found, const std::string &name) {
  fs::path root = found, rel(name);
  for (auto it = rel.begin(); it != rel.end(); ++it)
    root = root.parent_path();
  return root;
}

struct Scanner {
  fs::path program, programDir;
  const ScanOptions &options;
  ProgramFacts facts;
  std::set<fs::path> visited;
  std::string headerText; // every found header's text, for the macro scans

  std::string relative(const fs::path &p) const {
    std::string rel = p.lexically_normal().lexically_relative(programDir).string();
    return rel.empty() ? "." : rel;
  }

  /// A folder the build needs as -I; the program's own folder too: an angled include (or a quoted
  /// one from a header elsewhere) does not search it.
  void addInclude(const fs::path &dir) {
    std::string rel = relative(dir);
    if (std::find(facts.includeDirs.begin(), facts.includeDirs.end(), rel) == facts.includeDirs.end())
      facts.includeDirs.push_back(rel);
  }

  void addSource(const fs::path &file) {
    std::string rel = relative(file);
    if (std::find(facts.extraSources.begin(), facts.extraSources.end(), rel) == facts.extraSources.end())
      facts.extraSources.push_back(rel);
  }

  /// Where `inc`, included from a file in `from`, is; nullopt for the system's and the unfound.
  std::optional<fs::path> locate(const Include &inc, const fs::path &from) {
    std::error_code ec;
    if (!inc.angled && fs::is_regular_file(from / inc.name, ec))
      return from / inc.name; // beside the includer: no -I needed
    for (const auto &d : options.includeDirs)
      if (fs::is_regular_file(fs::absolute(d) / inc.name, ec)) {
        addInclude(fs::absolute(d));
        return fs::absolute(d) / inc.name;
      }
    if (isSystemHeader(inc.name))
      return std::nullopt;
    fs::path dir = programDir;
    for (int level = 0; level <= options.ancestors; ++level) {
      if (auto hit = findBelow(dir, inc.name)) {
        addInclude(includeRoot(*hit, inc.name));
        return hit;
      }
      if (fs::exists(dir / ".git", ec) || dir == dir.parent_path())
        break; // the repository's root: what lies above is not the program's
      dir = dir.parent_path();
    }
    facts.missingHeaders.push_back(inc.name);
    return std::nullopt;
  }

  /// The companion source beside a found header (utilities/x.h -> utilities/x.c); never the
  /// program itself (prog.h beside prog.c).
  void companionOf(const fs::path &header) {
    std::error_code ec;
    for (const char *ext : {".c", ".cpp", ".cc", ".cxx"}) {
      fs::path c = header;
      c.replace_extension(ext);
      if (fs::is_regular_file(c, ec)) {
        if (!fs::equivalent(c, program, ec))
          addSource(c);
        return;
      }
    }
  }

  void scan(const std::string &text, const fs::path &from, int depth) {
    if (depth > 4 || visited.size() > 64)
      return;
    for (const auto &inc : includesOf(text)) {
      auto found = locate(inc, from);
      if (!found || !visited.insert(fs::weakly_canonical(*found)).second)
        continue;
      facts.foundHeaders.push_back(inc.name + " -> " + relative(*found));
      auto body = support::readFile(found->string());
      if (!body || body->size() > (4u << 20))
        continue;
      headerText += *body + "\n";
      companionOf(*found);
      scan(*body, found->parent_path(), depth + 1);
    }
  }
};

} // namespace

namespace {

/// main's parameter names and the text of its body; nullopt when the source defines no main.
struct MainText {
  std::vector<std::string> params;
  std::string body;
};
std::optional<MainText> mainText(const std::string &source) {
  auto sig = support::Regex::compile(R"(\bmain[ \t\r\n]*\(([^)]*)\)[ \t\r\n]*\{)");
  if (!sig)
    return std::nullopt;
  auto m = sig->findAll(source, 1);
  if (m.empty())
    return std::nullopt;
  MainText t;
  t.params = captures(R"(([A-Za-z_]\w*)[ \t\[\]]*(?:,|$))", m[0].groups[1]);
  t.params.erase(std::remove(t.params.begin(), t.params.end(), "void"), t.params.end());
  // The body: from the brace after the parameters to the one that closes it.
  size_t at = m[0].end, end = at;
  for (int depth = 1; end < source.size() && depth > 0; ++end)
    depth += source[end] == '{' ? 1 : source[end] == '}' ? -1 : 0;
  t.body = source.substr(at, end - at);
  return t;
}

std::string trimmed(const std::string &s) {
  size_t a = s.find_first_not_of(" \t\r\n"), b = s.find_last_not_of(" \t\r\n");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

} // namespace

bool mainReadsArguments(const std::string &source) {
  auto t = mainText(source);
  if (!t)
    return true; // no main of its own to read: assume it reads what it is given
  return std::any_of(t->params.begin(), t->params.end(),
                     [&](const std::string &n) { return contains("\\b" + n + "\\b", t->body); });
}

std::vector<Argument> mainArguments(const std::string &source) {
  std::vector<Argument> out;
  auto t = mainText(source);
  if (!t || t->params.size() < 2)
    return out;
  const std::string &argc = t->params[0], &argv = t->params[1], &body = t->body;
  for (int k = 1; k <= 9; ++k) {
    auto use = support::Regex::compile(fmt::format(R"(\b{}[ \t]*\[[ \t]*{}[ \t]*\])", argv, k));
    auto hits = use ? use->findAll(body, 1) : std::vector<support::RegexMatch>{};
    if (hits.empty())
      continue;
    Argument a;
    a.index = k;
    // The statement that reads it: from the end of the one before (`;`, `{` or `}`) to its `;`.
    size_t at = hits[0].begin;
    size_t from = body.find_last_of(";{}", at);
    from = from == std::string::npos ? 0 : from + 1;
    size_t to = body.find(';', at);
    std::string before = body.substr(from, at - from);
    std::string statement = body.substr(from, (to == std::string::npos ? body.size() : to) - from);
    auto assigned = captures(R"(([A-Za-z_]\w*)[ \t]*(?:\[[^\]]*\])?[ \t]*=(?:[^=]|$))", before);
    if (!assigned.empty())
      a.variable = assigned.back();
    else if (auto scanned = captures(R"(\bs?scanf[ \t]*\([^;]*&[ \t]*([A-Za-z_]\w*))", statement); !scanned.empty())
      a.variable = scanned.front();
    // Optional: the read is a branch of `argc ... ?`, or an `if` on argc holds it (its own statement,
    // or the block the statement is in).
    std::string compare = "\\b" + argc + R"([ \t]*(?:>|>=|==|!=)[ \t]*[0-9]+)";
    a.optional = contains(compare + R"([ \t)]*\?)", statement) || contains(R"(\bif[ \t]*\([^;]*)" + compare, before);
    if (!a.optional && from > 0 && body[from - 1] == '{') {
      size_t open = from - 1;
      std::string head = body.substr(open > 160 ? open - 160 : 0, std::min<size_t>(open, 160));
      a.optional = contains(R"(\bif[ \t]*\([^;{}]*)" + compare + R"([^;{}]*\)[ \t\r\n]*$)", head);
    }
    // The value used without it: the ternary's other branch, or the variable's initial value.
    // (`::` belongs to a name: `argc > 1 ? std::atoi(argv[1]) : 600`)
    auto ternary = support::Regex::compile(R"(\?((?:[^:;]|::)+):([^;]+)$)");
    if (auto m = ternary ? ternary->findAll(statement, 1) : std::vector<support::RegexMatch>{}; !m.empty()) {
      std::string yes = trimmed(m[0].groups[1]), no = trimmed(m[0].groups[2]);
      a.fallback = yes.find(argv) == std::string::npos ? yes : no.find(argv) == std::string::npos ? no : "";
    }
    if (a.fallback.empty() && !a.variable.empty()) {
      auto init = captures(R"(\b)" + a.variable + R"([ \t]*=[ \t]*([^;,=][^;,]*)[;,])", body.substr(0, from));
      if (!init.empty() && init.front().find(argv) == std::string::npos)
        a.fallback = trimmed(init.front());
    }
    // Shown on one line: runs of whitespace become one space, and a long expression is cut.
    std::string flat;
    for (char ch : a.fallback)
      if (!std::isspace(static_cast<unsigned char>(ch)) || (!flat.empty() && flat.back() != ' '))
        flat += std::isspace(static_cast<unsigned char>(ch)) ? ' ' : ch;
    a.fallback = trimmed(flat);
    while (a.fallback.size() > 1 && a.fallback.front() == '(' && a.fallback.back() == ')')
      a.fallback = trimmed(a.fallback.substr(1, a.fallback.size() - 2));
    if (a.fallback.size() > 60)
      a.fallback = a.fallback.substr(0, 57) + "...";
    // A seed: named like one, or handed to a generator's seeding.
    const std::string seeding = R"((?:\bsrand(?:48)?|\.seed|\bseed\w*|\b(?:mt19937(?:_64)?|default_random_engine|)"
                                R"(minstd_rand0?|ranlux\w*|knuth_b)[ \t]+\w+)[ \t]*[({][ \t]*(?:\([^()]*\)[ \t]*)?)";
    bool seed = contains(R"((?i)seed)", a.variable) ||
                contains(seeding + R"([^;]*\b)" + argv + R"([ \t]*\[)", statement) ||
                (!a.variable.empty() && contains(seeding + "\\b" + a.variable + "\\b", body));
    a.role = seed ? Argument::Role::Seed : a.variable.empty() ? Argument::Role::Unknown : Argument::Role::Parameter;
    out.push_back(std::move(a));
  }
  return out;
}

support::Expected<ProgramFacts> scanProgram(const std::string &program, const std::string &source,
                                            const ScanOptions &options) {
  std::error_code ec;
  fs::path abs = fs::absolute(program, ec).lexically_normal();
  Scanner s{abs, abs.parent_path(), options, {}, {}, {}};
  for (const auto &d : options.includeDirs)
    if (!fs::is_directory(d, ec))
      return support::Error{fmt::format("--include {}: no such folder", d)};
  for (const auto &f : options.sources) {
    if (!fs::is_regular_file(f, ec))
      return support::Error{fmt::format("--source {}: no such file", f)};
    s.addSource(fs::absolute(f));
  }
  s.scan(source, s.programDir, 0);
  ProgramFacts &f = s.facts;
  std::string all = source + "\n" + s.headerText;
  // Where the results go: stderr directly, or through a macro a header defines as stderr.
  std::string targets = "stderr";
  for (const auto &name : captures(R"((?m)^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+stderr[ \t]*$)", all))
    targets += "|" + name;
  f.printsToStderr = contains(R"(\bf(?:printf|puts|putc|write)[ \t]*\([^;]*\b()" + targets + R"()\b)", source);
  f.printsToStdout = contains(R"(\b(?:printf|puts|putchar)[ \t]*\(|\bfprintf[ \t]*\([ \t]*stdout\b)", source);
  f.readsArguments = mainReadsArguments(source);
  f.arguments = mainArguments(source);
  f.singlePrecision = captures(R"(\b(float)\b)", source).size() > captures(R"(\b(double)\b)", source).size();
  const std::string tested = R"((?:#[ \t]*if(?:n?def)?[ \t]+!?[ \t]*|defined[ \t]*\(?[ \t]*))";
  for (const auto &d : captures(tested + R"((\w+_DATASET)\b)", all))
    if (std::find(f.datasets.begin(), f.datasets.end(), d) == f.datasets.end())
      f.datasets.push_back(d);
  auto defaults = captures(R"((?m)^[ \t]*#[ \t]*define[ \t]+(\w+_DATASET)[ \t]*$)", all);
  f.defaultDataset = defaults.empty() ? "" : defaults.front();
  auto dumps = captures(tested + R"((\w*DUMP\w*)\b)", all);
  f.dumpDefine = dumps.empty() ? "" : dumps.front();
  // A timer switched on by a *_TIME macro that some found source prints as a bare number.
  std::string companions;
  for (const auto &src : f.extraSources)
    if (auto text = support::readFile((s.programDir / src).string()); text && text->size() < (4u << 20))
      companions += *text;
  auto timers = captures(tested + R"((\w+_TIME)\b)", all + companions);
  if (!timers.empty() && contains(R"(printf[ \t]*\([ \t]*"%[0-9]*\.?[0-9]*l?f\\n")", companions + source)) {
    f.timeDefine = timers.front();
    f.timeRegex = R"(^\s*([0-9]+\.[0-9]+)\s*$)";
  }
  for (const auto &d : captures(R"(%[-+ #0]*[0-9]*\.([0-9]+)l?[fF])", all)) {
    int n = std::stoi(d.substr(0, 3));
    f.printedDecimals = f.printedDecimals < 0 ? n : std::min(f.printedDecimals, n);
  }
  // A program that checks itself and prints the verdict (HeCBench's and CUDA's samples' "PASS"/"FAIL").
  if (contains(R"re("PASS(?:ED)?\b)re", source) && contains(R"re("FAIL(?:ED|URE)?\b)re", source))
    f.verdict = R"(^\s*PASS)";
  // Lines that report a time or a rate change from run to run: not results. Their formats' literal
  // beginnings become the output's `ignore` patterns.
  for (const auto &format : captures(R"re(\b(?:printf|fprintf[ \t]*\([^,;()]*,)[ \t]*\(?[ \t]*"((?:[^"\\\n]|\\.){1,300})")re", source)) {
    if (format.find('%') == std::string::npos ||
        !contains(R"((?i)\b(?:time|elapsed|duration|seconds|throughput|bandwidth|gflop|gb/s|gflops|speed|ms|us|sec)\b)",
                  format))
      continue;
    std::string prefix = format.substr(0, format.find('%'));
    while (prefix.size() >= 2 && prefix.compare(0, 2, "\\n") == 0)
      prefix.erase(0, 2);
    if (prefix.find('\\') != std::string::npos)
      prefix = prefix.substr(0, prefix.find('\\'));
    while (!prefix.empty() && prefix.back() == ' ')
      prefix.pop_back();
    if (prefix.size() < 3)
      continue; // too short to tell a timing line from a result
    std::string pattern = "^\\s*";
    for (char c : prefix)
      pattern += std::string(std::strchr(".^$|()[]{}*+?\\", c) && c ? "\\" : "") + c;
    if (std::find(f.timingLines.begin(), f.timingLines.end(), pattern) == f.timingLines.end())
      f.timingLines.push_back(pattern);
  }
  return f;
}

} // namespace hone::kernel
