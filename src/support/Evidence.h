// The evidence an evaluation measured, typed: what every domain's profilers found (the simulator's
// and legion_prof's bottlenecks of a mapper, the kernel profilers' findings), as AutoGuide, the
// agents, the store and the report read it. A finding's kind is its domain's registered id
// (sim::BottleneckKind, kernel::FindingKind); JSON only where evidence is stored or shown, with its
// version written and checked on read (the unversioned form of stores written before is version 1).
#pragma once

#include "support/Expected.h"

#include <nlohmann/json.hpp>

#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace hone::support {

/// A measured number and its unit ("fraction" for shares and rates, "%" , "s", "registers", "bytes",
/// "threads", ...; "" when a count of nothing in particular).
struct Quantity {
  double value = 0;
  std::string unit;
  bool operator==(const Quantity &) const = default;
};

/// One bottleneck: what it is (kind), what it is about (subject: a processor kind, a channel, a
/// source line, a kernel), how much of the time it could save (share, its ranking), a sentence for a
/// reader, the numbers it cites, where in the source it is, and the tool that measured it.
struct Bottleneck {
  std::string kind;
  std::string subject;
  double share = 0;
  std::string detail;
  std::map<std::string, Quantity> numbers;
  std::string file; // "" and 0: no source location
  int line = 0;
  std::map<std::string, std::vector<std::string>> prefer; // knob -> values predicted to help, best first
  std::string tool;                                       // "" : the evidence's tool
  bool operator==(const Bottleneck &) const = default;
};

/// Everything an evaluation's profilers found, ranked by share (largest first). `tool` non-empty: the
/// evaluation was profiled (by that tool, unless a bottleneck names its own), so no bottlenecks means
/// nothing found; empty: not profiled.
struct Evidence {
  /// 1: the unversioned form (kind, resource, share, detail, numbers, file, line, prefer); 2: adds the
  /// version, the tool and the numbers' units.
  static constexpr int kVersion = 2;
  std::string tool;
  std::vector<Bottleneck> bottlenecks;
  bool profiled() const { return !tool.empty() || !bottlenecks.empty(); }
  bool operator==(const Evidence &) const = default;
};

/// A bottleneck as JSON: {kind, resource, share, detail} and, when they are set, numbers ({name:
/// value}), units ({name: unit}), file, line, prefer, tool. The form `hone simulate --json` shows.
nlohmann::json toJson(const Bottleneck &b);
/// A string field of a JSON object to read: its key, where it goes (left as it is when absent), and
/// whether it must be there.
struct TextField {
  const char *key;
  std::string *out;
  bool required = false;
};
/// Reads `fields` of the object `j`; the first error names the place (`at`.`key`): a field that is not
/// a string, or a required one that is absent.
std::optional<Error> readTextFields(const nlohmann::json &j, const std::string &at,
                                    std::initializer_list<TextField> fields);
/// A bottleneck from its JSON; `at` names it in errors ("bottlenecks[2].share: not a number").
Expected<Bottleneck> readBottleneck(const nlohmann::json &j, const std::string &at, bool kindRequired = true);
/// The bottlenecks as a JSON array, in order.
nlohmann::json toJson(const std::vector<Bottleneck> &bottlenecks);

/// `profile` with the evidence written in: "bottlenecks", "evidence_version" and "evidence_tool" (the
/// form a store keeps). Unprofiled evidence writes nothing.
nlohmann::json withEvidence(nlohmann::json profile, const Evidence &e);
/// The evidence of a stored profile, and the profile without it. Version 1 (no "evidence_version") is
/// migrated; a newer version than this hone's, or a bottleneck
/// that is not one, is an error naming its place ("bottlenecks[2].share: not a number").
struct SplitProfile {
  nlohmann::json profile;
  Evidence evidence;
};
Expected<SplitProfile> readEvidence(nlohmann::json profile);

} // namespace hone::support
