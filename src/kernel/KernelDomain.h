// The kernel domain of a tuning run: a kernel project (hone.toml), variants
// as knob values (and, for code agents, edited files), evaluated for real by
// KernelEvaluator, improved by the guided agent (knob edits that answer the
// diagnosis) and the search agents (random, ensemble) over the knob space.
// Registered with tune's registry by registerKernelDomain().
#pragma once

#include "engine/Engine.h"
#include "kernel/Diagnose.h"
#include "kernel/Manifest.h"
#include "support/Expected.h"
#include "tune/Domain.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace hone::kernel {

/// The kernel domain's options of a run (TuneConfig::options).
struct KernelOptions {
  std::string project;   // the folder of hone.toml (or the file)
  std::string workdir;   // candidates' folder; empty: <project>/.hone/candidates
  bool profile = true;   // profile and diagnose each new best
  std::string ncuReport; // an Nsight Compute CSV report to add to the diagnosis
  bool sourceTransforms = true; // hone's own source transformations of the nests (SourceKnobs.h)
  int finalRounds = 3; // the best against the compiler-only baseline, side by side, when written; 0: not
  /// What the run's project was when it started (projectFiles): a resume refuses the project changed.
  /// Filled in by the domain; empty in runs from before it was kept.
  std::map<std::string, std::string> projectFiles;

  nlohmann::json toJson() const;
  static support::Expected<KernelOptions> fromJson(const nlohmann::json &j);
};

/// The project as hone reads it: "hone.toml" and every source file's name -> a hash of its text.
std::map<std::string, std::string> projectFiles(const Manifest &m);

/// The knob space of a manifest, each knob's default first (the search agents' view).
class KnobSpace final : public tune::CategoricalSpace {
public:
  explicit KnobSpace(const Manifest &m);
  std::vector<size_t> sizes() const override;
  std::string render(const std::vector<int> &assignment) const override;
  /// The knob values of an assignment.
  KnobValues values(const std::vector<int> &assignment) const;

private:
  Manifest manifest_; // its plan realises source knobs as files
  std::vector<std::pair<std::string, std::vector<std::string>>> knobs_; // name, values (default first)
};

/// The guided agent of the kernel domain: from `start`, one knob edit per step that a
/// finding of the latest diagnosis calls for (through the catalogue's transformations and the
/// knobs' roles), citing it; then neighbouring values of every knob. Improvements are kept,
/// an edit that failed is not tried again, a transformation that made things worse twice is
/// set aside until the next improvement.
std::unique_ptr<engine::Strategy> makeGuidedKernelAgent(const Manifest &m, std::vector<Transformation> catalogue,
                                                        const std::string &start, const std::string &startLabel);

/// The domain's flags of `hone tune` (KernelFlags.cpp): --kernel chooses it.
std::unique_ptr<tune::DomainFlags> addKernelTuneFlags(CLI::App &cmd, const tune::CommonFlags &common);

/// The domain's name, decided here: runs record it, the CLI selects the domain by it.
inline constexpr const char *kDomainName = "kernel";
/// Adds the kernel domain and its guided agent to the registry.
void registerKernelDomain(tune::Registry &registry);

} // namespace hone::kernel
