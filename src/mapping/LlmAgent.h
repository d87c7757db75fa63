// The LLM agent: generative optimization of mappers with any OpenAI-compatible
// model, in the paper's two optimizer styles.
//   trace - the current best mapper and AutoGuide's feedback on it, with the
//           DSL's documentation, the machine and the application;
//   opro  - the best K (mapper, score) pairs in ascending order of score,
//           with the feedback on the best.
// A reply is read tolerantly (a JSON object, a fenced block, or the text);
// a mapper that does not check goes back with hone's diagnostics up to
// `repairs` times before it is proposed anyway (and fails as data).
#pragma once

#include "engine/Engine.h"
#include "llm/Client.h"
#include "mapping/Space.h"
#include "model/App.h"
#include "model/Machine.h"

#include <memory>
#include <string>
#include <vector>

namespace hone::mapping {

struct LlmAgentOptions {
  std::string optimizer = "trace"; // or "opro"
  int repairs = 2;
  size_t history = 5;                  // opro: pairs shown
  std::vector<std::string> promptDirs; // searched before the shipped prompts/
  std::string dslReference;            // the {{dsl}} text; empty: prompts/mapping/dsl.md
};

/// What the agent did on its last exchange with the model, for the store and tests.
struct LlmExchange {
  std::vector<llm::Message> messages; // the conversation, replies included
  llm::Usage usage;
  int repairs = 0;
  std::string error; // the client's error when no mapper came back
};

class LlmAgent : public engine::Strategy {
public:
  LlmAgent(const model::AppModel &app, const model::MachineModel &machine, std::string start, std::string startLabel,
           llm::Client &client, LlmAgentOptions options);
  std::vector<engine::Candidate> propose(size_t count) override;
  void notify(const std::vector<engine::Step> &steps) override;
  const std::vector<LlmExchange> &exchanges() const { return exchanges_; }

private:
  std::optional<engine::Candidate> ask();
  std::string appDescription() const;
  std::string machineDescription() const;

  const model::AppModel &app_;
  const model::MachineModel &machine_;
  std::string start_, startLabel_;
  llm::Client &client_;
  LlmAgentOptions options_;
  bool started_ = false;
  struct Seen {
    std::string text, hash;
    double score = 0;
    bool ok = false;
    nlohmann::json feedback;
  };
  std::vector<Seen> seen_;
  std::optional<size_t> best_;
  std::vector<LlmExchange> exchanges_;
};

} // namespace hone::mapping
