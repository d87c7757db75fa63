// Model-guided search for expensive evaluators (`hone tune --surrogate model`):
// the agent searches hone's performance model (thousands of simulations per
// second) and the real evaluator (a command that builds and runs the
// application) sees only the candidates the model predicts best. After each
// real evaluation the surrogate compares the real score with the prediction;
// where the model overestimated, the changes that candidate made (its lines
// the start does not have) are trusted less in later rankings, so the search
// turns to what the model predicts reliably. The cost-model idea of Halide's
// and TVM's autoschedulers, with hone's mechanistic model as the prior.
//
// Not allowed on the model evaluator: there the "real" evaluation is the model
// itself, so the surrogate would spend the budget's own oracle for free.
#pragma once

#include "engine/Engine.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace hone::mapping {

struct SurrogateOptions {
  size_t simulationsPerEvaluation = 200; // model evaluations the searcher makes per real one
};

/// `searchers` are driven on the model in turn, each until it runs dry: the agent the user chose
/// (guided, ensemble, random), then others that keep searching (the ensemble over the decision space);
/// `predict` scores a candidate on the model relative to the expert (1.0), 0 when it fails there;
/// `start` is the starting mapper.
std::unique_ptr<engine::Strategy> makeSurrogateAgent(std::vector<std::unique_ptr<engine::Strategy>> searchers,
                                                     std::function<engine::EvalResult(const engine::Candidate &)> predict,
                                                     std::string start, SurrogateOptions options = {});

} // namespace hone::mapping
