// Helpers shared by the tests: run the front end on a string, read files of
// the source tree.
#pragma once

#include "dsl/Frontend.h"
#include "support/Diagnostics.h"

#include <fstream>
#include <sstream>
#include <string>

namespace hone::test {

inline dsl::CheckedSource checkText(const std::string &text, const std::string &name = "test.map") {
  return dsl::checkSource(support::SourceFile(name, text));
}

/// All diagnostics as text, for failure messages.
inline std::string diagText(const dsl::CheckedSource &c) {
  return support::renderText(*c.file, c.diags->diagnostics());
}

inline std::string sourcePath(const std::string &relative) { return std::string(HONE_SOURCE_DIR) + "/" + relative; }

inline std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline const std::vector<std::string> kExampleApps = {"circuit", "stencil", "pennant",   "cannon", "summa",
                                                      "pumma",   "johnson", "solomonik", "cosma"};

} // namespace hone::test
