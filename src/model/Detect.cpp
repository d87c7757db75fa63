#include "model/Detect.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sched.h>
#include <sstream>
#include <thread>

namespace hone::model {

namespace {

namespace fs = std::filesystem;

std::string readText(const fs::path &p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  return s;
}

/// "32K", "1024K", "8M" as bytes.
double sizeOf(const std::string &text) {
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str())
    return 0;
  switch (*end) {
  case 'K': return v * 1024;
  case 'M': return v * 1024 * 1024;
  case 'G': return v * 1024 * 1024 * 1024;
  default: return v;
  }
}

/// How many CPUs a cpulist ("0-3,8") names.
int cpusIn(const std::string &list) {
  int n = 0;
  std::stringstream ss(list);
  std::string part;
  while (std::getline(ss, part, ',')) {
    size_t dash = part.find('-');
    if (part.empty())
      continue;
    if (dash == std::string::npos)
      ++n;
    else
      n += std::atoi(part.c_str() + dash + 1) - std::atoi(part.c_str()) + 1;
  }
  return std::max(n, 1);
}

using Clock = std::chrono::steady_clock;

/// Runs `body(t)` on `threads` threads at once and returns the wall time of the slowest.
template <typename F> double timeThreads(int threads, F body) {
  std::vector<std::thread> pool;
  auto t0 = Clock::now();
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] { body(t); });
  for (auto &th : pool)
    th.join();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

struct Arrays {
  size_t n;
  std::unique_ptr<double[]> a, b, c;
  explicit Arrays(size_t count) : n(count), a(new double[count]), b(new double[count]), c(new double[count]) {}
};

/// STREAM triad a = b + s * c over [lo, hi): 24 bytes per element (two reads, one write).
void triad(Arrays &x, size_t lo, size_t hi) {
  const double s = 3.0;
  double *a = x.a.get();
  const double *b = x.b.get(), *c = x.c.get();
  for (size_t i = lo; i < hi; ++i)
    a[i] = b[i] + s * c[i];
}

/// The best rate, over `repeats`, of `kernel(lo, hi)` run on `threads` threads over equal parts of
/// the arrays, in GB/s for `bytesPerElement` bytes moved per element.
template <typename K> double bestGBs(const Arrays &x, int threads, int repeats, double bytesPerElement, K kernel) {
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    double s = timeThreads(threads, [&](int t) {
      kernel(x.n * static_cast<size_t>(t) / static_cast<size_t>(threads),
             x.n * static_cast<size_t>(t + 1) / static_cast<size_t>(threads));
    });
    if (s > 0)
      best = std::max(best, bytesPerElement * static_cast<double>(x.n) / s / 1e9);
  }
  return best;
}

double bestTriadGBs(Arrays &x, int threads, int repeats) {
  return bestGBs(x, threads, repeats, 24.0, [&](size_t lo, size_t hi) { triad(x, lo, hi); });
}

/// Bytes copied per second (each byte counted once) by memcpy on every core.
double bestCopyGBs(Arrays &x, int threads, int repeats) {
  return bestGBs(x, threads, repeats, 8.0, [&](size_t lo, size_t hi) {
    std::memcpy(x.a.get() + lo, x.b.get() + lo, (hi - lo) * sizeof(double));
  });
}

/// Eight independent multiply-add chains, one thread: the scalar rate hone's compiler reaches.
double coreGflops(int repeats) {
  const long iterations = 20000000;
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    volatile double seed = 1.0000001;
    double x0 = seed, x1 = seed + 1e-9, x2 = seed + 2e-9, x3 = seed + 3e-9, x4 = seed + 4e-9, x5 = seed + 5e-9,
           x6 = seed + 6e-9, x7 = seed + 7e-9;
    const double m = 0.9999999, a = 1e-7;
    auto t0 = Clock::now();
    for (long i = 0; i < iterations; ++i) {
      x0 = x0 * m + a, x1 = x1 * m + a, x2 = x2 * m + a, x3 = x3 * m + a;
      x4 = x4 * m + a, x5 = x5 * m + a, x6 = x6 * m + a, x7 = x7 * m + a;
    }
    double s = std::chrono::duration<double>(Clock::now() - t0).count();
    volatile double sink = x0 + x1 + x2 + x3 + x4 + x5 + x6 + x7;
    (void)sink;
    if (s > 0)
      best = std::max(best, 16.0 * static_cast<double>(iterations) / s / 1e9);
  }
  return best;
}

} // namespace

HostFacts detectHost(const DetectOptions &options) {
  HostFacts h;
  cpu_set_t set;
  CPU_ZERO(&set);
  h.cores = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set)
                                                         : static_cast<int>(std::thread::hardware_concurrency());
  h.cores = std::max(h.cores, 1);
  {
    std::ifstream in("/proc/cpuinfo");
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("model name", 0) == 0) {
        h.cpuModel = line.substr(line.find(':') + 2);
        break;
      }
  }
  {
    std::ifstream in("/proc/meminfo");
    std::string key;
    double kb;
    while (in >> key >> kb) {
      if (key == "MemTotal:") {
        h.memoryBytes = kb * 1024;
        break;
      }
      in.ignore(1 << 10, '\n');
    }
  }
  std::error_code ec;
  int nodes = 0;
  for (const auto &e : fs::directory_iterator("/sys/devices/system/node", ec)) {
    std::string n = e.path().filename().string();
    nodes += n.rfind("node", 0) == 0 && n.size() > 4 && std::isdigit(static_cast<unsigned char>(n[4]));
  }
  h.numaNodes = std::max(nodes, 1);
  for (const auto &e : fs::directory_iterator("/sys/devices/system/cpu/cpu0/cache", ec)) {
    if (e.path().filename().string().rfind("index", 0) != 0)
      continue;
    HostFacts::Cache c;
    c.level = std::atoi(readText(e.path() / "level").c_str());
    c.type = readText(e.path() / "type");
    c.bytes = sizeOf(readText(e.path() / "size"));
    c.sharedBy = cpusIn(readText(e.path() / "shared_cpu_list"));
    if (c.level > 0 && c.bytes > 0)
      h.caches.push_back(c);
  }
  std::sort(h.caches.begin(), h.caches.end(), [](const auto &a, const auto &b) {
    return a.level != b.level ? a.level < b.level : a.type < b.type;
  });
  if (!options.measure)
    return h;
  double llc = 0;
  for (const auto &c : h.caches)
    llc = std::max(llc, c.bytes);
  double bytes = options.arrayMb > 0 ? options.arrayMb * 1024 * 1024 : std::max(4 * llc, 64.0 * 1024 * 1024);
  Arrays x(static_cast<size_t>(bytes / sizeof(double)));
  // First touch from the threads that use each part, as STREAM does.
  timeThreads(h.cores, [&](int t) {
    size_t lo = x.n * static_cast<size_t>(t) / static_cast<size_t>(h.cores);
    size_t hi = x.n * static_cast<size_t>(t + 1) / static_cast<size_t>(h.cores);
    for (size_t i = lo; i < hi; ++i)
      x.a[i] = 0, x.b[i] = 1, x.c[i] = 2;
  });
  h.arrayBytes = static_cast<double>(x.n * sizeof(double));
  int repeats = std::max(1, options.repeats);
  h.triadOneGBs = bestTriadGBs(x, 1, repeats);
  h.triadAllGBs = bestTriadGBs(x, h.cores, repeats);
  h.copyAllGBs = bestCopyGBs(x, h.cores, repeats);
  h.coreGflops = coreGflops(repeats);
  return h;
}

std::string machineToml(const HostFacts &h, const std::string &name, int cpus, double sysmemGb) {
  const int n = cpus > 0 ? cpus : h.cores;
  const double memGb = sysmemGb > 0 ? sysmemGb : h.memoryBytes / 1e9;
  std::string caches;
  for (const auto &c : h.caches)
    caches += fmt::format("#   L{} {:<11} {:>8.0f} KiB, shared by {} CPU(s)\n", c.level, c.type, c.bytes / 1024,
                          c.sharedBy);
  // A processor's share of the memory bandwidth when every core streams (never more than one core alone
  // gets), and of a core: more processors than cores (Legion's -ll:cpu above the core count) share them.
  const double share = std::min(1.0, static_cast<double>(h.cores) / n);
  double perCore = h.triadAllGBs > 0 ? std::min(h.triadOneGBs, h.triadAllGBs / std::max(h.cores, n)) : 0;
  auto num = [](double v, double fallback) { return fmt::format("{:.3g}", v > 0 ? v : fallback); };
  const char *measured = h.triadAllGBs > 0 ? "[measured]" : "[assume]";
  std::string out;
  out += fmt::format("# {}: this host, as `hone machine detect` found it.\n", name);
  out += fmt::format("# CPU: {} ({} cores usable, {} NUMA node(s), {:.1f} GB memory)\n",
                     h.cpuModel.empty() ? "unknown" : h.cpuModel, h.cores, h.numaNodes, h.memoryBytes / 1e9);
  if (!caches.empty())
    out += "# caches of CPU 0:\n" + caches;
  if (h.triadAllGBs > 0)
    out += fmt::format("# measured on {:.0f} MiB arrays: triad {:.3g} GB/s on one core, {:.3g} GB/s on {}; memcpy "
                       "{:.3g} GB/s; {:.3g} GFLOP/s per core\n",
                       h.arrayBytes / 1024 / 1024, h.triadOneGBs, h.triadAllGBs, h.cores, h.copyAllGBs, h.coreGflops);
  out += "# Sources: [detect] the operating system; [measured] hone's kernels here; [assume] as cpu-only.toml.\n";
  out += fmt::format("name = \"{}\"\n", name);
  out += fmt::format("description = \"1 node: {} x {}\"\n", n, h.cpuModel.empty() ? "CPU" : h.cpuModel);
  out += "nodes = 1                      # [detect] this host\n\n";
  out += "[runtime]\n";
  out += "task_analysis_us = 20.0        # [assume] Legion's dependence analysis + mapping per point task\n";
  out += "copy_issue_us = 5.0            # [assume] runtime work to issue one copy\n\n";
  out += "[[processor]]\n";
  out += "kind = \"CPU\"\n";
  out += fmt::format("per_node = {:<19} # [detect] {}\n", n,
                     cpus > 0 ? fmt::format("as chosen (--cpus; the host has {})", h.cores) : "usable cores");
  out += fmt::format("gflops = {:<21} # {} one core's independent multiply-adds{}\n",
                     num(h.coreGflops * share, 1.0), h.coreGflops > 0 ? "[measured]" : "[assume]",
                     share < 1 ? fmt::format(", x {:.3g}: {} processors share {} cores", share, n, h.cores) : "");
  out += "overhead_us = 5.0              # [assume] task launch on a CPU\n\n";
  out += "[[memory]]\n";
  out += "kind = \"SYSMEM\"\n";
  out += "per = \"node\"\n";
  out += fmt::format("capacity_gb = {:<16} # {}\n", fmt::format("{:.3g}", memGb),
                     sysmemGb > 0 ? "[detect] as chosen (--sysmem-gb; Legion's -ll:csize)" : "[detect] MemTotal");
  out += "  [[memory.access]]\n";
  out += "  proc = \"CPU\"\n";
  out += fmt::format("  bandwidth_gbs = {:<12} # {} triad bandwidth of all cores / {}\n", num(perCore, 6.0),
                     measured, n > h.cores ? "processors" : "cores");
  out += "  latency_us = 0.1             # [assume]\n";
  out += "  affinity = 100               # [legion] CPU -> SYSMEM 100\n\n";
  out += "[[channel]]\n";
  out += "name = \"host\"\n";
  out += "between = [\"*\", \"*\"]\n";
  out += "scope = \"node\"\n";
  out += fmt::format("bandwidth_gbs = {:<14} # {} memcpy on all cores, bytes copied per second\n",
                     num(h.copyAllGBs, 30.0), measured);
  out += "latency_us = 2.0               # [assume]\n";
  return out;
}

} // namespace hone::model
