// libFuzzer target over the DSL front end: parse + check + fmt, and for
// programs that check cleanly, the formatter's contract (the output parses,
// means the same, and formats to itself), the C++ compiler, and a bounded
// run of the interpreter. Any crash, sanitizer report or failed HONE_CHECK is a bug.
#include "dsl/Formatter.h"
#include "dsl/Frontend.h"
#include "dsl/Interpreter.h"
#include "legion/Compiler.h"
#include "support/Check.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 64 * 1024)
    return 0;
  std::string text(reinterpret_cast<const char *>(data), size);
  auto checked = hone::dsl::checkSource(hone::support::SourceFile("fuzz.map", text));
  (void)hone::support::renderText(*checked.file, checked.diags->diagnostics());
  if (!checked.ok()) {
    // `hone check --fix`: applying the fix-its must give text the front end handles.
    size_t applied = 0;
    std::string fixed = hone::support::applyFixIts(*checked.file, checked.diags->diagnostics(), &applied);
    if (applied > 0)
      (void)hone::dsl::checkSource(hone::support::SourceFile("fuzz-fixed.map", fixed));
    return 0;
  }

  std::string once = hone::dsl::format(checked.program);
  auto again = hone::dsl::checkSource(hone::support::SourceFile("fuzz-fmt.map", once));
  HONE_CHECK(again.ok(), "formatted program does not check");
  HONE_CHECK(hone::dsl::format(again.program) == once, "fmt is not idempotent");
  HONE_CHECK(hone::dsl::dumpAst(checked.program, false) == hone::dsl::dumpAst(again.program, false),
             "fmt changed the meaning");

  // The compiler accepts every checked program.
  hone::legion::CompileOptions options;
  options.className = "FuzzMapper";
  options.sourceName = "fuzz.map";
  HONE_CHECK(!hone::legion::compileToCpp(checked.program, options).empty(), "empty C++ output");

  // Evaluate globals and every placement function on a few points.
  hone::dsl::Interpreter interp(checked.program, *hone::dsl::MachineShape::parse("nodes=2,gpus=4,cpus=2"));
  if (!interp.initialize())
    return 0;
  for (const auto &s : checked.program.stmts) {
    auto m = s.as<hone::dsl::TaskMapStmt>();
    if (!m)
      continue;
    const auto *f = checked.program.findFunction(m->function.text);
    if (!f)
      continue;
    for (int64_t i = 0; i < 4; ++i) {
      hone::dsl::TaskInfo task;
      task.name = "fuzz";
      task.indexLaunch = !m->single;
      task.ipoint = {i, 1};
      task.ispace = {4, 2};
      task.processor = hone::dsl::Point2{1, 1};
      auto parent = std::make_shared<hone::dsl::TaskInfo>(task);
      parent->indexLaunch = false;
      task.parent = parent;
      (void)interp.place(*f, task);
    }
  }
  return 0;
}
