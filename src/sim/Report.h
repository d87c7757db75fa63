// Reporting (internal to src/sim): turns an execution's raw record into the
// Result the rest of hone reads -- elapsed time (with the optional noise),
// throughput, per-processor, per-channel, per-memory and per-task statistics,
// and the bottlenecks, each with the numbers behind it and the thresholds of
// BottleneckThresholds.
#pragma once

#include "sim/Execution.h"

namespace hone::sim {

Result report(const Context &context, const Execution &execution, const Options &options,
              const BottleneckThresholds &thresholds = {});
Result failed(const Context &context, const Failure &failure);

} // namespace hone::sim
