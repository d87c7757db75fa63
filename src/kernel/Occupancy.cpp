#include "kernel/Occupancy.h"

#include "kernel/Manifest.h"
#include "kernel/Profile.h"
#include "kernel/Runner.h"
#include "support/Expr.h"
#include "support/FileUtil.h"
#include "support/Regex.h"
#include "support/StringUtil.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>

namespace hone::kernel {

namespace {

GpuArch arch(const char *name, int major, int minor, int threadsPerSm, int blocksPerSm, int64_t sharedKb,
             int64_t optinKb) {
  GpuArch a;
  a.name = name;
  a.major = major;
  a.minor = minor;
  a.maxThreadsPerSm = threadsPerSm;
  a.maxBlocksPerSm = blocksPerSm;
  a.sharedPerSm = sharedKb * 1024;
  a.sharedPerBlockOptin = optinKb * 1024;
  a.sharedReservedPerBlock = major >= 8 ? 1024 : 0;
  a.sharedUnit = major >= 8 ? 128 : 256;
  // Block barriers bound blocks from sm_90 on: two per block slot, one on the
  // parts with fewer slots.
  a.barrierFactor = major < 9 ? 0 : (major == 12 || (major == 10 && minor == 1) || (major == 11 && minor == 0)) ? 1 : 2;
  return a;
}

const std::vector<GpuArch> &archTable() {
  // Threads and blocks per SM, the largest shared-memory carveout and the
  // opt-in limit per block, as the CUDA C++ Programming Guide's table of
  // compute capabilities gives them.
  static const std::vector<GpuArch> table = {
      arch("sm_70", 7, 0, 2048, 32, 96, 96),     arch("sm_72", 7, 2, 2048, 32, 96, 96),
      arch("sm_75", 7, 5, 1024, 16, 64, 64),     arch("sm_80", 8, 0, 2048, 32, 164, 163),
      arch("sm_86", 8, 6, 1536, 16, 100, 99),    arch("sm_87", 8, 7, 2048, 16, 164, 163),
      arch("sm_89", 8, 9, 1536, 24, 100, 99),    arch("sm_90", 9, 0, 2048, 32, 228, 227),
      arch("sm_100", 10, 0, 2048, 32, 228, 227), arch("sm_120", 12, 0, 1536, 24, 100, 99),
  };
  return table;
}

/// A pattern of hone's own (RE2: linear in the text, never recursing, whatever
/// the source holds).
const support::Regex &pattern(const std::string &text) {
  static std::mutex lock;
  static std::map<std::string, support::Regex> cache; // never erased: references stay valid
  std::lock_guard<std::mutex> hold(lock);
  auto it = cache.find(text);
  if (it == cache.end())
    it = cache.emplace(text, *support::Regex::compile(text)).first;
  return it->second;
}

/// The groups of a match of the whole of `text`, or nullopt.
std::optional<std::vector<std::string>> whole(const std::string &re, const std::string &text) {
  auto found = pattern("^(?:" + re + ")$").findAll(text, 1);
  if (found.empty())
    return std::nullopt;
  return found[0].groups;
}

std::string replaceAll(const std::string &re, const std::string &text, const std::string &with) {
  std::string out;
  size_t at = 0;
  for (const auto &m : pattern(re).findAll(text)) {
    out += text.substr(at, m.begin - at);
    std::string w = with;
    if (auto d = w.find("$1"); d != std::string::npos)
      w.replace(d, 2, m.groups.size() > 1 ? m.groups[1] : "");
    out += w;
    at = m.end;
  }
  return out + text.substr(at);
}

/// Launch arguments and declarations longer than this are not read (no real
/// launch is).
constexpr size_t kLongest = 4096;

int64_t roundUp(int64_t x, int64_t unit) { return unit <= 0 ? x : (x + unit - 1) / unit * unit; }
int64_t divUp(int64_t x, int64_t y) { return (x + y - 1) / y; }

} // namespace

std::optional<GpuArch> findGpuArch(const std::string &text) {
  auto m = text.size() < 32 ? whole(R"((?:sm_|compute_|lto_)?(\d+)(?:\.(\d))?[af]?)", text) : std::nullopt;
  if (!m)
    return std::nullopt;
  std::string digits = (*m)[1] + (*m)[2];
  if (digits.size() < 2 || digits.size() > 3)
    return std::nullopt;
  for (const auto &a : archTable())
    if (a.name == "sm_" + digits)
      return a;
  return std::nullopt;
}

std::vector<std::string> knownGpuArchs() {
  std::vector<std::string> out;
  for (const auto &a : archTable())
    out.push_back(a.name);
  return out;
}

std::string_view toString(OccupancyLimit limit) {
  switch (limit) {
  case OccupancyLimit::Warps:
    return "warps";
  case OccupancyLimit::Registers:
    return "registers";
  case OccupancyLimit::SharedMemory:
    return "shared memory";
  case OccupancyLimit::Blocks:
    return "blocks per SM";
  case OccupancyLimit::Barriers:
    return "barriers";
  }
  return "?";
}

Occupancy occupancy(const GpuArch &a, const BlockShape &s) {
  Occupancy o;
  o.maxWarps = a.warps();
  if (s.threads <= 0) {
    o.unlaunchable = "the block has no threads";
    return o;
  }
  int64_t warpsPerBlock = divUp(s.threads, 32);
  // Warps: the SM's warp slots over the block's warps.
  o.byWarps = s.threads > a.maxThreadsPerBlock ? 0 : static_cast<int>(a.warps() / warpsPerBlock);
  if (s.threads > a.maxThreadsPerBlock)
    o.unlaunchable =
        fmt::format("{} threads per block exceed the {} {} allows", s.threads, a.maxThreadsPerBlock, a.name);
  // Registers: a warp's allocation rounded to the unit; whole warps per
  // sub-partition.
  int64_t perWarp = roundUp(int64_t{s.registers} * 32, a.registerUnit);
  o.registersPerBlock = static_cast<int>(perWarp * warpsPerBlock);
  int64_t assumed = perWarp * roundUp(warpsPerBlock, a.subPartitions);
  if (s.registers > a.maxRegistersPerThread || assumed > a.registersPerBlock ||
      o.registersPerBlock > a.registersPerBlock) {
    o.byRegisters = 0;
    if (o.unlaunchable.empty())
      o.unlaunchable = fmt::format("{} registers per thread for {} threads "
                                   "exceed the {} registers a block may hold",
                                   s.registers, s.threads, a.registersPerBlock);
  } else if (perWarp == 0) {
    o.byRegisters = INT_MAX;
  } else {
    int64_t warpsPerPartition = (a.registersPerSm / a.subPartitions) / perWarp;
    o.byRegisters = static_cast<int>(warpsPerPartition * a.subPartitions / warpsPerBlock);
  }
  // Shared memory: static + dynamic + the driver's reserve, in allocation
  // units.
  int64_t shared = s.staticShared + s.dynamicShared + a.sharedReservedPerBlock;
  o.sharedPerBlock = roundUp(shared, a.sharedUnit);
  int64_t perBlockLimit =
      (s.staticShared + s.dynamicShared > a.sharedPerBlock ? a.sharedPerBlockOptin : a.sharedPerBlock) +
      a.sharedReservedPerBlock;
  if (o.sharedPerBlock > perBlockLimit) {
    o.byShared = 0;
    if (o.unlaunchable.empty())
      o.unlaunchable = fmt::format("{} bytes of shared memory per block exceed the {} bytes {} allows",
                                   s.staticShared + s.dynamicShared, perBlockLimit - a.sharedReservedPerBlock, a.name);
  } else {
    o.byShared = o.sharedPerBlock > 0 ? static_cast<int>(a.sharedPerSm / o.sharedPerBlock) : INT_MAX;
  }
  o.byBlocks = a.maxBlocksPerSm;
  o.byBarriers = INT_MAX;
  int limit = std::min({o.byWarps, o.byRegisters, o.byShared, o.byBlocks});
  if (a.barrierFactor > 0 && s.barriers > 0)
    o.byBarriers = a.maxBlocksPerSm * a.barrierFactor / s.barriers;
  limit = std::min(limit, o.byBarriers);
  o.blocksPerSm = limit;
  if (limit > 0) {
    if (limit == o.byWarps)
      o.limiting.push_back(OccupancyLimit::Warps);
    if (limit == o.byRegisters)
      o.limiting.push_back(OccupancyLimit::Registers);
    if (limit == o.byShared)
      o.limiting.push_back(OccupancyLimit::SharedMemory);
    if (limit == o.byBlocks)
      o.limiting.push_back(OccupancyLimit::Blocks);
    if (limit == o.byBarriers)
      o.limiting.push_back(OccupancyLimit::Barriers);
  }
  o.activeWarps = static_cast<int>(std::min<int64_t>(int64_t{limit} * warpsPerBlock, a.warps()));
  o.fraction = static_cast<double>(o.activeWarps) / a.warps();
  return o;
}

OccupancyAdvice adviseOccupancy(const GpuArch &a, const BlockShape &s) {
  OccupancyAdvice adv;
  Occupancy now = occupancy(a, s);
  // Registers: the most that gives more warps than now, and the most that
  // reaches what the other limits allow (registers never below 16: ptxas's
  // floor for -maxrregcount).
  BlockShape t = s;
  t.registers = 0;
  double ceiling = occupancy(a, t).fraction;
  for (int r = std::min(s.registers, a.maxRegistersPerThread + 1) - 1; r >= 16 && now.fraction < ceiling; --r) {
    t.registers = r;
    double f = occupancy(a, t).fraction;
    if (!adv.registers && f > now.fraction) {
      adv.registers = r;
      adv.registersFraction = f;
    }
    if (f >= ceiling) {
      adv.fullRegisters = r;
      adv.fullRegistersFraction = f;
      break;
    }
  }
  if (adv.fullRegisters && adv.fullRegisters == adv.registers)
    adv.fullRegisters.reset();
  // Shared memory: the largest block footprint with more blocks per SM (static
  // + dynamic).
  int64_t used = s.staticShared + s.dynamicShared;
  if (used > 0 &&
      std::find(now.limiting.begin(), now.limiting.end(), OccupancyLimit::SharedMemory) != now.limiting.end()) {
    for (int blocks = now.blocksPerSm + 1; blocks <= a.maxBlocksPerSm; ++blocks) {
      int64_t fit = (a.sharedPerSm / blocks) / a.sharedUnit * a.sharedUnit - a.sharedReservedPerBlock;
      if (fit < 0)
        break;
      BlockShape u = s;
      u.staticShared = fit;
      u.dynamicShared = 0;
      Occupancy o = occupancy(a, u);
      if (o.fraction > now.fraction) {
        adv.shared = fit;
        adv.sharedFraction = o.fraction;
        break;
      }
    }
  }
  // Block sizes: every multiple of 32 the architecture allows, with the same
  // per-thread and per-block needs.
  for (int threads = 32; threads <= a.maxThreadsPerBlock; threads += 32) {
    BlockShape u = s;
    u.threads = threads;
    double f = occupancy(a, u).fraction;
    if (f > adv.blockFraction + 1e-12) {
      adv.blockFraction = f;
      adv.blockSizes.clear();
    }
    if (std::abs(f - adv.blockFraction) <= 1e-12 && f > 0)
      adv.blockSizes.push_back(threads);
  }
  return adv;
}

std::string describeOccupancy(const std::string &kernel, const GpuArch &a, const BlockShape &s, const Occupancy &o,
                              const OccupancyAdvice &adv) {
  auto pct = [](double f) { return fmt::format("{:.4g}%", f * 100); };
  if (!o.unlaunchable.empty())
    return fmt::format("{} cannot launch on {}: {}", kernel, a.name, o.unlaunchable);
  std::string shape = fmt::format("{} block{} of {} threads, {} of {} warps", o.blocksPerSm,
                                  o.blocksPerSm == 1 ? "" : "s", s.threads, o.activeWarps, o.maxWarps);
  std::vector<std::string> why;
  for (auto l : o.limiting)
    switch (l) {
    case OccupancyLimit::Registers:
      why.push_back(fmt::format("{} registers per thread", s.registers));
      break;
    case OccupancyLimit::SharedMemory:
      why.push_back(fmt::format("{} bytes of shared memory per block", s.staticShared + s.dynamicShared));
      break;
    case OccupancyLimit::Warps:
      why.push_back(fmt::format("the block's {} warps", (s.threads + 31) / 32));
      break;
    case OccupancyLimit::Blocks:
      why.push_back(fmt::format("the limit of {} blocks per SM", a.maxBlocksPerSm));
      break;
    case OccupancyLimit::Barriers:
      why.push_back(fmt::format("{} barriers per block", s.barriers));
      break;
    }
  if (o.fraction >= 1)
    return fmt::format("{}: full occupancy on {} ({}; bound by {})", kernel, a.name, shape, fmt::join(why, " and "));
  std::string out = fmt::format("{}: {} limit{} occupancy to {} on {} ({})", kernel, fmt::join(why, " and "),
                                why.size() == 1 ? "s" : "", pct(o.fraction), a.name, shape);
  std::vector<std::string> could;
  bool byRegs = std::find(o.limiting.begin(), o.limiting.end(), OccupancyLimit::Registers) != o.limiting.end();
  if (byRegs && adv.registers)
    could.push_back(fmt::format("{} registers would give {}", *adv.registers, pct(adv.registersFraction)));
  if (byRegs && adv.fullRegisters)
    could.push_back(fmt::format("{} would give {}", *adv.fullRegisters, pct(adv.fullRegistersFraction)));
  if (adv.shared)
    could.push_back(
        fmt::format("{} bytes of shared memory per block would give {}", *adv.shared, pct(adv.sharedFraction)));
  if (adv.blockFraction > o.fraction && !adv.blockSizes.empty()) {
    std::vector<int> shown(adv.blockSizes.begin(), adv.blockSizes.begin() + std::min<size_t>(4, adv.blockSizes.size()));
    could.push_back(fmt::format("a block of {}{} threads would give {}", fmt::join(shown, ", "),
                                adv.blockSizes.size() > shown.size() ? ", ..." : "", pct(adv.blockFraction)));
  }
  if (!could.empty())
    out += "; " + fmt::format("{}", fmt::join(could, "; "));
  return out;
}

// ---- launches in the source
// ----------------------------------------------------------

std::string kernelBaseName(const std::string &demangled) {
  std::string s = demangled;
  auto paren = s.find('(');
  if (paren != std::string::npos)
    s = s.substr(0, paren);
  // Drop template arguments (nested), then keep the last name component.
  std::string flat;
  int depth = 0;
  for (char c : s) {
    if (c == '<')
      ++depth;
    else if (c == '>')
      depth = std::max(0, depth - 1);
    else if (depth == 0)
      flat += c;
  }
  auto colon = flat.rfind("::");
  if (colon != std::string::npos)
    flat = flat.substr(colon + 2);
  auto space = flat.find_last_of(" *&");
  if (space != std::string::npos)
    flat = flat.substr(space + 1);
  return flat;
}

namespace {

/// The text with comments and string literals blanked (lengths and lines kept).
std::string blankComments(const std::string &text) {
  std::string out = text;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == '/' && i + 1 < out.size() && out[i + 1] == '/') {
      while (i < out.size() && out[i] != '\n')
        out[i++] = ' ';
    } else if (out[i] == '/' && i + 1 < out.size() && out[i + 1] == '*') {
      size_t end = out.find("*/", i + 2);
      end = end == std::string::npos ? out.size() : end + 2;
      for (; i < end; ++i)
        if (out[i] != '\n')
          out[i] = ' ';
      --i;
    } else if (out[i] == '"' || out[i] == '\'') {
      char q = out[i];
      for (++i; i < out.size() && out[i] != q && out[i] != '\n'; ++i) {
        if (out[i] == '\\' && i + 1 < out.size())
          out[i++] = ' ';
        out[i] = ' ';
      }
    }
  }
  return out;
}

/// Splits at top-level commas.
std::vector<std::string> splitArgs(const std::string &text) {
  std::vector<std::string> out(1);
  int depth = 0;
  for (char c : text) {
    if (c == '(' || c == '[' || c == '{')
      ++depth;
    else if (c == ')' || c == ']' || c == '}')
      --depth;
    if (c == ',' && depth == 0) {
      out.emplace_back();
      continue;
    }
    out.back() += c;
  }
  for (auto &a : out) {
    a.erase(0, a.find_first_not_of(" \t\r\n"));
    a.erase(a.find_last_not_of(" \t\r\n") + 1);
  }
  return out;
}

int lineAt(const std::string &text, size_t pos) {
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(pos), '\n'));
}

/// C integer expression text -> what support::Expr reads: integer division, no
/// casts, suffixes or sizeof.
std::string normalise(std::string e) {
  static const std::pair<const char *, const char *> rewrites[] = {
      {R"(sizeof\s*\(\s*(?:unsigned\s+)?(?:char|int8_t|uint8_t|bool)\s*\))", "1"},
      {R"(sizeof\s*\(\s*(?:unsigned\s+)?(?:short|int16_t|uint16_t|half|__half|__nv_bfloat16)\s*\))", "2"},
      {R"(sizeof\s*\(\s*(?:unsigned\s+)?(?:int|float|int32_t|uint32_t|unsigned)\s*\))", "4"},
      {R"(sizeof\s*\(\s*(?:unsigned\s+)?(?:double|long|long long|size_t|int64_t|uint64_t|float2)\s*\))", "8"},
      {R"(sizeof\s*\(\s*(?:float4|double2)\s*\))", "16"},
      {R"(\(\s*(?:unsigned|int|size_t|long|unsigned\s+int|long\s+long)\s*\))", ""},
      {R"(static_cast\s*<[^>]*>)", ""},
      {R"(\b(\d+)(?:[uU][lL]{0,2}|[lL]{1,2}[uU]?)\b)", "$1"},
  };
  for (const auto &[re, with] : rewrites)
    e = replaceAll(re, e, with);
  std::string out;
  for (size_t i = 0; i < e.size(); ++i) {
    out += e[i];
    if (e[i] == '/' && (i + 1 >= e.size() || e[i + 1] != '/') && (i == 0 || e[i - 1] != '/'))
      out += '/'; // C divides integers with truncation; '//' floors, the same
                  // for the sizes here
  }
  return out;
}

} // namespace

support::Expected<double> evalCExpression(const std::string &text, const NameLookup &lookup) {
  auto e = support::Expr::parse(normalise(text));
  if (!e)
    return support::Error{fmt::format("'{}' is not an expression hone reads ({})", text, e.error().message)};
  return e->eval(lookup);
}

namespace {

/// The #defines and integral constants of source files, by name (the last
/// definition wins), read through a lookup that comes first.
class Constants {
public:
  void collect(const std::string &code) {
    for (const auto &m : pattern(R"((?m)^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+([^\n\\]+))").findAll(code))
      defined_[m.groups[1]] = m.groups[2];
    for (
        const auto &m :
        pattern(
            R"(\b(?:static\s+)?(?:constexpr|const)\s+(?:unsigned\s+|signed\s+)?(?:int|long|size_t|unsigned|short|int32_t|int64_t|uint32_t)\s+([A-Za-z_]\w*)\s*=\s*([^;]+);)")
            .findAll(code))
      defined_.emplace(m.groups[1], m.groups[2]);
  }
  std::optional<double> value(const std::string &name, const NameLookup &first, int depth = 0) const {
    if (auto v = first ? first(name) : std::nullopt)
      return v;
    auto it = defined_.find(name);
    if (it == defined_.end() || depth > 16)
      return std::nullopt;
    auto e = support::Expr::parse(normalise(it->second));
    if (!e)
      return std::nullopt;
    auto v = e->eval([&](const std::string &n) { return value(n, first, depth + 1); });
    return v ? std::optional<double>(*v) : std::nullopt;
  }
  support::Expected<double> eval(const std::string &expr, const NameLookup &first) const {
    auto e = support::Expr::parse(normalise(expr));
    if (!e)
      return support::Error{fmt::format("'{}' is not an expression hone reads", expr)};
    return e->eval([&](const std::string &n) { return value(n, first); });
  }

private:
  std::map<std::string, std::string> defined_;
};

} // namespace

std::vector<KernelLaunch> findLaunches(const std::string &file, const std::string &text, const NameLookup &lookup) {
  std::string code = blankComments(text);
  Constants constants;
  constants.collect(code);
  auto eval = [&](const std::string &expr) { return constants.eval(expr, lookup); };
  // dim3 declarations: name -> (position, components).
  struct Dim3 {
    size_t pos;
    std::vector<std::string> parts;
  };
  std::multimap<std::string, Dim3> dims;
  for (const auto &d : pattern(R"(\bdim3\s+)").findAll(code)) {
    // One declaration may hold several: dim3 a(x, y), b(z);
    size_t pos = d.end;
    size_t stop = code.find(';', pos);
    if (stop == std::string::npos || stop - pos > kLongest)
      continue;
    for (const auto &decl : splitArgs(code.substr(pos, stop - pos))) {
      if (auto m = whole(R"(([A-Za-z_]\w*)\s*(?:=\s*dim3\s*)?(?:=\s*)?[({]([\s\S]*)[)}])", decl))
        dims.emplace((*m)[1], Dim3{pos, splitArgs((*m)[2])});
      else if (auto m = whole(R"(([A-Za-z_]\w*)\s*=\s*([\s\S]+))", decl))
        dims.emplace((*m)[1], Dim3{pos, {(*m)[2]}});
    }
  }
  auto product = [](const std::vector<std::string> &parts) {
    std::string out;
    for (const auto &p : parts)
      if (!p.empty())
        out += (out.empty() ? "(" : " * (") + p + ")";
    return out.empty() ? std::string("1") : out;
  };

  std::vector<KernelLaunch> out;
  for (const auto &launch : pattern(R"(([A-Za-z_][\w:]*)\s*(?:<[^<>;]*>\s*)?<<<)").findAll(code)) {
    size_t open = launch.end;
    size_t close = code.find(">>>", open);
    if (close == std::string::npos || close - open > kLongest)
      continue;
    KernelLaunch l;
    l.kernel = kernelBaseName(launch.groups[1]);
    l.file = file;
    l.line = lineAt(code, launch.begin);
    auto args = splitArgs(code.substr(open, close - open));
    if (args.size() < 2) {
      l.unresolved = "the launch has no block argument";
      out.push_back(l);
      continue;
    }
    l.blockText = args[1];
    if (args.size() >= 3)
      l.sharedText = args[2];
    // The block: a dim3 declared before the launch, dim3(...) in place, or a
    // number.
    std::string block = l.blockText;
    if (auto m = whole(R"(dim3\s*[({]([\s\S]*)[)}])", block)) {
      block = product(splitArgs((*m)[1]));
    } else if (whole(R"([A-Za-z_]\w*)", block)) {
      const Dim3 *best = nullptr;
      auto [lo, hi] = dims.equal_range(block);
      for (auto d = lo; d != hi; ++d)
        if (d->second.pos < open && (!best || d->second.pos > best->pos))
          best = &d->second;
      if (best)
        block = product(best->parts);
    }
    auto threads = eval(block);
    if (threads && *threads >= 1 && *threads <= 1e6 && std::floor(*threads) == *threads)
      l.threads = static_cast<int>(*threads);
    else
      l.unresolved = fmt::format("the block size '{}' is not known before the run{}", l.blockText,
                                 threads ? "" : fmt::format(" ({})", threads.error().message));
    if (!l.sharedText.empty()) {
      auto shared = eval(l.sharedText);
      if (shared && *shared >= 0 && *shared < 1e12)
        l.dynamicShared = static_cast<int64_t>(*shared);
      else if (l.unresolved.empty())
        l.unresolved = fmt::format("the dynamic shared memory '{}' is not known before the run", l.sharedText);
    } else {
      l.dynamicShared = 0;
    }
    out.push_back(l);
  }
  return out;
}

// ---- a project's kernels
// ----------------------------------------------------------------

namespace {

std::optional<double> numberIn(const std::string &text) {
  if (text.empty() || text.size() > 64)
    return std::nullopt;
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  return end == text.c_str() + text.size() && std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

/// `-maxrregcount=N`, `-maxrregcount N`, `--maxrregcount=N` or `-Xptxas
/// -maxrregcount=N` in a flag set.
std::optional<int> registerCap(const std::string &flags) {
  auto found = pattern(R"(-?-maxrregcount[= ]\s*(\d{1,4}))").findAll(flags, 1);
  return found.empty() ? std::nullopt : std::optional<int>(std::stoi(found[0].groups[1]));
}

/// What a variant's launch of `kernel` needs per block; nullopt (with why) when
/// the block is unknown.
struct Resolved {
  std::optional<int> threads;
  int64_t dynamicShared = 0;
  std::string where, why;
};

class ProjectLaunches {
public:
  ProjectLaunches(const Manifest &m, const Variant &v) : m_(m) {
    std::set<std::string> files(m.sources.begin(), m.sources.end());
    files.insert(m.editable.begin(), m.editable.end());
    for (const auto &f : files) {
      std::string ext = std::filesystem::path(f).extension().string();
      if (ext != ".cu" && ext != ".cuh" && ext != ".h" && ext != ".hpp" && ext != ".cpp" && ext != ".cc")
        continue;
      auto edited = v.files.find(f);
      auto text = edited != v.files.end() ? support::Expected<std::string>(edited->second)
                                          : support::readFile((std::filesystem::path(m.dir) / f).string());
      if (!text || text->size() > (64u << 20))
        continue;
      texts_.emplace_back(f, blankComments(*text));
      constants_.collect(texts_.back().second);
    }
  }

  Resolved resolve(const std::string &kernel, const KnobValues &values) const {
    NameLookup lookup = [&](const std::string &name) -> std::optional<double> {
      if (auto it = values.find(name); it != values.end())
        if (const Knob *k = m_.knob(name); k && k->kind == KnobKind::Define)
          return numberIn(it->second);
      for (const auto &d : m_.defines)
        if (d.rfind(name + "=", 0) == 0)
          return numberIn(d.substr(name.size() + 1));
      return std::nullopt;
    };
    NameLookup all = [&](const std::string &name) { return constants_.value(name, lookup); };
    Resolved r;
    for (const auto &spec : m_.gpuLaunches) {
      if (spec.kernel != kernel)
        continue;
      r.where = fmt::format("{}:{}", std::filesystem::path(m_.path).filename().string(), spec.line);
      auto threads = evalCExpression(spec.block, all);
      if (threads && *threads >= 1 && *threads <= 1e6)
        r.threads = static_cast<int>(*threads);
      else
        r.why = fmt::format("[[gpu.launch]] block = '{}' does not evaluate{}", spec.block,
                            threads ? "" : ": " + threads.error().message);
      if (!spec.sharedBytes.empty()) {
        auto shared = evalCExpression(spec.sharedBytes, all);
        if (shared && *shared >= 0 && *shared < 1e12)
          r.dynamicShared = static_cast<int64_t>(*shared);
      }
      return r;
    }
    std::vector<std::string> unresolved;
    for (const auto &[file, text] : texts_)
      for (const auto &l : findLaunches(file, text, all)) {
        if (l.kernel != kernel)
          continue;
        if (!l.threads) {
          unresolved.push_back(fmt::format("{}:{}: {}", l.file, l.line, l.unresolved));
          continue;
        }
        r.threads = l.threads;
        r.dynamicShared = l.dynamicShared.value_or(0);
        r.where = fmt::format("{}:{}", l.file, l.line);
        return r;
      }
    r.why = unresolved.empty() ? fmt::format("no launch of {} in the sources (say it in "
                                             "hone.toml: [[gpu.launch]] kernel = \"{}\", "
                                             "block = ...)",
                                             kernel, kernel)
                               : unresolved.front() + " (say it in hone.toml: [[gpu.launch]])";
    return r;
  }

private:
  const Manifest &m_;
  std::vector<std::pair<std::string, std::string>> texts_;
  Constants constants_;
};

} // namespace

std::vector<KernelOccupancy> projectOccupancy(const Manifest &m, const Variant &v,
                                              const std::vector<PtxasKernel> &kernels) {
  std::vector<KernelOccupancy> out;
  ProjectLaunches launches(m, v);
  for (const auto &k : kernels) {
    auto arch = findGpuArch(k.arch);
    if (!m.gpuArchs.empty() && std::none_of(m.gpuArchs.begin(), m.gpuArchs.end(), [&](const std::string &a) {
          auto wanted = findGpuArch(a);
          return wanted && arch && wanted->name == arch->name;
        }))
      continue;
    KernelOccupancy r;
    r.kernel = kernelBaseName(k.name);
    r.arch = arch ? arch->name : k.arch;
    if (!arch) {
      r.unknown = fmt::format("{} is not an architecture hone knows ({})", k.arch, support::joinOr(knownGpuArchs()));
      r.text = fmt::format("{}: {}", r.kernel, r.unknown);
      out.push_back(std::move(r));
      continue;
    }
    Resolved launch = launches.resolve(r.kernel, v.knobs);
    r.launch = launch.where;
    if (!launch.threads) {
      r.unknown = launch.why;
      r.text = fmt::format("{} on {}: occupancy unknown: {}", r.kernel, arch->name, r.unknown);
      out.push_back(std::move(r));
      continue;
    }
    r.shape = {*launch.threads, k.registers, k.sharedBytes, launch.dynamicShared, k.barriers};
    r.occupancy = occupancy(*arch, r.shape);
    r.advice = adviseOccupancy(*arch, r.shape);
    r.text = describeOccupancy(r.kernel, *arch, r.shape, r.occupancy, r.advice);
    // Knob values that would raise it: define knobs through the launch, flag
    // sets through a register cap.
    for (const auto &knob : m.knobs) {
      std::vector<std::pair<double, std::string>> better;
      for (const auto &value : knob.values) {
        if (v.knobs.count(knob.name) == 0 || value == v.knobs.at(knob.name))
          continue;
        KnobValues alt = v.knobs;
        alt[knob.name] = value;
        if (!checkValues(m, alt))
          continue;
        BlockShape shape = r.shape;
        if (knob.kind == KnobKind::Define) {
          Resolved other = launches.resolve(r.kernel, alt);
          if (!other.threads || (*other.threads == shape.threads && other.dynamicShared == shape.dynamicShared))
            continue;
          shape.threads = *other.threads;
          shape.dynamicShared = other.dynamicShared;
        } else if (knob.kind == KnobKind::Flags) {
          auto cap = registerCap(value);
          if (!cap || *cap >= shape.registers)
            continue;
          shape.registers = *cap;
        } else {
          continue;
        }
        double f = occupancy(*arch, shape).fraction;
        if (f > r.occupancy.fraction + 1e-9)
          better.emplace_back(f, value);
      }
      std::stable_sort(better.begin(), better.end(), [](const auto &a, const auto &b) { return a.first > b.first; });
      for (const auto &[f, value] : better)
        r.prefer[knob.name].push_back(value);
    }
    out.push_back(std::move(r));
  }
  return out;
}

} // namespace hone::kernel
