// Checks a policy's task and region names against an application model:
// names the app does not have are errors with a did-you-mean note (a typo
// in a task name silently leaves the task to the defaults otherwise).
#pragma once

#include "dsl/Ast.h"
#include "model/App.h"
#include "support/Diagnostics.h"

namespace hone::sim {

/// Adds a diagnostic to `diags` for every unknown task or region name and
/// every region index past the arguments of the tasks it can apply to.
void checkAgainstApp(const dsl::Program &policy, const model::AppModel &app, support::DiagnosticEngine &diags);

} // namespace hone::sim
