// The kernel profilers behind one interface, one file each in this folder: a profiler measures a
// variant with its tool (adding to the KernelProfile what it read, or to `skipped` why it could not),
// writes what it measured into the profile's JSON, and turns it into findings. Its file also defines
// the parser of its tool's report (declared with the data types in kernel/Profile.h, where tests and
// fuzz targets call it). Adding a profiler is one file here and one line in profilers() (Common.cpp).
// What the findings mean and which transformations answer them is AutoGuide's (rules/kernel.toml) and
// the catalogue's.
#pragma once

#include "kernel/Diagnose.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hone::kernel::profilers {

using json = nlohmann::json;

/// The findings of one diagnosis as the profilers add them.
struct Findings {
  const KernelProfile &p;
  std::vector<support::Bottleneck> out = {};
  std::string tool = {}; // the tool whose numbers the findings being added cite

  /// Adds a finding; `numbers` is {name: value}, each name's unit from unitOf().
  support::Bottleneck &add(FindingKind kind, std::string resource, double share, std::string detail,
                           const nlohmann::json &numbers, const std::string &file = "", int line = 0);
  /// A line as the findings name it: with the function of the source's nest that holds it (the debug
  /// information's, after inlining, is often main).
  std::string whereOf(const CostLine &c) const;
};

/// One profiler.
struct Profiler {
  /// Its name: what ProfileOptions::off names, and the tool its findings cite.
  std::string_view name;
  /// Whether it can measure `m` here (`p`: what profiling knows so far, e.g. whether it is a GPU
  /// program): nullopt when it can; "" when it does not apply (a CPU tool on a GPU program, no report to
  /// read), left out silently; otherwise why it cannot ("not installed (apt-get install llvm)"), said in
  /// the profile's `skipped`. Checked before `run`; null: it always can (it reads the sources).
  std::optional<std::string> (*unavailable)(const Manifest &m, const ProfileOptions &o, const KernelProfile &p);
  /// Measures `v` of `m` in `dir` as `o` asks; adds what it read to `p`, or why it could not (a build or
  /// run that failed, a report it cannot read) to `p.skipped`. Never an error.
  void (*run)(const Manifest &m, const Variant &v, const std::string &dir, const ProfileOptions &o, KernelProfile &p);
  /// Adds the findings its measurements call for to `f` (from `f.p`, which any profiler may have filled).
  void (*diagnose)(Findings &f, const Thresholds &t);
  /// Writes what it added to `p` into `j`, the profile's JSON object (`toJson(const KernelProfile &)`),
  /// under keys no other profiler writes.
  void (*toJson)(const KernelProfile &p, json &j);
};

/// Every profiler, in the order they run and diagnose (llvm-mca after cachegrind: it looks for the
/// loop around cachegrind's hottest line; the compiler's remarks after cachegrind: they rank by it).
const std::vector<const Profiler *> &profilers();

// ---- what several profilers share (Common.cpp) ----

/// Whether `tool` is an executable on PATH.
bool onPath(const std::string &tool);
/// `path` as the project names it (relative to its folder; an edited file compiled from the variant's
/// build folder under `dir` stands for the project's file of that name); "" when it lies outside the
/// project (system headers, the C library).
std::string variantRelative(const Manifest &m, const Variant &v, const std::string &dir, const std::string &path);
/// The first `n` lines of `text`.
std::string firstLines(const std::string &text, size_t n);
/// A cost line's count of `event` ("Ir", "D1mr", ...); 0 when it has none.
double event(const CostLine &c, const char *name);
/// "file:line (function)", or "function (file)" for a line-less cost.
std::string where(const CostLine &c);
/// The program's instructions as cachegrind counted them (libraries included); 0 without cachegrind.
double totalInstructions(const KernelProfile &p);
/// The lines with at least `t.hotShare` of the program's instructions (cachegrind), in its order.
std::vector<const CostLine *> hotLines(const KernelProfile &p, const Thresholds &t);
/// The unit of a number the findings cite ("fraction", "%", "bytes", ...); "" for a name not declared.
std::string_view unitOf(std::string_view number);

/// The profilers (one file each).
extern const Profiler kCachegrind, kRemarks, kOmpSchedules, kPerf, kMca, kPtxas, kNcu;

} // namespace hone::kernel::profilers

namespace hone::kernel {

// ---- what the tools' parsers share (Common.cpp; named apart from support::splitLines and support::trim,
// which differ in detail) ----

/// A count a tool's report prints (digits), saturated at 10^15 -- no real report holds more -- instead
/// of overflowing (std::atoll and std::atoi are undefined beyond their range: the ptxas fuzzer found it).
int64_t countOf(const std::string &digits);
/// countOf(digits), at most INT32_MAX.
int intOf(const std::string &digits);
/// The lines of `text`, without their line ends ("\n" or "\r\n").
std::vector<std::string> reportLines(const std::string &text);
/// `s` without the blanks (spaces and tabs) at either end.
std::string trimBlanks(const std::string &s);
/// A number as tools print it: "1,234.5", "12.3%", quoted; nullopt for "n/a" and words.
std::optional<double> toNumber(std::string s);
/// One CSV record (RFC 4180 quoting); fields keep no quotes. `*ok` is false when a quoted field is
/// left open.
std::vector<std::string> csvFields(const std::string &line, bool *ok);
/// A C++ symbol's name, demangled; `name` itself when it does not demangle.
std::string demangle(const std::string &name);

} // namespace hone::kernel
