// The LLM agent: generative optimization of mappers with any OpenAI-compatible
// model, in the paper's optimizer styles.
//   trace  - the current best mapper and AutoGuide's feedback on it (and on
//            the last attempt, when that was not the best), with the DSL's
//            documentation, the machine and the application;
//   opro   - the best K (mapper, score) pairs in ascending order of score,
//            with the feedback on the best;
//   K-shot - (0-shot, 5-shot, ...) no feedback and no history: every request
//            is an independent sample from the instruction, the DSL, the
//            machine, the application and K example mappers of other apps.
// A reply is read tolerantly (a JSON object, a fenced block, or the text); a
// mapper that does not check, or one already evaluated, goes back with hone's
// diagnostics (or its score) up to `repairs` times before it is proposed
// anyway (and fails, or is answered from memory, as data). Every candidate
// carries the conversation that made it, with tokens and cost, in its notes.
#pragma once

#include "engine/Engine.h"
#include "llm/Client.h"
#include "llm/Prompt.h"
#include "mapping/Space.h"
#include "model/App.h"
#include "model/Machine.h"
#include "support/Expected.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace hone::mapping {

struct ExampleMapper {
  std::string label; // what it is, e.g. "the expert mapper of stencil" (no paths: prompts are the same anywhere)
  std::string text;
};

struct LlmAgentOptions {
  std::string optimizer = "trace"; // trace, opro, or K-shot
  int repairs = 2;
  size_t history = 5;                  // opro: pairs shown
  std::vector<std::string> promptDirs; // searched before the shipped prompts/
  std::string dslReference;            // the {{dsl}} text; empty: prompts/mapping/dsl.md
  std::vector<ExampleMapper> examples; // K-shot: the first K are shown
  double temperature = 0.7;
  int maxTokens = 0; // per reply; 0: the server's default
  std::optional<int64_t> seed = 1; // sampling seed of the first request; request i sends seed + i
  const model::Program *program = nullptr; // the instantiated app: region sizes and task counts for the prompt
};

/// An optimizer name: "trace", "opro" or "K-shot" (K = 0..20). Returns K for K-shot, -1 otherwise.
support::Expected<int> parseOptimizer(const std::string &name);

/// What the agent did on one request for a mapper: the store keeps it with the candidate.
struct LlmExchange {
  std::vector<llm::Message> messages; // the conversation, replies included
  llm::Usage usage;
  double cost = 0;
  int calls = 0;   // chat completions made (repairs included)
  int repairs = 0; // replies sent back (did not check, or already evaluated)
  bool cached = true; // every reply came from the response cache
  std::vector<std::string> finishReasons; // per reply: "stop", "length" (cut at the token limit), ...
  std::optional<int64_t> seed;
  std::string error; // the client's error when no mapper came back
  nlohmann::json toJson(const std::string &optimizer) const;
};

class LlmAgent : public engine::Strategy {
public:
  LlmAgent(const model::AppModel &app, const model::MachineModel &machine, std::string start, std::string startLabel,
           llm::Client &client, LlmAgentOptions options);
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
  std::string appDescription() const;
  std::string machineDescription() const;
  std::map<std::string, std::string> promptValues(const std::string &dsl) const;

  const model::AppModel &app_;
  const model::MachineModel &machine_;
  std::string start_, startLabel_;
  llm::Client &client_;
  LlmAgentOptions options_;
  int shots_ = -1; // K for K-shot, -1 for trace/opro
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

/// Feedback as the model reads it: the execution output, then AutoGuide's explanations and
/// suggestions when the feedback level includes them.
std::string feedbackText(const nlohmann::json &feedback);

} // namespace hone::mapping
