#include "kernel/Init.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <cmath>
#include <filesystem>
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
    out += (i ? ", " : "") + (quote ? "\"" + items[i] + "\"" : items[i]);
  return out + "]";
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

support::Expected<std::string> initManifest(const std::string &program, const std::string &source,
                                            const InitOptions &options) {
  std::filesystem::path p(program);
  std::string ext = p.extension().string();
  std::string language = ext == ".c" ? "c" : ext == ".cu" ? "cuda" : (ext == ".cpp" || ext == ".cc" || ext == ".cxx") ? "cpp" : "";
  if (language.empty())
    return support::Error{fmt::format("{}: hone kernel init takes a .c, .cpp/.cc/.cxx or .cu file", program)};
  bool openmp = source.find("#pragma omp") != std::string::npos || source.find("omp.h") != std::string::npos;
  bool runtimeSchedule = source.find("schedule(runtime)") != std::string::npos;
  std::string name = p.stem().string();
  std::ostringstream o;
  o << "# hone kernel manifest for " << p.filename().string()
    << ", written by `hone kernel init` (format: docs/KERNELS.md).\n"
       "# Read it once: the outputs, the tolerance and the knobs are hone's guesses.\n\n";
  o << "[project]\nname = \"" << name << "\"\nlanguage = \"" << language << "\"\nsources = [\"" << p.filename().string()
    << "\"]\neditable = [\"" << p.filename().string() << "\"]  # what a code agent may change\n\n";
  std::string compiler = language == "c" ? "cc" : language == "cpp" ? "c++" : "nvcc";
  std::string flags = language == "cuda" ? "-O2" : openmp ? "-O2 -fopenmp" : "-O2";
  std::string libs = language == "cuda" ? "" : " -lm";
  o << "[build]\n# {cflags} = flags below + the flag knob; {defines} = -DNAME=value of the define knobs.\n"
    << "command = \"" << compiler << " {cflags} {defines} {includes} {sources} -o {out}" << libs << "\"\n"
    << "flags = \"" << flags << "\"  # the reference's flags: the baseline every speedup is measured against\n"
    << "timeout_s = 300\n\n";
  o << "[run]\n# {exe} is the program hone built; {seed} picks the input (a program that takes no seed ignores it).\n"
    << "command = \"{exe} {seed}\"\nseeds = [1, 2, 3]  # validation inputs; each tuning run adds 1000 x its seed\n"
    << "timeout_s = 120\n\n";
  o << "[output]\n# The numbers the program prints on stdout are its results, compared with the unmodified\n"
       "# program's: |got - expected| <= atol + rtol * |expected|.\n"
    << "source = \"stdout\"\ntolerance = \"rel\"\nrtol = " << (language == "cuda" ? "1e-4" : "1e-8")
    << "\natol = " << (language == "cuda" ? "1e-5" : "1e-10") << "\n\n";
  o << "[timing]\n# hone times the whole process: warm-up, then repeats until the 95% confidence interval\n"
       "# is within target_ci of the median, or max_repeats. In a tuning run the unmodified program is\n"
       "# timed again every reference_every candidates (a shared machine drifts), and a would-be new\n"
       "# best is timed twice, beside a fresh timing of the reference and beside the best so far,\n"
       "# which it must beat there (confirm_best).\n"
    << "mode = \"process\"\nwarmup = 1\nmin_repeats = 3\nmax_repeats = 15\ntarget_ci = 0.02\nreference_every = 5\n"
       "confirm_best = true\n";
  auto params = findParameters(source);
  std::vector<std::string> sizes;
  for (const auto &prm : params)
    if (prm.sizesProblem)
      sizes.push_back(fmt::format("{} = {} (line {})", prm.name, prm.value, prm.line));
  if (!sizes.empty())
    o << "\n# Parameters that size the problem are not knobs (changing them changes the results):\n#   "
      << fmt::format("{}", fmt::join(sizes, "\n#   ")) << "\n";
  for (const auto &prm : params) {
    if (prm.sizesProblem)
      continue;
    long long def = 0;
    o << "\n[[knob]]  # " << p.filename().string() << ":" << prm.line << "\nname = \"" << prm.name
      << "\"\nkind = \"define\"\n";
    if (isInteger(prm.value, &def)) {
      o << "values = " << tomlList(valuesFor(prm.name, def), false) << "\ndefault = " << def << "\n";
    } else {
      o << "values = [\"" << prm.value << "\"]  # not a number: add the values worth trying\ndefault = \"" << prm.value
        << "\"\n";
    }
  }
  std::vector<std::string> flagSets;
  if (language == "cuda")
    flagSets = {"", "-O3", "-O3 -Xptxas -O3", "-O3 -use_fast_math"};
  else
    flagSets = {"", "-O3", "-O3 -march=native", "-O3 -march=native -funroll-loops"};
  o << "\n[[knob]]  # added to [build] flags\nname = \"flags\"\nkind = \"flags\"\nvalues = " << tomlList(flagSets, true)
    << "\n";
  if (openmp) {
    // "" leaves the variable unset: the OpenMP runtime's default (a thread per core) is the reference.
    std::vector<std::string> threads{""};
    for (int t = 1; t < options.cores; t *= 2)
      threads.push_back(std::to_string(t));
    threads.push_back(std::to_string(std::max(1, options.cores)));
    threads.erase(std::unique(threads.begin(), threads.end()), threads.end());
    o << "\n[[knob]]  # the program uses OpenMP; \"\" leaves the variable unset (a thread per core)\n"
         "name = \"OMP_NUM_THREADS\"\nkind = \"env\"\nvalues = "
      << tomlList(threads, true) << "\n";
    if (runtimeSchedule)
      o << "\n[[knob]]  # its loops take schedule(runtime)\nname = \"OMP_SCHEDULE\"\nkind = \"env\"\nvalues = "
        << tomlList({"", "static", "dynamic", "guided", "dynamic,64"}, true) << "\n";
    o << "\n[[knob]]\nname = \"OMP_PROC_BIND\"\nkind = \"env\"\nvalues = "
      << tomlList({"", "false", "close", "spread"}, true) << "\n";
  }
  o << "\n# Constraints between knobs, e.g. constraints = [\"TILE_I * TILE_J <= 4096\", \"512 % TILE == 0\"]\n";
  return o.str();
}

} // namespace hone::kernel
