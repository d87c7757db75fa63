#include "kernel/MakeBuild.h"

#include "support/Subprocess.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

namespace hone::kernel {

namespace fs = std::filesystem;

std::vector<std::string> shellWords(const std::string &line) {
  std::vector<std::string> out;
  std::string word;
  bool inWord = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (c == '\'') {
      size_t end = line.find('\'', i + 1);
      if (end == std::string::npos)
        end = line.size();
      word += line.substr(i + 1, end - i - 1);
      i = end;
      inWord = true;
    } else if (c == '"') {
      for (++i; i < line.size() && line[i] != '"'; ++i) {
        if (line[i] == '\\' && i + 1 < line.size() && std::string("\"\\$`\n").find(line[i + 1]) != std::string::npos)
          ++i;
        word += line[i];
      }
      inWord = true;
    } else if (c == '\\' && i + 1 < line.size()) {
      word += line[++i];
      inWord = true;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (inWord)
        out.push_back(word);
      word.clear();
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (inWord)
    out.push_back(word);
  return out;
}

namespace {

bool isSource(const std::string &w) {
  static const std::set<std::string> exts = {".c", ".cc", ".cpp", ".cxx", ".cu", ".C", ".c++"};
  return w.size() < 4096 && w[0] != '-' && exts.count(fs::path(w).extension().string()) > 0;
}
bool isObject(const std::string &w) {
  std::string ext = fs::path(w).extension().string();
  return w[0] != '-' && (ext == ".o" || ext == ".obj");
}
bool isLinkFlag(const std::string &w) {
  return w.rfind("-l", 0) == 0 || w.rfind("-L", 0) == 0 || w.rfind("-Wl,", 0) == 0;
}
bool isAssignment(const std::string &w) {
  auto eq = w.find('=');
  return eq != std::string::npos && eq > 0 && w[0] != '-' &&
         std::all_of(w.begin(), w.begin() + static_cast<std::ptrdiff_t>(eq),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

/// make's command lines: continuations joined, make's own messages dropped,
/// leading VAR=value removed.
std::vector<std::vector<std::string>> commandsOf(const std::string &text) {
  std::vector<std::vector<std::string>> out;
  std::istringstream in(text);
  std::string line, joined;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\\') {
      joined += line.substr(0, line.size() - 1) + " ";
      continue;
    }
    joined += line;
    if (joined.rfind("make:", 0) != 0 && joined.rfind("make[", 0) != 0) {
      auto words = shellWords(joined);
      while (!words.empty() && isAssignment(words.front()))
        words.erase(words.begin());
      if (!words.empty())
        out.push_back(std::move(words));
    }
    joined.clear();
  }
  return out;
}

bool holds(const std::vector<std::string> &words, const std::string &file) {
  return std::any_of(words.begin() + 1, words.end(),
                     [&](const std::string &w) { return isSource(w) && fs::path(w).filename() == file; });
}

} // namespace

std::optional<MakeFacts> parseMakeDryRun(const std::string &build, const std::string &run,
                                         const std::string &programFile) {
  auto commands = commandsOf(build);
  const std::vector<std::string> *compile = nullptr;
  for (const auto &c : commands)
    if (holds(c, programFile)) {
      compile = &c;
      break;
    }
  if (!compile)
    return std::nullopt;
  MakeFacts f;
  f.compiler = (*compile)[0];
  bool linksToo = std::find(compile->begin(), compile->end(), "-c") == compile->end();
  for (size_t i = 1; i < compile->size(); ++i) {
    const std::string &w = (*compile)[i];
    if (w == "-c" || w == "-MMD" || w == "-MD" || w == "-MP")
      continue;
    if (w == "-o" || w == "-MF" || w == "-MT" || w == "-MQ") {
      if (w == "-o" && i + 1 < compile->size() && linksToo)
        f.program = fs::path((*compile)[i + 1]).filename().string();
      ++i;
      continue;
    }
    if (isSource(w)) {
      if (fs::path(w).filename() != programFile)
        f.sources.push_back(w);
      continue;
    }
    if (isObject(w))
      continue;
    if (isLinkFlag(w)) {
      f.linkFlags.push_back(w);
      continue;
    }
    f.flags.push_back(w);
  }
  // The other sources it compiles, and the line that links the program.
  for (const auto &c : commands) {
    if (&c == compile)
      continue;
    bool sources = false;
    for (size_t i = 1; i < c.size(); ++i)
      if (isSource(c[i]) && std::find(f.sources.begin(), f.sources.end(), c[i]) == f.sources.end()) {
        f.sources.push_back(c[i]);
        sources = true;
      }
    if (sources || linksToo)
      continue;
    auto o = std::find(c.begin(), c.end(), "-o");
    bool objects = std::any_of(c.begin() + 1, c.end(), isObject);
    if (o != c.end() && o + 1 != c.end() && objects && f.program.empty()) {
      f.program = fs::path(*(o + 1)).filename().string();
      for (const auto &w : c)
        if (isLinkFlag(w) && std::find(f.linkFlags.begin(), f.linkFlags.end(), w) == f.linkFlags.end())
          f.linkFlags.push_back(w);
    }
  }
  // The run target: the first command that starts the program (after a
  // launcher, if any).
  for (const auto &c : commandsOf(run)) {
    if (c[0] == f.compiler ||
        std::any_of(c.begin(), c.end(), [](const std::string &w) { return isSource(w) || isObject(w); }))
      continue; // the build that the run target depends on
    auto at = std::find_if(c.begin(), c.end(), [&](const std::string &w) {
      std::string name = fs::path(w).filename().string();
      return !f.program.empty() ? name == f.program : w.rfind("./", 0) == 0;
    });
    if (at == c.end())
      continue;
    for (auto w = at + 1; w != c.end(); ++w) {
      if (*w == "|" || *w == ";" || *w == "&&" || *w == "||" || *w == "&" || w->rfind(">", 0) == 0 ||
          w->rfind("<", 0) == 0 || w->rfind("2>", 0) == 0 || w->rfind("1>", 0) == 0)
        break;
      f.runArgs.push_back(*w);
    }
    break;
  }
  return f;
}

namespace {

support::SubprocessResult run(const std::vector<std::string> &argv, const std::string &dir) {
  support::SubprocessOptions o;
  o.argv = argv;
  o.workdir = dir;
  o.timeoutS = 30;
  o.outputLimitBytes = 4 << 20;
  return support::runSubprocess(o);
}

/// The -arch / -gencode / --gpu-architecture values of nvcc flags this nvcc
/// does not list; they are removed from `flags`. Returns what was removed.
std::vector<std::string> dropUnsupportedArchs(std::vector<std::string> &flags, const std::string &nvcc,
                                              const std::string &dir) {
  auto listed = run({nvcc, "--list-gpu-arch"}, dir);
  if (!listed.ok())
    return {};
  std::set<std::string> supported;
  std::istringstream in(listed.output);
  for (std::string l; std::getline(in, l);)
    if (l.rfind("compute_", 0) == 0)
      supported.insert(l.substr(8, l.find_first_not_of("0123456789", 8) - 8));
  auto digitsOf = [](const std::string &v) {
    std::string d;
    for (size_t i = v.find('_'); i != std::string::npos && i + 1 < v.size() && std::isdigit(v[i + 1]); ++i)
      d += v[i + 1];
    return d;
  };
  std::vector<std::string> dropped;
  std::vector<std::string> kept;
  for (size_t i = 0; i < flags.size(); ++i) {
    const std::string &w = flags[i];
    std::string value;
    size_t take = 1;
    for (const char *opt : {"-arch", "--gpu-architecture", "-gencode", "--generate-code"}) {
      std::string o = opt;
      if (w == o && i + 1 < flags.size()) {
        value = flags[i + 1];
        take = 2;
      } else if (w.rfind(o + "=", 0) == 0) {
        value = w.substr(o.size() + 1);
      }
    }
    std::string digits = digitsOf(value);
    if (!digits.empty() && !supported.empty() && !supported.count(digits)) {
      dropped.push_back(take == 2 ? w + " " + value : w);
      i += take - 1;
      continue;
    }
    kept.push_back(w);
  }
  flags = kept;
  return dropped;
}

} // namespace

std::optional<MakeFacts> readMakefile(const std::string &dir, const std::string &programFile) {
  std::error_code ec;
  std::string makefile;
  for (const char *name : {"GNUmakefile", "makefile", "Makefile"})
    if (fs::is_regular_file(fs::path(dir) / name, ec)) {
      makefile = name;
      break;
    }
  if (makefile.empty())
    return std::nullopt;
  auto build = run({"make", "-n", "-B"}, dir);
  if (!build.started)
    return std::nullopt; // no make here: init writes its own build
  auto facts = parseMakeDryRun(build.output, run({"make", "-n", "run"}, dir).output, programFile);
  if (!facts)
    return std::nullopt;
  facts->makefile = makefile;
  std::vector<std::string> sources;
  for (const auto &s : facts->sources)
    if (fs::is_regular_file(fs::path(dir) / s, ec) && s.find("..") == std::string::npos && s[0] != '/')
      sources.push_back(s);
  facts->sources = sources;
  if (fs::path(facts->compiler).filename() == "nvcc") {
    auto dropped = dropUnsupportedArchs(facts->flags, facts->compiler, dir);
    if (!dropped.empty())
      facts->notes.push_back(fmt::format("the {}'s {} names an architecture this nvcc does not support "
                                         "(nvcc --list-gpu-arch): the manifest builds for nvcc's default "
                                         "instead; "
                                         "add the GPU's own -arch to `flags`",
                                         makefile, fmt::join(dropped, " ")));
  }
  return facts;
}

} // namespace hone::kernel
