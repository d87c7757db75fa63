// The kernel domain's side of the LLM code agent (KernelCodec), on a small C
// project in a temporary folder: replies as complete files, as diffs, as a
// bare code block; the guards (a protected file, a diff that does not apply,
// a whitespace-only change, a knob value the manifest does not list, code that
// does not compile); evidence alignment against the diagnostics' locations;
// the insight stage's reading; what the model is shown.
#include "kernel/CodeAgent.h"
#include "kernel/SourceKnobs.h"

#include "support/FileUtil.h"
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

namespace hone::kernel {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

const char *kSource = R"(/* sum of squares, blocked by TILE */
#include <stdio.h>
#include "protected.h"
#ifndef TILE
#define TILE 4
#endif

static double work(int n) {
  double s = 0; /* { not a brace that counts } */
  for (int i = 0; i < n; ++i)
    s += (double)i * i;
  return s;
}

int main(void) {
  printf("%.1f\n", work(1000) + BIAS);
  return 0;
}
)";

struct CodeAgentTest : ::testing::Test {
  fs::path dir = fs::temp_directory_path() / ("hone-codeagent-" + std::to_string(::getpid()));
  Manifest m;
  std::unique_ptr<KernelCodec> codec;

  void SetUp() override {
    fs::create_directories(dir);
    auto write = [&](const char *name, const std::string &text) {
      ASSERT_TRUE(support::writeFileAtomically((dir / name).string(), text, nullptr));
    };
    write("k.c", kSource);
    write("protected.h", "#define BIAS 0.0\n");
    write("hone.toml", R"toml([project]
name = "k"
language = "c"
sources = ["k.c"]
[build]
command = "cc {cflags} {defines} {includes} {sources} -o {out}"
flags = "-O1"
[run]
command = "{exe}"
[[knob]]
name = "TILE"
kind = "define"
values = [4, 8, 16]
default = 4
)toml");
    auto loaded = loadManifest(dir.string());
    ASSERT_TRUE(loaded) << loaded.error().message;
    m = *loaded;
    auto catalogue = loadCatalogue();
    ASSERT_TRUE(catalogue) << catalogue.error().message;
    codec = std::make_unique<KernelCodec>(m, *catalogue, (dir / "check").string(), std::vector<std::string>{},
                                          "a test machine");
  }
  void TearDown() override { fs::remove_all(dir); }

  std::string start() const { return renderVariant(referenceVariant(m)); }
  static std::string files(const std::string &path, const std::string &content, const std::string &transformation = "unroll",
                           json addresses = json::array({"D1"})) {
    return json{{"transformation", transformation},
                {"addresses", addresses},
                {"files", json::array({{{"path", path}, {"content", content}}})},
                {"diff", ""},
                {"knobs", json::array()},
                {"rationale", "why not"}}
        .dump();
  }
  static std::string replaced(const std::string &from, const std::string &to) {
    std::string s = kSource;
    s.replace(s.find(from), from.size(), to);
    return s;
  }
  /// Feedback whose one finding points at the loop's line in work().
  static support::Feedback feedback(bool explained = true) { return test::feedbackOf(feedbackJson(explained)); }
  static json feedbackJson(bool explained = true) {
    json f{{"rule", "kernel-dependency-chain"},
           {"severity", "warning"},
           {"evidence", "a chain"},
           {"subject", {{"file", "k.c"}, {"line", 11}}},
           {"transformations", {"multiple-accumulators"}}};
    if (explained)
      f["explanation"] = "The loop at k.c:11 waits on its sum.";
    return {{"execution", "validated; median 0.5 s"}, {"findings", json::array({f})}};
  }
};

TEST_F(CodeAgentTest, CompleteFilesBecomeAVariantWithTheClaimsAndTheirAlignment) {
  std::string unrolled = replaced("s += (double)i * i;", "s += (double)i * i; /* unrolled below */");
  auto r = codec->read(files("k.c", unrolled), start(), feedback());
  ASSERT_FALSE(r.rejection) << r.rejection->diagnostics;
  auto v = parseVariant(m, r.artifact);
  ASSERT_TRUE(v) << v.error().message;
  EXPECT_EQ(v->files.at("k.c"), unrolled);
  EXPECT_EQ(r.rationale, "why not");
  EXPECT_EQ(r.notes["claims"]["transformation"], "unroll");
  EXPECT_EQ(r.notes["claims"]["in_catalogue"], true);
  EXPECT_EQ(r.notes["changed_files"], json::array({"k.c"}));
  EXPECT_EQ(r.notes["alignment"]["aligned"], true) << r.notes.dump(2);
  EXPECT_EQ(r.notes["alignment"]["checked"][0]["block"], json::array({8, 13})); // work(), the comment's brace ignored
}

// A change of knobs alone answers what the knob acts on: the build's flags act on all the code; a
// define only on the blocks that name it.
TEST_F(CodeAgentTest, AKnobOnlyChangeIsAlignedWithWhatTheKnobActsOn) {
  Manifest flagged = m;
  Knob flags;
  flags.name = "flags";
  flags.kind = KnobKind::Flags;
  flags.values = {"", "-O3 -march=native"};
  flagged.knobs.push_back(flags);
  KernelCodec withFlags(flagged, *loadCatalogue(), (dir / "check4").string(), {}, "a test machine");
  std::string start = renderVariant(referenceVariant(flagged));
  auto knobsOnly = [](const char *name, const char *value) {
    return json{{"transformation", "target-isa"}, {"addresses", {"D1"}}, {"files", json::array()}, {"diff", ""},
                {"knobs", {{{"name", name}, {"value", value}}}}, {"rationale", "flags"}}
        .dump();
  };
  auto isa = withFlags.read(knobsOnly("flags", "-O3 -march=native"), start, feedback());
  ASSERT_FALSE(isa.rejection) << isa.rejection->diagnostics;
  EXPECT_EQ(isa.notes["alignment"]["aligned"], true) << isa.notes.dump(2);
  EXPECT_EQ(isa.notes["alignment"]["checked"][0]["knob"], "flags");
  auto tile = withFlags.read(knobsOnly("TILE", "8"), start, feedback()); // TILE is not named in work()
  ASSERT_FALSE(tile.rejection) << tile.rejection->diagnostics;
  EXPECT_EQ(tile.notes["alignment"]["aligned"], false) << tile.notes.dump(2);
}

TEST_F(CodeAgentTest, AChangeAwayFromTheDiagnosticsCodeIsNotAligned) {
  auto away = codec->read(files("k.c", replaced("work(1000)", "work(999 + 1)")), start(), feedback());
  ASSERT_FALSE(away.rejection);
  EXPECT_EQ(away.notes["alignment"]["aligned"], false);
  auto none = codec->read(files("k.c", replaced("work(1000)", "work(999 + 1)"), "unroll", json::array()), start(),
                          feedback());
  EXPECT_TRUE(none.notes["alignment"]["aligned"].is_null()); // it names no diagnostic
  auto unknown = codec->read(files("k.c", replaced("work(1000)", "work(999 + 1)"), "tiling-magic"), start(),
                             feedback());
  EXPECT_EQ(unknown.notes["claims"]["in_catalogue"], false);
}

TEST_F(CodeAgentTest, ADiffAppliesToTheCurrentBestAndOneThatDoesNotIsRefusedWithTheHunk) {
  std::string diff = "--- a/k.c\n+++ b/k.c\n@@ -11,1 +11,1 @@\n-    s += (double)i * i;\n+    s += (double)i * (double)i;\n";
  json reply{{"transformation", "unroll"}, {"addresses", {"D1"}}, {"files", json::array()}, {"diff", diff},
             {"knobs", json::array()}, {"rationale", "x"}};
  auto r = codec->read(reply.dump(), start(), feedback());
  ASSERT_FALSE(r.rejection) << r.rejection->diagnostics;
  EXPECT_NE(parseVariant(m, r.artifact)->files.at("k.c").find("(double)i * (double)i"), std::string::npos);
  // The same diff against that result no longer applies.
  auto again = codec->read(reply.dump(), r.artifact, feedback());
  ASSERT_TRUE(again.rejection);
  EXPECT_NE(again.rejection->diagnostics.find("does not apply to k.c: hunk 1"), std::string::npos)
      << again.rejection->diagnostics;
}

TEST_F(CodeAgentTest, EditsOfProtectedFilesWhitespaceAndUnlistedKnobValuesAreRefused) {
  auto header = codec->read(files("protected.h", "#define BIAS 1.0\n"), start(), feedback());
  ASSERT_TRUE(header.rejection);
  EXPECT_NE(header.rejection->diagnostics.find("'protected.h', which is not a file you may change: only k.c"),
            std::string::npos)
      << header.rejection->diagnostics;
  auto escape = codec->read(files("../k.c", kSource), start(), feedback());
  EXPECT_TRUE(escape.rejection);
  auto blank = codec->read(files("k.c", replaced("  return 0;", "\n    return   0;")), start(), feedback());
  ASSERT_TRUE(blank.rejection);
  EXPECT_NE(blank.rejection->diagnostics.find("nothing but whitespace"), std::string::npos);
  json knobs{{"transformation", "loop-tiling"}, {"addresses", json::array()}, {"files", json::array()},
             {"diff", ""}, {"knobs", {{{"name", "TILE"}, {"value", "8"}}}}, {"rationale", "bigger tiles"}};
  auto tile = codec->read(knobs.dump(), start(), feedback());
  ASSERT_FALSE(tile.rejection) << tile.rejection->diagnostics;
  EXPECT_EQ(parseVariant(m, tile.artifact)->knobs.at("TILE"), "8");
  knobs["knobs"][0]["value"] = "12";
  auto unlisted = codec->read(knobs.dump(), start(), feedback());
  ASSERT_TRUE(unlisted.rejection);
  EXPECT_NE(unlisted.rejection->diagnostics.find("TILE"), std::string::npos) << unlisted.rejection->diagnostics;
  auto empty = codec->read(R"({"transformation": "unroll", "files": [], "diff": "", "knobs": []})", start(), feedback());
  ASSERT_TRUE(empty.rejection);
  EXPECT_NE(empty.rejection->diagnostics.find("has no change"), std::string::npos);
  auto nested = codec->read(files("proj/k.c", replaced("return 0;", "return 0; /* nested */")), start(), feedback());
  EXPECT_FALSE(nested.rejection); // the project's folder in front of an editable file's name
  auto prose = codec->read("I would unroll it.", start(), feedback());
  ASSERT_TRUE(prose.rejection);
  EXPECT_NE(prose.rejection->diagnostics.find("no JSON object"), std::string::npos);
  // Files of the machine stay out of the build (its errors would quote them to the model): absolute
  // includes, quoted or not, and quoted ones that climb out of the project; the project's own and
  // system headers are fine.
  for (const char *outside : {"#include \"/etc/hostname\"", "#include </etc/hostname>", "  #  include \"../../secret.txt\"",
                              "#embed \"/dev/zero\""}) {
    auto r = codec->read(files("k.c", replaced("#include <stdio.h>", std::string("#include <stdio.h>\n") + outside)),
                         start(), feedback());
    ASSERT_TRUE(r.rejection) << outside;
    EXPECT_NE(r.rejection->diagnostics.find("a file outside the project"), std::string::npos) << r.rejection->diagnostics;
  }
  auto inside = codec->read(files("k.c", replaced("#include <stdio.h>", "#include <stdio.h>\n#include <math.h>\n#include \"./protected.h\"")),
                            start(), feedback());
  EXPECT_FALSE(inside.rejection) << inside.rejection->diagnostics;
}

TEST_F(CodeAgentTest, ABareCodeBlockIsTheOneEditableFile) {
  std::string code = replaced("return 0;", "return 0; /* done */");
  auto r = codec->read("Here:\n```c\n" + code + "```\n", start(), feedback());
  ASSERT_FALSE(r.rejection) << r.rejection->diagnostics;
  EXPECT_EQ(parseVariant(m, r.artifact)->files.at("k.c"), code);
}

TEST_F(CodeAgentTest, CodeThatDoesNotCompileGoesBackWithTheCompilersErrorsAndNoFolders) {
  auto broken = codec->read(files("k.c", replaced("return s;", "return s")), start(), feedback());
  ASSERT_FALSE(broken.rejection);
  auto why = codec->check(broken.artifact);
  ASSERT_TRUE(why);
  EXPECT_NE(why->diagnostics.find("does not compile"), std::string::npos) << why->diagnostics;
  EXPECT_NE(why->diagnostics.find("k.c:"), std::string::npos) << why->diagnostics;
  EXPECT_EQ(why->diagnostics.find(dir.string()), std::string::npos) << why->diagnostics;
  auto fine = codec->read(files("k.c", replaced("return 0;", "return 0; /* ok */")), start(), feedback());
  EXPECT_FALSE(codec->check(fine.artifact));
}

TEST_F(CodeAgentTest, TheModelIsShownTheFilesTheKnobsAndNumberedDiagnosticsAsTheLevelAllows) {
  EXPECT_EQ(codec->show(start()), kSource);
  auto values = codec->baseValues(start(), feedback());
  EXPECT_EQ(values.at("knobs"), "all at their defaults"); // TILE=4 is the reference's value
  Variant tiled = referenceVariant(m);
  tiled.knobs["TILE"] = "8";
  EXPECT_EQ(codec->baseValues(renderVariant(tiled), feedback()).at("knobs"), "TILE=8; the others at their defaults");
  // The catalogue shows in full what the diagnostics name, the rest by id only.
  const std::string &catalogue = values.at("catalogue");
  EXPECT_NE(catalogue.find("- multiple-accumulators: "), std::string::npos) << catalogue;
  EXPECT_EQ(catalogue.find("- loop-tiling: "), std::string::npos) << catalogue;
  EXPECT_NE(catalogue.find("loop-tiling"), std::string::npos) << catalogue;
  EXPECT_NE(values.at("diagnostics").find("- D1 [kernel-dependency-chain] at k.c:11: The loop at k.c:11 waits"),
            std::string::npos)
      << values.at("diagnostics");
  EXPECT_NE(values.at("diagnostics").find("Catalogue: multiple-accumulators."), std::string::npos);
  auto exec = codec->baseValues(start(), feedback(false));
  EXPECT_EQ(exec.at("diagnostics"), "(not shown at this feedback level)\n");
  EXPECT_TRUE(shownDiagnostics(feedback(false)).empty());
  auto prompt = codec->promptValues();
  ASSERT_TRUE(prompt) << prompt.error().message;
  EXPECT_EQ(prompt->at("editable"), "k.c");
  EXPECT_NE(prompt->at("catalogue").find("- loop-tiling: "), std::string::npos);
  EXPECT_EQ(prompt->at("catalogue").find("coalescing"), std::string::npos); // GPU entries are not a C program's
}

// The prompt's diagnostics open with where the time goes; findings in files the model may not
// change are left out and counted; the nests the profile counts as cold leave the source model.
TEST_F(CodeAgentTest, TheDiagnosticsStartWithWhereTheTimeGoes) {
  json fb = feedbackJson();
  json harness{{"rule", "kernel-cache-misses"},
               {"severity", "warning"},
               {"evidence", "misses"},
               {"explanation", "The harness misses."},
               {"subject", {{"file", "protected.h"}, {"line", 1}}},
               {"transformations", {"loop-tiling"}}};
  fb["findings"].push_back(harness);
  fb["breakdown"] = {{"measure", "instructions"},
                     {"tool", "cachegrind"},
                     {"nests", json::array({{{"file", "k.c"}, {"function", "work"}, {"line", 10}, {"end_line", 12},
                                             {"share", 0.9}},
                                            {{"file", "k.c"}, {"function", "main"}, {"line", 20}, {"end_line", 21},
                                             {"share", 0.001}}})},
                     {"files", json::array()},
                     {"outside", 0.099},
                     {"outside_functions", json::array({{{"function", "__printf_fp_l"}, {"share", 0.05}}})}};
  fb["cold"] = json::array({{{"kind", "not-vectorized-stride"}, {"file", "k.c"}, {"line", 21}}});
  auto values = codec->baseValues(start(), test::feedbackOf(fb));
  const std::string &d = values.at("diagnostics");
  EXPECT_EQ(d.rfind("Where the time goes (instructions of the timed build, by cachegrind", 0), 0u) << d;
  EXPECT_NE(d.find("90.0%  loop nest k.c:10-12 in work()"), std::string::npos) << d;
  EXPECT_NE(d.find("1 other loop nest"), std::string::npos) << d; // 0.1%: not listed by itself
  EXPECT_NE(d.find("__printf_fp_l 5.0%"), std::string::npos) << d;
  EXPECT_NE(d.find("left out: k.c:21"), std::string::npos) << d;
  EXPECT_LT(d.find("Where the time goes"), d.find("- D1 [kernel-dependency-chain]")) << d;
  EXPECT_EQ(d.find("The harness misses"), std::string::npos) << d;
  EXPECT_NE(d.find("1 finding in files you may not change left out: protected.h:1"), std::string::npos) << d;
  EXPECT_EQ(values.at("catalogue").find("- loop-tiling: "), std::string::npos); // named only by the harness's

  Manifest withPlan = m;
  ASSERT_TRUE(addSourceKnobs(withPlan));
  KernelCodec planned(withPlan, *loadCatalogue(), (dir / "check3").string(), {}, "a test machine");
  json hot = fb, cold = fb;
  hot["breakdown"]["nests"][0]["share"] = 0.9;
  cold["breakdown"]["nests"][0]["share"] = 0.001;
  EXPECT_NE(planned.baseValues(start(), test::feedbackOf(hot)).at("source_model").find("nest k.c:10"), std::string::npos);
  std::string left = planned.baseValues(start(), test::feedbackOf(cold)).at("source_model");
  EXPECT_EQ(left.find("nest k.c:10-"), std::string::npos) << left;
  EXPECT_NE(left.find("nests left out as cold, under 2% of the instructions each: k.c:10"), std::string::npos) << left;
}

TEST_F(CodeAgentTest, TheModelIsShownWhatTheDependenceTestSaysOfEachNest) {
  auto prompt = codec->promptValues();
  ASSERT_TRUE(prompt) << prompt.error().message;
  EXPECT_NE(prompt->at("source_model").find("(none"), std::string::npos); // no plan: said so
  Manifest withPlan = m;
  auto described = addSourceKnobs(withPlan);
  ASSERT_TRUE(described) << described.error().message;
  KernelCodec planned(withPlan, *loadCatalogue(), (dir / "check2").string(), {}, "a test machine");
  auto values = planned.promptValues();
  ASSERT_TRUE(values) << values.error().message;
  const std::string &model = values->at("source_model");
  EXPECT_NE(model.find("nest k.c:10"), std::string::npos) << model;
  EXPECT_NE(model.find("k.c:10.parallel"), std::string::npos) << model;
  // The sum's scalar is a reduction, so parallel is legal; the source knobs are not listed twice.
  EXPECT_EQ(model.find("not proven: on"), std::string::npos) << model;
  EXPECT_EQ(values->at("knob_list").find("k.c:10"), std::string::npos) << values->at("knob_list");
  EXPECT_NE(values->at("knob_list").find("TILE"), std::string::npos);
}

TEST_F(CodeAgentTest, TheInsightStageNamesCatalogueEntriesOrIsToldWhichExist) {
  auto typo = codec->readInsight(R"({"choices": [{"transformation": "loop-tilling", "addresses": ["D1"], "why": "x"}]})");
  ASSERT_FALSE(typo);
  EXPECT_NE(typo.error().message.find("did you mean 'loop-tiling'"), std::string::npos) << typo.error().message;
  auto ok = codec->readInsight(
      R"({"choices": [{"transformation": "multiple-accumulators", "addresses": ["D1"], "why": "the chain"}]})");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_NE(ok->first.find("(multiple-accumulators)"), std::string::npos) << ok->first;
  EXPECT_NE(ok->first.find("answering D1"), std::string::npos) << ok->first;
  EXPECT_EQ(ok->second["choices"][0]["transformation"], "multiple-accumulators");
  EXPECT_FALSE(codec->readInsight("no json"));
  EXPECT_FALSE(codec->readInsight(R"({"choices": []})"));
  // Fields of the wrong type (found by the reply fuzzer: this threw and ended hone).
  EXPECT_FALSE(codec->readInsight(R"({"transformation": 11})"));
  EXPECT_TRUE(codec->readInsight(R"({"choices": [{"transformation": "multiple-accumulators", "why": 3}]})")); // no reason
}

TEST(EnclosingBlock, BracesInCommentsStringsAndCharactersDoNotCount) {
  std::string src = "int g;\nvoid f() {\n  const char *s = \"}\";\n  char c = '{';\n  // }\n  g = 1;\n}\nint h;\n";
  EXPECT_EQ(enclosingBlock(src, 6), std::make_pair(2, 7));
  EXPECT_EQ(enclosingBlock(src, 1), std::make_pair(1, 1));
  EXPECT_EQ(enclosingBlock(src, 8), std::make_pair(8, 8));
  EXPECT_EQ(enclosingBlock(src, 99), std::make_pair(99, 99));
}

} // namespace
} // namespace hone::kernel
