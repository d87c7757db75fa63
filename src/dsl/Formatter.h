// Formatter: prints a policy in canonical form. Comments are kept (own-line
// comments before the statement that follows them, end-of-line comments after
// their statement), runs of blank lines collapse to one, and expressions get
// exactly the parentheses that precedence requires. Formatting is idempotent
// and the result parses to the same AST.
#pragma once

#include "dsl/Ast.h"

#include <string>

namespace hone::dsl {

/// Canonical text of `program`. Call only on programs that parsed without errors.
std::string format(const Program &program);

/// Canonical text of one expression (used by diagnostics and the formatter).
std::string formatExpr(const Expr &expr);

} // namespace hone::dsl
