// The LLM optimizer core, domain-neutral: generative optimization of any text
// candidate (a mapper, a kernel's source) with an OpenAI-compatible model, in
// the paper's optimizer styles.
//   trace  - the current best candidate and AutoGuide's feedback on it (and on
//            the last attempt, when that was not the best), with the domain's
//            reference material;
//   opro   - the best K (candidate, score) pairs in ascending order of score,
//            with the feedback on the best;
//   K-shot - (0-shot, 5-shot, ...) no feedback and no history: every request
//            is an independent sample from the instruction, the reference and
//            K examples.
// A reply is read tolerantly (a JSON object, a fenced block, or the text); a
// candidate the domain rejects, or one already evaluated, goes back with the
// domain's diagnostics (or its score) up to `repairs` times before it is
// proposed anyway (and fails, or is answered from memory, as data). Every
// candidate carries the conversation that made it, with tokens and cost, in its
// notes. A batch's requests go out together and come back in order.
//
// What a domain supplies is an LlmCodec: the prompt folder, the candidate's name
// and fence, the domain's prompt values, and the check that sends a candidate
// back for repair. Budgets, retries and the response cache are the client's.
#pragma once

#include "engine/Engine.h"
#include "llm/Client.h"
#include "llm/Prompt.h"
#include "tune/Config.h"
#include "support/Expected.h"

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace hone::tune {

struct LlmExample {
  std::string label; // what it is, e.g. "the expert mapper of stencil" (no paths: prompts are the same anywhere)
  std::string text;
};

struct LlmOptimizerOptions {
  std::string optimizer = "trace"; // trace, opro, or K-shot
  int repairs = 2;
  size_t history = 5;                  // opro: pairs shown
  std::vector<std::string> promptDirs; // searched before the shipped prompts/
  std::vector<LlmExample> examples;    // K-shot: the first K are shown
  double temperature = 0.7;
  int maxTokens = 0; // per reply; 0: the server's default
  std::optional<int64_t> seed = 1; // sampling seed of the first request; request i sends seed + i
  std::string mode = "single";     // single (one request per candidate) or two-agent (insight, then code)
  size_t promptBudget = 0;         // bytes of the system and first user message at most; 0: the codec's
};

/// A mode name: "single" or "two-agent".
support::Expected<bool> checkMode(const std::string &mode);

/// The optimizer's options from a run's configuration (its LLM settings, its seed); an error names
/// what is wrong (--optimizer, --llm-mode, no client). A domain adds its own limits and values.
support::Expected<LlmOptimizerOptions> optimizerOptions(const TuneConfig &config, const llm::Client *client);

/// An optimizer name: "trace", "opro" or "K-shot" (K = 0..20). Returns K for K-shot, -1 otherwise.
support::Expected<int> parseOptimizer(const std::string &name);

/// Feedback as the model reads it: the execution output, then AutoGuide's explanations and
/// suggestions when the feedback level includes them.
std::string feedbackText(const support::Feedback &feedback);

/// What the agent did on one request for a candidate: the store keeps it with the candidate.
struct LlmExchange {
  std::vector<llm::Message> messages; // the conversation, replies included
  std::vector<llm::Message> insight;  // two-agent mode: the insight stage's conversation
  nlohmann::json choice;              // two-agent mode: what the insight stage chose (the codec's notes)
  llm::Usage usage;
  double cost = 0;
  int calls = 0;   // chat completions made (repairs included)
  int repairs = 0; // replies sent back (rejected, or already evaluated)
  bool cached = true; // every reply came from the response cache
  std::vector<std::string> finishReasons; // per reply: "stop", "length" (cut at the token limit), ...
  std::optional<int64_t> seed;
  std::string error; // the client's error when no candidate came back
  size_t promptBytes = 0, promptBudget = 0; // the first request's system and user message; the budget (0: none)
  std::vector<std::string> trimmed;         // the values shortened to keep within the budget, in order
  nlohmann::json toJson(const std::string &optimizer) const;
};

/// Why a candidate goes back to the model before it is proposed.
struct LlmRejection {
  std::string diagnostics; // the repair template's {{diagnostics}}
  std::string plain;       // sent instead when the repair template cannot be rendered
};

/// A reply as the domain reads it.
struct LlmReading {
  std::string artifact; // the candidate; with a rejection it may be empty (the reply is not a candidate)
  std::string rationale;
  nlohmann::json notes = nlohmann::json::object(); // recorded with the candidate (claims, alignment)
  /// The reply cannot become a candidate (a diff that does not apply, an edit of a protected file):
  /// sent back for repair; when the repairs are used up the reply is recorded as refused.
  std::optional<LlmRejection> rejection;
};

/// The domain's side of the optimizer.
class LlmCodec {
public:
  virtual ~LlmCodec() = default;
  /// The prompt folder under prompts/ (system, trace, opro, shots, repair, duplicate .md).
  virtual std::string promptFolder() const = 0;
  /// The candidate's name in prompts, replies and messages ("mapper"): the {{mapper}} value and the
  /// reply's "mapper" field.
  virtual std::string artifactName() const = 0;
  /// The info string of the fenced blocks that show a candidate ("dsl").
  virtual std::string fence() const = 0;
  /// The domain's values for the templates ({{app}}, {{machine}}, ...); an error stops the agent.
  virtual support::Expected<std::map<std::string, std::string>> promptValues() const = 0;
  /// Why the candidate cannot be proposed as it is, or nullopt (thread-safe).
  virtual std::optional<LlmRejection> check(const std::string &artifact) const = 0;

  /// The candidate as the model reads it (the current one, the history, examples); default: itself.
  virtual std::string show(const std::string &artifact) const { return artifact; }
  /// Template values of the candidate being improved and of its feedback (a kernel's files and
  /// diagnostics); default: none.
  virtual std::map<std::string, std::string> baseValues(const std::string &base,
                                                        const support::Feedback &baseFeedback) const;
  /// The reply's JSON schema (structured output); default: {<artifactName>: string, rationale: string}.
  virtual nlohmann::json replySchema() const;
  /// Reads a reply into a candidate made from `base`; default: the <artifactName> field of a JSON
  /// object, else a fenced block, else the whole text (thread-safe).
  virtual LlmReading read(const std::string &content, const std::string &base,
                          const support::Feedback &baseFeedback) const;

  /// Two-agent mode (an insight stage chooses what to change, a code stage writes it): whether the
  /// domain has one (prompts <folder>/insight.md), the insight reply's schema, and its reading: the
  /// text the code prompt shows as {{insight}} and the notes recorded; an error goes back to the model.
  virtual bool hasInsight() const { return false; }
  virtual nlohmann::json insightSchema() const { return nlohmann::json::object(); }
  virtual support::Expected<std::pair<std::string, nlohmann::json>> readInsight(const std::string &content) const;
  /// The {{insight}} value of a single-call prompt (one request chooses and writes); default: empty.
  virtual std::string singleCallInsight() const { return {}; }
  /// The template values that carry measurements (times, scores, what a timing said): they are left
  /// out of the cache key (and numbers are masked in follow-ups), so that a replay, which measures
  /// again, finds the replies. Default: none (a deterministic evaluator; the prompt itself is the key).
  virtual std::set<std::string> measuredValues() const { return {}; }
  /// The prompt's size budget in bytes (system and first user message) when the user gives none; 0: none.
  virtual size_t promptBudget() const { return 0; }
  /// What to shorten, in order, while a prompt is over its budget: a template value and its shorter
  /// form, computed from the values as rendered (the optimizer's own, "last", "tried" and "history",
  /// come after the codec's). Default: nothing.
  virtual std::vector<std::pair<std::string, std::string>>
  trimmings(const std::map<std::string, std::string> &values) const {
    (void)values;
    return {};
  }
};

/// `text` with every number masked ("1.93x in 0.071 s" -> "#x in # s"): the cache key's view of a
/// follow-up that cites a measurement ("it scored 1.93x").
std::string maskNumbers(const std::string &text);

class LlmOptimizer : public engine::Strategy {
public:
  LlmOptimizer(std::unique_ptr<LlmCodec> codec, std::string start, std::string startLabel, llm::Client &client,
               LlmOptimizerOptions options);
  std::vector<engine::Candidate> propose(size_t count) override;
  void notify(const std::vector<engine::Step> &steps) override;
  std::string stopReason() const override { return stopReason_; }
  const std::vector<LlmExchange> &exchanges() const { return exchanges_; }

private:
  struct Prepared {
    llm::Template repair, duplicate, body;
    std::optional<llm::Template> insight; // two-agent mode
    std::string system;
    std::map<std::string, std::string> values;
    std::string base;        // the candidate the reply changes
    support::Feedback feedback; // and its feedback
    size_t budget = 0;       // bytes; 0: none
    std::vector<std::string> trimmed; // values shortened to fit the budget
  };
  support::Expected<Prepared> prepare() const;
  /// One request and its follow-ups (thread-safe: reads the agent's state, writes only `ex`).
  std::optional<engine::Candidate> converse(const Prepared &prepared, int64_t index, LlmExchange &ex) const;
  std::map<std::string, std::string> optimizerValues() const;
  /// Two-agent mode: the insight stage; the {{insight}} text, or nullopt when no choice came back.
  std::optional<std::string> askInsight(const Prepared &prepared, llm::ChatRequest request, LlmExchange &ex) const;
  /// One chat completion on `conversation` (with its masked twin as the cache key when the domain
  /// measures); the reply is appended to both.
  struct Conversation {
    std::vector<llm::Message> messages, key;
    void add(const std::string &role, const std::string &content, bool measured);
  };
  bool chatInto(llm::ChatRequest &request, Conversation &conversation, LlmExchange &ex) const;
  std::map<std::string, std::string> masked(std::map<std::string, std::string> values) const;

  std::unique_ptr<LlmCodec> codec_;
  std::string start_, startLabel_;
  llm::Client &client_;
  LlmOptimizerOptions options_;
  std::string name_, fence_;       // the codec's, read once
  std::set<std::string> measured_; // the codec's measured values
  int shots_ = -1;           // K for K-shot, -1 for trace/opro
  bool started_ = false;
  int64_t requests_ = 0;
  struct Seen {
    std::string text, hash;
    double score = 0;
    bool ok = false;
    support::Feedback feedback;
    std::string rationale, status, error; // for the one-line history ({{tried}})
    std::string parent;                   // the candidate it changed (its hash); "" for a start
  };
  /// Shortens values while the rendered prompt is over the budget; returns the names shortened.
  static std::string triedText(const std::vector<Seen> &seen, std::optional<size_t> best, size_t lines);
  static constexpr size_t kTriedLines = 20; // attempts listed one per line in {{tried}}
  /// {{evidence}}: the current best's findings still open (since which step; what the attempts since
  /// did to each: left it, or lost it without scoring better) and, with `closed`, the findings of
  /// earlier bests that the current best no longer has.
  static std::string evidenceText(const std::vector<Seen> &seen, std::optional<size_t> best, bool closed);
  std::vector<std::string> fitBudget(const llm::Template &body, std::map<std::string, std::string> &values,
                                     const std::string &system, size_t budget) const;
  std::vector<Seen> seen_;
  std::map<std::string, size_t> seenByHash_;
  std::set<std::string> pending_; // proposed, not yet reported
  std::optional<size_t> best_;
  std::vector<LlmExchange> exchanges_;
  std::string stopReason_;
  int repeats_ = 0; // consecutive candidates that repeated an earlier one despite the follow-ups
  static constexpr int kMaxRepeats = 3;
};

} // namespace hone::tune
