// The export formats of a stored run (`hone export`, `hone show --step --json`): a step with what
// its agent saw and changed, and a line of the optimization corpus Optimas releases.
#pragma once

#include "store/Store.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <vector>

namespace hone::report {

/// Step `i` of `steps` as `hone export --jsonl` writes it: the run, the step, the diagnostics its agent
/// saw (its parent's feedback), the change from its parent as a unified diff, the rationale, the
/// candidate under the run's word for it, the result, its feedback and the agent's notes.
nlohmann::json stepJson(const store::RunInfo &run, const std::vector<store::StepRecord> &steps, size_t i);

/// Step `i` as a line of the optimization corpus (docs/corpus.schema.json, `hone.corpus/1`).
nlohmann::json corpusJson(const store::RunInfo &run, const std::vector<store::StepRecord> &steps, size_t i);

} // namespace hone::report
