// The built-in search agents that need nothing but a categorical space:
//   random   - uniform over the space (the papers' random baseline);
//   ensemble - an OpenTuner-style AUC bandit over differential evolution, a
//              genetic algorithm, hill climbing and Nelder-Mead on the encoded
//              space [0,1)^d; scalar feedback only, failures score 0.
// Both are seeded and deterministic given the results they are told, which is
// what resuming a run relies on.
#pragma once

#include "engine/Engine.h"
#include "tune/Domain.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace hone::tune {

/// Their names, as registered (registerSearchAgents).
inline constexpr const char *kRandomAgent = "random";
inline constexpr const char *kEnsembleAgent = "ensemble";

std::unique_ptr<engine::Strategy> makeRandomAgent(const CategoricalSpace &space, uint64_t seed);
std::unique_ptr<engine::Strategy> makeEnsembleAgent(const CategoricalSpace &space, uint64_t seed);

/// OpenTuner's area-under-the-curve credit: the technique's recent uses, in
/// order, weighted by position (later uses count more), normalised to [0, 1].
double aucCredit(const std::vector<bool> &improvedInOrder);

} // namespace hone::tune
