// Semantic checks of a parsed policy: names defined before use (with the
// runtime's scoping: top-level code runs in order, function bodies run at
// mapping time and see every global), placement functions and their
// signatures, call arity, print placeholders, conflicting duplicate statements.
#pragma once

#include "dsl/Ast.h"
#include "support/Diagnostics.h"

namespace hone::dsl {

/// Reports every semantic problem of `program` to `diags`.
void check(const Program &program, support::DiagnosticEngine &diags);

} // namespace hone::dsl
