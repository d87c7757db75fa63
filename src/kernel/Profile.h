// Profiles of a kernel project in one schema, whatever tool produced them,
// and the parsers that read each tool's report:
//   cachegrind  cachegrind.out.<pid>: per file/function/line Ir, I1mr, ILmr, Dr, D1mr, DLmr, Dw, D1mw, DLmw
//   callgrind   callgrind.out.<pid>: what the calls made at each line cost, their callees included
//   remarks     gcc -fopt-info-vec-all and clang -Rpass*=loop-vectorize: loops vectorized or not, and why
//   perf stat   `perf stat -x,` CSV: counters, "<not supported>" noted as such
//   llvm-mca    the hot loop's block throughput, IPC, and with -bottleneck-analysis the limiting cause
//               (and extractHotLoop: the loop of an assembly listing that llvm-mca is given)
//   ptxas       nvcc -Xptxas -v: registers, shared memory and spills per kernel
//   ncu         Nsight Compute CSV (--page details or --page raw), read from a file taken on a GPU machine
//   sources     the schedule clauses of a source file's `#pragma omp` lines
// Each parser is defined in its profiler's file in kernel/profilers/ (callgrind's in Cachegrind.cpp,
// the sources' in OmpSchedules.cpp), with the helpers they share in Common.cpp (declared in Profiler.h).
// Every parser returns a value or a located error; none throws or crashes on any input.
#pragma once

#include "kernel/Occupancy.h"
#include "support/Expected.h"

#include <nlohmann/json_fwd.hpp>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hone::kernel {

/// Event counts of one place in the program (a function, or one source line of it).
struct CostLine {
  std::string file, function;
  int line = 0; // 0: the whole function
  std::map<std::string, double> events; // Ir, Dr, D1mr, ...
};

struct CachegrindData {
  std::vector<std::string> events;  // in the file's order
  std::map<std::string, double> totals;
  std::vector<CostLine> functions; // per file:function, summed over lines
  std::vector<CostLine> lines;     // per file:function:line
};
support::Expected<CachegrindData> parseCachegrind(const std::string &text);

/// What the calls made at each line cost, with everything their callees ran (callgrind's inclusive
/// call costs): a loop that prints a dump costs what printf costs. Per caller file:line, summed.
struct CallCosts {
  double total = 0; // the program's instructions (callgrind's summary)
  std::map<std::pair<std::string, int>, double> lines;
};
/// Reads a callgrind profile (`--compress-strings` and `--compress-pos` either way); a located error
/// for a file that is not one.
support::Expected<CallCosts> parseCallgrindCalls(const std::string &text);

struct Remark {
  std::string file;
  int line = 0, column = 0;
  std::string kind;    // "optimized", "missed", "analysis", "note"
  std::string message; // the compiler's words
  std::string pass;    // clang: loop-vectorize ...; gcc: empty
};
/// gcc's -fopt-info lines ("file:line:col: optimized|missed|note: text").
support::Expected<std::vector<Remark>> parseGccRemarks(const std::string &text);
/// clang's remarks ("file:line:col: remark: text [-Rpass...=pass]").
support::Expected<std::vector<Remark>> parseClangRemarks(const std::string &text);

struct PerfStat {
  std::map<std::string, double> counters; // event -> value
  std::map<std::string, std::string> units;
  std::vector<std::string> unsupported;   // "<not supported>" or "<not counted>"
  double cpusUtilized = 0;                // from task-clock's comment, when present
};
support::Expected<PerfStat> parsePerfStat(const std::string &text);

struct McaReport {
  double iterations = 0, instructions = 0, totalCycles = 0, ipc = 0, blockRThroughput = 0;
  double cyclesPerIteration() const { return iterations > 0 ? totalCycles / iterations : 0; }
  // -bottleneck-analysis: percentages of cycles with backend pressure by cause
  double pressure = 0, resourcePressure = 0, dataDependencies = 0, registerDependencies = 0, memoryDependencies = 0;
  std::vector<std::string> criticalSequence;
};
support::Expected<McaReport> parseLlvmMca(const std::string &text);

/// The innermost loop of an assembly listing (a label and the backward jump to it) holding
/// code of `file`:`line` (any loop when line is 0), as text llvm-mca takes; empty when none.
std::string extractHotLoop(const std::string &assembly, const std::string &file, int line);

struct PtxasKernel {
  std::string name, arch;
  int registers = 0, barriers = 0;
  int64_t sharedBytes = 0, stackBytes = 0, spillStores = 0, spillLoads = 0, constantBytes = 0;
};
support::Expected<std::vector<PtxasKernel>> parsePtxas(const std::string &text);

struct NcuKernel {
  std::string id, name, blockSize, gridSize;
  std::map<std::string, double> metrics;     // metric name -> value (numbers only)
  std::map<std::string, std::string> units;
};
/// Either page of `ncu --csv`: details (one row per kernel and metric) or raw (one row per kernel,
/// a units row after the header). `==PROF==` lines, quoted numbers with thousands separators and
/// "n/a" are read as ncu writes them.
support::Expected<std::vector<NcuKernel>> parseNcuCsv(const std::string &text);

/// An OpenMP worksharing loop whose schedule clause the source names (`#pragma omp ... schedule(...)`).
struct OmpSchedule {
  std::string file;
  int line = 0;
  std::string kind;  // static, dynamic, guided, auto or runtime
  std::string chunk; // as written; empty when the clause has none
  std::string runs;  // what it runs with: for runtime, OMP_SCHEDULE's value or libgomp's default "dynamic,1"
};
/// The schedule clauses of one source file's `#pragma omp` lines (a line continued with a backslash
/// is read with its continuation). Never fails: text that is not a clause is skipped.
std::vector<OmpSchedule> findOmpSchedules(const std::string &file, const std::string &text);

/// What the profilers found, in one schema (docs/KERNELS.md, "Profile").
/// One loop nest's share of what the profile counted (its lines' own costs; calls out of the nest
/// count where the callee's lines are).
struct NestShare {
  std::string file, function; // project-relative; the function holding the nest
  int line = 0, endLine = 0;
  double share = 0;
  bool calls = false; // calls functions: what they cost counts elsewhere (in `outside`, for the C library's)
  std::optional<double> callShare; // what the calls made in the nest cost, callees included (callgrind)
};

/// Where the time goes, as the profile counted it (cachegrind: instructions), over the variant's
/// own source: each top-level loop nest of the editable files, the rest of each project file, and
/// what ran outside the project's code (the C library, the runtime).
struct TimeBreakdown {
  std::string measure = "instructions", tool = "cachegrind";
  std::string scope = "process"; // what the score times: the whole process, or a region the program times
  std::vector<NestShare> nests;                     // hottest first
  std::vector<std::pair<std::string, double>> files; // project file -> share outside the listed nests
  double outside = 0;                                // outside the project's files
  std::vector<std::pair<std::string, double>> outsideFunctions; // the largest of those, by name
  /// The nest holding file:line, or nullptr.
  const NestShare *nestAt(const std::string &file, int line) const;
};

struct KernelProfile {
  std::vector<std::string> tools;       // that ran
  std::vector<std::string> skipped;     // "perf: hardware counters not supported", ...
  std::vector<std::string> notes;       // how a tool was run differently from the timed build, and why
  std::optional<CachegrindData> cachegrind;
  std::vector<Remark> remarks;          // loop remarks of the project's own files
  std::optional<PerfStat> perf;
  std::optional<McaReport> mca;
  std::string mcaLoop;                  // where the analysed loop is ("file:line")
  std::vector<PtxasKernel> ptxas;
  std::vector<KernelOccupancy> occupancy; // static, from ptxas and the launches (Occupancy.h)
  std::vector<NcuKernel> ncu;
  std::vector<OmpSchedule> ompSchedules; // from the sources, with the schedule the profiled run used
  std::optional<TimeBreakdown> breakdown; // cachegrind's counts over the variant's loop nests
  std::optional<CallCosts> callCosts;     // callgrind's, of the project's own lines (files relative)
  int cores = 1;                        // of the machine the run used
  bool gpu = false;                     // a GPU program: its host side is serial by design
};
/// The profile as JSON: its common fields (schema, tools, skipped, notes, cores, gpu), then each
/// registered profiler's part (profilers::Profiler::toJson).
nlohmann::json toJson(const KernelProfile &p);
/// Each tool's records as the profile's JSON shows them (nlohmann's conversions; defined in their
/// profiler's file).
void to_json(nlohmann::json &j, const Remark &r);
void to_json(nlohmann::json &j, const PtxasKernel &k);
void to_json(nlohmann::json &j, const NcuKernel &k);
void to_json(nlohmann::json &j, const OmpSchedule &o);
nlohmann::json toJson(const TimeBreakdown &b);

} // namespace hone::kernel
