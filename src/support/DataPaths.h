// Where hone's data lives (models, rules, prompts, the transformation
// catalogue, example mappers and kernels), found at run time relative to
// the executable, so that an installed or moved hone uses its own copy:
//   1. $HONE_DATA_DIR/<kind>                (an override for every kind)
//   2. <executable's folder>/../share/hone/<kind>   (cmake --install)
//   3. the source tree hone was built from  (the build tree)
// Per-kind overrides ($HONE_MODELS, $HONE_RULES, $HONE_PROMPTS, $HONE_EXAMPLES,
// $HONE_CATALOGUE) are read by the modules that own the data, before this.
#pragma once

#include <string>
#include <vector>

namespace hone::support {

/// The folder of the running executable ("" when the system cannot say).
std::string executableDir();

/// The first of the folders above that exists for `kind` ("models", "rules", "prompts",
/// "catalogue", "examples/mappers", "examples/kernels"); the source tree's path when none does
/// (so that an error names a place).
std::string dataDir(const std::string &kind);

/// Every candidate folder for `kind`, in the order above, with whether it exists: for `hone paths`.
struct DataDirCandidate {
  std::string origin; // "HONE_DATA_DIR", "installed", "source tree"
  std::string path;
  bool exists = false;
};
std::vector<DataDirCandidate> dataDirCandidates(const std::string &kind);

} // namespace hone::support
