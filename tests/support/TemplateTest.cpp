// One-pass template filling: inserted values are never scanned again.
#include "support/Template.h"

#include <gtest/gtest.h>

using namespace hone::support;

namespace {

/// A value a hostile folder or project name could hold: every placeholder name of every filler,
/// a command substitution, backticks and both quotes.
const std::string kHostile = "w{policy}{cpp}{dir}{hash}{prof}{sources}{out}{cflags}{defines}{includes}{exe}{seed}"
                             "{rundir}{name}{time}{{mapper}}$(touch PWNED)`touch PWNED`'\"";

} // namespace

TEST(FillTemplate, FillsEveryPlaceholderOnceFromLeftToRight) {
  EXPECT_EQ(fillTemplate("cc {in} -o {out}; run {out}", {{"in", "a.c"}, {"out", "b"}}), "cc a.c -o b; run b");
  EXPECT_EQ(fillTemplate("", {{"a", "x"}}), "");
  EXPECT_EQ(fillTemplate("{a}{a}{a}", {{"a", "x"}}), "xxx");
  EXPECT_EQ(fillTemplate("{}", {{"", "empty"}}), "empty");
}

TEST(FillTemplate, UnknownPlaceholdersAndStrayBracesStayAsWritten) {
  EXPECT_EQ(fillTemplate("${HOME} {x} {a", {{"a", "A"}}), "${HOME} {x} {a");
  EXPECT_EQ(fillTemplate("{a{b}}", {{"b", "B"}}), "{aB}"); // the nearest opening brace is the placeholder's
  EXPECT_EQ(fillTemplate("}{a}{", {{"a", "A"}}), "}A{");
  std::optional<size_t> missing;
  EXPECT_EQ(fillTemplate("ok {a} {zz} {yy}", {{"a", "A"}}, {}, &missing), "ok A {zz} {yy}");
  EXPECT_EQ(missing, 7u);
}

TEST(FillTemplate, InsertedTextIsNeverFilledAgain) {
  std::map<std::string, std::string> values = {{"policy", kHostile}, {"cpp", "CPP"},  {"dir", "DIR"},
                                               {"hash", "HASH"},     {"name", "NAME"}, {"mapper", "M"}};
  EXPECT_EQ(fillTemplate("{dir} {policy} {cpp}", values), "DIR " + kHostile + " CPP");
  EXPECT_EQ(fillTemplate("{{mapper}} {{ policy }}", values, {"{{", "}}", true}), "M " + kHostile);
  // Whatever the order of the keys, a value holding a later key's placeholder stays as written.
  EXPECT_EQ(fillTemplate("{cpp}{policy}", {{"cpp", "{policy}"}, {"policy", "P"}}), "{policy}P");
  EXPECT_EQ(fillTemplate("{policy}{cpp}", {{"cpp", "C"}, {"policy", "{cpp}"}}), "{cpp}C");
}

TEST(FillTemplate, TheDoubleBraceSyntaxTrimsBlanksOnlyWhenAsked) {
  EXPECT_EQ(fillTemplate("{{ a }}", {{"a", "A"}}, {"{{", "}}", true}), "A");
  EXPECT_EQ(fillTemplate("{{ a }}", {{"a", "A"}}, {"{{", "}}", false}), "{{ a }}");
  EXPECT_EQ(fillTemplate("{{{a}}", {{"a", "A"}}, {"{{", "}}", true}), "{A");
}
