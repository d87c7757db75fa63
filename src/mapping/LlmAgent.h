// The LLM mapper agent: the domain-neutral LLM optimizer (tune/LlmOptimizer.h)
// with the mapping domain's codec. The codec supplies the prompts of
// prompts/mapping/, the DSL reference, the machine and the application (its
// tasks, regions and, at the tuned problem size, region sizes and task counts),
// and sends a mapper that does not check back with hone's diagnostics.
#pragma once

#include "model/App.h"
#include "model/Machine.h"
#include "tune/LlmOptimizer.h"

#include <string>
#include <vector>

namespace hone::mapping {

using ExampleMapper = tune::LlmExample;
using tune::feedbackText;
using tune::LlmExchange;
using tune::parseOptimizer;

struct LlmAgentOptions : tune::LlmOptimizerOptions {
  std::string dslReference;                // the {{dsl}} text; empty: prompts/mapping/dsl.md
  const model::Program *program = nullptr; // the instantiated app: region sizes and task counts for the prompt
};

class LlmAgent : public tune::LlmOptimizer {
public:
  LlmAgent(const model::AppModel &app, const model::MachineModel &machine, std::string start, std::string startLabel,
           llm::Client &client, LlmAgentOptions options);
};

/// The mapping domain's side of the LLM optimizer (exposed for tests).
class MapperCodec : public tune::LlmCodec {
public:
  MapperCodec(const model::AppModel &app, const model::MachineModel &machine, const model::Program *program,
              std::string dslReference, std::vector<std::string> promptDirs)
      : app_(app), machine_(machine), program_(program), dslReference_(std::move(dslReference)),
        promptDirs_(std::move(promptDirs)) {}
  std::string promptFolder() const override { return "mapping"; }
  std::string artifactName() const override { return "mapper"; }
  std::string fence() const override { return "dsl"; }
  support::Expected<std::map<std::string, std::string>> promptValues() const override;
  std::optional<tune::LlmRejection> check(const std::string &artifact) const override;
  std::string appDescription() const;
  std::string machineDescription() const;

private:
  const model::AppModel &app_;
  const model::MachineModel &machine_;
  const model::Program *program_;
  std::string dslReference_;
  std::vector<std::string> promptDirs_;
};

} // namespace hone::mapping
