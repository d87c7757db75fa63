// The built-in agents: strategies of the engine that propose mappers. All
// are seeded and deterministic given the results they are told, which is
// what resuming a run relies on.
//   random   - uniform over the decision space (the paper's random baseline);
//   ensemble - an OpenTuner-style AUC bandit over differential evolution, a
//              genetic algorithm, hill climbing and Nelder-Mead on the encoded
//              space; scalar feedback only, failures score 0;
//   guided   - starts from a mapper (the expert's by default) and proposes
//              edits that each address a problem the evidence cites (the
//              profile's bottlenecks, the runtime's error, AutoGuide's
//              findings), keeping the best; no LLM.
#pragma once

#include "engine/Engine.h"
#include "mapping/Space.h"
#include "model/App.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hone::mapping {

inline const std::vector<std::string> kAgentNames = {"guided", "ensemble", "random"};

std::unique_ptr<engine::Strategy> makeRandomAgent(const Space &space, uint64_t seed);

std::unique_ptr<engine::Strategy> makeEnsembleAgent(const Space &space, uint64_t seed);

/// `start` is the mapper text to improve; `startLabel` says where it came from.
std::unique_ptr<engine::Strategy> makeGuidedAgent(const Space &space, const model::AppModel &app, std::string start,
                                                  std::string startLabel, uint64_t seed);

// ---- exposed for tests -----------------------------------------------------------

/// OpenTuner's area-under-the-curve credit: the technique's recent uses, in
/// order, weighted by position (later uses count more), normalised to [0, 1].
double aucCredit(const std::vector<bool> &improvedInOrder);

} // namespace hone::mapping
