// The LLM code agent of the kernel domain (the Optimas pipeline): the
// domain-neutral LLM optimizer (tune/LlmOptimizer.h) with the kernel's codec.
//   insight  - (two-agent mode) the profile's diagnostics and the catalogue ->
//              a ranked choice of transformations, each naming the diagnostics
//              it answers; in single mode the code request chooses itself;
//   code     - the editable files, the chosen transformation, the diagnostics
//              and the guardrails -> complete new files or a unified diff
//              (applied strictly to the current best), optionally knob values;
//   build    - a candidate that does not compile goes back with the compiler's
//              first errors, up to --repairs times;
//   validate, measure, profile - the kernel evaluator's (Evaluator.h).
// Guards before anything is built: edits of files the manifest does not let a
// variant change, diffs that do not apply and no-op (whitespace-only) changes
// are refused with the reason, and sent back for repair. Every candidate
// records the transformation and the diagnostics it claims to address, and
// whether its change touches the code those diagnostics point at (evidence
// alignment). Prompts: prompts/kernel/ (docs/LLM.md).
#pragma once

#include "kernel/Diagnose.h"
#include "kernel/Manifest.h"
#include "kernel/Runner.h"
#include "tune/LlmOptimizer.h"

#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <vector>

namespace hone::kernel {

/// A diagnostic as the model reads it: an id ("D1"), a location when the profile gives one.
struct ShownDiagnostic {
  std::string id, rule, text;
  std::string file; // project-relative; empty: not located
  int line = 0;
  std::vector<std::string> transformations;
};

/// The diagnostics of a feedback object that the model is shown, numbered D1, D2, ... (findings with
/// an explanation: none at the "exec" feedback level).
std::vector<ShownDiagnostic> shownDiagnostics(const support::Feedback &feedback);

/// The lines [first, last] (1-based) of the top-level block (a function) that holds `line` of a C,
/// C++ or CUDA source; the line alone when it lies outside every block.
std::pair<int, int> enclosingBlock(const std::string &source, int line);

class KernelCodec final : public tune::LlmCodec {
public:
  KernelCodec(const Manifest &manifest, std::vector<Transformation> catalogue, std::string checkDir,
              std::vector<std::string> promptDirs, std::string machine);

  std::string promptFolder() const override { return "kernel"; }
  std::string artifactName() const override { return "kernel"; }
  std::string fence() const override;
  support::Expected<std::map<std::string, std::string>> promptValues() const override;
  /// What the source model says of each nest (its loops, what is legal, why the rest is not), for the prompt.
  /// With the profile's breakdown, the nests it counts as cold (under kColdNest) are left out.
  std::string sourceModel(const nlohmann::json *breakdown = nullptr) const;
  static constexpr double kColdNest = Thresholds{}.coldShare; // the diagnosis's: one decision
  std::optional<tune::LlmRejection> check(const std::string &artifact) const override;
  std::string show(const std::string &artifact) const override;
  std::map<std::string, std::string> baseValues(const std::string &base, const support::Feedback &feedback) const override;
  nlohmann::json replySchema() const override;
  tune::LlmReading read(const std::string &content, const std::string &base,
                        const support::Feedback &baseFeedback) const override;
  bool hasInsight() const override { return true; }
  nlohmann::json insightSchema() const override;
  support::Expected<std::pair<std::string, nlohmann::json>> readInsight(const std::string &content) const override;
  std::string singleCallInsight() const override;
  /// Times, scores and profiles are measured again in a replay: left out of the cache key.
  /// The catalogue shown follows the diagnostics, and the attempts list their scores: both measured.
  std::set<std::string> measuredValues() const override {
    return {"score", "execution", "diagnostics", "feedback", "last", "history", "tried", "evidence", "catalogue"};
  }
  /// A real model reads a prompt of about this many bytes well (docs/LLM.md, "Prompt size").
  size_t promptBudget() const override { return kPromptBudget; }
  static constexpr size_t kPromptBudget = 15000;
  std::vector<std::pair<std::string, std::string>>
  trimmings(const std::map<std::string, std::string> &values) const override;

private:
  /// The contents of every editable file in `v` (its edits, else the project's).
  std::map<std::string, std::string> editableFiles(const Variant &v) const;
  const Transformation *transformation(const std::string &id) const;
  std::vector<Transformation> relevant() const; // the catalogue's entries for the project's target
  /// The catalogue as the prompt shows it: the entries in `named` in full (all when none is named),
  /// the others by id and name on one line.
  std::string catalogueText(const std::set<std::string> &named) const;
  /// Whether the change touches what the named diagnostics point at: edited lines in the block of a
  /// located one, any change for a whole-program one; a knob touches what it acts on (flags and the
  /// environment: all the code; a source knob: its nest; a define: the blocks that name it).
  nlohmann::json alignment(const std::vector<std::string> &addresses, const support::Feedback &baseFeedback,
                           const std::map<std::string, std::string> &before,
                           const std::map<std::string, std::string> &after, const KnobValues &knobsBefore = {},
                           const KnobValues &knobsAfter = {}) const;

  Manifest manifest_;
  std::vector<Transformation> catalogue_;
  std::string checkDir_;
  std::vector<std::string> promptDirs_;
  std::string machine_;
};

} // namespace hone::kernel
