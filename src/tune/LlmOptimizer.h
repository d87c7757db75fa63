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
};

/// An optimizer name: "trace", "opro" or "K-shot" (K = 0..20). Returns K for K-shot, -1 otherwise.
support::Expected<int> parseOptimizer(const std::string &name);

/// Feedback as the model reads it: the execution output, then AutoGuide's explanations and
/// suggestions when the feedback level includes them.
std::string feedbackText(const nlohmann::json &feedback);

/// What the agent did on one request for a candidate: the store keeps it with the candidate.
struct LlmExchange {
  std::vector<llm::Message> messages; // the conversation, replies included
  llm::Usage usage;
  double cost = 0;
  int calls = 0;   // chat completions made (repairs included)
  int repairs = 0; // replies sent back (rejected, or already evaluated)
  bool cached = true; // every reply came from the response cache
  std::vector<std::string> finishReasons; // per reply: "stop", "length" (cut at the token limit), ...
  std::optional<int64_t> seed;
  std::string error; // the client's error when no candidate came back
  nlohmann::json toJson(const std::string &optimizer) const;
};

/// Why a candidate goes back to the model before it is proposed.
struct LlmRejection {
  std::string diagnostics; // the repair template's {{diagnostics}}
  std::string plain;       // sent instead when the repair template cannot be rendered
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
};

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
    llm::Template repair, duplicate;
    std::vector<llm::Message> messages; // system and user
  };
  support::Expected<Prepared> prepare() const;
  /// One request and its follow-ups (thread-safe: reads the agent's state, writes only `ex`).
  std::optional<engine::Candidate> converse(const Prepared &prepared, int64_t index, LlmExchange &ex) const;
  std::map<std::string, std::string> optimizerValues() const;
  std::pair<std::string, std::string> readReply(const std::string &content) const;

  std::unique_ptr<LlmCodec> codec_;
  std::string start_, startLabel_;
  llm::Client &client_;
  LlmOptimizerOptions options_;
  std::string name_, fence_; // the codec's, read once
  int shots_ = -1;           // K for K-shot, -1 for trace/opro
  bool started_ = false;
  int64_t requests_ = 0;
  struct Seen {
    std::string text, hash;
    double score = 0;
    bool ok = false;
    nlohmann::json feedback;
  };
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
