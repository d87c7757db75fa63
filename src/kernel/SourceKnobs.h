// hone's source transformations as knobs of a kernel project: the editable
// C/C++ files are parsed (source/Model.h), the nests worth transforming get
// knobs of kind Source (source/Transform.h), and the manifest keeps the plan
// that realises their values as rewritten files.
#pragma once

#include "kernel/Manifest.h"
#include "kernel/Profile.h"
#include "kernel/source/Transform.h"
#include "support/Expected.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace hone::kernel {

/// The compiler arguments of the reference's build that decide how a file parses (-I, -D, -U,
/// -std=, -include), paths made absolute against the project folder.
std::vector<std::string> parseArguments(const Manifest &m);

/// Analyses the editable files and adds the plan's knobs to `m` (none for CUDA, or when the files
/// do not parse: the warnings say why). Returns the plan's description (what each nest admits).
support::Expected<std::string> addSourceKnobs(Manifest &m, const source::PlanOptions &options = {});

/// The nests that have source knobs, each with its share of the program's instructions in a
/// cachegrind profile, hottest first: [{"nest": "file:line", "file", "line", "end_line", "share"}]
/// in the plan's lines. The guided agent transforms the hot nests, not every nest a program-wide
/// finding could name. `asBuilt`: the profile's breakdown over the variant's own nests (its lines
/// move when its source knobs rewrite a file), taken nest for nest where a file's nests match the
/// plan's; without it, or where they do not match, the plan's line ranges count the lines. When the
/// manifest times a region of the program, the shares are of the editable files' instructions (the
/// harness around the timed region is not scored).
nlohmann::json nestHeat(const Manifest &m, const CachegrindData &cg, const TimeBreakdown *asBuilt = nullptr);

/// Where the instructions of a cachegrind profile of `v` go: every top-level loop nest of the
/// variant's editable C/C++ files (parsed as built), the rest of each project file, and the code
/// outside the project. nullopt when the files do not parse or the profile counted nothing.
/// With callgrind's call costs, each nest also gets what the calls made in it cost (`callShare`).
std::optional<TimeBreakdown> timeBreakdown(const Manifest &m, const Variant &v, const CachegrindData &cg,
                                           const CallCosts *calls = nullptr);
/// Adds to each nest what the calls made in it cost (callgrind) and ranks the nests by both.
void addCallShares(TimeBreakdown &b, const CallCosts &calls);

} // namespace hone::kernel
