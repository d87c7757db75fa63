// Front-end facade.
#include "dsl/Frontend.h"

#include "dsl/Parser.h"
#include "dsl/Sema.h"

namespace hone::dsl {

CheckedSource checkSource(support::SourceFile file) {
  CheckedSource out;
  out.file = std::make_unique<support::SourceFile>(std::move(file));
  out.diags = std::make_unique<support::DiagnosticEngine>(*out.file);
  out.program = parse(*out.file, *out.diags);
  check(out.program, *out.diags);
  out.diags->sortByLocation();
  return out;
}

} // namespace hone::dsl
