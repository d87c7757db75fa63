// Helpers shared by the tests: run the front end on a string, read files of
// the source tree.
#pragma once

#include "dsl/Frontend.h"
#include "support/Diagnostics.h"
#include "support/Feedback.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
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

/// Feedback from its stored JSON form (a test's literal; one that does not read ends the test binary).
inline support::Feedback feedbackOf(const nlohmann::json &j) {
  auto f = support::readFeedback(j);
  if (!f) {
    std::fprintf(stderr, "feedbackOf: %s\n", f.error().message.c_str());
    std::abort();
  }
  return std::move(*f);
}

inline std::string sourcePath(const std::string &relative) {
  std::string path = HONE_SOURCE_DIR;
  path += '/';
  path += relative;
  return path;
}

inline std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The apps with an expert mapper in examples/mappers (found by globbing, so a new one is covered
/// by every test that iterates over them), sorted.
inline std::vector<std::string> exampleApps() {
  std::vector<std::string> out;
  for (const auto &entry : std::filesystem::directory_iterator(sourcePath("examples/mappers")))
    if (entry.path().extension() == ".map")
      out.push_back(entry.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}
inline const std::vector<std::string> kExampleApps = exampleApps();

} // namespace hone::test
