// Reading Legion Prof logs: what a real run did, in hone's profile form.
//
// A Legion program run with `-lg:prof N -lg:prof_logfile prof_%.gz` writes one log per node: the
// binary format of Legion's profiler (legion_profiling_serializer.cc; version 1.0 since Legion
// 23.x): a text preamble that declares each record type's fields, names, types and sizes, then
// records (a 4-byte type id and the fields). hone reads the preamble and skips what it does not
// use, so records added by later Legion versions do not break it. Files may be gzip-compressed or
// plain. docs/LEGION.md ("Real profiles") describes what is extracted.
#pragma once

#include "support/Evidence.h"
#include "support/Expected.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace hone::legion {

/// What a set of Legion Prof logs (one run, all nodes) says, aggregated.
struct LegionProfile {
  struct Processor {
    uint64_t id = 0;
    std::string kind;  // CPU, GPU, UTIL, IO, PY, OMP, ...
    int64_t node = 0;  // the address space
    int64_t index = 0; // among the node's processors of its kind, by id (hone's numbering)
    int64_t tasks = 0; // application tasks it ran
    double busyS = 0;  // their summed execution time
    double busyFraction = 0; // of the run's span
  };
  struct Task {
    std::string name;
    std::string kind; // the processor kind it ran on most
    int64_t points = 0;
    double busyS = 0;
    double waitS = 0; // from ready to start, summed: time spent waiting for a processor
  };
  std::vector<Processor> processors;
  std::vector<Task> tasks; // busiest first
  int64_t copies = 0, fills = 0;
  double bytesCopied = 0;
  double copyBusyS = 0;     // summed duration of copies
  double mapperS = 0;       // mapper calls
  double runtimeCallS = 0;  // runtime API calls
  double metaS = 0;         // the runtime's own meta-tasks (dependence analysis, ...)
  double spanS = 0;         // first application task start to last application task end
  int64_t nodes = 0;        // log files read
  int64_t records = 0;
  int64_t skipped = 0;      // records of types hone does not use
};

/// Bounds on what reading a run's logs may take: a hostile or broken log (names of a MiB each, billions
/// of empty records in a small .gz) is refused with its location instead of taking the machine.
struct ProfLogLimits {
  size_t nameChars = 1024;           // a task's name beyond this is cut (" ..." marks it)
  uint64_t uncompressedBytes = 8ull << 30; // all files together, after decompression
  double seconds = 60;               // the whole read
};

/// Reads the logs of one run. Errors name the file and the byte offset of what is wrong; a log cut
/// short (a killed run) yields what was read before the cut, with a warning in `warnings`.
support::Expected<LegionProfile> readLegionProfile(const std::vector<std::string> &files,
                                                   std::vector<std::string> *warnings = nullptr,
                                                   const ProfLogLimits &limits = {});

/// The profile in the form the simulator's profiles have (`hone simulate --json`): time_s,
/// processors, task_stats, copies, runtime overhead and bottlenecks (processor imbalance, idle
/// processors, runtime overhead, copy time) found with the simulator's thresholds, so AutoGuide's
/// rules and the guided agent read real runs as they read the model's.
nlohmann::json toProfileJson(const LegionProfile &p);
/// Those bottlenecks, typed (tool "legion-prof"): what an evaluation of a real run carries.
support::Evidence evidenceOf(const LegionProfile &p);

/// A summary for people: the busiest tasks, processors and the overheads.
std::string summarize(const LegionProfile &p);

} // namespace hone::legion
