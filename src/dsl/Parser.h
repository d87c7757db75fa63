// Parser: recursive descent over the token stream with panic-mode recovery,
// so one run reports every independent syntax error. Each parse method names
// its grammar production in a comment (docs/DSL.md has the whole grammar).
#pragma once

#include "dsl/Ast.h"
#include "support/Diagnostics.h"

namespace hone::dsl {

/// Lexes and parses `file`. Statements that fail to parse are reported and
/// left out of the result; everything else is kept.
Program parse(const support::SourceFile &file, support::DiagnosticEngine &diags);

} // namespace hone::dsl
