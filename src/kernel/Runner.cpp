#include "kernel/Runner.h"

#include "kernel/source/Transform.h"

#include "support/FileUtil.h"
#include "support/Regex.h"
#include "support/Subprocess.h"
#include "support/StringUtil.h"
#include "support/Template.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <string.h>
#include <filesystem>
#include <regex>
#include <sstream>

namespace hone::kernel {

namespace fs = std::filesystem;

// ---- variants ----------------------------------------------------------------------

std::string renderVariant(const Variant &v) {
  toml::table knobs;
  for (const auto &[k, value] : v.knobs)
    knobs.insert(k, value);
  toml::table top;
  top.insert("knobs", std::move(knobs));
  if (!v.files.empty()) {
    toml::table files;
    for (const auto &[f, text] : v.files)
      files.insert(f, text);
    top.insert("files", std::move(files));
  }
  std::ostringstream out;
  out << top << "\n";
  return out.str();
}

Variant referenceVariant(const Manifest &m) {
  return {defaultValues(m), {}};
}

support::Expected<Variant> parseVariant(const Manifest &m, const std::string &text) {
  toml::table top;
  try {
    top = toml::parse(std::string_view(text), std::string_view("variant"));
  } catch (const toml::parse_error &e) {
    return support::Error{fmt::format("the variant is not valid TOML: {}", e.description()),
                          static_cast<int>(e.source().begin.line), static_cast<int>(e.source().begin.column)};
  }
  Variant v;
  v.knobs = defaultValues(m);
  for (auto &&[key, node] : top) {
    std::string section(key.str());
    const toml::table *t = node.as_table();
    if (!t || (section != "knobs" && section != "files"))
      return support::Error{fmt::format("unknown section '{}' (a variant has [knobs] and [files])", section),
                            static_cast<int>(key.source().begin.line), 0};
    for (auto &&[k, value] : *t) {
      std::string name(k.str());
      std::string text;
      if (auto s = value.as_string())
        text = s->get();
      else if (auto i = value.as_integer())
        text = std::to_string(i->get());
      else if (auto f = value.as_floating_point())
        text = fmt::format("{}", f->get());
      else
        return support::Error{fmt::format("{}.{}: expected a string or a number", section, name),
                              static_cast<int>(k.source().begin.line), 0};
      if (section == "knobs") {
        v.knobs[name] = text;
      } else {
        if (std::find(m.editable.begin(), m.editable.end(), name) == m.editable.end())
          return support::Error{fmt::format("the variant changes '{}', which the manifest does not let a variant "
                                            "change (editable: {})",
                                            name, fmt::join(m.editable, ", "))};
        v.files[name] = text;
      }
    }
  }
  if (auto ok = checkValues(m, v.knobs); !ok)
    return ok.error();
  if (auto ok = realise(m, v); !ok)
    return ok.error();
  return v;
}

support::Expected<bool> realise(const Manifest &m, Variant &v) {
  if (!m.plan)
    return true;
  auto files = m.plan->render(v.knobs);
  if (!files)
    return files.error();
  for (auto &[name, text] : *files) {
    auto it = v.files.find(name);
    if (it != v.files.end() && it->second != text)
      return support::Error{fmt::format("the variant's '{}' is not what its source knobs make of the project's file "
                                        "(a variant either sets hone's source knobs or edits the file itself)",
                                        name)};
    v.files[name] = std::move(text);
  }
  return true;
}

std::string renderKnobs(const Manifest &m, const KnobValues &knobs, std::map<std::string, std::string> files) {
  Variant v{knobs, std::move(files)};
  (void)realise(m, v); // a value that cannot be realised is refused when the variant is parsed
  return renderVariant(v);
}

Expansion expand(const Manifest &m, const Variant &v) {
  Expansion e;
  for (const auto &k : m.knobs) {
    auto it = v.knobs.find(k.name);
    const std::string &value = it != v.knobs.end() ? it->second : k.values[k.defaultIndex];
    switch (k.kind) {
    case KnobKind::Define: e.defines.push_back(fmt::format("-D{}={}", k.name, value)); break;
    case KnobKind::Env:
      if (!value.empty()) // "": leave the variable unset (the runtime's own default)
        e.env.push_back(k.name + "=" + value);
      break;
    case KnobKind::Flags: {
      std::istringstream words(value);
      for (std::string w; words >> w;)
        e.flags.push_back(w);
      break;
    }
    case KnobKind::Source: break; // realised as files (realise)
    }
  }
  if (m.plan)
    for (const auto &f : m.plan->flags(v.knobs))
      if (m.flags.find(f) == std::string::npos &&
          std::find(e.flags.begin(), e.flags.end(), f) == e.flags.end())
        e.flags.push_back(f);
  return e;
}

// ---- commands ----------------------------------------------------------------------

namespace {

using support::shellQuote;

std::string quoteAll(const std::vector<std::string> &items) {
  std::string out;
  for (const auto &i : items)
    out += (out.empty() ? "" : " ") + shellQuote(i);
  return out;
}

support::SubprocessResult shell(const Manifest &m, const std::string &key, const std::string &command,
                                const std::string &cwd, double timeoutS, size_t memoryMb,
                                const std::vector<std::string> &env, const std::vector<std::string> &prefix,
                                std::vector<std::string> clearFirst) {
  support::SubprocessOptions o;
  o.argv = {"env"};
  for (const auto &e : env)
    o.argv.push_back(e);
  for (const auto &p : prefix)
    o.argv.push_back(p);
  o.argv.insert(o.argv.end(), {"sh", "-c", command});
  o.workdir = cwd;
  o.timeoutS = timeoutS;
  o.memoryLimitBytes = memoryMb * 1024 * 1024;
  o.outputLimitBytes = kStdoutLimit;
  o.clearFirst = std::move(clearFirst);
  return (m.executor ? m.executor : support::localExecutor())->run(o, key);
}

} // namespace

std::string buildCommand(const Manifest &m, const Variant &v, const std::string &dir,
                         const std::vector<std::string> &extraFlags, const std::vector<std::string> &extraDefines,
                         const std::string &out) {
  std::vector<std::string> sources;
  for (const auto &s : m.sources)
    sources.push_back(v.files.count(s) ? (fs::path(dir) / s).string() : (fs::path(m.dir) / s).string());
  Expansion e = expand(m, v);
  std::vector<std::string> cflags;
  std::istringstream base(m.flags);
  for (std::string w; base >> w;)
    cflags.push_back(w);
  cflags.insert(cflags.end(), e.flags.begin(), e.flags.end());
  cflags.insert(cflags.end(), extraFlags.begin(), extraFlags.end());
  std::vector<std::string> defines;
  for (const auto &d : m.defines)
    defines.push_back("-D" + d);
  defines.insert(defines.end(), e.defines.begin(), e.defines.end());
  for (const auto &d : extraDefines)
    defines.push_back("-D" + d);
  std::vector<std::string> includes;
  if (!v.files.empty()) // edited files live in `dir`; the project's own headers stay reachable
    includes = {"-I", dir, "-iquote", m.dir};
  for (const auto &d : m.includeDirs) // the manifest's, relative to the project folder
    includes.push_back("-I" + (fs::path(m.dir) / d).lexically_normal().string());
  return support::fillTemplate(m.buildCommand, {{"sources", quoteAll(sources)},
                                                 {"out", shellQuote((fs::path(dir) / out).string())},
                                                 {"cflags", quoteAll(cflags)},
                                                 {"defines", quoteAll(defines)},
                                                 {"includes", quoteAll(includes)},
                                                 {"dir", shellQuote(m.dir)}});
}

std::string buildScript(const Manifest &m, const Variant &v, const std::string &dir, const std::string &header) {
  std::string env;
  for (const auto &x : expand(m, v).env)
    env += shellQuote(x) + " ";
  using support::printable;
  return fmt::format("#!/bin/sh\n# {}\n# Builds the best variant found into {}/prog, from the project at {}.\n"
                     "# Run it with the environment the variant sets: {}./prog ...\nset -e\ncd {}\n{}\n",
                     printable(header), printable(dir), printable(m.dir), printable(env), shellQuote(m.dir),
                     buildCommand(m, v, dir));
}

namespace {

/// `command` with its first word, a C or C++ compiler, replaced by `compiler` (clang++ for a C++
/// one); nullopt when the first word is not a compiler hone knows.
std::optional<std::string> retarget(const std::string &command, const std::string &compiler) {
  size_t start = command.find_first_not_of(" \t\n");
  if (start == std::string::npos)
    return std::nullopt;
  size_t end = command.find_first_of(" \t\n", start);
  std::string word = command.substr(start, end == std::string::npos ? std::string::npos : end - start);
  std::string name = fs::path(word).filename().string();
  if (auto dash = name.find('-'); dash != std::string::npos && dash > 0) // gcc-12, clang-14
    name = name.substr(0, dash);
  bool cxx = name == "c++" || name == "g++" || name == "clang++";
  if (!cxx && name != "cc" && name != "gcc" && name != "clang")
    return std::nullopt;
  return command.substr(0, start) + (cxx ? compiler + "++" : compiler) +
         (end == std::string::npos ? "" : command.substr(end));
}

} // namespace

BuildResult build(const Manifest &m, const Variant &v, const std::string &dir, const std::vector<std::string> &extraFlags,
                  const std::vector<std::string> &extraDefines, const std::string &out, const std::string &compiler) {
  BuildResult r;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    r.error = fmt::format("cannot create {}: {}", dir, ec.message());
    return r;
  }
  for (const auto &[name, text] : v.files) {
    fs::path target = fs::path(dir) / name;
    fs::create_directories(target.parent_path(), ec);
    std::string why;
    if (!support::writeFileAtomically(target.string(), text, &why)) {
      r.error = why;
      return r;
    }
  }
  r.exe = (fs::path(dir) / out).string();
  r.command = buildCommand(m, v, dir, extraFlags, extraDefines, out);
  if (!compiler.empty()) {
    auto retargeted = retarget(r.command, compiler);
    if (!retargeted) {
      r.error = fmt::format("the build command does not start with a C or C++ compiler to replace by {}", compiler);
      return r;
    }
    r.command = std::move(*retargeted);
  }
  // A compiler gets room (16 GiB of address space, or the runs' limit if larger), not the machine: a
  // source that includes /dev/zero must not take it all.
  auto p = shell(m, "build-" + out, r.command, m.dir, m.buildTimeoutS, std::max<size_t>(kBuildMemoryMb, m.memoryMb), {},
                 {}, {r.exe});
  r.seconds = p.seconds;
  r.log = p.output;
  if (!p.ok())
    r.error = p.describe();
  else if (!fs::exists(r.exe, ec))
    r.error = fmt::format("the build command succeeded but wrote nothing at {{out}} ({})", r.exe);
  r.ok = r.error.empty();
  return r;
}

BuildResult buildValidated(const Manifest &m, const Variant &v, const std::string &dir) {
  return build(m, v, dir, {}, m.validateDefines);
}

BuildResult buildTimed(const Manifest &m, const Variant &v, const std::string &dir, const BuildResult &validated) {
  if (!m.splitBuilds())
    return validated;
  return build(m, v, dir, {}, m.timeDefines, "prog-timed");
}

namespace {

/// LLVM's OpenMP tool that tells ThreadSanitizer about OpenMP's synchronisation, beside the clang
/// that builds the race check (its resource folder is LIB/clang/VERSION); "" when absent.
std::string archerLibrary() {
  support::SubprocessOptions o;
  o.argv = {"clang", "-print-resource-dir"};
  o.timeoutS = 30;
  auto r = support::runSubprocess(o);
  if (!r.ok())
    return "";
  std::string dir = r.output;
  while (!dir.empty() && std::isspace(static_cast<unsigned char>(dir.back())))
    dir.pop_back();
  std::error_code ec;
  fs::path lib = fs::path(dir).parent_path().parent_path() / "libarcher.so";
  return fs::exists(lib, ec) ? lib.string() : "";
}

/// TSan's first report in `text`: its WARNING line's kind and the first frame in the program's code.
std::string firstReport(const std::string &text) {
  size_t at = text.find("WARNING: ThreadSanitizer:");
  if (at == std::string::npos)
    return "";
  size_t eol = text.find('\n', at);
  std::string kind = text.substr(at + 26, eol == std::string::npos ? std::string::npos : eol - at - 26);
  if (auto pid = kind.find(" (pid="); pid != std::string::npos)
    kind = kind.substr(0, pid);
  // The first frame with a file:line, e.g. "#0 .omp_outlined._debug__ /p/gemm.c:93:12 (prog+0x..)".
  std::istringstream lines(text.substr(at));
  std::string where;
  for (std::string line; std::getline(lines, line) && where.empty();) {
    size_t hash = line.find("#0 ");
    if (hash == std::string::npos)
      continue;
    std::istringstream words(line.substr(hash + 3));
    std::string function, location;
    words >> function >> location;
    if (location.find(':') != std::string::npos && location != "<null>")
      where = fmt::format("{} in {}", fs::path(location).filename().string(), function);
  }
  return where.empty() ? kind : fmt::format("{} at {}", kind, where);
}

size_t countParallelPragmas(const std::string &text) {
  size_t n = 0;
  for (size_t at = text.find("omp parallel"); at != std::string::npos; at = text.find("omp parallel", at + 1))
    ++n;
  return n;
}

} // namespace

bool addsParallelism(const Manifest &m, const Variant &v) {
  if (m.plan) {
    std::map<std::string, std::string> values(v.knobs.begin(), v.knobs.end());
    if (m.plan->parallel(values))
      return true;
  }
  for (const auto &[name, text] : v.files) {
    auto original = support::readFile((fs::path(m.dir) / name).string());
    if (countParallelPragmas(text) > (original ? countParallelPragmas(*original) : 0))
      return true;
  }
  return false;
}

RaceCheck checkRaces(const Manifest &m, const Variant &v, const std::string &dir, uint64_t seed) {
  RaceCheck out;
  std::string archer = archerLibrary();
  if (archer.empty()) {
    out.skipped = "no clang with LLVM's OpenMP race tool (Archer) here: apt-get install clang libomp-dev "
                  "(scripts/install-deps.sh)";
    return out;
  }
  BuildResult b = build(m, v, dir, {"-fsanitize=thread", "-g"}, m.validateDefines, "prog-tsan", "clang");
  out.command = b.command;
  if (!b.ok) {
    out.skipped = "the ThreadSanitizer build failed: " + b.error;
    return out;
  }
  std::string rundir = (fs::path(dir) / "race-run").string();
  std::error_code ec;
  fs::remove_all(rundir, ec);
  std::string log = (fs::path(dir) / "tsan").string();
  for (const auto &e : fs::directory_iterator(dir, ec))
    if (e.path().filename().string().rfind("tsan.", 0) == 0)
      fs::remove(e.path(), ec);
  RunResult r = runOnce(m, v, b.exe, rundir, seed,
                        {"env", "TSAN_OPTIONS=ignore_noninstrumented_modules=1 exitcode=66 log_path=" + log,
                         "OMP_TOOL_LIBRARIES=" + archer});
  std::string reports;
  for (const auto &e : fs::directory_iterator(dir, ec))
    if (e.path().filename().string().rfind("tsan.", 0) == 0)
      if (auto text = support::readFile(e.path().string()))
        reports += *text;
  out.race = firstReport(reports);
  if (out.race.empty() && !r.process.ok()) {
    out.skipped = "the ThreadSanitizer build did not run to the end: " + r.process.describe();
    return out;
  }
  out.ran = true;
  return out;
}

std::string firstCompilerErrors(const std::string &log, size_t n) {
  std::string out, fallback;
  size_t lines = 0, all = 0;
  size_t at = 0;
  while (at < log.size() && (lines < n)) {
    size_t nl = log.find('\n', at);
    std::string line = log.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    if (all++ < n)
      fallback += line + "\n";
    if (line.find("error") != std::string::npos) {
      out += line + "\n";
      ++lines;
    }
    if (nl == std::string::npos)
      break;
    at = nl + 1;
  }
  return out.empty() ? fallback : out;
}

// ---- outputs -----------------------------------------------------------------------

double printedUnit(const std::string &word) {
  size_t start = word.find_first_not_of("+-");
  if (start == std::string::npos || word.compare(start, 2, "0x") == 0 || word.compare(start, 2, "0X") == 0)
    return 0;
  size_t e = word.find_first_of("eE", start);
  std::string mantissa = word.substr(start, e == std::string::npos ? std::string::npos : e - start);
  if (mantissa.find_first_not_of("0123456789.") != std::string::npos)
    return 0; // nan, inf
  size_t dot = mantissa.find('.');
  if (dot == std::string::npos && e == std::string::npos)
    return 0; // an integer: exact as printed
  int decimals = dot == std::string::npos ? 0 : static_cast<int>(mantissa.size() - dot - 1);
  long exponent = e == std::string::npos ? 0 : std::strtol(word.c_str() + e + 1, nullptr, 10);
  if (exponent < -400 || exponent > 400)
    return 0;
  return std::pow(10.0, static_cast<double>(exponent - decimals));
}

std::optional<std::string> weakValidation(const std::vector<double> &values, const std::vector<double> &units,
                                          bool advice) {
  std::vector<double> digits; // |value| / unit: about 10^(significant digits)
  for (size_t i = 0; i < values.size() && i < units.size(); ++i)
    if (units[i] > 0 && values[i] != 0 && std::isfinite(values[i]))
      digits.push_back(std::fabs(values[i]) / units[i]);
  if (digits.empty())
    return std::nullopt;
  std::nth_element(digits.begin(), digits.begin() + digits.size() / 2, digits.end());
  double median = digits[digits.size() / 2];
  if (median >= 1e7)
    return std::nullopt;
  double coarsest = *std::max_element(units.begin(), units.end());
  return fmt::format("weak validation: the outputs are printed with about {} significant digits (last printed place "
                     "up to {:g}); hone allows at least one unit there, and a change of the results below the printed "
                     "precision cannot be caught{}",
                     std::max(1, static_cast<int>(std::floor(std::log10(median))) + 1), coarsest,
                     advice ? ". Print them with full precision (%.17g or %a) or write a binary file ([output] source "
                              "= \"file\")"
                            : "");
}

std::vector<double> numbersOf(const OutputSpec &spec, const std::string &text, const std::string &timingTag,
                              std::vector<double> *units) {
  // RE2 (support/Regex.h): a program's output may hold any line, and std::regex recurses per character.
  std::vector<support::Regex> ignore;
  for (const auto &re : spec.ignore)
    if (auto compiled = support::Regex::compile(re)) // the manifest checked them
      ignore.push_back(std::move(*compiled));
  std::vector<double> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!timingTag.empty() && line.rfind(timingTag, 0) == 0)
      continue;
    if (line.rfind("==PROF==", 0) == 0)
      continue;
    if (std::any_of(ignore.begin(), ignore.end(), [&](const support::Regex &re) { return !re.findAll(line, 1).empty(); }))
      continue;
    for (size_t i = 0; i < line.size();) {
      while (i < line.size() && (std::isspace(static_cast<unsigned char>(line[i])) || line[i] == ',' || line[i] == ';'))
        ++i;
      size_t start = i;
      while (i < line.size() && !std::isspace(static_cast<unsigned char>(line[i])) && line[i] != ',' && line[i] != ';')
        ++i;
      if (i == start)
        continue;
      std::string word = line.substr(start, i - start);
      char *end = nullptr;
      double value = std::strtod(word.c_str(), &end);
      if (end == word.c_str() + word.size()) { // nan and inf too: results, wrong ones unless the reference agrees
        out.push_back(value);
        if (units)
          units->push_back(printedUnit(word));
      }
    }
  }
  return out;
}

support::Expected<std::vector<double>> readBinary(const OutputSpec &spec, const std::string &bytes) {
  size_t width = spec.dtype == "f32" || spec.dtype == "i32" ? 4 : spec.dtype == "u8" ? 1 : 8;
  if (bytes.size() % width != 0)
    return support::Error{fmt::format("{} bytes is not a whole number of {} elements", bytes.size(), spec.dtype)};
  size_t n = bytes.size() / width;
  if (!spec.shape.empty()) {
    int64_t want = 1;
    for (int64_t d : spec.shape)
      want *= d;
    if (static_cast<size_t>(want) != n)
      return support::Error{fmt::format("the file holds {} {} elements; the shape says {}", n, spec.dtype, want)};
  }
  std::vector<double> out(n);
  const char *p = bytes.data();
  for (size_t i = 0; i < n; ++i, p += width) {
    if (spec.dtype == "f32") {
      float f;
      std::memcpy(&f, p, 4);
      out[i] = f;
    } else if (spec.dtype == "f64") {
      std::memcpy(&out[i], p, 8);
    } else if (spec.dtype == "i32") {
      int32_t x;
      std::memcpy(&x, p, 4);
      out[i] = x;
    } else if (spec.dtype == "i64") {
      int64_t x;
      std::memcpy(&x, p, 8);
      out[i] = static_cast<double>(x);
    } else {
      out[i] = static_cast<unsigned char>(*p);
    }
  }
  return out;
}

std::string toleranceText(const OutputSpec &spec) {
  auto [rtol, atol] = tolerances(spec);
  switch (spec.tolerance) {
  case Tolerance::Exact:
    return "exact";
  case Tolerance::Abs:
    return fmt::format("abs: |got - expected| <= {:g}", atol);
  case Tolerance::Rel:
    return fmt::format("rel: |got - expected| <= {:g} + {:g} * |expected|", atol, rtol);
  case Tolerance::Ulp:
    return fmt::format("ulp: within {} units in the last place", spec.ulps);
  }
  return std::string(toString(spec.tolerance));
}

std::pair<double, double> tolerances(const OutputSpec &spec) {
  double rtol = spec.rtol, atol = spec.atol;
  bool integer = spec.source == "file" && spec.format == "binary" && spec.dtype != "f32" && spec.dtype != "f64";
  if (spec.tolerance == Tolerance::Rel && rtol == 0 && !integer)
    rtol = spec.dtype == "f32" ? 1e-4 : 1e-8;
  if ((spec.tolerance == Tolerance::Rel || spec.tolerance == Tolerance::Abs) && atol == 0 && !integer)
    atol = spec.dtype == "f32" ? 1e-5 : 1e-10;
  return {rtol, atol};
}

namespace {
// The doubles in order on an unsigned line, -0 and +0 at one point (2^63): the distance between any
// two of them, -infinity to +infinity included, fits in 64 unsigned bits, where a signed difference
// overflows.
uint64_t ulpDistance(double a, double b) {
  auto ordered = [](double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    constexpr uint64_t sign = uint64_t{1} << 63;
    return bits & sign ? sign - (bits & ~sign) : sign + bits;
  };
  uint64_t x = ordered(a), y = ordered(b);
  return x > y ? x - y : y - x;
}
} // namespace

std::optional<Mismatch> compareOutputs(const OutputSpec &spec, const std::vector<double> &expected,
                                       const std::vector<double> &actual, const std::vector<double> *units) {
  if (expected.size() != actual.size()) {
    Mismatch m;
    m.index = std::min(expected.size(), actual.size());
    m.message = fmt::format("{} outputs where the reference has {}", actual.size(), expected.size());
    return m;
  }
  auto [rtol, atol] = tolerances(spec);
  for (size_t i = 0; i < expected.size(); ++i) {
    double e = expected[i], a = actual[i];
    bool same;
    double allowed = 0;
    if (std::isnan(e) || std::isnan(a)) {
      same = std::isnan(e) && std::isnan(a);
    } else if (std::isinf(e) || std::isinf(a)) {
      // An infinity matches only the same infinity: inf - inf is NaN, and a tolerance relative to an
      // infinite reference would allow any finite value.
      same = e == a;
    } else {
      // One unit in the last printed place (a hair more: 0.01 is not exact in binary).
      double printed = units && i < units->size() ? (*units)[i] * (1 + 1e-9) : 0;
      switch (spec.tolerance) {
      case Tolerance::Exact: same = e == a; break;
      case Tolerance::Abs: allowed = std::max(atol, printed); same = std::fabs(a - e) <= allowed; break;
      case Tolerance::Rel:
        allowed = std::max(atol + rtol * std::fabs(e), printed);
        same = std::fabs(a - e) <= allowed;
        break;
      case Tolerance::Ulp:
        same = (spec.ulps >= 0 && ulpDistance(e, a) <= static_cast<uint64_t>(spec.ulps)) || std::fabs(a - e) <= printed;
        allowed = static_cast<double>(spec.ulps);
        break;
      }
    }
    if (!same) {
      Mismatch m{i, e, a, allowed, {}};
      m.message = spec.tolerance == Tolerance::Ulp
                      ? fmt::format("output {} is {:.17g}, the reference's {:.17g} ({} ulps apart, {} allowed)", i, a, e,
                                    ulpDistance(e, a), spec.ulps)
                      : fmt::format("output {} is {:.17g}, the reference's {:.17g} (difference {:.3g}, {} {:.3g})", i, a,
                                    e, std::fabs(a - e), spec.tolerance == Tolerance::Exact ? "exact match required;"
                                                                                            : "allowed",
                                    allowed);
      return m;
    }
  }
  return std::nullopt;
}

// ---- running -----------------------------------------------------------------------

namespace {
std::string lastLine(const std::string &text) {
  size_t end = text.find_last_not_of("\n");
  if (end == std::string::npos)
    return "";
  size_t begin = text.rfind('\n', end);
  std::string line = text.substr(begin == std::string::npos ? 0 : begin + 1, end - (begin == std::string::npos ? 0 : begin + 1) + 1);
  return line.size() > 300 ? line.substr(0, 300) + "..." : line;
}
} // namespace

double reportedSeconds(const TimingSpec &spec, const std::string &text) {
  double seconds = -1;
  auto take = [&](const std::string &number) {
    char *end = nullptr;
    double s = std::strtod(number.c_str(), &end);
    if (end != number.c_str() && std::isfinite(s) && s >= 0)
      seconds = s;
  };
  std::optional<support::Regex> re;
  if (!spec.regex.empty()) {
    auto compiled = support::Regex::compile(spec.regex); // the manifest checked it
    if (!compiled || compiled->groups() != 1)
      return -1;
    re = std::move(*compiled);
  }
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!re) {
      if (line.rfind(spec.tag, 0) == 0)
        take(line.substr(spec.tag.size()));
      continue;
    }
    if (line.size() > 4096)
      continue;
    if (auto matches = re->findAll(line, 1); !matches.empty())
      take(matches.front().groups[1]);
  }
  return seconds;
}

namespace {
/// `text` without the lines a timing regex matches in: a reported time is no result.
std::string withoutTimingLines(const TimingSpec &spec, const std::string &text) {
  if (spec.mode != "region" || spec.regex.empty())
    return text;
  auto re = support::Regex::compile(spec.regex);
  if (!re)
    return text;
  std::string out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (re->findAll(line, 1).empty())
      out += line + "\n";
  return out;
}

/// The program's stderr, read from the file its run redirected it to.
support::Expected<std::string> readStderr(const fs::path &file) {
  std::error_code ec;
  auto size = fs::file_size(file, ec);
  if (ec)
    return support::Error{"the program's stderr was not captured (" + ec.message() + ")"};
  if (size > kStderrLimit)
    return support::Error{fmt::format("the program wrote {:.1f} MiB to stderr; hone reads at most {} MiB of "
                                      "outputs there: print fewer numbers (a smaller dataset) or write a file",
                                      static_cast<double>(size) / (1 << 20), kStderrLimit >> 20)};
  return support::readFile(file.string());
}

/// The program's output file: a regular file of its own (not a link to another, a pipe that would
/// block the read, or a device), at most kOutputFileLimit bytes.
support::Expected<std::string> readOutputFile(const fs::path &file) {
  std::error_code ec;
  auto st = fs::symlink_status(file, ec);
  if (ec || !fs::exists(st))
    return support::Error{ec ? ec.message() : "No such file or directory"};
  if (fs::is_symlink(st))
    return support::Error{"it is a link, not a file the program wrote"};
  if (!fs::is_regular_file(st))
    return support::Error{"it is not a regular file"};
  auto size = fs::file_size(file, ec);
  if (ec)
    return support::Error{ec.message()};
  if (size > kOutputFileLimit)
    return support::Error{fmt::format("it holds {:.1f} MiB; hone reads at most {} MiB of outputs",
                                      static_cast<double>(size) / (1 << 20), kOutputFileLimit >> 20)};
  return support::readFile(file.string());
}
} // namespace

RunResult runOnce(const Manifest &m, const Variant &v, const std::string &exe, const std::string &rundir, uint64_t seed,
                  const std::vector<std::string> &prefix, const std::vector<std::string> &clearFirst, bool timed) {
  RunResult r;
  std::error_code ec;
  fs::create_directories(rundir, ec);
  fs::path outFile;
  if (m.output.source == "file")
    outFile = fs::path(rundir) / m.output.file;
  else if (m.output.source == "stderr")
    outFile = fs::path(rundir) / kStderrFile;
  std::string command = support::fillTemplate(m.runCommand, {{"exe", shellQuote(exe)},
                                                              {"seed", std::to_string(seed)},
                                                              {"dir", shellQuote(m.dir)},
                                                              {"rundir", shellQuote(rundir)}});
  // The shell sends its own stderr, and so every command's, to the file; stdout stays captured.
  if (m.output.source == "stderr")
    command = "exec 2>" + shellQuote(outFile.string()) + "\n" + command;
  std::vector<std::string> env = m.env;
  Expansion e = expand(m, v);
  env.insert(env.end(), e.env.begin(), e.env.end());
  // A stale output from an earlier run must never pass for this one's.
  std::vector<std::string> clear = clearFirst;
  if (!outFile.empty())
    clear.push_back(outFile.string());
  r.process = shell(m, fmt::format("{}run-{}", prefix.empty() ? "" : "profile-", seed), command, rundir, m.runTimeoutS,
                    m.memoryMb, env, prefix, clear);
  std::string errText; // source = "stderr": what the program wrote there
  if (m.output.source == "stderr") {
    auto text = readStderr(outFile);
    if (text)
      errText = std::move(*text);
    else if (r.process.ok())
      r.error = text.error().message;
  }
  if (!r.process.ok()) {
    r.error = r.process.describe();
    // The shell reports a program that a signal ended as exit 128 + the signal.
    if (r.process.started && !r.process.timedOut && r.process.signal == 0 && r.process.exitCode > 128 &&
        r.process.exitCode < 160) {
      int sig = r.process.exitCode - 128;
      r.error = fmt::format("killed by signal {} ({})", sig, strsignal(sig));
    }
    if (!r.process.output.empty() || !errText.empty())
      r.error += "; its last output: " + lastLine(errText.empty() ? r.process.output : errText);
    r.stderrText = std::move(errText); // why it failed may be there (a tool's complaint before it)
    return r;
  }
  if (!r.error.empty())
    return r;
  bool split = m.splitBuilds();
  if (m.timing.mode == "region" && (timed || !split)) {
    r.regionS = reportedSeconds(m.timing, r.process.output + "\n" + errText);
    if (r.regionS < 0) {
      r.error = m.timing.regex.empty()
                    ? fmt::format("no timing line '{} <seconds>' in the output (timing mode \"region\")", m.timing.tag)
                    : fmt::format("no match of the timing regex '{}' in the output (timing mode \"region\")",
                                  m.timing.regex);
      return r;
    }
  }
  if (timed && split)
    return r; // the timed build prints no outputs; validation runs read them
  std::string tag = m.timing.mode == "region" && m.timing.regex.empty() ? m.timing.tag : "";
  if (m.output.source == "stdout" && r.process.outputTruncated) {
    // Validating the part that was kept would accept a variant whose other part is wrong.
    r.error = fmt::format("the program printed more than {} MiB on stdout, and hone compares all of a program's "
                          "outputs or none: print fewer numbers (a smaller dataset) or write them to a file "
                          "([output] source = \"file\")",
                          kStdoutLimit >> 20);
    return r;
  }
  if (m.output.source == "stdout") {
    r.values = numbersOf(m.output, withoutTimingLines(m.timing, r.process.output), tag, &r.units);
  } else if (m.output.source == "stderr") {
    r.values = numbersOf(m.output, withoutTimingLines(m.timing, errText), tag, &r.units);
  } else {
    auto bytes = readOutputFile(outFile);
    if (!bytes) {
      r.error = fmt::format("the program wrote no usable {} ({})", m.output.file, bytes.error().message);
      return r;
    }
    if (m.output.format == "binary") {
      auto values = readBinary(m.output, *bytes);
      if (!values) {
        r.error = fmt::format("{}: {}", m.output.file, values.error().message);
        return r;
      }
      r.values = std::move(*values);
    } else {
      r.values = numbersOf(m.output, *bytes, "", &r.units);
    }
  }
  if (!m.output.verdict.empty()) {
    // The program's own check: some line of its output says it passed.
    auto verdict = support::Regex::compile("(?m)" + m.output.verdict);
    if (verdict && verdict->findAll(r.process.output, 1).empty() && verdict->findAll(errText, 1).empty()) {
      r.error = fmt::format("the program's own check did not pass: no line of its output matches the verdict '{}'{}",
                            m.output.verdict,
                            r.process.output.empty() ? "" : "; its last output: " + lastLine(r.process.output));
      return r;
    }
    return r; // numbers, if any, are compared with the reference's; none is fine
  }
  if (r.values.empty())
    r.error = m.output.source == "file"
                  ? fmt::format("the program wrote no numbers in {} (no outputs to validate)", m.output.file)
                  : fmt::format("the program printed no numbers on {} (no outputs to validate)", m.output.source);
  return r;
}

// ---- statistics --------------------------------------------------------------------

namespace {
/// Student's t, two-sided 95%, by degrees of freedom (1-30; then the normal's 1.96).
double t95(size_t dof) {
  static const double table[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                 2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                 2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (dof == 0)
    return INFINITY;
  return dof <= 30 ? table[dof - 1] : 1.96;
}
} // namespace

Timing summarize(std::vector<double> samples, double targetCi) {
  Timing t;
  t.samples = samples;
  size_t n = samples.size();
  if (n == 0)
    return t;
  std::sort(samples.begin(), samples.end());
  t.median = n % 2 ? samples[n / 2] : 0.5 * (samples[n / 2 - 1] + samples[n / 2]);
  double sum = 0;
  for (double s : samples)
    sum += s;
  t.mean = sum / static_cast<double>(n);
  double ss = 0;
  for (double s : samples)
    ss += (s - t.mean) * (s - t.mean);
  t.stddev = n > 1 ? std::sqrt(ss / static_cast<double>(n - 1)) : 0;
  t.ci95 = n > 1 ? t95(n - 1) * t.stddev / std::sqrt(static_cast<double>(n)) : INFINITY;
  t.converged = t.median > 0 && t.ci95 / t.median <= targetCi;
  return t;
}

} // namespace hone::kernel
