// Negative DSL tests with the expected diagnostics written next to the
// offending line (tests/dsl/negative/*.map). A case passes when every
// expected diagnostic appears and no unexpected error or warning does.
#include "TestUtil.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>

namespace {

struct Expectation {
  std::string severity;
  uint32_t line;
  std::string text;
  bool seen = false;
};

struct Case {
  std::string file;
  int index;
  uint32_t firstLine; // line of the case in its file, for messages
  std::string text;
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.file << " case " << c.index; }

std::vector<Case> loadCases() {
  std::vector<Case> cases;
  auto dir = hone::test::sourcePath("tests/dsl/negative");
  std::vector<std::filesystem::path> files;
  for (const auto &entry : std::filesystem::directory_iterator(dir))
    if (entry.path().extension() == ".map")
      files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const auto &path : files) {
    std::istringstream in(hone::test::readFile(path.string()));
    std::string line, current;
    uint32_t lineNo = 0, start = 1;
    int index = 0;
    while (std::getline(in, line)) {
      ++lineNo;
      if (line == "# -----") {
        cases.push_back({path.filename().string(), index++, start, current});
        current.clear();
        start = lineNo + 1;
      } else {
        current += line + "\n";
      }
    }
    cases.push_back({path.filename().string(), index, start, current});
  }
  return cases;
}

std::vector<Expectation> expectations(const std::string &text) {
  static const std::regex re(R"(expected-(error|warning|note)(@([+-]\d+))?\s*\{\{(.*?)\}\})");
  std::vector<Expectation> out;
  std::istringstream in(text);
  std::string line;
  uint32_t lineNo = 0;
  while (std::getline(in, line)) {
    ++lineNo;
    for (std::sregex_iterator it(line.begin(), line.end(), re), end; it != end; ++it) {
      int shift = (*it)[3].matched ? std::stoi((*it)[3].str()) : 0;
      out.push_back({(*it)[1].str(), static_cast<uint32_t>(static_cast<int>(lineNo) + shift), (*it)[4].str()});
    }
  }
  return out;
}

class NegativeCase : public testing::TestWithParam<Case> {};

TEST_P(NegativeCase, ReportsExactlyTheExpectedDiagnostics) {
  const Case &c = GetParam();
  auto expected = expectations(c.text);
  ASSERT_FALSE(expected.empty()) << "case without expectations";
  auto checked = hone::test::checkText(c.text, c.file);
  std::vector<std::string> unexpected;
  for (const auto &d : checked.diags->diagnostics()) {
    std::string sev = hone::support::toString(d.severity);
    bool matched = false;
    for (auto &e : expected) {
      if (e.severity == sev && e.line == d.range.begin.line && d.message.find(e.text) != std::string::npos) {
        e.seen = matched = true;
      }
      if (e.severity == "note" && e.line == d.range.begin.line)
        for (const auto &n : d.notes)
          if (n.message.find(e.text) != std::string::npos)
            e.seen = true;
    }
    if (!matched)
      unexpected.push_back(fmt::format("{}:{}: {}: {}", d.range.begin.line, d.range.begin.column, sev, d.message));
  }
  std::string where = fmt::format("{} case {} (file line {})", c.file, c.index, c.firstLine);
  for (const auto &e : expected)
    EXPECT_TRUE(e.seen) << where << ": missing " << e.severity << " on line " << e.line << ": " << e.text << "\n"
                        << hone::test::diagText(checked);
  EXPECT_TRUE(unexpected.empty()) << where << ": unexpected diagnostics:\n"
                                  << fmt::format("{}", fmt::join(unexpected, "\n"));
}

INSTANTIATE_TEST_SUITE_P(Dsl, NegativeCase, testing::ValuesIn(loadCases()),
                         [](const testing::TestParamInfo<Case> &info) {
                           std::string name = info.param.file.substr(0, info.param.file.find('.'));
                           return name + "_" + std::to_string(info.param.index);
                         });

TEST(NegativeCases, ThereAreAtLeastThirty) { EXPECT_GE(loadCases().size(), 30u); }

} // namespace
