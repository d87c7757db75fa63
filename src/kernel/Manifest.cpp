#include "kernel/Manifest.h"
#include "kernel/Occupancy.h"

#include "support/Expr.h"
#include "support/Regex.h"
#include "support/StringUtil.h"
#include "support/TomlReader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <regex>

namespace hone::kernel {

using support::TableReader;

std::string_view toString(KnobKind kind) {
  switch (kind) {
  case KnobKind::Define: return "define";
  case KnobKind::Flags: return "flags";
  case KnobKind::Env: return "env";
  case KnobKind::Source: return "source";
  }
  return "?";
}

namespace {
constexpr std::pair<KnobRole, std::string_view> kRoles[] = {
    {KnobRole::Tile, "tile"},         {KnobRole::Unroll, "unroll"},   {KnobRole::LoopOrder, "loop-order"},
    {KnobRole::Threads, "threads"},   {KnobRole::Schedule, "schedule"}, {KnobRole::Binding, "binding"},
    {KnobRole::Flags, "flags"},       {KnobRole::Parallel, "parallel"}, {KnobRole::Simd, "simd"},
    {KnobRole::Other, "other"}};

std::vector<std::string> roleNames() {
  std::vector<std::string> out;
  for (const auto &[r, n] : kRoles)
    out.emplace_back(n);
  return out;
}

/// A knob's role from its name and kind, when the manifest does not say.
KnobRole guessRole(const std::string &name, KnobKind kind) {
  if (kind == KnobKind::Flags)
    return KnobRole::Flags;
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  auto has = [&](const char *word) { return upper.find(word) != std::string::npos; };
  if (upper == "OMP_NUM_THREADS" || has("THREADS"))
    return KnobRole::Threads;
  if (upper == "OMP_SCHEDULE" || has("SCHEDULE"))
    return KnobRole::Schedule;
  if (upper == "OMP_PROC_BIND" || upper == "OMP_PLACES")
    return KnobRole::Binding;
  if (has("UNROLL") || has("ACC") || has("ITEMS"))
    return KnobRole::Unroll;
  if (has("ORDER") || has("INTERCHANGE") || has("SEQUENTIAL") || has("SHARED") || has("PRIVATE"))
    return KnobRole::LoopOrder;
  if (has("TILE") || has("BLOCK") || has("BS") || has("BX") || has("BY") || has("CHUNK"))
    return KnobRole::Tile;
  return KnobRole::Other;
}

bool isNumber(const std::string &s) {
  if (s.empty())
    return false;
  char *end = nullptr;
  std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

/// The largest magnitude of a knob value that reads as a number: constraints compute with them, and
/// nan, inf or 1e308 (whose double overflows there) would only poison that arithmetic.
constexpr double kMaxKnobNumber = 1e15;

std::string nodeText(const TableReader &r, const toml::node &n) {
  auto refuseHuge = [&](double v) {
    if (!std::isfinite(v) || std::fabs(v) > kMaxKnobNumber)
      r.failNode(n, "value", fmt::format("a number must be finite and at most {:g} in magnitude", kMaxKnobNumber));
  };
  if (auto i = n.as_integer())
    return std::to_string(i->get());
  if (auto f = n.as_floating_point()) {
    refuseHuge(f->get());
    return fmt::format("{}", f->get());
  }
  if (auto s = n.as_string()) {
    std::string text(s->get());
    if (isNumber(text))
      refuseHuge(std::strtod(text.c_str(), nullptr));
    return text;
  }
  if (auto b = n.as_boolean())
    return b->get() ? "1" : "0";
  r.failNode(n, "value", "expected a number or a string");
}

/// Splits "lhs OP rhs" at its first comparison operator (a two-character one where one starts there);
/// no operator, or a line break anywhere: none. A hand scan, linear and without recursion: std::regex
/// overflowed the stack on a 100,000-character constraint.
struct Comparison {
  std::string lhs, op, rhs;
};
std::optional<Comparison> splitComparison(const std::string &text) {
  if (text.find_first_of("\r\n") != std::string::npos)
    return std::nullopt;
  for (size_t i = 0; i < text.size(); ++i) {
    for (std::string_view op : {"<=", ">=", "==", "!=", "<", ">"})
      if (text.compare(i, op.size(), op) == 0)
        return Comparison{text.substr(0, i), std::string(op), text.substr(i + op.size())};
  }
  return std::nullopt;
}

} // namespace

std::string_view toString(KnobRole role) {
  for (const auto &[r, n] : kRoles)
    if (r == role)
      return n;
  return "?";
}

std::optional<KnobRole> parseKnobRole(std::string_view text) {
  for (const auto &[r, n] : kRoles)
    if (n == text)
      return r;
  return std::nullopt;
}

std::string_view toString(Tolerance t) {
  switch (t) {
  case Tolerance::Exact: return "exact";
  case Tolerance::Abs: return "abs";
  case Tolerance::Rel: return "rel";
  case Tolerance::Ulp: return "ulp";
  }
  return "?";
}

bool Knob::numeric() const {
  // "" (an env knob left unset) is the runtime's default, not a value that makes a knob non-numeric.
  return std::all_of(values.begin(), values.end(), [](const std::string &v) { return v.empty() || isNumber(v); }) &&
         std::any_of(values.begin(), values.end(), [](const std::string &v) { return !v.empty(); });
}

const Knob *Manifest::knob(const std::string &n) const {
  for (const auto &k : knobs)
    if (k.name == n)
      return &k;
  return nullptr;
}

std::vector<std::string> Manifest::knobNames() const {
  std::vector<std::string> out;
  for (const auto &k : knobs)
    out.push_back(k.name);
  return out;
}

namespace {

/// Values from `values = [...]` or `range = {from, to, step | factor}`.
std::vector<std::string> readValues(TableReader &k) {
  if (k.has("values")) {
    std::vector<std::string> out = k.values<std::string>("values", true, [&](const toml::node &n) { return nodeText(k, n); });
    if (out.empty())
      k.failAt("values", "needs at least one value");
    return out;
  }
  if (!k.has("range"))
    k.failHere("a knob needs 'values' (a list) or 'range' ({ from, to, step or factor })");
  TableReader r = k.table("range");
  double from = r.number("from"), to = r.number("to");
  double step = r.number("step", 0), factor = r.number("factor", 0);
  r.finish();
  if ((step > 0) == (factor > 0))
    r.failHere("give exactly one of 'step' (> 0) or 'factor' (> 1)");
  if (factor > 0 && factor <= 1)
    r.failAt("factor", "must be greater than 1");
  if (!(to >= from))
    r.failAt("to", "must not be below 'from'");
  std::vector<std::string> out;
  for (double v = from; v <= to + 1e-9 && out.size() <= 4096; v = step > 0 ? v + step : v * factor) {
    // Whole values print as integers (-D TILE=32, not 32.0) where a double holds them exactly; beyond
    // 2^53 the conversion could overflow, and the shortest form of the double is written instead.
    bool whole = v == std::floor(v) && std::fabs(v) < 9007199254740992.0;
    out.push_back(whole ? fmt::format("{}", static_cast<int64_t>(v)) : fmt::format("{}", v));
    if (factor > 0 && v <= 0)
      r.failAt("from", "must be positive with 'factor'");
    if (step > 0 && v + step == v && v < to)
      r.failAt("step", fmt::format("is too small to move past {} (below a double's resolution there)", v));
  }
  if (out.size() > 4096)
    r.failHere("the range has more than 4096 values");
  return out;
}

Tolerance readTolerance(TableReader &o) {
  std::string t = o.string("tolerance", "rel");
  for (Tolerance x : {Tolerance::Exact, Tolerance::Abs, Tolerance::Rel, Tolerance::Ulp})
    if (toString(x) == t)
      return x;
  o.failAt("tolerance", "must be \"exact\", \"abs\", \"rel\" or \"ulp\"");
}

std::vector<std::string> envList(TableReader &t, const char *key) {
  std::vector<std::string> out;
  for (auto &[name, value] : t.namedValues<std::string>(key, "environment variable", [&](const toml::node &n) {
         return nodeText(t, n);
       }))
    out.push_back(name + "=" + value);
  return out;
}

} // namespace

namespace {

/// [output]: where the program's results are, how they are read and compared.
OutputSpec readOutput(TableReader o) {
  OutputSpec out;
  out.source = o.string("source", "stdout");
  if (out.source != "stdout" && out.source != "stderr" && out.source != "file")
    o.failAt("source", "must be \"stdout\", \"stderr\" or \"file\"");
  out.file = o.string("file", "");
  if (out.source == "file" && out.file.empty())
    o.failHere("source = \"file\" needs 'file' (the path the program writes, relative to its run folder)");
  // hone deletes the file before each run and reads it after: it must be the run folder's own.
  std::filesystem::path within = std::filesystem::path(out.file).lexically_normal();
  if (!out.file.empty() && (within.is_absolute() || within.empty() || *within.begin() == ".." ||
                            within == "." || out.file.find('\0') != std::string::npos))
    o.failAt("file", fmt::format("'{}' must be a path inside the program's run folder (relative, no '..' "
                                 "leading out of it)",
                                 out.file));
  out.format = o.string("format", "text");
  if (out.format != "text" && out.format != "binary")
    o.failAt("format", "must be \"text\" or \"binary\"");
  out.dtype = o.string("dtype", "f64");
  static const std::vector<std::string> dtypes = {"f32", "f64", "i32", "i64", "u8"};
  if (std::find(dtypes.begin(), dtypes.end(), out.dtype) == dtypes.end())
    o.failAt("dtype", "must be one of f32, f64, i32, i64, u8");
  if (o.has("shape"))
    out.shape = o.values<int64_t>("shape", true, [&](const toml::node &n) {
      auto i = n.as_integer();
      if (!i || i->get() <= 0)
        o.failNode(n, "shape", "expected a positive integer");
      return i->get();
    });
  else
    o.known("shape");
  out.tolerance = readTolerance(o);
  out.rtol = o.number("rtol", 0);
  out.atol = o.number("atol", 0);
  if (!(out.rtol >= 0 && out.atol >= 0 && std::isfinite(out.rtol) && std::isfinite(out.atol)))
    o.failHere("rtol and atol must be finite and non-negative");
  double ulps = o.number("ulps", 4); // checked before the conversion: 1e300 is not an int64
  if (!(ulps >= 0 && ulps <= 1e15) || ulps != std::floor(ulps))
    o.failAt("ulps", "must be a whole number between 0 and 1e15");
  else
    out.ulps = static_cast<int64_t>(ulps);
  out.ignore = o.has("ignore") ? o.strings("ignore") : (o.known("ignore"), std::vector<std::string>{});
  for (const auto &re : out.ignore)
    if (auto compiled = support::Regex::compile(re); !compiled)
      o.failAt("ignore", fmt::format("'{}' is not a valid regular expression (RE2 syntax): {}", re,
                                     compiled.error().message));
  out.verdict = o.string("verdict", "");
  if (!out.verdict.empty())
    if (auto compiled = support::Regex::compile(out.verdict); !compiled)
      o.failAt("verdict", fmt::format("'{}' is not a valid regular expression (RE2 syntax): {}", out.verdict,
                                      compiled.error().message));
  o.finish();
  return out;
}

/// [timing]: what is timed and how often.
TimingSpec readTiming(TableReader t) {
  TimingSpec s;
  s.regex = t.string("regex", "");
  s.mode = t.string("mode", s.regex.empty() ? "process" : "region");
  if (s.mode != "process" && s.mode != "region")
    t.failAt("mode", "must be \"process\" or \"region\"");
  s.tag = t.string("tag", s.tag);
  if (!s.regex.empty()) {
    if (s.mode != "region")
      t.failAt("regex", "the program's own time is read in mode = \"region\" only");
    auto re = support::Regex::compile(s.regex);
    if (!re)
      t.failAt("regex", fmt::format("'{}' is not a valid regular expression (RE2 syntax): {}", s.regex,
                                    re.error().message));
    if (re->groups() != 1)
      t.failAt("regex", fmt::format("'{}' has {} capture groups; it needs exactly one, the seconds", s.regex,
                                    re->groups()));
  }
  // Whole numbers in a range, checked before the conversion (NaN, inf and 1e300 are not ints).
  auto count = [&t](const char *key, double fallback, int lo, int hi) {
    double x = t.number(key, fallback);
    if (!(x >= lo && x <= hi) || x != std::floor(x))
      t.failAt(key, fmt::format("must be a whole number between {} and {}", lo, hi));
    return static_cast<int>(x);
  };
  s.warmup = count("warmup", s.warmup, 0, 100);
  s.minRepeats = count("min_repeats", s.minRepeats, 1, 1000);
  s.maxRepeats = count("max_repeats", s.maxRepeats, 1, 1000);
  s.targetCi = t.number("target_ci", 0.02);
  s.referenceEvery = count("reference_every", s.referenceEvery, 0, 1000);
  s.confirmBest = t.boolean("confirm_best", s.confirmBest);
  if (s.maxRepeats < s.minRepeats)
    t.failHere("need 1 <= min_repeats <= max_repeats <= 1000");
  if (!(s.targetCi > 0 && s.targetCi < 1))
    t.failAt("target_ci", "must be a fraction between 0 and 1 (0.02 is 2%)");
  t.finish();
  return s;
}

/// One [[knob]]; its constraints (written after its header, TOML puts them in its table) go to `m`'s.
Knob readKnob(TableReader &k, Manifest &m) {
  Knob knob;
  knob.name = k.string("name");
  static const std::regex ident("^[A-Za-z_][A-Za-z0-9_]*$");
  if (!std::regex_match(knob.name, ident))
    k.failAt("name", "must be an identifier (letters, digits, '_')");
  if (m.knob(knob.name))
    k.failAt("name", fmt::format("knob '{}' is defined twice", knob.name));
  std::string kind = k.string("kind", "define");
  if (kind == "define")
    knob.kind = KnobKind::Define;
  else if (kind == "flags")
    knob.kind = KnobKind::Flags;
  else if (kind == "env")
    knob.kind = KnobKind::Env;
  else
    k.failAt("kind", "must be \"define\", \"flags\" or \"env\"");
  knob.values = readValues(k);
  if (k.has("default")) {
    std::string d = k.value<std::string>("default", [&](const toml::node &n) { return nodeText(k, n); });
    auto it = std::find(knob.values.begin(), knob.values.end(), d);
    if (it == knob.values.end())
      k.failAt("default", fmt::format("'{}' is not one of the knob's values", d));
    knob.defaultIndex = static_cast<size_t>(it - knob.values.begin());
  } else {
    k.known("default");
  }
  if (k.has("role")) {
    std::string role = k.string("role");
    auto parsed = parseKnobRole(role);
    if (!parsed) {
      auto near = support::closestMatch(role, roleNames());
      k.failAt("role", fmt::format("unknown role '{}'{}; roles: {}", role,
                                   near ? fmt::format(" (did you mean '{}'?)", *near) : "",
                                   support::joinOr(roleNames())));
    }
    knob.role = *parsed;
  } else {
    k.known("role");
    knob.role = guessRole(knob.name, knob.kind);
  }
  knob.doc = k.string("doc", "");
  // `constraints = [...]` written after a [[knob]] header belongs to that table in TOML;
  // constraints are global wherever they are written.
  if (k.has("constraints")) {
    for (const auto &c : k.strings("constraints"))
      m.constraints.push_back({c, k.line()});
  } else {
    k.known("constraints");
  }
  k.finish();
  return knob;
}

/// [gpu]: the architectures to compile for, and each kernel's launch shape when the sources do not say.
void readGpu(TableReader g, Manifest &m) {
  m.gpuArchs = g.has("archs") ? g.strings("archs") : (g.known("archs"), std::vector<std::string>{});
  for (const auto &a : m.gpuArchs)
    if (!findGpuArch(a))
      g.failAt("archs", fmt::format("'{}' is not an architecture hone knows ({})", a,
                                    support::joinOr(knownGpuArchs())));
  auto expression = [](TableReader &t, const char *key) {
    std::string text = t.value<std::string>(key, [&](const toml::node &n) -> std::string {
      if (auto i = n.as_integer())
        return std::to_string(i->get());
      if (auto s = n.as_string())
        return s->get();
      t.failNode(n, key, "expected a number or an expression (a string)");
    });
    if (auto e = support::Expr::parse(text); !e)
      t.failAt(key, fmt::format("'{}': {}", text, e.error().message));
    return text;
  };
  for (TableReader &l : g.tables("launch")) {
    GpuLaunchSpec spec;
    spec.line = l.line();
    spec.kernel = l.string("kernel");
    spec.block = expression(l, "block");
    spec.sharedBytes = l.has("shared_bytes") ? expression(l, "shared_bytes") : (l.known("shared_bytes"), "");
    l.finish();
    m.gpuLaunches.push_back(std::move(spec));
  }
  g.finish();
}

} // namespace

namespace {

/// [project]: name, language, sources and the files a variant may edit.
void readProject(TableReader p, Manifest &m, const std::filesystem::path &abs) {
  m.name = p.string("name", abs.parent_path().filename().string());
  m.language = p.string("language", "c");
  if (m.language != "c" && m.language != "cpp" && m.language != "cuda")
    p.failAt("language", "must be \"c\", \"cpp\" or \"cuda\"");
  m.sources = p.strings("sources");
  if (m.sources.empty())
    p.failAt("sources", "needs at least one file");
  m.editable = p.has("editable") ? p.strings("editable") : (p.known("editable"), m.sources);
  for (const auto &e : m.editable)
    if (e.find("..") != std::string::npos || (!e.empty() && e[0] == '/'))
      p.failAt("editable", fmt::format("'{}' must be a path inside the project folder", e));
  p.finish();
}

/// [build]: the command, flags, defines of each build and include folders.
void readBuild(TableReader b, Manifest &m) {
  m.buildCommand = b.string("command");
  if (m.buildCommand.find("{out}") == std::string::npos)
    b.failAt("command", "must contain {out} (where hone wants the program)");
  m.flags = b.string("flags", "");
  for (const char *key : {"defines", "validate_defines", "time_defines"}) {
    auto &list = std::string(key) == "defines"            ? m.defines
                 : std::string(key) == "validate_defines" ? m.validateDefines
                                                          : m.timeDefines;
    list = b.has(key) ? b.strings(key) : (b.known(key), std::vector<std::string>{});
    static const std::regex define("^[A-Za-z_][A-Za-z0-9_]*(=.*)?$");
    for (const auto &d : list)
      if (!std::regex_match(d, define))
        b.failAt(key, fmt::format("'{}' is not NAME or NAME=VALUE (each becomes -DNAME=VALUE)", d));
  }
  m.includeDirs = b.has("includes") ? b.strings("includes") : (b.known("includes"), std::vector<std::string>{});
  for (const auto &d : m.includeDirs)
    if (d.empty())
      b.failAt("includes", "an include folder must not be empty (\".\" is this folder)");
  if (!m.includeDirs.empty() && m.buildCommand.find("{includes}") == std::string::npos)
    b.failAt("includes", "the build command must contain {includes} for these folders to reach the compiler");
  if (!(m.defines.empty() && m.validateDefines.empty() && m.timeDefines.empty()) &&
      m.buildCommand.find("{defines}") == std::string::npos)
    b.failAt("command", "must contain {defines}: the manifest's defines reach the compiler through it");
  m.buildTimeoutS = b.number("timeout_s", 300);
  if (!(m.buildTimeoutS > 0 && m.buildTimeoutS <= 86400))
    b.failAt("timeout_s", "must be between 0 and 86400 seconds");
  b.finish();
}

/// [run]: the command, seeds, environment and limits.
void readRun(TableReader r, Manifest &m) {
  m.runCommand = r.string("command", m.runCommand);
  if (m.runCommand.find("{exe}") == std::string::npos)
    r.failAt("command", "must contain {exe} (the program hone built)");
  if (r.has("seeds")) {
    m.seeds = r.values<uint64_t>("seeds", true, [&](const toml::node &n) {
      auto i = n.as_integer();
      if (!i || i->get() < 0)
        r.failNode(n, "seeds", "expected a non-negative integer");
      return static_cast<uint64_t>(i->get());
    });
    if (m.seeds.empty())
      r.failAt("seeds", "needs at least one seed");
  } else {
    r.known("seeds");
  }
  m.env = envList(r, "env");
  m.runTimeoutS = r.number("timeout_s", 120);
  if (!(m.runTimeoutS > 0 && m.runTimeoutS <= 86400))
    r.failAt("timeout_s", "must be between 0 and 86400 seconds");
  double mb = r.number("memory_mb", 0);
  if (!(mb >= 0 && mb < 1e9))
    r.failAt("memory_mb", "must be a non-negative number of MiB");
  m.memoryMb = static_cast<size_t>(mb);
  r.finish();
}

/// Constraints name knobs (or -D values of the reference): each a comparison of expressions over them.
void checkConstraints(TableReader &top, const Manifest &m) {
  for (auto &c : m.constraints) {
    auto cmp = splitComparison(c.text);
    if (!cmp)
      top.failAt("constraints", fmt::format("'{}' is not a comparison (lhs <= rhs, ==, !=, <, >, >=)", c.text));
    for (const std::string *side : {&cmp->lhs, &cmp->rhs}) {
      auto e = support::Expr::parse(*side);
      if (!e)
        top.failAt("constraints", fmt::format("'{}': {}", c.text, e.error().message));
      for (const auto &n : e->names())
        if (!m.knob(n)) {
          auto near = support::closestMatch(n, m.knobNames());
          top.failAt("constraints", fmt::format("'{}' names '{}', which is not a knob{}", c.text, n,
                                                near ? fmt::format(" (did you mean '{}'?)", *near) : ""));
        }
    }
  }
}

} // namespace

support::Expected<Manifest> parseManifest(const std::string &path, const std::string &text) {
  return support::parseTomlDocument<Manifest>(path, text, [&](TableReader &top) {
    Manifest m;
    m.path = path;
    std::error_code ec;
    std::filesystem::path abs = std::filesystem::absolute(path, ec);
    m.dir = abs.parent_path().string();

    readProject(top.table("project"), m, abs);
    readBuild(top.table("build"), m);
    readRun(top.table("run"), m);

    if (top.has("output")) {
      m.output = readOutput(top.table("output"));
    } else {
      top.known("output");
    }

    if (top.has("timing")) {
      m.timing = readTiming(top.table("timing"));
    } else {
      top.known("timing");
    }

    for (TableReader &k : top.tables("knob"))
      m.knobs.push_back(readKnob(k, m));
    if (top.has("constraints")) {
      for (const auto &c : top.strings("constraints"))
        m.constraints.push_back({c, 0});
    } else {
      top.known("constraints");
    }
    if (top.has("profile")) {
      TableReader pr = top.table("profile");
      for (auto &d : envList(pr, "defines"))
        m.profileDefines.push_back(d);
      pr.finish();
    } else {
      top.known("profile");
    }
    if (top.has("gpu")) {
      readGpu(top.table("gpu"), m);
      if (m.language != "cuda")
        top.failAt("gpu", "is for CUDA projects (language = \"cuda\")");
    } else {
      top.known("gpu");
    }
    top.finish();

    checkConstraints(top, m);
    return m;
  });
}

support::Expected<Manifest> loadManifest(const std::string &path) {
  std::error_code ec;
  std::string file = std::filesystem::is_directory(path, ec) ? (std::filesystem::path(path) / "hone.toml").string() : path;
  auto text = support::readTomlFile(file);
  if (!text)
    return text.error();
  return parseManifest(file, *text);
}

KnobValues defaultValues(const Manifest &m) {
  KnobValues out;
  for (const auto &k : m.knobs)
    out[k.name] = k.values[k.defaultIndex];
  return out;
}

support::Expected<bool> checkValues(const Manifest &m, const KnobValues &values) {
  for (const auto &[name, value] : values) {
    const Knob *k = m.knob(name);
    if (!k) {
      auto near = support::closestMatch(name, m.knobNames());
      return support::Error{fmt::format("'{}' is not a knob of {}{}", name, m.name,
                                        near ? fmt::format("; did you mean '{}'?", *near) : "")};
    }
    if (std::find(k->values.begin(), k->values.end(), value) == k->values.end())
      return support::Error{fmt::format("knob {} = '{}' is not one of its values ({})", name, value,
                                        support::joinOr(k->values))};
  }
  auto lookup = [&](const std::string &n) -> std::optional<double> {
    auto it = values.find(n);
    std::string v = it != values.end() ? it->second : (m.knob(n) ? m.knob(n)->values[m.knob(n)->defaultIndex] : "");
    if (!isNumber(v))
      return std::nullopt;
    return std::strtod(v.c_str(), nullptr);
  };
  for (const auto &c : m.constraints) {
    auto cmp = splitComparison(c.text);
    auto l = support::Expr::parse(cmp->lhs), r = support::Expr::parse(cmp->rhs);
    if (!l || !r)
      return support::Error{fmt::format("constraint '{}' does not parse", c.text)};
    auto lv = l->eval(lookup), rv = r->eval(lookup);
    if (!lv || !rv)
      return support::Error{fmt::format("constraint '{}': {}", c.text, (!lv ? lv.error() : rv.error()).message)};
    double a = *lv, b = *rv;
    bool holds = cmp->op == "<=" ? a <= b : cmp->op == "<" ? a < b : cmp->op == ">=" ? a >= b : cmp->op == ">" ? a > b
                 : cmp->op == "==" ? a == b : a != b;
    if (!holds)
      return support::Error{fmt::format("violates the constraint '{}' ({} {} {} is false)", c.text, a, cmp->op, b)};
  }
  return true;
}

} // namespace hone::kernel
