// The mapping domain's agents: the guided agent (below), the LLM agent
// (LlmAgent.h), and the search agents every domain shares (tune/SearchAgents.h)
// on the mapping decision space.
//   guided   - starts from a mapper (the expert's by default) and proposes
//              edits that each address a problem the evidence cites (the
//              profile's bottlenecks, the runtime's error, AutoGuide's
//              findings), keeping the best; no LLM.
#pragma once

#include "engine/Engine.h"
#include "mapping/Space.h"
#include "model/App.h"
#include "tune/SearchAgents.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hone::mapping {

using tune::aucCredit;
using tune::makeEnsembleAgent;
using tune::makeRandomAgent;

/// `start` is the mapper text to improve; `startLabel` says where it came from.
std::unique_ptr<engine::Strategy> makeGuidedAgent(const Space &space, const model::AppModel &app, std::string start,
                                                  std::string startLabel, uint64_t seed);

} // namespace hone::mapping
