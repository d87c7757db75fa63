#include "kernel/Init.h"
#include "kernel/MakeBuild.h"
#include "support/Regex.h"
#include "support/StringUtil.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

namespace hone::kernel {

namespace {

/// Names that size the problem (changing them changes the results).
bool sizesProblem(const std::string &name) {
  static const std::set<std::string> words = {"N", "M", "K", "L", "H", "W", "D", "NX", "NY", "NZ", "SIZE", "LEN",
                                              "LENGTH", "ROWS", "COLS", "NNZ", "NNZ_ROW", "STEPS", "ITERS",
                                              "ITERATIONS", "REPS", "REPEATS", "COUNT", "BINS", "NB", "NBODY",
                                              "NBODIES", "NSTEPS", "NITER", "DIM", "WIDTH", "HEIGHT", "DEPTH", "SEED"};
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  if (words.count(upper))
    return true;
  for (const char *suffix : {"_SIZE", "_LEN", "_COUNT", "_STEPS", "_ITERS", "_REPS"})
    if (upper.size() > std::strlen(suffix) && upper.compare(upper.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
      return true;
  return false;
}

bool isInteger(const std::string &s, long long *out) {
  if (s.empty())
    return false;
  char *end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (end != s.c_str() + s.size())
    return false;
  *out = v;
  return true;
}

/// Candidate values around an integer default, by the parameter's name.
std::vector<std::string> valuesFor(const std::string &name, long long def) {
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(), [](unsigned char c) { return std::toupper(c); });
  std::set<long long> v{def};
  auto has = [&](const char *w) { return upper.find(w) != std::string::npos; };
  // Unroll factors include 3: an odd factor is worth trying, and it is the one that finds a
  // missing remainder loop (validation rejects it then).
  if (def == 0 || def == 1) {
    if (has("UNROLL") || has("ACC") || has("VEC") || has("ITEMS"))
      v.insert({1, 2, 3, 4, 8});
    else
      v.insert({0, 1});
  } else if (has("UNROLL") || has("ACC") || has("ITEMS")) {
    v.insert({1, 2, 3, 4, 8, 16});
  } else if (def > 0 && (def & (def - 1)) == 0) { // a power of two: the neighbouring powers
    for (long long p = std::max(1LL, def / 64); p <= def * 4; p *= 2)
      v.insert(p);
  } else if (def > 0) {
    for (long long x : {def / 4, def / 2, def * 2, def * 4})
      if (x >= 1)
        v.insert(x);
  } else {
    v.insert({def - 1, def + 1});
  }
  std::vector<std::string> out;
  for (long long x : v)
    out.push_back(std::to_string(x));
  return out;
}

std::string tomlList(const std::vector<std::string> &items, bool quote) {
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i)
    out += (i ? ", " : "") + (quote ? tomlString(items[i]) : items[i]);
  return out + "]";
}

bool hasControl(const std::string &s) {
  return std::any_of(s.begin(), s.end(), [](unsigned char c) { return c < 0x20 || c == 0x7f; });
}

/// Text for a comment line: control characters (a newline would end the comment) become '?'.
std::string commentSafe(std::string s) {
  for (char &c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      c = '?';
  return s;
}

} // namespace

std::vector<SourceParameter> findParameters(const std::string &source) {
  std::vector<std::string> lines;
  std::istringstream in(source);
  for (std::string l; std::getline(in, l);)
    lines.push_back(l);
  static const std::regex ifndefRe(R"(^\s*#\s*ifndef\s+([A-Za-z_]\w*)\s*(//.*|/\*.*)?$)");
  static const std::regex defineRe(R"(^\s*#\s*define\s+([A-Za-z_]\w*)\s+(.+?)\s*(//.*|/\*.*)?$)");
  static const std::regex endifRe(R"(^\s*#\s*endif\b.*$)");
  std::vector<SourceParameter> out;
  for (size_t i = 0; i + 2 < lines.size(); ++i) {
    if (lines[i].size() > 1000 || lines[i + 1].size() > 1000 || lines[i + 2].size() > 1000)
      continue; // std::regex recurses per character: no long lines (a #define of a table is no knob)
    std::smatch a, b;
    if (!std::regex_match(lines[i], a, ifndefRe) || !std::regex_match(lines[i + 1], b, defineRe) ||
        !std::regex_match(lines[i + 2], endifRe) || a[1].str() != b[1].str())
      continue;
    std::string name = a[1].str();
    if (std::any_of(out.begin(), out.end(), [&](const SourceParameter &p) { return p.name == name; }))
      continue;
    std::string value = b[2].str();
    if (value.size() >= 2 && value.front() == '(' && value.back() == ')')
      value = value.substr(1, value.size() - 2);
    out.push_back({name, value, static_cast<int>(i + 2), sizesProblem(name)});
  }
  return out;
}

std::string tomlString(const std::string &text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\t': out += "\\t"; break;
    case '\r': out += "\\r"; break;
    default:
      if (c < 0x20 || c == 0x7f)
        out += fmt::format("\\u{:04X}", c);
      else
        out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

namespace {

struct Plan {
  std::string file, name, language;
  bool openmp = false, runtimeSchedule = false;
  std::vector<std::string> defines; // [build] defines
  std::string dataset;              // the dataset define chosen ("" none)
  std::optional<MakeFacts> make;    // how the program's own Makefile builds and runs it
  std::map<std::string, std::string> makeDefines; // a knob's -D in the Makefile: the reference's value
};

void writeProjectAndBuild(std::ostringstream &o, const Plan &p, const ProgramFacts &f) {
  std::vector<std::string> sources{p.file};
  sources.insert(sources.end(), f.extraSources.begin(), f.extraSources.end());
  if (p.make)
    for (const auto &s : p.make->sources)
      if (std::find(sources.begin(), sources.end(), s) == sources.end())
        sources.push_back(s);
  o << "[project]\nname = " << tomlString(p.name) << "\nlanguage = " << tomlString(p.language)
    << "\nsources = " << tomlList(sources, true) << "  # compiled, relative to this folder\neditable = "
    << tomlList({p.file}, true) << "  # what a code agent may change (the program only)\n\n";
  std::string compiler = p.language == "c" ? "cc" : p.language == "cpp" ? "c++" : "nvcc";
  std::string flags = p.language == "cuda" ? "-O2" : p.openmp ? "-O2 -fopenmp" : "-O2";
  std::string libraries = p.language == "cuda" ? "" : " -lm";
  if (p.make) {
    compiler = p.make->compiler;
    std::vector<std::string> quoted, libs;
    // `flags` is split at whitespace and each word quoted when the build runs: words go in as they are,
    // and a word holding whitespace cannot be written there.
    for (const auto &w : p.make->flags)
      quoted.push_back(w);
    for (const auto &w : p.make->linkFlags)
      libs.push_back(support::shellQuote(w));
    flags = fmt::format("{}", fmt::join(quoted, " "));
    if (p.language != "cuda" && std::find(libs.begin(), libs.end(), "-lm") == libs.end())
      libs.push_back("-lm"); // harmless, and what a C program's sqrt needs when the Makefile links it elsewhere
    libraries = libs.empty() ? "" : fmt::format(" {}", fmt::join(libs, " "));
  }
  o << "[build]\n# {cflags} = flags below + the flag knob; {defines} = -D of `defines` and of the define knobs;\n"
       "# {includes} = -I of `includes` (relative to this folder).\n";
  if (p.make)
    o << "# The compiler, flags and libraries are the " << commentSafe(p.make->makefile)
      << "'s (make -n): the reference is the program as its project builds it.\n";
  for (const auto &n : p.make ? p.make->notes : std::vector<std::string>{})
    o << "# NOTE: " << commentSafe(n) << "\n";
  o << "command = " << tomlString(support::shellQuote(compiler) + " {cflags} {defines} {includes} {sources} -o {out}" +
                                  libraries)
    << "\nflags = " << tomlString(flags) << "  # the reference's flags: the baseline every speedup is measured against\n";
  if (!f.includeDirs.empty())
    o << "includes = " << tomlList(f.includeDirs, true) << "  # where the program's headers were found\n";
  if (!f.datasets.empty())
    o << "# Dataset sizes the program knows: " << commentSafe(fmt::format("{}", fmt::join(f.datasets, ", ")))
      << (f.defaultDataset.empty() ? "" : "; with none given it builds " + commentSafe(f.defaultDataset)) << ".\n"
      << "# " << (p.dataset.empty() ? "None is chosen here" : commentSafe(p.dataset) + " is chosen here")
      << " (the middle size: short runs, so a tuning run's many timings stay quick);\n"
         "# change it in `defines` (a larger size: longer runs, timings less sensitive to noise).\n";
  if (!p.defines.empty())
    o << "defines = " << tomlList(p.defines, true) << "  # -D for every build\n";
  if (!f.dumpDefine.empty())
    o << "validate_defines = " << tomlList({f.dumpDefine}, true)
      << "  # validation builds dump the outputs; timed builds do not\n";
  if (!f.timeDefine.empty())
    o << "time_defines = " << tomlList({f.timeDefine}, true) << "  # timed builds print the kernel's own time\n";
  o << "timeout_s = 300\n\n";
}

/// How the program is run when main's text shows what its arguments set (Argument): a seed gets
/// {seed}, the parameters before it their defaults; parameters alone, with defaults, are left out
/// (fixed inputs). nullopt: nothing shown, the generic `{exe} {seed}`.
struct ArgumentPlan {
  std::string command;
  bool fixed = false;                // no seed reaches the program: one validation input
  std::vector<std::string> comments; // for the manifest
  std::string note;                  // for the terminal ("warning: ..." when hone could not choose)
};

std::string describe(const Argument &a) {
  return a.variable.empty() ? fmt::format("argv[{}]", a.index) : fmt::format("argv[{}] (`{}`)", a.index, a.variable);
}

bool plainNumber(const std::string &s) {
  static const auto re = support::Regex::compile(R"(^[-+]?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?[uUlLfF]*$)");
  return re && !re->findAll(s, 1).empty();
}

std::optional<ArgumentPlan> argumentPlan(const ProgramFacts &f) {
  if (f.arguments.empty())
    return std::nullopt;
  ArgumentPlan plan;
  auto seed = std::find_if(f.arguments.begin(), f.arguments.end(),
                           [](const Argument &a) { return a.role == Argument::Role::Seed; });
  if (seed != f.arguments.end()) {
    std::vector<std::string> words;
    for (int i = 1; i < seed->index; ++i) {
      auto a = std::find_if(f.arguments.begin(), f.arguments.end(), [&](const Argument &x) { return x.index == i; });
      if (a == f.arguments.end() || !plainNumber(a->fallback)) {
        plan.command = "{exe} {seed}";
        plan.comments = {fmt::format("main seeds its generator from {}, but hone could not tell what to pass as "
                                     "argv[{}]: write the arguments here, with {{seed}} at place {}.",
                                     describe(*seed), i, seed->index)};
        plan.note = fmt::format("warning: main seeds its generator from {}; argv[{}] before it has no default hone "
                                "could read: write the run's arguments in [run] command",
                                describe(*seed), i);
        return plan;
      }
      words.push_back(a->fallback);
      plan.comments.push_back(fmt::format("{} is passed its default, {}.", describe(*a), a->fallback));
    }
    words.push_back("{seed}");
    plan.command = fmt::format("{{exe}} {}", fmt::join(words, " "));
    plan.comments.insert(plan.comments.begin(),
                         fmt::format("{{exe}} is the program hone built; main seeds its generator from {}: {{seed}} "
                                     "picks the input.",
                                     describe(*seed)));
    return plan;
  }
  bool allOptional = std::all_of(f.arguments.begin(), f.arguments.end(), [](const Argument &a) {
    return a.optional && a.role == Argument::Role::Parameter;
  });
  std::vector<std::string> what;
  for (const auto &a : f.arguments)
    what.push_back(a.fallback.empty() ? describe(a)
                   : a.variable.empty()
                       ? fmt::format("argv[{}] ({} when not given)", a.index, a.fallback)
                       : fmt::format("argv[{}] (`{}`, {} when not given)", a.index, a.variable, a.fallback));
  if (allOptional) {
    plan.command = "{exe}";
    plan.fixed = true;
    plan.comments = {fmt::format("main reads {}: parameters, not a seed.", fmt::join(what, ", ")),
                     "hone runs the program with its defaults: the inputs are fixed, so one validation input is",
                     "enough, and the guard \"outputs do not change with the input\" cannot fire for this program.",
                     "To tune at another size, write its arguments after {exe} (larger: longer, steadier timings)."};
    plan.note = fmt::format("note: main reads {}: parameters, not a seed; runs use the defaults, fixed inputs, one "
                            "validation input",
                            fmt::join(what, ", "));
    return plan;
  }
  bool parameters = std::any_of(f.arguments.begin(), f.arguments.end(),
                                [](const Argument &a) { return a.role == Argument::Role::Parameter; });
  if (!parameters)
    return std::nullopt;
  plan.command = "{exe} {seed}";
  plan.comments = {fmt::format("main reads {}, which does not look like a seed: {{seed}} sets it (1, 2, 3 to",
                               fmt::join(what, ", ")),
                   "validate; 100000 and more in timed runs). Write the arguments to tune at in place of {seed}."};
  plan.note = fmt::format("warning: main reads {}, which does not look like a seed: write the arguments to tune at "
                          "in [run] command",
                          fmt::join(what, ", "));
  return plan;
}

void writeRunAndOutput(std::ostringstream &o, const Plan &p, const ProgramFacts &f) {
  o << "[run]\n";
  if (p.make && !p.make->runArgs.empty()) {
    std::vector<std::string> args;
    for (const auto &a : p.make->runArgs)
      args.push_back(support::shellQuote(a));
    o << "# The arguments of the " << commentSafe(p.make->makefile)
      << "'s run target: the inputs are fixed, so one validation input is enough,\n"
         "# and the guard \"outputs do not change with the input\" cannot fire for this program.\n"
      << "command = " << tomlString(fmt::format("{{exe}} {}", fmt::join(args, " "))) << "\nseeds = [1]\n";
  } else if (auto a = argumentPlan(f)) {
    for (const auto &c : a->comments)
      o << "# " << commentSafe(c) << "\n";
    o << "command = " << tomlString(a->command) << "\nseeds = "
      << (a->fixed ? "[1]\n" : "[1, 2, 3]  # validation inputs; each tuning run adds 1000 x its seed\n");
  } else if (f.readsArguments)
    o << "# {exe} is the program hone built; {seed} picks the input (a program that takes no seed ignores it).\n"
      << "command = \"{exe} {seed}\"\nseeds = [1, 2, 3]  # validation inputs; each tuning run adds 1000 x its seed\n";
  else
    o << "# main does not read its arguments: the inputs are fixed, so one validation input is enough, and\n"
         "# the guard \"outputs do not change with the input\" cannot fire for this program (a variant that\n"
         "# prints the reference's numbers without computing them passes validation: read what it changed).\n"
      << "command = \"{exe}\"\nseeds = [1]\n";
  o << "timeout_s = 120\n\n";
  bool err = f.printsToStderr && !f.printsToStdout;
  o << "[output]\n# The numbers the program prints on " << (err ? "stderr" : "stdout")
    << (f.dumpDefine.empty() ? "" : " (with " + commentSafe(f.dumpDefine) + ")")
    << " are its results, compared with the unmodified\n# program's: |got - expected| <= atol + rtol * |expected|.\n";
  if (f.printedDecimals >= 0 && f.printedDecimals <= 4)
    o << "# WEAK VALIDATION: the program prints numbers with " << f.printedDecimals
      << " decimals (a %." << f.printedDecimals << "f format): hone allows one unit in the\n"
      << "# last printed place, and a change of the results below the printed precision cannot be caught.\n"
         "# Print with full precision (%.17g, %a) or write a binary file for a stronger check.\n";
  if (!f.verdict.empty())
    o << "# The program checks its own results and prints PASS or FAIL: a run must print a line matching\n"
         "# `verdict` (a program that prints no numbers is then validated by its own check alone).\n"
      << "verdict = " << tomlString(f.verdict) << "\n";
  if (!f.timingLines.empty())
    o << "ignore = " << tomlList(f.timingLines, true) << "  # lines that report a time or a rate: not results\n";
  bool single = p.language != "cuda" && f.singlePrecision;
  if (single)
    o << "# The program computes in single precision (float): vectorised, threaded or contracted (FMA)\n"
         "# code sums in another order and moves results by about 1e-6 of their size; rtol allows ten times that.\n";
  o << "source = \"" << (err ? "stderr" : "stdout") << "\"\ntolerance = \"rel\"\nrtol = "
    << (p.language == "cuda" ? "1e-4" : single ? "1e-5" : "1e-8")
    << "\natol = " << (p.language == "cuda" ? "1e-5" : single ? "1e-6" : "1e-10") << "\n\n";
}

void writeTiming(std::ostringstream &o, const ProgramFacts &f) {
  o << "[timing]\n";
  if (!f.timeRegex.empty())
    o << "# The score is the kernel's own time: timed builds (" << commentSafe(f.timeDefine)
      << ") print it as a bare number, read by `regex`;\n# hone still times the whole process and trusts the "
         "reported time only as far as the process agrees.\nmode = \"region\"\nregex = "
      << tomlString(f.timeRegex) << "\n";
  else
    o << "# hone times the whole process: warm-up, then repeats until the 95% confidence interval\n"
         "# is within target_ci of the median, or max_repeats.\nmode = \"process\"\n";
  o << "# In a tuning run the unmodified program is timed again every reference_every candidates (a shared\n"
       "# machine drifts), and a would-be new best is timed twice, beside a fresh timing of the reference\n"
       "# and beside the best so far, which it must beat there (confirm_best).\n"
    << "warmup = 1\nmin_repeats = 3\nmax_repeats = 15\ntarget_ci = 0.02\nreference_every = 5\nconfirm_best = true\n";
}

void writeKnobs(std::ostringstream &o, const Plan &p, const std::string &source, const InitOptions &options) {
  auto params = findParameters(source);
  std::vector<std::string> sizes;
  for (const auto &prm : params)
    if (prm.sizesProblem)
      sizes.push_back(commentSafe(fmt::format("{} = {} (line {})", prm.name, prm.value, prm.line)));
  if (!sizes.empty())
    o << "\n# Parameters that size the problem are not knobs (changing them changes the results):\n#   "
      << fmt::format("{}", fmt::join(sizes, "\n#   ")) << "\n";
  for (auto prm : params) {
    if (prm.sizesProblem)
      continue;
    if (auto it = p.makeDefines.find(prm.name); it != p.makeDefines.end())
      prm.value = it->second; // what the project builds with
    long long def = 0;
    o << "\n[[knob]]  # " << commentSafe(p.file) << ":" << prm.line << "\nname = " << tomlString(prm.name)
      << "\nkind = \"define\"\n";
    if (isInteger(prm.value, &def))
      o << "values = " << tomlList(valuesFor(prm.name, def), false) << "\ndefault = " << def << "\n";
    else
      o << "values = [" << tomlString(prm.value) << "]  # not a number: add the values worth trying\ndefault = "
        << tomlString(prm.value) << "\n";
  }
  std::vector<std::string> flagSets;
  if (p.language == "cuda")
    // Register caps: what the static occupancy predicts for register-bound kernels (the guided agent
    // tries the one it names first).
    flagSets = {"", "-O3", "-O3 -Xptxas -O3", "-O3 -use_fast_math", "-O3 -maxrregcount=32", "-O3 -maxrregcount=64"};
  else
    flagSets = {"", "-O3", "-O3 -march=native", "-O3 -march=native -funroll-loops"};
  o << "\n[[knob]]  # added to [build] flags\nname = \"flags\"\nkind = \"flags\"\nvalues = " << tomlList(flagSets, true)
    << "\n";
  if (p.openmp) {
    // "" leaves the variable unset: the OpenMP runtime's default (a thread per core) is the reference.
    std::vector<std::string> threads{""};
    for (int t = 1; t < options.cores; t *= 2)
      threads.push_back(std::to_string(t));
    threads.push_back(std::to_string(std::max(1, options.cores)));
    threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
    o << "\n[[knob]]  # the program uses OpenMP; \"\" leaves the variable unset (a thread per core)\n"
         "name = \"OMP_NUM_THREADS\"\nkind = \"env\"\nvalues = "
      << tomlList(threads, true) << "\n";
    if (p.runtimeSchedule)
      o << "\n[[knob]]  # its loops take schedule(runtime)\nname = \"OMP_SCHEDULE\"\nkind = \"env\"\nvalues = "
        << tomlList({"", "static", "dynamic", "guided", "dynamic,64"}, true) << "\n";
    o << "\n[[knob]]\nname = \"OMP_PROC_BIND\"\nkind = \"env\"\nvalues = "
      << tomlList({"", "false", "close", "spread"}, true) << "\n";
  }
  o << "\n# Constraints between knobs, e.g. constraints = [\"TILE_I * TILE_J <= 4096\", \"512 % TILE == 0\"]\n";
  if (p.language == "cuda")
    o << "\n# The GPUs `hone kernel profile` computes the static occupancy for (default: what the build\n"
         "# compiles for); [[gpu.launch]] (after [gpu]) tells it a block size the source only knows at run time.\n"
         "# [gpu]\n# archs = [\"sm_80\", \"sm_90\"]\n";
}

/// What init found and guessed, warnings first, for the terminal.
std::vector<std::string> notesOf(const Plan &p, const ProgramFacts &f) {
  std::vector<std::string> notes;
  for (const auto &h : f.missingHeaders)
    notes.push_back(fmt::format("warning: '{}' is included but not found near the program: add its folder with "
                                "--include DIR",
                                h));
  if (f.printedDecimals >= 0 && f.printedDecimals <= 4)
    notes.push_back(fmt::format("warning: weak validation: the outputs are printed with {} decimals; a change below "
                                "that precision cannot be caught (print with %.17g or %a, or write a binary file)",
                                f.printedDecimals));
  if (auto a = argumentPlan(f); a && !a->note.empty())
    notes.push_back(a->note);
  else if (!f.readsArguments)
    notes.push_back("note: main does not read its arguments: fixed inputs, one validation input; the guard "
                    "\"outputs do not change with the input\" cannot fire");
  for (const auto &h : f.foundHeaders)
    notes.push_back("found: " + h);
  for (const auto &s : f.extraSources)
    notes.push_back("source: " + s);
  if (f.printsToStderr && !f.printsToStdout)
    notes.push_back("outputs: read from stderr");
  if (!p.dataset.empty())
    notes.push_back(fmt::format("dataset: {} (of {})", p.dataset, fmt::join(f.datasets, ", ")));
  if (!f.dumpDefine.empty() || !f.timeDefine.empty())
    notes.push_back(fmt::format("builds: validation with {}, timing with {}{}", f.dumpDefine.empty() ? "-" : f.dumpDefine,
                                f.timeDefine.empty() ? "-" : f.timeDefine,
                                f.timeRegex.empty() ? "" : " (the kernel's own time is scored)"));
  return notes;
}

} // namespace

support::Expected<InitResult> initProject(const std::string &program, const std::string &source,
                                          const InitOptions &options) {
  std::filesystem::path path(program);
  Plan p;
  std::string ext = path.extension().string();
  p.language = ext == ".c" ? "c" : ext == ".cu" ? "cuda" : (ext == ".cpp" || ext == ".cc" || ext == ".cxx") ? "cpp" : "";
  if (p.language.empty())
    return support::Error{fmt::format("{}: hone kernel init takes a .c, .cpp/.cc/.cxx or .cu file", commentSafe(program))};
  p.file = path.filename().string();
  p.name = path.stem().string();
  // A suite's programs are often all main.c/main.cu, one folder each: the folder names the project.
  std::string folder = std::filesystem::absolute(path).parent_path().filename().string();
  if ((p.name == "main" || p.name == "Main") && !folder.empty() && !hasControl(folder))
    p.name = folder;
  if (hasControl(program))
    return support::Error{fmt::format("'{}': the file's name holds a control character (a newline?), which hone "
                                      "does not put in a manifest or a command; rename the file",
                                      commentSafe(program))};
  for (const auto &d : options.defines) {
    static const std::regex define("^[A-Za-z_][A-Za-z0-9_]*(=[^\\x00-\\x1f]*)?$");
    if (!std::regex_match(d, define))
      return support::Error{fmt::format("--define '{}': expected NAME or NAME=VALUE", commentSafe(d))};
  }
  for (const auto &x : options.scan.includeDirs)
    if (hasControl(x))
      return support::Error{fmt::format("--include '{}': the path holds a control character", commentSafe(x))};
  auto facts = scanProgram(program, source, options.scan);
  if (!facts)
    return facts.error();
  for (const auto &x : facts->extraSources)
    if (hasControl(x))
      return support::Error{fmt::format("'{}': the path holds a control character", commentSafe(x))};
  p.openmp = source.find("#pragma omp") != std::string::npos || source.find("omp.h") != std::string::npos;
  p.runtimeSchedule = source.find("schedule(runtime)") != std::string::npos;
  p.defines = options.defines;
  p.make = readMakefile(std::filesystem::absolute(path).parent_path().string(), p.file);
  if (p.make)
    for (const auto &w : p.make->flags)
      if (w == "-fopenmp" || w == "-qopenmp" || w == "-fiopenmp")
        p.openmp = true;
  if (p.make) {
    // The Makefile's -D of the dump, the timer or a dataset size: init gives those their own places
    // (validation-only, timing-only, `defines`), so that timed builds do not dump (PolyBench's
    // Makefiles build with -DPOLYBENCH_DUMP_ARRAYS).
    std::vector<std::string> kept;
    auto params = findParameters(source);
    for (const auto &w : p.make->flags) {
      std::string name = w.rfind("-D", 0) == 0 ? w.substr(2, w.find('=') == std::string::npos ? std::string::npos
                                                                                                 : w.find('=') - 2)
                                               : "";
      bool dataset = !name.empty() &&
                     std::find(facts->datasets.begin(), facts->datasets.end(), name) != facts->datasets.end();
      bool knob = !name.empty() && std::any_of(params.begin(), params.end(), [&](const SourceParameter &prm) {
        return prm.name == name && !prm.sizesProblem;
      });
      if (dataset) // the project's own size: kept, in `defines`
        p.defines.push_back(w.substr(2));
      if (knob) // a knob: the Makefile's value is the reference's (its default)
        p.makeDefines[name] = w.find('=') == std::string::npos ? "1" : w.substr(w.find('=') + 1);
      if (w.find_first_of(" \t\n\r\v\f") != std::string::npos)
        p.make->notes.push_back(fmt::format("the {}'s flag {} holds whitespace, which `flags` cannot: left out",
                                            p.make->makefile, support::shellQuote(w)));
      else if (!name.empty() && (name == facts->dumpDefine || name == facts->timeDefine || dataset || knob))
        p.make->notes.push_back(fmt::format("the {}'s {} is not in `flags`: init places it below", p.make->makefile, w));
      else
        kept.push_back(w);
    }
    p.make->flags = kept;
  }
  // A dataset size: the user's, or the middle of those the program knows (MEDIUM of PolyBench's five).
  bool given = std::any_of(p.defines.begin(), p.defines.end(), [&](const std::string &d) {
    return std::find(facts->datasets.begin(), facts->datasets.end(), d.substr(0, d.find('='))) != facts->datasets.end();
  });
  if (!given && !facts->datasets.empty()) {
    auto medium = std::find_if(facts->datasets.begin(), facts->datasets.end(),
                               [](const std::string &d) { return d.rfind("MEDIUM", 0) == 0; });
    p.dataset = medium != facts->datasets.end() ? *medium : facts->datasets[facts->datasets.size() / 2];
    p.defines.insert(p.defines.begin(), p.dataset);
  }
  std::ostringstream o;
  o << "# hone kernel manifest for " << commentSafe(p.file)
    << ", written by `hone kernel init` (format: docs/KERNELS.md).\n"
       "# Read it once: the outputs, the tolerance and the knobs are hone's guesses.\n";
  for (const auto &h : facts->foundHeaders)
    o << "# found: " << commentSafe(h) << "\n";
  for (const auto &h : facts->missingHeaders)
    o << "# NOT FOUND: " << commentSafe(h) << " (hone kernel init --include DIR adds its folder)\n";
  o << "\n";
  writeProjectAndBuild(o, p, *facts);
  writeRunAndOutput(o, p, *facts);
  writeTiming(o, *facts);
  writeKnobs(o, p, source, options);
  return InitResult{o.str(), notesOf(p, *facts), std::move(*facts)};
}

support::Expected<std::string> initManifest(const std::string &program, const std::string &source,
                                            const InitOptions &options) {
  auto r = initProject(program, source, options);
  if (!r)
    return r.error();
  return r->text;
}

} // namespace hone::kernel
