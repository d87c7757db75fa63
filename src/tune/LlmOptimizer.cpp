#include "tune/LlmOptimizer.h"

#include "support/Diff.h"
#include "support/JsonText.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <thread>

namespace hone::tune {

using nlohmann::json;

namespace {

std::string scoreText(bool ok, double score) { return ok ? fmt::format("{:.3f}", score) : "0 (failed)"; }

} // namespace

support::Expected<int> parseOptimizer(const std::string &name) {
  if (name == "trace" || name == "opro")
    return -1;
  constexpr std::string_view suffix = "-shot";
  if (name.size() > suffix.size() && name.ends_with(suffix)) {
    std::string k = name.substr(0, name.size() - suffix.size());
    if (k.size() <= 2 && std::all_of(k.begin(), k.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
        std::stoi(k) <= 20)
      return std::stoi(k);
  }
  return support::Error{fmt::format("'{}' is not one of trace, opro, K-shot (0-shot, 5-shot, ... up to 20-shot)",
                                    name)};
}

support::Expected<bool> checkMode(const std::string &mode) {
  if (mode == "single" || mode == "two-agent")
    return true;
  return support::Error{fmt::format("'{}' is not one of single, two-agent", mode)};
}

support::Expected<LlmOptimizerOptions> optimizerOptions(const TuneConfig &config, const llm::Client *client) {
  const LlmConfig &l = config.llm;
  if (auto k = parseOptimizer(l.optimizer); !k)
    return support::Error{"--optimizer: " + k.error().message};
  if (auto mode = checkMode(l.mode); !mode)
    return support::Error{"--llm-mode: " + mode.error().message};
  if (!client)
    return support::Error{"the llm agent has no client (internal error)"};
  LlmOptimizerOptions o;
  o.optimizer = l.optimizer;
  o.repairs = l.repairs;
  o.history = l.history;
  o.temperature = l.temperature;
  o.maxTokens = l.maxTokens;
  o.promptDirs = l.promptDirs;
  o.mode = l.mode;
  o.promptBudget = l.promptBudget;
  o.seed = static_cast<int64_t>(config.seed);
  return o;
}

std::map<std::string, std::string> LlmCodec::baseValues(const std::string &, const support::Feedback &) const { return {}; }

json LlmCodec::replySchema() const {
  std::string name = artifactName();
  return {{"type", "object"},
          {"properties", {{name, {{"type", "string"}}}, {"rationale", {{"type", "string"}}}}},
          {"required", {name, "rationale"}},
          {"additionalProperties", false}};
}

LlmReading LlmCodec::read(const std::string &content, const std::string &, const support::Feedback &) const {
  std::string name = artifactName();
  if (auto j = llm::extractJson(content); j && j->contains(name) && (*j)[name].is_string())
    return {(*j)[name].get<std::string>(), j->value("rationale", ""), json::object(), std::nullopt};
  if (auto block = llm::extractCodeBlock(content, fence()))
    return {*block, "", json::object(), std::nullopt};
  return {content, "", json::object(), std::nullopt};
}

support::Expected<std::pair<std::string, json>> LlmCodec::readInsight(const std::string &) const {
  return support::Error{fmt::format("the {} domain has no insight stage", promptFolder())};
}

std::string maskNumbers(const std::string &text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    auto digit = [&](size_t k) { return k < text.size() && text[k] >= '0' && text[k] <= '9'; };
    if (!digit(i)) {
      out += text[i++];
      continue;
    }
    auto exponent = [&](size_t k) { // e5, e-5, E+5
      return k < text.size() && (text[k] == 'e' || text[k] == 'E') &&
             (digit(k + 1) || (k + 1 < text.size() && (text[k + 1] == '-' || text[k + 1] == '+') && digit(k + 2)));
    };
    while (i < text.size()) {
      if (digit(i) || (text[i] == '.' && digit(i + 1)))
        ++i;
      else if (exponent(i))
        i += digit(i + 1) ? 1 : 2;
      else
        break;
    }
    out += '#';
  }
  return out;
}

namespace {

/// `text` on one line, cut to `max` characters.
std::string oneLine(const std::string &text, size_t max) {
  std::string out;
  for (char c : text) {
    if (out.size() >= max) {
      out += "...";
      break;
    }
    out += c == '\n' || c == '\r' || c == '\t' ? ' ' : c;
  }
  return out;
}

} // namespace

std::string LlmOptimizer::triedText(const std::vector<Seen> &seen, std::optional<size_t> best, size_t lines) {
  if (seen.empty())
    return "(nothing yet)\n";
  std::string out;
  size_t from = seen.size() > lines ? seen.size() - lines : 0;
  if (from > 0)
    out += fmt::format("({} earlier attempts not listed)\n", from);
  for (size_t i = from; i < seen.size(); ++i) {
    const Seen &s = seen[i];
    std::string why = s.rationale;
    if (why.rfind("llm (", 0) == 0) // "llm (trace): ..." -- the agent's prefix says nothing here
      if (size_t colon = why.find("): "); colon != std::string::npos)
        why = why.substr(colon + 3);
    if (i == 0 && s.parent.empty()) // the start's label: what it is, without how it is timed
      why = why.substr(0, why.find("; "));
    std::string result = s.ok ? "score " + scoreText(true, s.score)
                              : s.status + (s.error.empty() ? "" : ": " + oneLine(s.error, 160));
    // What the change did to the score of the candidate it changed: the decisions that moved it.
    auto parent = std::find_if(seen.begin(), seen.begin() + static_cast<long>(i),
                               [&](const Seen &p) { return !s.parent.empty() && p.hash == s.parent; });
    if (s.ok && parent != seen.begin() + static_cast<long>(i) && parent->ok && parent->score > 0)
      result += fmt::format(" ({:+.1f}% on step {})", 100 * (s.score / parent->score - 1),
                            static_cast<long>(parent - seen.begin()));
    out += fmt::format("- {}: {} -> {}{}\n", i, oneLine(why.empty() ? "(no rationale)" : why, 120),
                       result, best && *best == i ? " (the current best)" : "");
  }
  return out;
}

namespace {

/// A finding's identity across results: its rule and what it is about (a kernel finding's nest, a
/// mapper finding's task or region), so that the same problem is recognised in two results.
std::string findingKey(const support::Finding &f) {
  if (!f.subject)
    return f.rule;
  return fmt::format("{}|{}|{}|{}:{}", f.rule, f.subject->kind, f.subject->subject, f.subject->file, f.subject->line);
}
/// Whether a prompt shows the finding (as feedbackText does: not at the exec level).
bool shownFinding(const support::Finding &f) { return !f.explanation.empty() || !f.suggestion.empty(); }
bool hasFinding(const support::Feedback &feedback, const std::string &key) {
  return std::any_of(feedback.findings.begin(), feedback.findings.end(),
                     [&](const support::Finding &f) { return shownFinding(f) && findingKey(f) == key; });
}
std::string findingLine(const support::Finding &f) {
  return fmt::format("[{}] {}", f.severity.empty() ? "note" : f.severity,
                     oneLine(f.explanation.empty() ? f.evidence : f.explanation, 140));
}

} // namespace

std::string LlmOptimizer::evidenceText(const std::vector<Seen> &seen, std::optional<size_t> best, bool closed) {
  if (!best)
    return "(nothing has run successfully yet)\n";
  const Seen &b = seen[*best];
  if (!b.feedback.given)
    return "(the current best has no analysis)\n";
  if (!b.feedback.findings.empty() && std::none_of(b.feedback.findings.begin(), b.feedback.findings.end(), shownFinding))
    return "(the analysis is not shown at this feedback level)\n";
  constexpr size_t kMaxOpen = 8, kMaxClosed = 6, kMaxSteps = 3;
  // Each step's parent (the candidate it changed), and the current best's line of ancestors.
  std::map<std::string, size_t> byHash;
  for (size_t i = 0; i < seen.size(); ++i)
    byHash.emplace(seen[i].hash, i);
  auto parentOf = [&](size_t i) -> std::optional<size_t> {
    auto it = seen[i].parent.empty() ? byHash.end() : byHash.find(seen[i].parent);
    return it == byHash.end() || it->second == i ? std::nullopt : std::optional<size_t>(it->second);
  };
  std::vector<size_t> line{*best}; // the best, its parent, ... the start
  for (auto p = parentOf(*best); p && line.size() <= seen.size(); p = parentOf(*p))
    line.push_back(*p);
  auto stepsText = [&](const std::vector<size_t> &steps) {
    std::vector<std::string> parts;
    for (size_t k = 0; k < steps.size() && k < kMaxSteps; ++k)
      parts.push_back(fmt::format("{} (score {})", steps[k], scoreText(true, seen[steps[k]].score)));
    if (steps.size() > kMaxSteps)
      parts.push_back(fmt::format("{} more", steps.size() - kMaxSteps));
    return fmt::format("{}", fmt::join(parts, ", "));
  };
  // Open: what the current best's analysis still finds: since when its line of ancestors has had it,
  // and what the attempts made from a candidate that had it did (left it, or lost it without scoring
  // better than the best). A failed run shows its failure, not the finding: it is neither.
  std::string open;
  std::set<std::string> openKeys;
  size_t listed = 0;
  for (const support::Finding &f : b.feedback.findings) {
    std::string key = findingKey(f);
    if (!shownFinding(f) || !openKeys.insert(key).second)
      continue;
    if (++listed > kMaxOpen)
      continue;
    size_t since = *best;
    for (size_t a : line) { // from the best back: where the unbroken stretch that has it starts
      if (!hasFinding(seen[a].feedback, key))
        break;
      since = a;
    }
    std::vector<size_t> kept, gone;
    for (size_t i = 0; i < seen.size(); ++i) {
      auto p = parentOf(i);
      if (i == *best || !seen[i].ok || !seen[i].feedback.given || !p || !hasFinding(seen[*p].feedback, key))
        continue;
      (hasFinding(seen[i].feedback, key) ? kept : gone).push_back(i);
    }
    std::string what;
    if (kept.empty() && gone.empty())
      what = "no attempt has addressed it yet";
    else {
      if (!kept.empty())
        what = fmt::format("{} attempt{} left it", kept.size(), kept.size() == 1 ? "" : "s");
      if (!gone.empty())
        what += fmt::format("{}gone in step{} {}, none better than the best", what.empty() ? "" : "; ",
                            gone.size() == 1 ? "" : "s", stepsText(gone));
    }
    open += fmt::format("- {} (since step {}): {}\n", findingLine(f), since, what);
  }
  if (listed > kMaxOpen)
    open += fmt::format("- ({} more)\n", listed - kMaxOpen);
  std::string out = "Still open (the current best's analysis, step " + std::to_string(*best) + "):\n" +
                    (open.empty() ? "- nothing: no finding on the current best\n" : open);
  if (!closed)
    return out;
  // Closed: findings of an earlier best (the best as it was when each step ran) that the current
  // best no longer has: the decisions that moved the score answered them.
  std::string done;
  std::set<std::string> doneKeys;
  std::optional<size_t> running;
  listed = 0;
  for (size_t i = 0; i < seen.size() && i < *best; ++i) {
    if (!seen[i].ok || (running && seen[i].score <= seen[*running].score))
      continue;
    running = i;
    for (const support::Finding &f : seen[i].feedback.findings) {
      std::string key = findingKey(f);
      if (!shownFinding(f) || openKeys.count(key) || !doneKeys.insert(key).second)
        continue;
      if (++listed <= kMaxClosed)
        done += fmt::format("- {} (on step {}, then the best)\n", findingLine(f), i);
    }
  }
  if (listed > kMaxClosed)
    done += fmt::format("- ({} more)\n", listed - kMaxClosed);
  if (!done.empty())
    out += "Closed (gone from the current best):\n" + done;
  return out;
}

std::vector<std::string> LlmOptimizer::fitBudget(const llm::Template &body, std::map<std::string, std::string> &values,
                                                 const std::string &system, size_t budget) const {
  std::vector<std::string> trimmed;
  auto size = [&] {
    auto text = llm::render(body, values);
    return system.size() + (text ? text->size() : 0);
  };
  if (budget == 0 || size() <= budget)
    return trimmed;
  auto order = codec_->trimmings(values);
  // The optimizer's own: the last attempt to a line, the history to its last few, opro's pairs to the best two.
  if (auto it = values.find("last"); it != values.end() && !it->second.empty())
    order.push_back({"last", fmt::format("## Your last attempt, not better than the current {}\n(its code is left out "
                                         "to keep this prompt within its size budget; its result is in the list of "
                                         "attempts)\n",
                                         name_)});
  if (values.count("tried"))
    order.push_back({"tried", triedText(seen_, best_, 5)});
  if (values.count("evidence"))
    order.push_back({"evidence", evidenceText(seen_, best_, false)});
  if (auto it = values.find("history"); it != values.end() && !it->second.empty()) {
    size_t keep = it->second.size() / 3;
    order.push_back({"history", "(earlier variants left out to keep this prompt within its size budget)\n" +
                                    it->second.substr(it->second.size() - keep)});
  }
  for (auto &[name, shorter] : order) {
    if (size() <= budget)
      break;
    // A value the template does not show is not shortened (nor said to be).
    if (std::find(body.placeholders.begin(), body.placeholders.end(), name) == body.placeholders.end())
      continue;
    auto it = values.find(name);
    if (it == values.end() || shorter.size() >= it->second.size())
      continue;
    it->second = std::move(shorter);
    trimmed.push_back(name);
  }
  return trimmed;
}

std::string feedbackText(const support::Feedback &feedback) {
  if (!feedback.given)
    return "(no feedback)";
  std::string out = "Execution output:\n" + feedback.execution + "\n";
  std::string findings;
  for (const support::Finding &f : feedback.findings) {
    // The evidence alone is what the profile measured; it is shown as part of an
    // explanation, so that the exec level shows the execution output only.
    if (f.explanation.empty() && f.suggestion.empty())
      continue;
    findings += fmt::format("- [{}] {}\n", f.severity.empty() ? "note" : f.severity,
                            f.explanation.empty() ? f.evidence : f.explanation);
    if (!f.suggestion.empty())
      findings += fmt::format("  Suggestion: {}\n", f.suggestion);
  }
  if (!findings.empty())
    out += "\nAnalysis (AutoGuide):\n" + findings;
  return out;
}

json LlmExchange::toJson(const std::string &optimizer) const {
  json msgs = json::array();
  for (const auto &m : messages)
    msgs.push_back({{"role", m.role}, {"content", m.content}});
  json j{{"agent", "llm"},
         {"optimizer", optimizer},
         {"messages", msgs},
         {"usage", {{"prompt_tokens", usage.promptTokens}, {"completion_tokens", usage.completionTokens}}},
         {"cost", cost},
         {"calls", calls},
         {"repairs", repairs},
         {"cached", cached && calls > 0},
         {"finish_reasons", finishReasons}};
  if (seed)
    j["seed"] = *seed;
  if (promptBytes > 0)
    j["prompt_bytes"] = promptBytes;
  if (promptBudget > 0)
    j["prompt_budget"] = promptBudget;
  if (!trimmed.empty())
    j["trimmed"] = trimmed;
  if (!insight.empty()) {
    json stage = json::array();
    for (const auto &m : insight)
      stage.push_back({{"role", m.role}, {"content", m.content}});
    j["insight"] = {{"messages", stage}, {"choice", choice}};
  }
  if (!error.empty())
    j["error"] = error;
  return j;
}

LlmOptimizer::LlmOptimizer(std::unique_ptr<LlmCodec> codec, std::string start, std::string startLabel,
                           llm::Client &client, LlmOptimizerOptions options)
    : codec_(std::move(codec)), start_(std::move(start)), startLabel_(std::move(startLabel)), client_(client),
      options_(std::move(options)), name_(codec_->artifactName()), fence_(codec_->fence()),
      measured_(codec_->measuredValues()) {
  if (auto k = parseOptimizer(options_.optimizer))
    shots_ = *k;
}

std::map<std::string, std::string> LlmOptimizer::optimizerValues() const {
  const Seen *best = best_ ? &seen_[*best_] : (seen_.empty() ? nullptr : &seen_.front());
  std::map<std::string, std::string> values = {
      {name_, codec_->show(best ? best->text : start_)},
      {"score", best ? scoreText(best->ok, best->score) : "not run yet"},
      {"feedback", best ? feedbackText(best->feedback) : "(not run yet)"},
      {"last", ""},
      {"history", ""},
      {"examples", ""},
  };
  if (!seen_.empty() && best && &seen_.back() != best) {
    // The last attempt as its difference from the current best, which the prompt shows in full once;
    // whole when that is shorter (a rewrite).
    const Seen &last = seen_.back();
    std::string lastText = codec_->show(last.text);
    std::string diff = support::unifiedDiff(codec_->show(best->text), lastText, "current", "attempt");
    if (diff.find("\n@@") == std::string::npos) // the same code in other settings (a kernel's knobs): the candidates' own difference
      diff = support::unifiedDiff(best->text, last.text, "current", "attempt");
    values["last"] =
        diff.size() < lastText.size()
            ? fmt::format("## Your last attempt (score {}), not better than the current {}: how it differs from "
                          "it\n```diff\n{}```\nWhat happened when it ran:\n{}\n",
                          scoreText(last.ok, last.score), name_, diff, feedbackText(last.feedback))
            : fmt::format("## Your last attempt (score {}), not better than the current {}\n```{}\n{}\n```\n"
                          "What happened when it ran:\n{}\n",
                          scoreText(last.ok, last.score), name_, fence_, lastText, feedbackText(last.feedback));
  }
  values["tried"] = triedText(seen_, best_, kTriedLines);
  values["evidence"] = evidenceText(seen_, best_, true);
  if (options_.optimizer == "opro") {
    std::vector<const Seen *> ranked;
    for (const auto &s : seen_)
      ranked.push_back(&s);
    std::stable_sort(ranked.begin(), ranked.end(), [](const Seen *a, const Seen *b) { return a->score > b->score; });
    if (ranked.size() > options_.history)
      ranked.resize(options_.history);
    std::reverse(ranked.begin(), ranked.end()); // ascending, the best last
    std::string history;
    for (const Seen *s : ranked)
      history += fmt::format("score: {}\n```{}\n{}\n```\n\n", scoreText(s->ok, s->score), fence_, codec_->show(s->text));
    values["history"] = history;
  }
  if (shots_ > 0) {
    std::string examples;
    for (size_t i = 0; i < options_.examples.size() && i < static_cast<size_t>(shots_); ++i)
      examples += fmt::format("### Example {}: {}\n```{}\n{}\n```\n\n", i + 1, options_.examples[i].label, fence_,
                              codec_->show(options_.examples[i].text));
    values["examples"] = examples;
  }
  return values;
}

support::Expected<LlmOptimizer::Prepared> LlmOptimizer::prepare() const {
  const std::string folder = codec_->promptFolder();
  const char *bodyName = shots_ >= 0 ? "shots" : options_.optimizer == "opro" ? "opro" : "trace";
  auto system = llm::loadTemplate(folder, "system", options_.promptDirs);
  auto body = llm::loadTemplate(folder, bodyName, options_.promptDirs);
  auto repair = llm::loadTemplate(folder, "repair", options_.promptDirs);
  auto duplicate = llm::loadTemplate(folder, "duplicate", options_.promptDirs);
  for (const auto *t : {&system, &body, &repair, &duplicate})
    if (!*t)
      return t->error();
  Prepared p{*repair, *duplicate, *body, std::nullopt, system->text, {}, start_, support::Feedback{}, 0, {}};
  if (options_.mode == "two-agent") {
    if (!codec_->hasInsight())
      return support::Error{fmt::format("the {} domain has no two-agent mode", folder)};
    auto insight = llm::loadTemplate(folder, "insight", options_.promptDirs);
    if (!insight)
      return insight.error();
    p.insight = *insight;
  }
  auto values = codec_->promptValues();
  if (!values)
    return values.error();
  // The candidate a reply changes: the best so far (trace, opro), the start (K-shot samples).
  if (shots_ < 0 && (best_ || !seen_.empty())) {
    const Seen &base = best_ ? seen_[*best_] : seen_.front();
    p.base = base.text;
    p.feedback = base.feedback;
  }
  for (auto &[key, value] : codec_->baseValues(p.base, p.feedback))
    (*values)[key] = std::move(value);
  for (auto &[key, value] : optimizerValues())
    (*values)[key] = std::move(value); // the optimizer's own values win: a domain cannot shadow {{score}}
  (*values)["insight"] = codec_->singleCallInsight();
  p.values = std::move(*values);
  p.budget = options_.promptBudget > 0 ? options_.promptBudget : codec_->promptBudget();
  if (auto systemText = llm::render(*system, p.values))
    p.trimmed = fitBudget(p.body, p.values, *systemText, p.budget);
  // Render now, so that a template with a hole stops the agent before any request goes out.
  auto systemText = llm::render(*system, p.values);
  if (!systemText)
    return systemText.error();
  p.system = *systemText;
  for (const llm::Template *t : {&p.body, p.insight ? &*p.insight : nullptr})
    if (t)
      if (auto text = llm::render(*t, p.values); !text)
        return text.error();
  return p;
}

void LlmOptimizer::Conversation::add(const std::string &role, const std::string &content, bool measured) {
  messages.push_back({role, content});
  key.push_back({role, measured && role != "assistant" ? maskNumbers(content) : content});
}

std::map<std::string, std::string> LlmOptimizer::masked(std::map<std::string, std::string> values) const {
  for (const auto &name : measured_)
    if (auto it = values.find(name); it != values.end())
      it->second = "(measured)"; // left out of the key: a replay measures again, in other numbers and words
  return values;
}

bool LlmOptimizer::chatInto(llm::ChatRequest &request, Conversation &conversation, LlmExchange &ex) const {
  request.messages = conversation.messages;
  if (!measured_.empty())
    request.keyMessages = conversation.key;
  auto reply = client_.chat(request);
  if (!reply) {
    ex.error = reply.error().message;
    return false;
  }
  ++ex.calls;
  ex.cached = ex.cached && reply->cached;
  ex.usage.promptTokens += reply->usage.promptTokens;
  ex.usage.completionTokens += reply->usage.completionTokens;
  ex.cost += reply->cost;
  conversation.add("assistant", reply->content, false);
  ex.finishReasons.push_back(reply->finishReason);
  return true;
}

std::optional<std::string> LlmOptimizer::askInsight(const Prepared &prepared, llm::ChatRequest request,
                                                    LlmExchange &ex) const {
  Conversation c;
  bool measured = !measured_.empty();
  c.messages = {{"system", prepared.system}, {"user", *llm::render(*prepared.insight, prepared.values)}};
  c.key = {{"system", prepared.system}, {"user", *llm::render(*prepared.insight, masked(prepared.values))}};
  request.schema = codec_->insightSchema();
  std::optional<std::string> out;
  for (int round = 0;; ++round) {
    if (!chatInto(request, c, ex))
      break;
    auto read = codec_->readInsight(c.messages.back().content);
    if (read) {
      ex.choice = std::move(read->second);
      out = std::move(read->first);
      break;
    }
    if (round >= options_.repairs) { // the code stage chooses for itself, as in a single call
      ex.choice = {{"error", read.error().message}};
      out = codec_->singleCallInsight();
      break;
    }
    ++ex.repairs;
    c.add("user",
          fmt::format("Your reply could not be read: {}\nReply with one JSON object as asked above.",
                      read.error().message),
          measured);
  }
  ex.insight = std::move(c.messages);
  return out;
}

std::optional<engine::Candidate> LlmOptimizer::converse(const Prepared &prepared, int64_t index,
                                                        LlmExchange &ex) const {
  llm::ChatRequest request;
  request.temperature = options_.temperature;
  request.maxTokens = options_.maxTokens;
  if (options_.seed)
    ex.seed = request.seed = *options_.seed + index;
  request.format = llm::Format::JsonSchema;
  std::map<std::string, std::string> values = prepared.values;
  if (prepared.insight) { // (values["insight"] is the insight stage's reading: not a measurement)
    auto insight = askInsight(prepared, request, ex);
    if (!insight)
      return std::nullopt;
    values["insight"] = *insight;
  }
  bool measured = !measured_.empty();
  Conversation talk;
  talk.messages = {{"system", prepared.system}, {"user", *llm::render(prepared.body, values)}};
  talk.key = {{"system", prepared.system}, {"user", *llm::render(prepared.body, masked(values))}};
  ex.promptBytes = prepared.system.size() + talk.messages[1].content.size();
  ex.promptBudget = prepared.budget;
  ex.trimmed = prepared.trimmed;
  request.schema = codec_->replySchema();
  LlmReading reading;
  for (int round = 0;; ++round) {
    bool answered = chatInto(request, talk, ex);
    ex.messages = talk.messages;
    if (!answered)
      return std::nullopt;
    reading = codec_->read(ex.messages.back().content, prepared.base, prepared.feedback);
    std::optional<std::string> followUp;
    std::optional<LlmRejection> rejected = reading.rejection;
    if (!rejected)
      rejected = codec_->check(reading.artifact);
    if (rejected) {
      auto fix = llm::render(prepared.repair, {{"diagnostics", rejected->diagnostics}});
      followUp = fix ? *fix : rejected->plain;
      if (ex.finishReasons.back() == "length")
        *followUp = fmt::format("Your reply was cut off at the token limit before the {0} was complete; reply with a "
                                "shorter complete {0} (no explanations inside it).\n\n",
                                name_) +
                    *followUp;
    } else if (std::string hash = engine::contentHash(reading.artifact);
               seenByHash_.count(hash) || pending_.count(hash)) {
      std::string earlier = "is being evaluated";
      if (auto it = seenByHash_.find(hash); it != seenByHash_.end())
        earlier = "scored " + scoreText(seen_[it->second].ok, seen_[it->second].score);
      auto again = llm::render(prepared.duplicate, {{"earlier", earlier}});
      followUp = again ? *again : fmt::format("This {} was already evaluated; write a different one.", name_);
    }
    if (!followUp || round >= options_.repairs)
      break;
    ++ex.repairs;
    talk.add("user", *followUp, measured);
  }
  std::string why = reading.rationale.empty() ? "no rationale given" : reading.rationale;
  const Seen *best = best_ ? &seen_[*best_] : nullptr;
  // A reply that is no candidate at all is recorded as what the model said, refused with the reason.
  bool refused = reading.rejection.has_value();
  engine::Candidate c = engine::Candidate::make(refused && reading.artifact.empty() ? ex.messages.back().content
                                                                                   : reading.artifact,
                                                shots_ < 0 && best ? best->hash : std::string(),
                                                fmt::format("llm ({}): {}", options_.optimizer, why));
  if (refused)
    c.refusal = reading.rejection->diagnostics.empty() ? reading.rejection->plain : reading.rejection->diagnostics;
  c.notes = ex.toJson(options_.optimizer);
  if (options_.mode != "single")
    c.notes["mode"] = options_.mode;
  for (auto &[key, value] : reading.notes.items())
    c.notes[key] = value;
  return c;
}

std::vector<engine::Candidate> LlmOptimizer::propose(size_t count) {
  std::vector<engine::Candidate> out;
  if (!started_) {
    started_ = true;
    // K-shot samples start from nothing (the ablation's point); trace and opro improve a start.
    if (shots_ < 0) {
      out.push_back(engine::Candidate::make(start_, {}, "the starting point: " + startLabel_));
      pending_.insert(out.back().hash);
    }
  }
  if (out.size() >= count)
    return out;
  if (repeats_ >= kMaxRepeats) {
    stopReason_ = fmt::format("the LLM agent stopped: the model proposed {}s already tried {} times in a row", name_,
                              repeats_);
    return out;
  }
  auto prepared = prepare();
  if (!prepared) {
    stopReason_ = "the LLM agent stopped: " + prepared.error().message;
    return out;
  }
  // The batch's requests share one prompt and differ in their seed; they go out together (the
  // client bounds how many are in flight) and come back in order, so a replay sees the same batch.
  size_t want = count - out.size();
  std::vector<LlmExchange> exchanges(want);
  std::vector<std::optional<engine::Candidate>> got(want);
  auto one = [&](size_t i) { got[i] = converse(*prepared, requests_ + static_cast<int64_t>(i), exchanges[i]); };
  if (want == 1) {
    one(0);
  } else {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < want; ++i)
      threads.emplace_back(one, i);
    for (auto &t : threads)
      t.join();
  }
  requests_ += static_cast<int64_t>(want);
  for (size_t i = 0; i < want; ++i) {
    if (!got[i]) {
      // The model cannot be asked (budget, network): the run ends when no request of a batch gets through.
      stopReason_ = "the LLM agent stopped: " + exchanges[i].error;
    } else {
      repeats_ = seenByHash_.count(got[i]->hash) || pending_.count(got[i]->hash) ? repeats_ + 1 : 0;
      pending_.insert(got[i]->hash);
      out.push_back(std::move(*got[i]));
    }
    exchanges_.push_back(std::move(exchanges[i]));
  }
  return out;
}

void LlmOptimizer::notify(const std::vector<engine::Step> &steps) {
  for (const auto &s : steps) {
    pending_.erase(s.candidate.hash);
    if (seenByHash_.count(s.candidate.hash))
      continue; // a repeat: its result is the earlier one's
    seenByHash_[s.candidate.hash] = seen_.size();
    seen_.push_back({s.candidate.artifact, s.candidate.hash, s.result.ok() ? s.result.score : 0.0, s.result.ok(),
                     s.feedback, s.candidate.rationale, std::string(engine::toString(s.result.status)), s.result.error,
                     s.candidate.parent});
    if (s.result.ok() && (!best_ || s.result.score > seen_[*best_].score))
      best_ = seen_.size() - 1;
  }
}

} // namespace hone::tune
