#include "autoguide/AutoGuide.h"

#include "support/DataPaths.h"
#include "support/JsonText.h"

#include "support/TomlReader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace hone::autoguide {

using support::Error;
using support::Expected;
using support::TableReader;

std::optional<FeedbackLevel> parseFeedbackLevel(std::string_view text) {
  if (text == "exec") return FeedbackLevel::Exec;
  if (text == "exec+explain") return FeedbackLevel::ExecExplain;
  if (text == "exec+explain+suggest") return FeedbackLevel::ExecExplainSuggest;
  return std::nullopt;
}

std::string_view toString(FeedbackLevel level) {
  switch (level) {
  case FeedbackLevel::Exec: return "exec";
  case FeedbackLevel::ExecExplain: return "exec+explain";
  case FeedbackLevel::ExecExplainSuggest: return "exec+explain+suggest";
  }
  return "?";
}

Expected<std::vector<Rule>> AutoGuide::parseRules(const std::string &path, const std::string &text) {
  return support::parseTomlDocument<std::vector<Rule>>(path, text, [&](TableReader &top) {
    std::vector<Rule> rules;
    for (TableReader &r : top.tables("rule")) {
      Rule rule;
      rule.source = fmt::format("{}:{}", path, r.line());
      rule.id = r.string("id");
      if (std::any_of(rules.begin(), rules.end(), [&](const Rule &o) { return o.id == rule.id; }))
        r.failAt("id", fmt::format("rule id '{}' is used twice", rule.id));
      rule.domain = r.string("domain", "*");
      rule.severity = r.string("severity", "info");
      if (rule.severity != "error" && rule.severity != "warning" && rule.severity != "info")
        r.failAt("severity", "must be \"error\", \"warning\" or \"info\"");
      std::string match = r.string("match", "substring");
      rule.pattern = r.string("pattern");
      if (rule.pattern.empty())
        r.failAt("pattern", "must not be empty");
      if (match == "substring") {
        rule.match = MatchKind::Substring;
      } else if (match == "regex") {
        rule.match = MatchKind::Regex;
        auto re = support::Regex::compile(rule.pattern);
        if (!re)
          r.failAt("pattern", fmt::format("not a valid regular expression: {}", re.error().message));
        rule.regex = std::move(*re);
      } else if (match == "bottleneck") {
        rule.match = MatchKind::Bottleneck;
      } else {
        r.failAt("match", "must be \"substring\", \"regex\" or \"bottleneck\"");
      }
      rule.explanation = r.string("explanation", "");
      rule.suggestion = r.string("suggestion", "");
      rule.transformations = r.strings("transformations", false);
      r.finish(); // a misspelt key first: it explains a missing one
      if (rule.explanation.empty() && rule.suggestion.empty())
        r.failHere("a rule needs an explanation or a suggestion");
      rules.push_back(std::move(rule));
    }
    top.finish();
    return rules;
  });
}

Expected<std::vector<Rule>> AutoGuide::loadRules(const std::string &path) {
  auto text = support::readTomlFile(path);
  if (!text)
    return text.error();
  return parseRules(path, *text);
}

Expected<AutoGuide> AutoGuide::withDefaults(const std::vector<std::string> &extra) {
  std::vector<std::string> files;
  // The shipped rules ($HONE_RULES replaces their folder), then the user's.
  const char *env = std::getenv("HONE_RULES");
  std::string folder = env && *env ? std::string(env) : support::dataDir("rules");
  std::error_code ec;
  for (const auto &entry : std::filesystem::directory_iterator(folder, ec))
    if (entry.path().extension() == ".toml")
      files.push_back(entry.path().string());
  if (ec)
    return support::Error{fmt::format("cannot read the rules folder {}: {}", folder, ec.message())};
  std::sort(files.begin(), files.end());
  files.insert(files.end(), extra.begin(), extra.end());
  std::vector<Rule> all;
  for (const auto &f : files) {
    auto rules = loadRules(f);
    if (!rules)
      return rules.error();
    for (auto &r : *rules)
      all.push_back(std::move(r));
  }
  return AutoGuide(std::move(all));
}

namespace {

// Replaces {name} placeholders; unknown ones stay as they are.
std::string fill(std::string text, const std::vector<std::pair<std::string, std::string>> &values) {
  for (const auto &[name, value] : values) {
    std::string key = "{" + name + "}";
    for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + value.size()))
      text.replace(at, key.size(), value);
  }
  return text;
}

// Output is not under hone's control: a rule reports its first matches, each with at most this much
// of its line (docs/DEVELOPING.md lists hone's limits).
constexpr size_t kMaxMatchesPerRule = 20;
constexpr size_t kMaxEvidence = 400;

// The line of `text` that holds [begin, end), cut to kMaxEvidence characters around the match.
std::string lineAround(const std::string &text, size_t begin, size_t end) {
  size_t from = text.rfind('\n', begin);
  from = from == std::string::npos ? 0 : from + 1;
  size_t to = text.find('\n', end);
  if (to == std::string::npos)
    to = text.size();
  bool cutFront = false, cutBack = false;
  if (to - from > kMaxEvidence) {
    size_t keep = kMaxEvidence / 2;
    if (begin > from + keep) {
      from = begin - keep;
      cutFront = true;
    }
    if (to > from + kMaxEvidence) {
      to = from + kMaxEvidence;
      cutBack = true;
    }
  }
  std::string line = text.substr(from, to - from);
  while (!line.empty() && (line.back() == '\r' || line.back() == ' '))
    line.pop_back();
  return (cutFront ? "..." : "") + line + (cutBack ? "..." : "");
}

} // namespace

std::vector<Finding> AutoGuide::interpret(const std::string &rawOutput, const support::Evidence &measured,
                                          const std::string &domain) const {
  std::vector<Finding> out;
  auto add = [&](const Rule &rule, std::string evidence, const std::vector<std::pair<std::string, std::string>> &vars,
                 std::optional<support::Bottleneck> subject = std::nullopt) {
    for (const auto &f : out)
      if (f.rule == rule.id && f.evidence == evidence)
        return;
    out.push_back({rule.id, rule.severity, std::move(evidence), fill(rule.explanation, vars), fill(rule.suggestion, vars),
                   rule.transformations, std::move(subject)});
  };
  for (const Rule &rule : rules_) {
    if (rule.domain != "*" && rule.domain != domain)
      continue;
    switch (rule.match) {
    case MatchKind::Substring:
      if (size_t at = rawOutput.find(rule.pattern); at != std::string::npos)
        add(rule, lineAround(rawOutput, at, at + rule.pattern.size()), {});
      break;
    case MatchKind::Regex:
      for (const support::RegexMatch &m : rule.regex->findAll(rawOutput, kMaxMatchesPerRule)) {
        std::vector<std::pair<std::string, std::string>> vars;
        for (size_t g = 0; g < m.groups.size(); ++g)
          vars.emplace_back(std::to_string(g), m.groups[g].size() > kMaxEvidence
                                                   ? m.groups[g].substr(0, kMaxEvidence) + "..."
                                                   : m.groups[g]);
        add(rule, lineAround(rawOutput, m.begin, m.end), vars);
      }
      break;
    case MatchKind::Bottleneck:
      for (const support::Bottleneck &b : measured.bottlenecks) {
        if (b.kind != rule.pattern)
          continue;
        std::optional<support::Bottleneck> subject; // kernel findings locate themselves and carry their numbers
        if (!b.numbers.empty())
          subject = b;
        add(rule, b.detail,
            {{"resource", b.subject}, {"detail", b.detail}, {"share", fmt::format("{:.0f}%", 100 * b.share)}},
            std::move(subject));
      }
      break;
    }
  }
  return out;
}

support::Feedback AutoGuide::feedback(const std::string &rawOutput, const support::Evidence &measured,
                                      const nlohmann::json &profile, const std::string &domain,
                                      FeedbackLevel level) const {
  support::Feedback out;
  out.given = true;
  constexpr size_t kExcerpt = 4000;
  out.execution = rawOutput.size() <= kExcerpt ? rawOutput : rawOutput.substr(rawOutput.size() - kExcerpt);
  // Where the time goes (a domain's measured breakdown), passed on as it is: evidence, not a finding.
  if (level != FeedbackLevel::Exec && profile.is_object()) {
    out.breakdown = profile.value("breakdown", nlohmann::json());
    out.cold = profile.value("cold", nlohmann::json());
  }
  for (Finding &f : interpret(rawOutput, measured, domain)) {
    if (level == FeedbackLevel::Exec)
      f.explanation.clear();
    if (level != FeedbackLevel::ExecExplainSuggest)
      f.suggestion.clear();
    out.findings.push_back(std::move(f)); // the action (transformations) is data for the agents at every level
  }
  return out;
}

} // namespace hone::autoguide
