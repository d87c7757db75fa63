// AutoGuide: rules that turn raw output (compiler errors, runtime errors,
// metrics) and a profile into findings: what happened (evidence), why
// (explanation) and what to try (suggestion). Rules are data (rules/*.toml,
// format in docs/AUTOGUIDE.md); users add files with --rules. The feedback
// level selects what an agent sees, as in the paper's ablation.
#pragma once

#include "support/Evidence.h"
#include "support/Feedback.h"
#include "support/Expected.h"
#include "support/Regex.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace hone::autoguide {

enum class MatchKind { Substring, Regex, Bottleneck };
enum class FeedbackLevel { Exec, ExecExplain, ExecExplainSuggest };
std::optional<FeedbackLevel> parseFeedbackLevel(std::string_view text); // "exec", "exec+explain", "exec+explain+suggest"
std::string_view toString(FeedbackLevel level);

struct Rule {
  std::string id;
  std::string domain;   // "mapping", "kernel", or "*"
  std::string severity; // "error", "warning", "info"
  MatchKind match = MatchKind::Substring;
  std::string pattern;  // the text, the regex, or the bottleneck kind
  std::optional<support::Regex> regex; // for MatchKind::Regex (RE2 syntax)
  std::string explanation; // may be empty; templates: {0} {1} ... (regex groups),
  std::string suggestion;  // {resource} {detail} {share} (bottlenecks)
  std::string source;      // "file:line"
  // The action, machine-readable: catalogue transformations that address the finding
  // (kernel rules); agents execute them, prompts render them.
  std::vector<std::string> transformations;
};

/// A rule that fired, what it says and the bottleneck it explains (support/Feedback.h).
using support::Finding;

class AutoGuide {
public:
  /// The rules of one file; errors read "file:line:col: message".
  static support::Expected<std::vector<Rule>> parseRules(const std::string &path, const std::string &text);
  static support::Expected<std::vector<Rule>> loadRules(const std::string &path);
  /// The shipped rules (rules/*.toml of the source tree) plus `extra` files.
  static support::Expected<AutoGuide> withDefaults(const std::vector<std::string> &extra = {});

  explicit AutoGuide(std::vector<Rule> rules) : rules_(std::move(rules)) {}
  const std::vector<Rule> &rules() const { return rules_; }

  /// Every rule of `domain` (or "*") that matches, in rule order; a rule fires
  /// once per distinct evidence. Output rules read `rawOutput`; bottleneck rules
  /// the measured bottlenecks (by kind).
  std::vector<Finding> interpret(const std::string &rawOutput, const support::Evidence &measured,
                                 const std::string &domain) const;

  /// The feedback an agent sees: the raw output's excerpt and the findings, with explanations from
  /// exec+explain on and suggestions only at exec+explain+suggest; where the time goes (`profile`'s
  /// "breakdown" and "cold", when it has them) is passed on as it is from exec+explain on.
  support::Feedback feedback(const std::string &rawOutput, const support::Evidence &measured,
                          const nlohmann::json &profile, const std::string &domain, FeedbackLevel level) const;

private:
  std::vector<Rule> rules_;
};

} // namespace hone::autoguide
