// A machine model of the host hone runs on (`hone machine detect`): what the operating system
// reports (cores, caches, NUMA nodes, memory) and what small kernels measure (memory bandwidth with
// a STREAM-like triad, copy bandwidth, one core's multiply-add rate), written as a machine TOML
// (docs/MODEL.md, "Machine models") with a source tag on every number.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hone::model {

struct HostFacts {
  std::string cpuModel;       // /proc/cpuinfo "model name"
  int cores = 0;              // processors this process may run on (sched_getaffinity)
  int numaNodes = 1;          // /sys/devices/system/node/node*
  double memoryBytes = 0;     // /proc/meminfo MemTotal
  struct Cache {
    int level = 0;
    std::string type; // Data, Instruction, Unified
    double bytes = 0;
    int sharedBy = 1; // logical CPUs sharing it
  };
  std::vector<Cache> caches;  // cpu0's, from /sys/devices/system/cpu/cpu0/cache
  // Measured (0 when not measured):
  double triadOneGBs = 0;     // STREAM triad, one thread
  double triadAllGBs = 0;     // STREAM triad, one thread per core
  double copyAllGBs = 0;      // memcpy between two arrays, one thread per core (read + write bytes)
  double coreGflops = 0;      // independent multiply-adds, one thread (as hone's compiler builds them)
  double arrayBytes = 0;      // the size of each array the bandwidth kernels used
};

struct DetectOptions {
  bool measure = true;       // run the kernels (about a second); false: OS facts only
  double arrayMb = 0;        // per array; 0: four times the last-level cache, at least 64 MiB
  int repeats = 5;           // best of
};

/// What the OS says and, with `measure`, what the kernels measure.
HostFacts detectHost(const DetectOptions &options = {});

/// The machine TOML for `facts`: one node of `cpus` CPU processors (0: every core), one system
/// memory of `sysmemGb` GB (0: the physical memory), host copies at the measured copy bandwidth.
std::string machineToml(const HostFacts &facts, const std::string &name, int cpus = 0, double sysmemGb = 0);

} // namespace hone::model
