// What an agent is told about a result, typed: AutoGuide's feedback (the raw output's excerpt, the
// rules that fired with their explanation, suggestion, action and the measured bottleneck each
// explains) and, passed through as the domain measured it, where the time went. Agents, prompts and
// reports read this; JSON only where a store keeps it or a user sees it (`toJson`, `readFeedback`).
#pragma once

#include "support/Evidence.h"
#include "support/Expected.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace hone::support {

/// One rule that fired on a result.
struct Finding {
  std::string rule;                         // the rule's id
  std::string severity;                     // "error", "warning", "info"
  std::string evidence;                     // the matched text or the bottleneck's sentence
  std::string explanation;                  // "" below the exec+explain level, or when the rule has none
  std::string suggestion;                   // "" below exec+explain+suggest, or when the rule has none
  std::vector<std::string> transformations; // the rule's action: the catalogue entries that address it
  /// The measured bottleneck it explains, when it came from one that cites numbers (a kernel finding
  /// locates itself and carries its numbers, share and the knob values it predicts to help).
  std::optional<Bottleneck> subject = std::nullopt;
  bool operator==(const Finding &) const = default;
};

/// Everything an agent is told about one result. Empty (no execution, no findings, not `given`): the
/// result had no feedback (a replayed step of a run stored without it).
struct Feedback {
  bool given = false;    // feedback was made for the result (at any level)
  std::string execution; // the raw output's excerpt
  std::vector<Finding> findings;
  /// Where the time goes, as the domain measured it (kernels: the loop nests' shares, `breakdown`,
  /// and the nests too cold to count, `cold`); null when the domain has none or the level is exec.
  nlohmann::json breakdown = nullptr, cold = nullptr;
  bool operator==(const Feedback &) const = default;
};

/// The JSON a store keeps and `hone show` prints: {"execution", "findings": [{rule, severity, evidence,
/// explanation?, suggestion?, transformations?, subject?}], "breakdown"?, "cold"?}; null when not given.
nlohmann::json toJson(const Feedback &f);
/// One finding as the feedback's JSON holds it: what was not said (an explanation below its level) is
/// not written.
nlohmann::json toJson(const Finding &f);
/// Feedback from its JSON (null: none given): an error naming the place when the whole is not feedback
/// ("feedback.execution: a string, not number"); a finding that is not one is left out, the others
/// kept, and said in `leftOut` with its place ("findings[1].rule: a string, not number"). Subjects
/// stored without their kind (before 2026-12-07) are read with an empty kind.
Expected<Feedback> readFeedback(const nlohmann::json &j, std::vector<std::string> *leftOut = nullptr);

} // namespace hone::support
