// The front end in one call: lex, parse and check a policy, keeping the
// source, the AST and the diagnostics together.
#pragma once

#include "dsl/Ast.h"
#include "support/Diagnostics.h"

#include <memory>

namespace hone::dsl {

struct CheckedSource {
  std::unique_ptr<support::SourceFile> file;
  std::unique_ptr<support::DiagnosticEngine> diags; // refers to *file
  Program program;

  bool ok() const { return !diags->hasErrors(); }
};

/// Parses and checks `file`; diagnostics are sorted by position. Semantic
/// checks run on whatever parsed, and stay quiet about names whose defining
/// statement had a syntax error, so one run shows every independent error.
CheckedSource checkSource(support::SourceFile file);

} // namespace hone::dsl
