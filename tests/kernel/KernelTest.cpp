// The kernel domain's data and logic without running programs: manifests
// (every error located), variants, outputs and tolerances, statistics, the
// diagnosis, AutoGuide's kernel rules and the catalogue, the knob space and
// the guided agent (against a synthetic evaluator).
#include "autoguide/AutoGuide.h"
#include "kernel/Evaluator.h"
#include "kernel/Diagnose.h"
#include "kernel/profilers/Profiler.h"
#include "kernel/Init.h"
#include "kernel/KernelDomain.h"
#include "kernel/Manifest.h"
#include "kernel/Runner.h"
#include "kernel/SourceKnobs.h"

#include "TestUtil.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <filesystem>
#include <thread>
#include <functional>
#include <optional>
#include <fstream>
#include <unistd.h>

using namespace hone::kernel;
using hone::test::readFile;
using hone::test::sourcePath;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

const char *kManifest = R"(
[project]
name = "k"
sources = ["k.c"]

[build]
command = "cc {cflags} {defines} {sources} -o {out}"
flags = "-O2"

[run]
command = "{exe} {seed}"

[[knob]]
name = "TILE"
values = [8, 16, 32]
default = 16

[[knob]]
name = "OMP_NUM_THREADS"
kind = "env"
values = ["", "1", "2"]

[[knob]]
name = "flags"
kind = "flags"
values = ["", "-O3"]

constraints = ["TILE * 2 <= 32"]
)";

Manifest manifest(const std::string &text = kManifest) {
  auto m = parseManifest("/tmp/proj/hone.toml", text);
  EXPECT_TRUE(m) << m.error().message;
  return m ? *m : Manifest{};
}

std::string errorOf(const std::string &text) {
  auto m = parseManifest("hone.toml", text);
  return m ? std::string("(accepted)") : m.error().message;
}

} // namespace

TEST(Manifest, ReadsKnobsRolesAndDefaults) {
  Manifest m = manifest();
  EXPECT_EQ(m.name, "k");
  EXPECT_EQ(m.dir, "/tmp/proj");
  EXPECT_EQ(m.editable, m.sources); // default: the sources
  EXPECT_EQ(m.seeds, (std::vector<uint64_t>{1, 2, 3}));
  ASSERT_EQ(m.knobs.size(), 3u);
  EXPECT_EQ(m.knobs[0].role, KnobRole::Tile);
  EXPECT_EQ(m.knobs[0].values[m.knobs[0].defaultIndex], "16");
  EXPECT_EQ(m.knobs[1].role, KnobRole::Threads);
  EXPECT_TRUE(m.knobs[1].numeric()); // "" (unset) does not make it non-numeric
  EXPECT_EQ(m.knobs[2].role, KnobRole::Flags);
  EXPECT_EQ(m.output.tolerance, Tolerance::Rel);
}

TEST(Manifest, ErrorsAreLocatedAndSuggest) {
  std::string base = kManifest;
  auto replace = [&](const std::string &from, const std::string &to) {
    std::string t = base;
    size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  std::string e = errorOf(replace("flags = \"-O2\"", "flagz = \"-O2\""));
  EXPECT_NE(e.find("hone.toml:8:1: build: unknown key 'flagz'"), std::string::npos) << e;
  e = errorOf(replace("command = \"{exe} {seed}\"", "command = \"prog {seed}\""));
  EXPECT_NE(e.find("hone.toml:11:"), std::string::npos) << e;
  EXPECT_NE(e.find("{exe}"), std::string::npos) << e;
  e = errorOf(replace("default = 16", "default = 12"));
  EXPECT_NE(e.find("'12' is not one of the knob's values"), std::string::npos) << e;
  e = errorOf(replace("TILE * 2 <= 32", "TILES * 2 <= 32"));
  EXPECT_NE(e.find("did you mean 'TILE'"), std::string::npos) << e;
  e = errorOf(replace("TILE * 2 <= 32", "TILE * 2"));
  EXPECT_NE(e.find("not a comparison"), std::string::npos) << e;
  e = errorOf(replace("kind = \"env\"", "kind = \"environment\""));
  EXPECT_NE(e.find("must be \"define\", \"flags\" or \"env\""), std::string::npos) << e;
  e = errorOf(replace("name = \"TILE\"", "name = \"TILE\"\nrole = \"tiles\""));
  EXPECT_NE(e.find("did you mean 'tile'"), std::string::npos) << e;
  e = errorOf(replace("name = \"TILE\"", "name = \"flags\""));
  EXPECT_NE(e.find("defined twice"), std::string::npos) << e;
  e = errorOf(replace("sources = [\"k.c\"]", "sources = []"));
  EXPECT_NE(e.find("needs at least one file"), std::string::npos) << e;
  e = errorOf(replace("[run]", "[run]\ntimeout_s = -1"));
  EXPECT_NE(e.find("timeout_s"), std::string::npos) << e;
  e = errorOf(replace("[run]", "[timing]\nreference_every = -2\n\n[run]"));
  EXPECT_NE(e.find("hone.toml:11:19: timing.reference_every: must be a whole number between 0 and 1000"),
            std::string::npos)
      << e;
  // Every count is checked before it becomes an int: NaN, infinities, huge and fractional values.
  for (std::string key : {"reference_every", "warmup", "min_repeats", "max_repeats"}) {
    for (const char *bad : {"nan", "inf", "-inf", "1e300", "2.5", "-1"}) {
      e = errorOf(replace("[run]", "[timing]\n" + key + " = " + bad + "\n\n[run]"));
      EXPECT_NE(e.find(fmt::format("hone.toml:11:{}: timing.{}: ", key.size() + 4, key)), std::string::npos)
          << key << " = " << bad << ": " << e;
      if (std::isfinite(std::stod(bad))) { // the reader refuses NaN and infinities itself
        EXPECT_NE(e.find("must be a whole number"), std::string::npos) << key << " = " << bad << ": " << e;
      }
    }
  }
  e = errorOf(replace("[run]", "[timing]\nmin_repeats = 9\nmax_repeats = 4\n\n[run]"));
  EXPECT_NE(e.find("min_repeats <= max_repeats"), std::string::npos) << e;
  e = errorOf(replace("[run]", "[timing]\nconfirm_best = 1\n\n[run]"));
  EXPECT_NE(e.find("timing.confirm_best"), std::string::npos) << e;
  EXPECT_TRUE(manifest().timing.confirmBest); // the default
  auto every = parseManifest("hone.toml", replace("[run]", "[timing]\nreference_every = 0\n\n[run]"));
  ASSERT_TRUE(every) << every.error().message;
  EXPECT_EQ(every->timing.referenceEvery, 0);
  EXPECT_EQ(manifest().timing.referenceEvery, 5); // the default
  e = errorOf("[project\n");
  EXPECT_NE(e.find("hone.toml:1:"), std::string::npos) << e;
  auto ranged = parseManifest("hone.toml", replace("values = [8, 16, 32]", "range = { from = 4, to = 64, factor = 2 }"));
  ASSERT_TRUE(ranged) << ranged.error().message;
  EXPECT_EQ(ranged->knobs[0].values, (std::vector<std::string>{"4", "8", "16", "32", "64"}));
  e = errorOf(replace("values = [8, 16, 32]", "range = { from = 4, to = 64 }"));
  EXPECT_NE(e.find("exactly one of 'step'"), std::string::npos) << e;
  // Values beyond 2^53 are written as doubles, never converted to an integer that overflows.
  auto vast = parseManifest("hone.toml", replace("values = [8, 16, 32]\ndefault = 16",
                                                 "range = { from = 1e300, to = 4e300, factor = 2 }"));
  ASSERT_TRUE(vast) << vast.error().message;
  EXPECT_EQ(vast->knobs[0].values, (std::vector<std::string>{"1e+300", "2e+300", "4e+300"}));
  e = errorOf(replace("values = [8, 16, 32]\ndefault = 16", "range = { from = 1e300, to = 2e300, step = 1 }"));
  EXPECT_NE(e.find("knob[0].range.step: is too small to move past 1e+300"), std::string::npos) << e;
  for (const char *bad : {"-1", "2.5", "1e300"}) {
    e = errorOf(replace("[[knob]]\nname = \"TILE\"",
                        std::string("[output]\ntolerance = \"ulp\"\nulps = ") + bad + "\n\n[[knob]]\nname = \"TILE\""));
    EXPECT_NE(e.find("output.ulps: must be a whole number between 0 and 1e15"), std::string::npos) << bad << ": " << e;
  }
  auto ulps = parseManifest("hone.toml",
                            replace("[[knob]]\nname = \"TILE\"",
                                    "[output]\ntolerance = \"ulp\"\nulps = 16\n\n[[knob]]\nname = \"TILE\""));
  ASSERT_TRUE(ulps) << ulps.error().message;
  EXPECT_EQ(ulps->output.ulps, 16);
  e = errorOf(replace("[[knob]]\nname = \"TILE\"", "[output]\ntolerance = \"close\"\n\n[[knob]]\nname = \"TILE\""));
  EXPECT_NE(e.find("\"exact\", \"abs\", \"rel\" or \"ulp\""), std::string::npos) << e;
  e = errorOf(replace("sources = [\"k.c\"]", "sources = [\"k.c\"]\neditable = [\"../other.c\"]"));
  EXPECT_NE(e.find("inside the project folder"), std::string::npos) << e;
}

TEST(Manifest, AnOutputFileMustBeInsideTheRunFolder) {
  // hone deletes the output file before each run: one outside the run folder would be someone else's.
  auto with = [](const std::string &file) {
    std::string text = kManifest;
    std::string knob = "[[knob]]\nname = \"TILE\"";
    text.replace(text.find(knob), knob.size(), "[output]\nsource = \"file\"\nfile = \"" + file + "\"\n\n" + knob);
    return errorOf(text);
  };
  for (const char *bad : {"/abs/path/victim.txt", "../../../victim/rel.txt", "out/../../x.txt", "..", "."}) {
    std::string e = with(bad);
    EXPECT_NE(e.find("output.file: '"), std::string::npos) << bad << ": " << e;
    EXPECT_NE(e.find("must be a path inside the program's run folder"), std::string::npos) << bad << ": " << e;
  }
  for (const char *good : {"out.txt", "results/out.bin", "./out.txt", "a/../out.txt"})
    EXPECT_EQ(with(good), "(accepted)") << good;
}

TEST(Manifest, StderrTimingRegexAndSplitBuildsAreReadAndChecked) {
  std::string base = kManifest;
  auto with = [&](const std::string &from, const std::string &to) {
    std::string t = base;
    size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return t.replace(at, from.size(), to);
  };
  // [output] and [timing] go before the knobs (after a [[knob]] header they would be the knob's keys).
  std::string good = with("[[knob]]\nname = \"TILE\"", "[output]\nsource = \"stderr\"\n[timing]\n"
                                                       "regex = '^(\\d+\\.\\d+)$'\n\n[[knob]]\nname = \"TILE\"");
  const std::string flagsLine = "flags = \"-O2\"\n";
  good.replace(good.find(flagsLine), flagsLine.size(),
               "flags = \"-O2\"\nvalidate_defines = [\"DUMP\", \"N=3\"]\ntime_defines = [\"TIME\"]\n");
  auto m = parseManifest("/tmp/proj/hone.toml", good);
  ASSERT_TRUE(m) << m.error().message << "\n" << good;
  EXPECT_EQ(m->output.source, "stderr");
  EXPECT_EQ(m->timing.mode, "region"); // a regex is read in region mode
  EXPECT_EQ(m->timing.regex, "^(\\d+\\.\\d+)$");
  EXPECT_EQ(m->validateDefines, (std::vector<std::string>{"DUMP", "N=3"}));
  EXPECT_TRUE(m->splitBuilds());
  EXPECT_FALSE(manifest().splitBuilds());
  TimingSpec spec = m->timing;
  EXPECT_DOUBLE_EQ(reportedSeconds(spec, "x\n0.25\nnoise 3\n1.5\n"), 1.5); // the last line it matches
  EXPECT_LT(reportedSeconds(spec, "time 0.25\n"), 0);
  auto errorWith = [&](const std::string &from, const std::string &to) {
    std::string t = good;
    size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return errorOf(t.replace(at, from.size(), to));
  };
  std::string e = errorWith("'^(\\d+\\.\\d+)$'", "'^\\d+$'");
  EXPECT_NE(e.find("0 capture groups; it needs exactly one"), std::string::npos) << e;
  e = errorWith("'^(\\d+\\.\\d+)$'", "'^(\\d+'");
  EXPECT_NE(e.find("not a valid regular expression"), std::string::npos) << e;
  e = errorWith("regex =", "mode = \"process\"\nregex =");
  EXPECT_NE(e.find("mode = \"region\" only"), std::string::npos) << e;
  e = errorWith("\"N=3\"", "\"-DN=3\"");
  EXPECT_NE(e.find("'-DN=3' is not NAME or NAME=VALUE"), std::string::npos) << e;
  EXPECT_NE(e.find("hone.toml:"), std::string::npos) << e;
  e = errorWith("source = \"stderr\"", "source = \"stdin\"");
  EXPECT_NE(e.find("\"stdout\", \"stderr\" or \"file\""), std::string::npos) << e;
}

TEST(Manifest, ValuesAndConstraintsAreChecked) {
  Manifest m = manifest();
  KnobValues v = defaultValues(m);
  EXPECT_TRUE(checkValues(m, v));
  v["TILE"] = "32";
  auto bad = checkValues(m, v);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("TILE * 2 <= 32"), std::string::npos) << bad.error().message;
  v["TILE"] = "7";
  EXPECT_NE(checkValues(m, v).error().message.find("not one of its values"), std::string::npos);
  EXPECT_NE(checkValues(m, {{"TILES", "8"}}).error().message.find("did you mean 'TILE'"), std::string::npos);
}

TEST(Manifest, EveryShippedManifestLoads) {
  size_t count = 0;
  for (const auto &entry : std::filesystem::recursive_directory_iterator(sourcePath("examples/kernels")))
    if (entry.path().filename() == "hone.toml") {
      auto m = loadManifest(entry.path().string());
      EXPECT_TRUE(m) << entry.path() << ": " << (m ? "" : m.error().message);
      if (m) {
        EXPECT_FALSE(m->knobs.empty()) << entry.path();
        for (const auto &s : m->sources)
          EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(m->dir) / s)) << s;
      }
      ++count;
    }
  EXPECT_GE(count, 11u); // 8 C kernels and 3 CUDA kernels
}

TEST(Variant, RoundTripAndRefusals) {
  Manifest m = manifest();
  m.editable = {"k.c"};
  Variant v{defaultValues(m), {{"k.c", "int main() { return 0; }\n"}}};
  v.knobs["OMP_NUM_THREADS"] = "2";
  std::string text = renderVariant(v);
  auto back = parseVariant(m, text);
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->knobs, v.knobs);
  EXPECT_EQ(back->files, v.files);
  EXPECT_EQ(renderVariant(*back), text); // canonical: the same text, the same hash
  // Missing knobs take their defaults.
  auto partial = parseVariant(m, "[knobs]\nTILE = 8\n");
  ASSERT_TRUE(partial);
  EXPECT_EQ(partial->knobs.at("TILE"), "8");
  EXPECT_EQ(partial->knobs.at("flags"), "");
  // A file the manifest protects, an unknown section, a bad value, broken TOML.
  auto protectedEdit = parseVariant(m, "[files]\n\"hone.toml\" = \"x\"\n");
  ASSERT_FALSE(protectedEdit);
  EXPECT_NE(protectedEdit.error().message.find("does not let a variant change"), std::string::npos);
  EXPECT_FALSE(parseVariant(m, "[build]\ncommand = \"rm -rf /\"\n"));
  EXPECT_FALSE(parseVariant(m, "[knobs]\nTILE = 9\n"));
  auto broken = parseVariant(m, "[knobs\nTILE = 8\n");
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.error().line, 1);
}

TEST(Manifest, KnobNumbersMustBeFiniteAndBounded) {
  // nan, inf and 1e308 as a knob's value (TOML numbers or strings that read as numbers) are refused,
  // located; text that is no number stays a value.
  std::string base = kManifest;
  for (const char *bad : {"nan", "inf", "-inf", "1e308", "\"nan\"", "\"inf\"", "\"1e308\"", "2e15"}) {
    std::string t = base;
    t.replace(t.find("values = [8, 16, 32]"), 20, fmt::format("values = [8, 16, {}]", bad));
    std::string e = errorOf(t);
    EXPECT_NE(e.find("hone.toml:15:"), std::string::npos) << bad << ": " << e;
    EXPECT_NE(e.find("must be finite and at most 1e+15 in magnitude"), std::string::npos) << bad << ": " << e;
  }
  std::string t = base;
  t.replace(t.find("values = [8, 16, 32]"), 20, "values = [8, 16, 1e15, \"float\"]");
  EXPECT_EQ(errorOf(t), "(accepted)");
}

TEST(Manifest, AHugeConstraintIsReadWithoutRecursion) {
  // std::regex split a constraint recursively and overflowed the stack at 100,000 characters.
  std::string base = kManifest;
  std::string longSide = "TILE" + std::string(100000, ' ');
  std::string t = base;
  t.replace(t.find("TILE * 2 <= 32"), 14, longSide + "<= 32");
  EXPECT_EQ(errorOf(t), "(accepted)");
  t = base;
  t.replace(t.find("TILE * 2 <= 32"), 14, std::string(100000, 'x'));
  EXPECT_NE(errorOf(t).find("not a comparison"), std::string::npos);
  Manifest m = manifest();
  ASSERT_EQ(m.constraints.size(), 1u);
  EXPECT_TRUE(checkValues(m, defaultValues(m))) << "16 * 2 <= 32";
}

TEST(Variant, ExpansionAndTheBuildCommand) {
  Manifest m = manifest();
  Variant v = referenceVariant(m);
  v.knobs["flags"] = "-O3";
  Expansion e = expand(m, v);
  EXPECT_EQ(e.defines, (std::vector<std::string>{"-DTILE=16"}));
  EXPECT_EQ(e.flags, (std::vector<std::string>{"-O3"}));
  EXPECT_TRUE(e.env.empty()); // "" leaves OMP_NUM_THREADS unset
  v.knobs["OMP_NUM_THREADS"] = "2";
  EXPECT_EQ(expand(m, v).env, (std::vector<std::string>{"OMP_NUM_THREADS=2"}));
  std::string cmd = buildCommand(m, v, "/tmp/c d");
  EXPECT_EQ(cmd, "cc -O2 -O3 -DTILE=16 /tmp/proj/k.c -o '/tmp/c d/prog'");
  // Substituted text is never substituted again.
  Manifest evil = m;
  evil.sources = {"{out}.c"};
  EXPECT_EQ(buildCommand(evil, v, "/x").find("/x/prog.c"), std::string::npos);
  // A project folder holding every placeholder, a command substitution, backticks and quotes is
  // inserted once, quoted, wherever the template names it.
  Manifest hostile = m;
  hostile.dir = "/p/{sources}{out}{cflags}{defines}{includes}{dir}{exe}$(touch PWNED)`x`'\"";
  hostile.buildCommand = "cd {dir} && cc {sources} -o {out}";
  EXPECT_EQ(buildCommand(hostile, v, "/b"),
            "cd '/p/{sources}{out}{cflags}{defines}{includes}{dir}{exe}$(touch PWNED)`x`'\\''\"' && cc "
            "'/p/{sources}{out}{cflags}{defines}{includes}{dir}{exe}$(touch PWNED)`x`'\\''\"/k.c' -o /b/prog");
}

TEST(Variant, TheBuildScriptQuotesEveryValueAndEscapesItsComments) {
  // A project folder named to run commands, a newline in an environment knob's value and in the
  // header (which carries the project's name): the script must run none of them.
  fs::path root = fs::temp_directory_path() / ("hone-build-sh-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::path project = root / "d$(touch PWNED_20)`touch PWNED_21`';x";
  fs::path best = root / "best $(touch PWNED_22)";
  fs::create_directories(project);
  fs::create_directories(best);
  Manifest m = manifest();
  m.dir = project.string();
  m.buildCommand = "echo built {out} > built.txt";
  Variant v = referenceVariant(m);
  v.knobs["OMP_NUM_THREADS"] = "2\ntouch PWNED_40";
  std::string script = buildScript(m, v, best.string(), "best of x\ntouch PWNED_41\n\x1b]0;title\x07");
  EXPECT_EQ(script.rfind("#!/bin/sh\n# best of x\\ntouch PWNED_41\\n\\e]0;title\\x07\n", 0), 0u) << script;
  std::string path = (root / "build.sh").string();
  std::ofstream(path) << script;
  ASSERT_EQ(std::system(fmt::format("cd '{}' && sh build.sh", root.string()).c_str()), 0) << script;
  EXPECT_EQ(readFile((project / "built.txt").string()), "built " + (best / "prog").string() + "\n");
  for (const auto &e : fs::recursive_directory_iterator(root))
    EXPECT_EQ(e.path().filename().string().rfind("PWNED", 0), std::string::npos) << e.path() << "\n" << script;
  EXPECT_FALSE(fs::exists("PWNED_40"));
  fs::remove_all(root);
}

TEST(Outputs, NumbersOfStdout) {
  OutputSpec s;
  s.ignore = {"^#"};
  auto v = numbersOf(s, "# header 99\nC_sum 1.5e+00\n2, 3;4\nHONE_TIME 0.5\nnan\n", "HONE_TIME");
  ASSERT_EQ(v.size(), 5u);
  EXPECT_EQ(v[0], 1.5);
  EXPECT_EQ(v[3], 4);
  EXPECT_TRUE(std::isnan(v[4]));
  EXPECT_TRUE(numbersOf(s, "no numbers here\n", "").empty());
}

TEST(Outputs, AnIgnorePatternOnAHugeLineNeitherRecursesNorHangs) {
  // std::regex recursed once per character here (a crash at tens of thousands); RE2 does not.
  OutputSpec s;
  s.ignore = {"^(a|b)*c$"};
  std::string huge(200000, 'a');
  auto v = numbersOf(s, huge + "c\n" + huge + "\n2.5\n", "");
  ASSERT_EQ(v.size(), 1u);
  EXPECT_EQ(v[0], 2.5);
  EXPECT_NE(errorOf(std::string(kManifest) + "\n[output]\nignore = [\"(a\"]\n").find("RE2 syntax"), std::string::npos);
}

TEST(Outputs, BinaryFiles) {
  OutputSpec s;
  s.source = "file";
  s.format = "binary";
  s.dtype = "f32";
  float f[3] = {1.5f, -2, 3};
  auto v = readBinary(s, std::string(reinterpret_cast<const char *>(f), sizeof f));
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, (std::vector<double>{1.5, -2, 3}));
  EXPECT_FALSE(readBinary(s, "abcde"));
  s.shape = {2, 2};
  EXPECT_NE(readBinary(s, std::string(12, '\0')).error().message.find("shape"), std::string::npos);
  s.dtype = "i64";
  s.shape = {};
  int64_t i[2] = {7, -9};
  EXPECT_EQ(*readBinary(s, std::string(reinterpret_cast<const char *>(i), sizeof i)), (std::vector<double>{7, -9}));
}

TEST(Outputs, EachToleranceDecides) {
  OutputSpec s;
  EXPECT_FALSE(compareOutputs(s, {1.0, 2.0}, {1.0 + 1e-12, 2.0}));           // rel default 1e-8
  auto m = compareOutputs(s, {1.0, 2.0}, {1.0, 2.001});
  ASSERT_TRUE(m);
  EXPECT_EQ(m->index, 1u);
  EXPECT_NE(m->message.find("output 1 is 2.0009999999999999, the reference's 2"), std::string::npos) << m->message;
  EXPECT_NE(compareOutputs(s, {1, 2}, {1})->message.find("1 outputs where the reference has 2"), std::string::npos);
  s.tolerance = Tolerance::Exact;
  EXPECT_TRUE(compareOutputs(s, {1.0}, {1.0 + 1e-15}));
  s.tolerance = Tolerance::Abs;
  s.atol = 0.01;
  EXPECT_FALSE(compareOutputs(s, {100.0}, {100.009}));
  EXPECT_TRUE(compareOutputs(s, {100.0}, {100.02}));
  s.tolerance = Tolerance::Ulp;
  s.ulps = 2;
  EXPECT_FALSE(compareOutputs(s, {1.0}, {std::nextafter(std::nextafter(1.0, 2.0), 2.0)}));
  EXPECT_TRUE(compareOutputs(s, {1.0}, {1.0 + 1e-12}));
  EXPECT_FALSE(compareOutputs(s, {NAN}, {NAN})); // NaN where the reference has NaN
  EXPECT_TRUE(compareOutputs(s, {1.0}, {NAN}));
  // -0 and +0 are one point: the smallest subnormals either side of zero are 2 ulps apart.
  double tiny = std::numeric_limits<double>::denorm_min(), huge = std::numeric_limits<double>::max();
  EXPECT_FALSE(compareOutputs(s, {-tiny, -0.0}, {tiny, 0.0}));
  s.ulps = 1;
  EXPECT_TRUE(compareOutputs(s, {-tiny}, {tiny}));
  // The widest distances (opposite signs at the ends of the range) are measured, not overflowed.
  auto far = compareOutputs(s, {-huge}, {huge});
  ASSERT_TRUE(far);
  EXPECT_NE(far->message.find("18437736874454810622 ulps apart"), std::string::npos) << far->message;
  // An infinity matches only the same infinity, under every tolerance.
  for (Tolerance t : {Tolerance::Exact, Tolerance::Abs, Tolerance::Rel, Tolerance::Ulp}) {
    s.tolerance = t;
    EXPECT_FALSE(compareOutputs(s, {INFINITY, -INFINITY}, {INFINITY, -INFINITY})) << toString(t);
    EXPECT_TRUE(compareOutputs(s, {INFINITY}, {1e308})) << toString(t);
    EXPECT_TRUE(compareOutputs(s, {1e308}, {INFINITY})) << toString(t);
    EXPECT_TRUE(compareOutputs(s, {INFINITY}, {-INFINITY})) << toString(t);
  }
  OutputSpec f32;
  f32.dtype = "f32";
  EXPECT_EQ(tolerances(f32).first, 1e-4);
}

TEST(Statistics, MedianCiAndConvergence) {
  Timing even = summarize({4, 1, 3, 2}, 0.02); // an even count: the mean of the middle two
  EXPECT_DOUBLE_EQ(even.median, 2.5);
  EXPECT_DOUBLE_EQ(even.mean, 2.5);
  EXPECT_NEAR(even.stddev, std::sqrt(5.0 / 3.0), 1e-12);
  EXPECT_NEAR(even.ci95, 3.182 * even.stddev / 2, 1e-9);
  EXPECT_FALSE(even.converged);
  Timing tight = summarize({1.0, 1.001, 0.999, 1.0}, 0.02);
  EXPECT_TRUE(tight.converged);
  Timing one = summarize({2.0}, 0.02);
  EXPECT_EQ(one.median, 2.0);
  EXPECT_FALSE(one.converged); // one sample says nothing about noise
  EXPECT_EQ(summarize({}, 0.02).median, 0);
}

TEST(Init, FindsParametersAndWritesAManifestThatLoads) {
  std::string src = "#ifndef N\n#define N 1024\n#endif\n#ifndef TILE\n#define TILE 64 // tile\n#endif\n"
                    "#ifndef UNROLL\n#define UNROLL 1\n#endif\n#ifndef MODE\n#define MODE fast\n#endif\n"
                    "#include <omp.h>\nint main() {\n#pragma omp parallel for schedule(runtime)\n"
                    "for (int i = 0; i < N; ++i) ;\n}\n";
  auto params = findParameters(src);
  ASSERT_EQ(params.size(), 4u);
  EXPECT_TRUE(params[0].sizesProblem); // N
  EXPECT_FALSE(params[1].sizesProblem);
  EXPECT_EQ(params[1].value, "64");
  EXPECT_EQ(params[1].line, 5);
  auto text = initManifest("prog.c", src, {4});
  ASSERT_TRUE(text) << text.error().message;
  auto m = parseManifest("/tmp/x/hone.toml", *text);
  ASSERT_TRUE(m) << m.error().message << "\n" << *text;
  EXPECT_FALSE(m->knob("N")); // a size is not a knob
  ASSERT_TRUE(m->knob("TILE"));
  EXPECT_EQ(m->knob("TILE")->values[m->knob("TILE")->defaultIndex], "64");
  EXPECT_GE(m->knob("TILE")->values.size(), 5u);
  EXPECT_EQ(m->knob("UNROLL")->values, (std::vector<std::string>{"1", "2", "3", "4", "8"}));
  EXPECT_EQ(m->knob("OMP_NUM_THREADS")->values, (std::vector<std::string>{"", "1", "2", "4"}));
  EXPECT_TRUE(m->knob("OMP_SCHEDULE"));
  EXPECT_EQ(m->flags, "-O2 -fopenmp");
  EXPECT_NE(text->find("N = 1024 (line 2)"), std::string::npos);
  EXPECT_FALSE(initManifest("prog.py", "", {}));
  auto cuda = initManifest("k.cu", "#ifndef BLOCK\n#define BLOCK 128\n#endif\n", {2});
  ASSERT_TRUE(cuda);
  auto cm = parseManifest("/tmp/y/hone.toml", *cuda);
  ASSERT_TRUE(cm) << cm.error().message;
  EXPECT_EQ(cm->language, "cuda");
  EXPECT_NE(cm->buildCommand.find("nvcc"), std::string::npos);
  EXPECT_FALSE(cm->knob("OMP_NUM_THREADS"));
}

namespace {
/// Writes `text` to `path`, creating its folder.
void put(const fs::path &path, const std::string &text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

/// A program in a benchmark suite's layout: root/.git, root/support/bench.{h,c} (the dump's target,
/// the dump and timer switches, the dataset default), root/kernels/axpy/axpy.{c,h} (dataset sizes, a
/// two-decimal format), main ignoring its arguments and dumping to stderr through the header's macro.
fs::path suiteProgram(const fs::path &root) {
  fs::create_directories(root / ".git");
  put(root / "support" / "bench.h", R"(#ifndef BENCH_H
#define BENCH_H
#include <stdio.h>
#define OUT_TARGET stderr
#ifdef DUMP_RESULTS
# define DUMP_ON 1
#else
# define DUMP_ON 0
#endif
#if defined(BENCH_TIME)
# define timer_start() bench_timer_start()
# define timer_print() bench_timer_print()
#else
# define timer_start()
# define timer_print()
#endif
void bench_timer_start(void);
void bench_timer_print(void);
#endif
)");
  put(root / "support" / "bench.c", R"(#include <stdio.h>
#include <time.h>
#include "bench.h"
static double t0;
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
void bench_timer_start(void) { t0 = now(); }
void bench_timer_print(void) { printf("%0.6f\n", now() - t0); }
)");
  put(root / "kernels" / "axpy" / "axpy.h", R"(#ifndef AXPY_H
#define AXPY_H
# if !defined(MINI_DATASET) && !defined(MEDIUM_DATASET) && !defined(LARGE_DATASET)
#  define LARGE_DATASET
# endif
# ifdef MINI_DATASET
#  define N 10
# endif
# ifdef MEDIUM_DATASET
#  define N 1000
# endif
# ifdef LARGE_DATASET
#  define N 100000
# endif
#define PRINT_FMT "%0.2lf "
#endif
)");
  put(root / "kernels" / "axpy" / "axpy.c", R"(#include <stdio.h>
#include <bench.h>
#include "axpy.h"
static double x[N], y[N];
int main(int argc, char **argv) {
  for (int i = 0; i < N; ++i) { x[i] = i % 7; y[i] = i % 5; }
  timer_start();
  for (int i = 0; i < N; ++i) y[i] += 1.5 * x[i];
  timer_print();
  if (DUMP_ON)
    for (int i = 0; i < N; ++i) fprintf(OUT_TARGET, PRINT_FMT, y[i]);
  return 0;
}
)");
  return root / "kernels" / "axpy" / "axpy.c";
}
} // namespace

TEST(Init, FindsHeadersCompanionsStderrDatasetsAndTheTimerOfAMultiFileProgram) {
  fs::path root = fs::temp_directory_path() / ("hone-init-suite-" + std::to_string(::getpid()));
  fs::path program = suiteProgram(root);
  auto init = initProject(program.string(), readFile(program.string()), {});
  ASSERT_TRUE(init) << init.error().message;
  auto m = parseManifest((program.parent_path() / "hone.toml").string(), init->text);
  ASSERT_TRUE(m) << m.error().message << "\n" << init->text;
  EXPECT_EQ(m->includeDirs, (std::vector<std::string>{"../../support"}));
  EXPECT_EQ(m->sources, (std::vector<std::string>{"axpy.c", "../../support/bench.c"}));
  EXPECT_EQ(m->editable, (std::vector<std::string>{"axpy.c"}));
  EXPECT_EQ(m->output.source, "stderr"); // through OUT_TARGET, which the header defines as stderr
  EXPECT_EQ(m->runCommand, "{exe}");      // main ignores its arguments
  EXPECT_EQ(m->seeds, (std::vector<uint64_t>{1}));
  EXPECT_NE(init->text.find("cannot fire"), std::string::npos);
  EXPECT_EQ(m->defines, (std::vector<std::string>{"MEDIUM_DATASET"}));
  EXPECT_NE(init->text.find("MINI_DATASET, MEDIUM_DATASET, LARGE_DATASET"), std::string::npos) << init->text;
  EXPECT_NE(init->text.find("with none given it builds LARGE_DATASET"), std::string::npos) << init->text;
  EXPECT_EQ(m->validateDefines, (std::vector<std::string>{"DUMP_RESULTS"}));
  EXPECT_EQ(m->timeDefines, (std::vector<std::string>{"BENCH_TIME"}));
  EXPECT_EQ(m->timing.mode, "region");
  EXPECT_DOUBLE_EQ(reportedSeconds(m->timing, "0.012345\n"), 0.012345);
  EXPECT_NE(init->text.find("WEAK VALIDATION"), std::string::npos);
  bool weakNote = false;
  for (const auto &n : init->notes)
    weakNote = weakNote || n.find("weak validation") != std::string::npos;
  EXPECT_TRUE(weakNote);
  // A dataset given by hand is kept, and no other is added.
  InitOptions large;
  large.defines = {"LARGE_DATASET"};
  auto withLarge = initProject(program.string(), readFile(program.string()), large);
  ASSERT_TRUE(withLarge);
  EXPECT_EQ(withLarge->text.find("\"MEDIUM_DATASET\""), std::string::npos);
  EXPECT_NE(withLarge->text.find("defines = [\"LARGE_DATASET\"]"), std::string::npos);
  // The search stops at the repository's root: a header above it is not the program's.
  put(root.parent_path() / ("hone-init-outside-" + std::to_string(::getpid())) / "outside.h", "");
  auto outside = initProject(program.string(), "#include <outside.h>\nint main(void) { return 0; }\n", {});
  ASSERT_TRUE(outside);
  EXPECT_EQ(outside->facts.missingHeaders, (std::vector<std::string>{"outside.h"}));
  EXPECT_NE(outside->text.find("# NOT FOUND: outside.h"), std::string::npos);
  // The C++ standard library's headers are the system's, not missing ones.
  auto cxx = initProject((root / "prog.cpp").string(),
                         "#include <cstdio>\n#include <vector>\n#include <bits/c++config.h>\n"
                         "int main() { std::vector<int> v(3); std::printf(\"%d\\n\", v[0]); }\n",
                         {});
  ASSERT_TRUE(cxx) << cxx.error().message;
  EXPECT_TRUE(cxx->facts.missingHeaders.empty()) << cxx->text;
  // --include finds it; --source and --define are taken; paths that do not exist are errors.
  InitOptions byHand;
  byHand.scan.includeDirs = {(root.parent_path() / ("hone-init-outside-" + std::to_string(::getpid()))).string()};
  byHand.scan.sources = {(root / "support" / "bench.c").string()};
  byHand.defines = {"N=5"};
  auto found = initProject(program.string(), "#include <outside.h>\nint main(void) { return 0; }\n", byHand);
  ASSERT_TRUE(found) << found.error().message;
  EXPECT_TRUE(found->facts.missingHeaders.empty());
  EXPECT_EQ(found->facts.includeDirs.size(), 1u);
  EXPECT_EQ(found->facts.extraSources, (std::vector<std::string>{"../../support/bench.c"}));
  EXPECT_NE(found->text.find("defines = [\"N=5\"]"), std::string::npos);
  byHand.scan.sources = {"/no/such/file.c"};
  auto missing = initProject(program.string(), "int main(void) { return 0; }\n", byHand);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("--source /no/such/file.c: no such file"), std::string::npos);
  InitOptions badDefine;
  badDefine.defines = {"-DX"};
  EXPECT_FALSE(initProject(program.string(), "int main(void) { return 0; }\n", badDefine));
  std::error_code ec;
  fs::remove_all(root, ec);
  fs::remove_all(root.parent_path() / ("hone-init-outside-" + std::to_string(::getpid())), ec);
}

// PolyBench's kernels say `#include <polybench.h>`; copied beside the program, the header is found
// there, but an angled include does not search the includer's folder: the build needs -I of it.
TEST(Init, AHeaderBesideTheProgramIncludedWithAnglesGetsItsFolderAsAnInclude) {
  fs::path root = fs::temp_directory_path() / ("hone-init-angled-" + std::to_string(::getpid()));
  put(root / "util.h", "#define SCALE 2.0\n");
  put(root / "near.h", "#define N 16\n");
  std::string code = "#include <stdio.h>\n#include <util.h>\n#include \"near.h\"\n"
                     "int main(void) { printf(\"%.17g\\n\", SCALE * N); return 0; }\n";
  put(root / "prog.c", code);
  auto init = initProject((root / "prog.c").string(), code, {});
  ASSERT_TRUE(init) << init.error().message;
  auto m = parseManifest((root / "hone.toml").string(), init->text);
  ASSERT_TRUE(m) << m.error().message << "\n" << init->text;
  EXPECT_EQ(m->includeDirs, (std::vector<std::string>{"."})) << init->text;
  // A program whose local headers are all quoted needs no -I.
  std::string quoted = "#include <stdio.h>\n#include \"near.h\"\nint main(void) { printf(\"%d\\n\", N); }\n";
  auto plain = initProject((root / "prog.c").string(), quoted, {});
  ASSERT_TRUE(plain) << plain.error().message;
  auto m2 = parseManifest((root / "hone.toml").string(), plain->text);
  ASSERT_TRUE(m2) << m2.error().message;
  EXPECT_TRUE(m2->includeDirs.empty()) << plain->text;
  std::error_code ec;
  fs::remove_all(root, ec);
}

// A source the manifest compiles from outside the project folder (PolyBench's ../../utilities) is
// the project's code in a profile: its lines are counted as such, not as the C library's.
TEST(Init, ACompanionSourceOutsideTheFolderIsProfiledAsTheProjectsOwn) {
  if (std::system("valgrind --version >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "valgrind is not installed";
  fs::path root = fs::temp_directory_path() / ("hone-init-companion-" + std::to_string(::getpid()));
  fs::path program = suiteProgram(root);
  auto init = initProject(program.string(), readFile(program.string()), {});
  ASSERT_TRUE(init) << init.error().message;
  put(program.parent_path() / "hone.toml", init->text);
  auto m = loadManifest(program.parent_path().string());
  ASSERT_TRUE(m) << m.error().message;
  ProfileOptions o;
  o.off = {"perf", "llvm-mca", "remarks"};
  KernelProfile p = profileVariant(*m, referenceVariant(*m), (root / "profile").string(), o);
  ASSERT_TRUE(p.cachegrind) << fmt::format("{}", fmt::join(p.skipped, "; "));
  bool companion = std::any_of(p.cachegrind->functions.begin(), p.cachegrind->functions.end(),
                               [](const CostLine &c) { return c.file == "../../support/bench.c"; });
  EXPECT_TRUE(companion) << toJson(p).dump(1);
  ASSERT_TRUE(p.breakdown);
  for (const auto &f : p.breakdown->outsideFunctions)
    EXPECT_NE(f.first.rfind("bench_", 0), 0u) << f.first; // the companion's functions are not "outside"
  std::error_code ec;
  fs::remove_all(root, ec);
}

TEST(Init, AProgramThatReadsItsArgumentsGetsSeedsAndStdout) {
  EXPECT_TRUE(mainReadsArguments("int main(int argc, char **argv) { return argc > 1; }"));
  EXPECT_TRUE(mainReadsArguments("int main(int n, char *a[])\n{\n  srand(atoi(a[1]));\n}\n"));
  EXPECT_FALSE(mainReadsArguments("int main(int argc, char **argv) {\n  int argcount = 3;\n  return argcount; }"));
  EXPECT_FALSE(mainReadsArguments("int main(void) { return 0; }"));
  EXPECT_FALSE(mainReadsArguments("int main() { return 0; }"));
  auto text = initManifest("prog.c", "#include <stdio.h>\nint main(int argc, char **argv) {\n"
                                     "  printf(\"%.17g\\n\", argc * 1.0);\n}\n", {});
  ASSERT_TRUE(text);
  auto m = parseManifest("/tmp/x/hone.toml", *text);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->runCommand, "{exe} {seed}");
  EXPECT_EQ(m->seeds.size(), 3u);
  EXPECT_EQ(m->output.source, "stdout");
  EXPECT_EQ(m->timing.mode, "process");
  EXPECT_FALSE(m->splitBuilds());
  EXPECT_EQ(text->find("WEAK VALIDATION"), std::string::npos);
}

TEST(Init, WhatMainsArgumentsSetDecidesHowTheProgramRuns) {
  // A size with a default (a ternary on argc): not a seed, run without it on fixed inputs.
  auto size = mainArguments("int main(int argc, char **argv) {\n  int n = argc > 1 ? atoi(argv[1]) : 700;\n"
                            "  double *a = malloc(n * n * 8);\n}\n");
  ASSERT_EQ(size.size(), 1u);
  EXPECT_EQ(size[0].index, 1);
  EXPECT_EQ(size[0].variable, "n");
  EXPECT_EQ(size[0].role, Argument::Role::Parameter);
  EXPECT_TRUE(size[0].optional);
  EXPECT_EQ(size[0].fallback, "700");
  // C++'s qualified names in the branch that reads it.
  auto qualified = mainArguments("int main(int argc, char **argv) {\n  int n = argc > 1 ? std::atoi(argv[1]) : 600;\n"
                                 "  unsigned s = argc > 2 ? static_cast<unsigned>(std::atoi(argv[2])) : 1u;\n}\n");
  ASSERT_EQ(qualified.size(), 2u);
  EXPECT_EQ(qualified[0].fallback, "600");
  EXPECT_TRUE(qualified[0].optional);
  EXPECT_EQ(qualified[1].fallback, "1u");
  // An `if` on argc, its own statement or a block; the default is the variable's first value.
  auto guarded = mainArguments("int main(int c, char *v[]) {\n  int steps = 50; long n = (1000);\n"
                               "  if (c >= 2) steps = strtol(v[1], 0, 10);\n  if (c > 2) {\n"
                               "    n = atol(v[2]);\n  }\n}\n");
  ASSERT_EQ(guarded.size(), 2u);
  EXPECT_EQ(guarded[0].variable, "steps");
  EXPECT_TRUE(guarded[0].optional);
  EXPECT_EQ(guarded[0].fallback, "50");
  EXPECT_EQ(guarded[1].variable, "n");
  EXPECT_TRUE(guarded[1].optional);
  EXPECT_EQ(guarded[1].fallback, "1000");
  // A required argument (the usage check returns before it) is not optional.
  auto required = mainArguments("int main(int argc, char **argv) {\n  if (argc < 2) { puts(\"usage\"); return 1; }\n"
                                "  int n = atoi(argv[1]);\n}\n");
  ASSERT_EQ(required.size(), 1u);
  EXPECT_FALSE(required[0].optional);
  EXPECT_EQ(required[0].role, Argument::Role::Parameter);
  // Seeds: by name, by srand, by an engine, by sscanf into a variable that seeds.
  auto named = mainArguments("int main(int argc, char **argv) {\n  unsigned seed = atoi(argv[1]);\n}\n");
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].role, Argument::Role::Seed);
  auto srandDirect = mainArguments("int main(int argc, char **argv) {\n  srand(atoi(argv[1]));\n}\n");
  ASSERT_EQ(srandDirect.size(), 1u);
  EXPECT_EQ(srandDirect[0].role, Argument::Role::Seed);
  auto engine = mainArguments("int main(int argc, char **argv) {\n  int n = 100, s = 0;\n"
                              "  if (argc > 1) n = std::stoi(argv[1]);\n  if (argc > 2) sscanf(argv[2], \"%d\", &s);\n"
                              "  std::mt19937 gen((unsigned)s);\n}\n");
  ASSERT_EQ(engine.size(), 2u);
  EXPECT_EQ(engine[0].role, Argument::Role::Parameter);
  EXPECT_EQ(engine[1].variable, "s");
  EXPECT_EQ(engine[1].role, Argument::Role::Seed);
  // A default over several lines, with shell syntax in it: one line of text, and the manifest
  // that names it loads, runs `{exe}` and runs nothing else.
  auto hostile = mainArguments("int main(int argc, char **argv) {\n  int n = argc > 1 ? atoi(argv[1]) : (3\n"
                               "+ $(touch PWNED)\n\t + \"x\");\n}\n");
  ASSERT_EQ(hostile.size(), 1u);
  EXPECT_EQ(hostile[0].fallback, "3 + $(touch PWNED) + \"x\"");
  EXPECT_TRUE(mainArguments("int main(void) { return 0; }").empty());
  EXPECT_TRUE(mainArguments("int main(int argc, char **argv) { return argc; }").empty());

  auto load = [](const std::string &source) {
    auto text = initManifest("prog.c", source, {});
    EXPECT_TRUE(text) << (text ? "" : text.error().message);
    auto m = parseManifest("/tmp/x/hone.toml", text ? *text : "");
    EXPECT_TRUE(m) << (m ? "" : m.error().message);
    return m ? *m : Manifest{};
  };
  const std::string print = "  printf(\"%.17g\\n\", 1.0);\n}\n";
  Manifest sized = load("#include <stdio.h>\nint main(int argc, char **argv) {\n"
                        "  int n = argc > 1 ? atoi(argv[1]) : 700;\n" + print);
  EXPECT_EQ(sized.runCommand, "{exe}");
  EXPECT_EQ(sized.seeds.size(), 1u);
  Manifest seeded = load("#include <stdio.h>\nint main(int argc, char **argv) {\n"
                         "  int n = argc > 1 ? atoi(argv[1]) : 700;\n  srand(argc > 2 ? atoi(argv[2]) : 1);\n" + print);
  EXPECT_EQ(seeded.runCommand, "{exe} 700 {seed}");
  EXPECT_EQ(seeded.seeds.size(), 3u);
  Manifest unknown = load("#include <stdio.h>\nint main(int argc, char **argv) {\n  int n = atoi(argv[1]);\n" + print);
  EXPECT_EQ(unknown.runCommand, "{exe} {seed}"); // hone cannot choose the size: the manifest says so
  auto text = initManifest("prog.c", "#include <stdio.h>\nint main(int argc, char **argv) {\n  int n = atoi(argv[1]);\n" +
                                         print, {});
  ASSERT_TRUE(text);
  EXPECT_NE(text->find("does not look like a seed"), std::string::npos) << *text;
  Manifest quoted = load("#include <stdio.h>\nint main(int argc, char **argv) {\n"
                         "  int n = argc > 1 ? atoi(argv[1]) : (3\n+ $(touch PWNED)\n);\n" + print);
  EXPECT_EQ(quoted.runCommand, "{exe}");
}

TEST(Init, SinglePrecisionProgramsGetAToleranceForReassociation) {
  const std::string floats = "#include <stdio.h>\nfloat x[100];\nint main(void) {\n  float s = 0;\n"
                             "  for (int i = 0; i < 100; i++) s += x[i];\n  printf(\"%.9g\\n\", s);\n}\n";
  auto text = initManifest("prog.c", floats, {});
  ASSERT_TRUE(text);
  auto m = parseManifest("/tmp/x/hone.toml", *text);
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_DOUBLE_EQ(m->output.rtol, 1e-5);
  std::string doubles = floats;
  for (size_t at; (at = doubles.find("float")) != std::string::npos;)
    doubles.replace(at, 5, "double");
  auto d = parseManifest("/tmp/x/hone.toml", *initManifest("prog.c", doubles, {}));
  ASSERT_TRUE(d);
  EXPECT_DOUBLE_EQ(d->output.rtol, 1e-8);
}

TEST(Init, EveryValueWrittenIsEscapedAndControlCharactersAreRefused) {
  // A name that would close the string and open a table of its own (issue 40, item 12).
  auto injected = initManifest("p\"]\n[build]\ncommand = \"touch PWNED\".c", "int main(void) { return 0; }\n", {});
  ASSERT_FALSE(injected);
  EXPECT_NE(injected.error().message.find("control character"), std::string::npos) << injected.error().message;
  // Quotes and backslashes alone are escaped: the manifest loads and names the file exactly.
  auto quoted = initManifest("p\"q\\r.c", "#ifndef MODE\n#define MODE \"a\\\"b\"\n#endif\nint main(void) { return 0; }\n",
                             {});
  ASSERT_TRUE(quoted) << quoted.error().message;
  auto m = parseManifest("/tmp/x/hone.toml", *quoted);
  ASSERT_TRUE(m) << m.error().message << "\n" << *quoted;
  EXPECT_EQ(m->sources, (std::vector<std::string>{"p\"q\\r.c"}));
  EXPECT_EQ(m->name, "p\"q\\r");
  ASSERT_TRUE(m->knob("MODE"));
  EXPECT_EQ(m->knob("MODE")->values[0], "\"a\\\"b\"");
  EXPECT_EQ(tomlString("a\"b\\c\nd\x01"), "\"a\\\"b\\\\c\\nd\\u0001\"");
}

TEST(Runner, ATolerancePrintedWithFewDigitsAllowsOneUnitInTheLastPlace) {
  EXPECT_DOUBLE_EQ(printedUnit("12.34"), 0.01);
  EXPECT_DOUBLE_EQ(printedUnit("-1.5e-3"), 1e-4);
  EXPECT_DOUBLE_EQ(printedUnit("2e+05"), 1e5);
  EXPECT_EQ(printedUnit("42"), 0);
  EXPECT_EQ(printedUnit("nan"), 0);
  EXPECT_EQ(printedUnit("0x1.8p+1"), 0);
  OutputSpec spec; // rel, 1e-8 by default
  std::vector<double> units;
  auto values = numbersOf(spec, "1.23 4.56\n7.00\n", "", &units);
  ASSERT_EQ(units.size(), 3u);
  EXPECT_DOUBLE_EQ(units[2], 0.01);
  // FMA contraction moving the last printed digit by one: allowed with the printed units only.
  std::vector<double> moved = {1.24, 4.56, 7.00};
  EXPECT_TRUE(compareOutputs(spec, values, moved));
  EXPECT_FALSE(compareOutputs(spec, values, moved, &units));
  std::vector<double> twoUnits = {1.25, 4.56, 7.00};
  EXPECT_TRUE(compareOutputs(spec, values, twoUnits, &units));
  OutputSpec exact;
  exact.tolerance = Tolerance::Exact; // exact stays exact
  EXPECT_TRUE(compareOutputs(exact, values, moved, &units));
  // Integers are exact as printed: a count one off is wrong whatever the format.
  std::vector<double> intUnits;
  auto counts = numbersOf(spec, "100 200\n", "", &intUnits);
  EXPECT_TRUE(compareOutputs(spec, counts, {101, 200}, &intUnits));
  // The tolerance as the model reads it, with its numbers.
  EXPECT_EQ(toleranceText(spec), "rel: |got - expected| <= 1e-10 + 1e-08 * |expected|");
  OutputSpec ulp;
  ulp.tolerance = Tolerance::Ulp;
  EXPECT_EQ(toleranceText(ulp), "ulp: within 4 units in the last place");
  // Weak: about 3 significant digits; strong: 17.
  auto weak = weakValidation(values, units);
  ASSERT_TRUE(weak);
  EXPECT_NE(weak->find("weak validation"), std::string::npos);
  EXPECT_NE(weak->find("%.17g"), std::string::npos);
  auto plain = weakValidation(values, units, false); // the step's note: the finding without the advice
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->find("%.17g"), std::string::npos);
  EXPECT_EQ(weak->rfind(*plain, 0), 0u);
  std::vector<double> fullUnits;
  auto full = numbersOf(spec, "1.2345678901234567 4.5600000000000005\n", "", &fullUnits);
  EXPECT_FALSE(weakValidation(full, fullUnits));
  EXPECT_FALSE(weakValidation(counts, intUnits));
}

// ---- diagnosis, rules, catalogue -----------------------------------------------------

namespace {
KernelProfile syntheticProfile() {
  KernelProfile p;
  p.cores = 4;
  CachegrindData cg;
  cg.events = {"Ir", "Dr", "Dw", "D1mr", "D1mw", "DLmr", "DLmw"};
  CostLine hot{"mm.c", "main", 20, {{"Ir", 800}, {"Dr", 400}, {"Dw", 0}, {"D1mr", 200}, {"D1mw", 0}, {"DLmr", 1}}};
  CostLine cold{"mm.c", "main", 5, {{"Ir", 200}, {"Dr", 100}, {"D1mr", 0}}};
  cg.lines = {hot, cold};
  cg.functions = {{"mm.c", "main", 0, {{"Ir", 1000}, {"Dr", 500}, {"D1mr", 200}}}};
  cg.totals = {{"Ir", 1000}};
  p.cachegrind = cg;
  p.remarks = {{"mm.c", 20, 5, "missed", "not vectorized: complicated access pattern.", ""},
               {"mm.c", 40, 5, "missed", "couldn't vectorize loop", ""}};
  PerfStat perf;
  perf.cpusUtilized = 1.0;
  p.perf = perf;
  McaReport mca;
  mca.iterations = 100;
  mca.totalCycles = 400;
  mca.blockRThroughput = 1;
  mca.dataDependencies = 70;
  p.mca = mca;
  p.mcaLoop = "mm.c:20";
  p.ptxas = {{"k(float*)", "sm_90", 96, 1, 49152, 0, 16, 16, 0}};
  p.ompSchedules = {{"mm.c", 18, "runtime", "", "dynamic,1"}};
  return p;
}
std::set<std::string> kindsOf(const json &d) {
  std::set<std::string> out;
  for (const auto &b : d["bottlenecks"])
    out.insert(b["kind"].get<std::string>());
  return out;
}
} // namespace

TEST(Diagnose, FindingsCiteTheirNumbersAndRank) {
  json d = diagnose(syntheticProfile());
  EXPECT_EQ(d["schema"], 1);
  auto kinds = kindsOf(d);
  for (const char *k : {"cache-misses", "not-vectorized-stride", "serial", "dependency-chain", "register-spills",
                        "occupancy-registers", "occupancy-shared", "fine-grained-schedule"})
    EXPECT_TRUE(kinds.count(k)) << k << " in " << d.dump(1);
  double last = 2;
  for (const auto &b : d["bottlenecks"]) { // ranked by share
    EXPECT_LE(b["share"].get<double>(), last);
    last = b["share"].get<double>();
    EXPECT_TRUE(b.contains("numbers"));
    EXPECT_FALSE(b["detail"].get<std::string>().empty());
  }
  for (const auto &b : d["bottlenecks"])
    if (b["kind"] == "cache-misses") {
      EXPECT_EQ(b["line"], 20);
      EXPECT_DOUBLE_EQ(b["numbers"]["d1_miss_rate"].get<double>(), 0.5);
      EXPECT_NE(b["detail"].get<std::string>().find("50.0%"), std::string::npos);
    }
  // A plain "couldn't vectorize" without a reason is no finding; the thresholds are honoured.
  Thresholds strict;
  strict.d1MissRate = 0.9;
  strict.usedCoresFraction = 0.1;
  auto fewer = kindsOf(diagnose(syntheticProfile(), strict));
  EXPECT_FALSE(fewer.count("cache-misses"));
  EXPECT_FALSE(fewer.count("serial"));
  KernelProfile gpu = syntheticProfile();
  gpu.gpu = true; // a GPU program's host is serial by design
  EXPECT_FALSE(kindsOf(diagnose(gpu)).count("serial"));
}

// Where the time goes: cachegrind's counts over the loop nests of the variant's own source, with
// what each nest's calls ran (callgrind); findings in cold nests are left out and listed.
TEST(Diagnose, TheTimeIsBrokenDownByLoopNestAndColdNestsLoseTheirFindings) {
  fs::path dir = fs::temp_directory_path() / ("hone-breakdown-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const char *source = R"(#include <stdio.h>
#define N 64
static double a[N][N], b[N][N];
static void init(void) {
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j)
      a[i][j] = i + j;
}
static void work(void) {
  for (int i = 0; i < N; ++i)
    for (int j = 0; j < N; ++j)
      b[j][i] += 2 * a[i][j];
}
static void dump(void) {
  for (int i = 0; i < N; ++i)
    fprintf(stderr, "%.2f\n", b[i][i]);
}
int main(void) {
  init();
  work();
  dump();
  return 0;
}
)";
  std::ofstream(dir / "k.c") << source;
  std::ofstream(dir / "hone.toml") << "[project]\nname = \"k\"\nlanguage = \"c\"\nsources = [\"k.c\"]\n"
                                      "[build]\ncommand = \"cc {cflags} {sources} -o {out}\"\n[run]\ncommand = \"{exe}\"\n";
  auto m = loadManifest(dir.string());
  ASSERT_TRUE(m) << m.error().message;
  CachegrindData cg;
  cg.events = {"Ir"};
  cg.totals = {{"Ir", 1000}};
  auto line = [](int l, double ir) { return CostLine{"k.c", "main", l, {{"Ir", ir}}}; };
  cg.lines = {line(7, 5), line(12, 600), line(11, 40), line(16, 30), line(21, 15)}; // 310 outside the project
  CallCosts calls;
  calls.total = 1000;
  calls.lines[{"k.c", 16}] = 280; // fprintf, with all it ran
  auto b = timeBreakdown(*m, referenceVariant(*m), cg, &calls);
  ASSERT_TRUE(b);
  ASSERT_EQ(b->nests.size(), 3u);
  EXPECT_EQ(b->nests[0].line, 10); // work's nest: 64%
  EXPECT_EQ(b->nests[0].function, "work");
  EXPECT_NEAR(b->nests[0].share, 0.64, 1e-12);
  EXPECT_EQ(b->nests[1].line, 15); // dump's: 3% of its own, 28% with fprintf
  EXPECT_NEAR(b->nests[1].share, 0.03, 1e-12);
  EXPECT_NEAR(b->nests[1].callShare.value_or(-1), 0.28, 1e-12);
  EXPECT_TRUE(b->nests[1].calls);
  EXPECT_EQ(b->nests[2].line, 5); // init's: 0.5%
  EXPECT_FALSE(b->nests[2].calls);
  ASSERT_EQ(b->files.size(), 1u); // main's call lines, outside every nest
  EXPECT_NEAR(b->files[0].second, 0.015, 1e-12);
  EXPECT_NEAR(b->outside, 0.31, 1e-12);
  EXPECT_EQ(b->nestAt("k.c", 12), &b->nests[0]);
  EXPECT_EQ(b->nestAt("k.c", 19), nullptr);

  // A finding in init's nest is cold and left out; so is the vectorizer's on dump's nest, whose time
  // is in fprintf: vectorizing it changes nothing (its nest is not cold: its calls are warm).
  KernelProfile p;
  p.cachegrind = cg;
  p.breakdown = *b;
  p.remarks = {{"k.c", 6, 5, "missed", "not vectorized: complicated access pattern.", ""},
               {"k.c", 15, 3, "missed", "not vectorized: control flow in loop.", ""},
               {"k.c", 11, 5, "missed", "not vectorized: complicated access pattern.", ""}};
  json d = diagnose(p);
  std::set<int> lines;
  for (const auto &f : d["bottlenecks"])
    if (f.contains("line"))
      lines.insert(f["line"].get<int>());
  EXPECT_EQ(lines, (std::set<int>{11})) << d.dump(1);
  ASSERT_EQ(d["cold"].size(), 2u);
  EXPECT_EQ(d["cold"][0]["line"], 6);
  EXPECT_EQ(d["cold"][0]["why"], "cold");
  EXPECT_EQ(d["cold"][1]["line"], 15);
  EXPECT_EQ(d["cold"][1]["why"], "calls");
  for (const auto &f : d["bottlenecks"]) { // a loop's share is its whole nest's
    if (f.value("line", 0) == 11) {
      EXPECT_NEAR(f["numbers"]["hot_share"].get<double>(), 0.64, 1e-12);
    }
  }
  std::string text = breakdownText(d["breakdown"], d["cold"]);
  EXPECT_NE(text.find(" 64.0%  loop nest k.c:10-12 in work()"), std::string::npos) << text;
  EXPECT_NE(text.find(" 31.0%  loop nest k.c:15-16 in dump() (28.0% of it in the functions it calls)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("1 other loop nest"), std::string::npos) << text;
  EXPECT_NE(text.find(" 31.0%  outside the project's code"), std::string::npos) << text;
  EXPECT_NE(text.find("left out: k.c:6)"), std::string::npos) << text;
  EXPECT_NE(text.find("spend their time in the functions they call: k.c:15"), std::string::npos) << text;
  EXPECT_EQ(text.find("the region the program times"), std::string::npos) << text; // a process-timed run
  json region = d["breakdown"];
  region["scope"] = "region";
  EXPECT_NE(breakdownText(region, d["cold"]).find("the score times only the region the program times itself"),
            std::string::npos);
  EXPECT_EQ(breakdownText(json(), json()), "");
  // Without a breakdown (no cachegrind) nothing is left out.
  KernelProfile bare = p;
  bare.breakdown.reset();
  EXPECT_EQ(diagnose(bare)["bottlenecks"].size(), 3u);
  EXPECT_FALSE(diagnose(bare).contains("cold"));
  fs::remove_all(dir);
}

namespace {
/// The reference of a one-file project in `dir` (k.c, built by cc with the manifest's own flags;
/// `manifestTail` adds to its [build] table and holds the rest), profiled without the profilers in `off`.
KernelProfile profileOneFile(const fs::path &dir, const std::string &source, const std::string &manifestTail,
                             const std::set<std::string> &off) {
  fs::create_directories(dir);
  std::ofstream(dir / "k.c") << source;
  auto m = parseManifest((dir / "hone.toml").string(),
                         "[project]\nsources = [\"k.c\"]\n[build]\ncommand = \"cc {cflags} {sources} -o {out}\"\n" +
                             manifestTail);
  EXPECT_TRUE(m) << m.error().message;
  if (!m)
    return {};
  ProfileOptions only;
  only.off = off;
  return profileVariant(*m, referenceVariant(*m), (dir / "profile").string(), only);
}
} // namespace

// With the outputs on stdout or on stderr: valgrind's complaint goes to stderr, which the manifest
// may have taken for the program's outputs.
TEST(Diagnose, AnAvx512BuildIsStillProfiledLineByLine) {
#if !defined(__x86_64__)
  GTEST_SKIP() << "AVX-512 is an x86-64 extension";
#endif
  if (std::system("valgrind --version >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "valgrind is not installed";
  for (std::string stream : {"stdout", "stderr"}) {
    SCOPED_TRACE(stream);
    fs::path dir = fs::temp_directory_path() / ("hone-avx512-" + std::to_string(::getpid()));
    std::set<std::string> off = {"perf", "remarks", "ptxas"};
    bool mca = std::system("llvm-mca --version >/dev/null 2>&1") == 0;
    if (!mca)
      off.insert("llvm-mca");
    // Whether or not this machine has AVX-512, valgrind cannot decode it: the first profile stops at
    // the first such instruction. (A machine without it could not time this build, but can profile it.)
    KernelProfile p = profileOneFile(dir,
                                     "#include <stdio.h>\n"
                                     "static double a[4096], b[4096];\n"
                                     "int main(void) {\n"
                                     "  for (int i = 0; i < 4096; ++i) b[i] = i;\n"
                                     "  for (int r = 0; r < 200; ++r)\n"
                                     "    for (int i = 0; i < 4096; ++i)\n"
                                     "      a[i] = a[i] * 0.5 + b[i] * 1.5;\n"
                                     "  fprintf(" +
                                         stream + ", \"%.17g\\n\", a[7]);\n}\n",
                                     "flags = \"-O3 -mavx512f -mprefer-vector-width=512\"\n[run]\ncommand = \"{exe}\"\n"
                                     "[output]\nsource = \"" +
                                         stream + "\"\n",
                                     off);
    ASSERT_TRUE(p.cachegrind) << json(p.skipped).dump();
    bool hot = std::any_of(p.cachegrind->lines.begin(), p.cachegrind->lines.end(), [](const CostLine &c) {
      return c.line == 7 && c.events.count("Ir") && c.events.at("Ir") > 1e5;
    });
    EXPECT_TRUE(hot) << "the loop's line has its instructions";
    std::string notes = json(p.notes).dump();
    EXPECT_NE(notes.find("-mno-avx512f"), std::string::npos) << notes;
    // Modelled: by llvm-mca's default CPU where that is the host's and has AVX-512 (a Rocket Lake
    // host), else by a CPU model that has it (the notes then say which).
    if (mca) {
      EXPECT_TRUE(p.mca) << json(p.skipped).dump();
    }
    fs::remove_all(dir);
  }
}

// What valgrind counted of a run that crashed says nothing about where the time goes: no data, and why.
TEST(Diagnose, AProfileOfARunThatCrashedIsNotData) {
  if (std::system("valgrind --version >/dev/null 2>&1") != 0)
    GTEST_SKIP() << "valgrind is not installed";
  fs::path dir = fs::temp_directory_path() / ("hone-crash-" + std::to_string(::getpid()));
  KernelProfile p = profileOneFile(dir,
                                   "#include <stdio.h>\n#include <stdlib.h>\n"
                                   "int main(void) {\n"
                                   "  printf(\"1\\n\");\n"
                                   "  fflush(stdout);\n"
                                   "  abort();\n"
                                   "}\n",
                                   "[run]\ncommand = \"{exe}\"\n", {"perf", "remarks", "ptxas", "llvm-mca"});
  EXPECT_FALSE(p.cachegrind);
  std::string skipped = json(p.skipped).dump();
  EXPECT_NE(skipped.find("cachegrind: the program did not finish under valgrind ("), std::string::npos)
      << skipped;
  fs::remove_all(dir);
}

TEST(Diagnose, FineGrainedScheduleFromTheSourceAndTheVariantsEnvironment) {
  ::unsetenv("OMP_SCHEDULE"); // hone's own environment is inherited by the runs
  fs::path dir = fs::temp_directory_path() / ("hone-omp-schedule-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "k.c") << "int main(void) {\n"
                                "  double s = 0;\n"
                                "#pragma omp parallel for schedule(runtime) reduction(+ : s)\n"
                                "  for (int i = 0; i < 100; ++i) s += i;\n"
                                "#pragma omp parallel for schedule(dynamic, 8)\n"
                                "  for (int i = 0; i < 100; ++i) s += i;\n"
                                "  return s > 0 ? 0 : 1;\n"
                                "}\n";
  auto m = parseManifest((dir / "hone.toml").string(), R"(
[project]
sources = ["k.c"]
[build]
command = "cc {cflags} {sources} -o {out}"
flags = "-O2 -fopenmp"
[run]
command = "{exe}"
[[knob]]
name = "OMP_SCHEDULE"
kind = "env"
values = ["", "static", "dynamic", "dynamic,32", "monotonic:dynamic,1"]
)");
  ASSERT_TRUE(m) << m.error().message;
  ProfileOptions none;
  none.off = {"cachegrind", "perf", "remarks", "llvm-mca", "ptxas"};
  auto profileWith = [&](const std::string &schedule) {
    Variant v = referenceVariant(*m);
    v.knobs["OMP_SCHEDULE"] = schedule;
    KernelProfile p = profileVariant(*m, v, (dir / "profile").string(), none);
    p.cores = 4;
    return p;
  };
  for (const auto &[env, runs] : std::vector<std::pair<std::string, std::string>>{
           {"", "dynamic,1"}, {"static", "static"}, {"dynamic", "dynamic,1"}, {"dynamic,32", "dynamic,32"},
           {"monotonic:dynamic,1", "dynamic,1"}}) {
    KernelProfile p = profileWith(env);
    ASSERT_EQ(p.ompSchedules.size(), 2u);
    EXPECT_EQ(p.ompSchedules[0].line, 3);
    EXPECT_EQ(p.ompSchedules[0].runs, runs) << "OMP_SCHEDULE=" << env;
    EXPECT_EQ(p.ompSchedules[1].runs, "dynamic,8"); // the clause's own chunk, whatever the environment says
    json d = diagnose(p);
    size_t found = 0;
    for (const auto &b : d["bottlenecks"])
      if (b["kind"] == "fine-grained-schedule") {
        ++found;
        EXPECT_EQ(b["line"], 3);
        EXPECT_NE(b["detail"].get<std::string>().find("schedule(runtime)"), std::string::npos);
      }
    EXPECT_EQ(found, runs == "dynamic,1" ? 1u : 0u) << "OMP_SCHEDULE=" << env << ": " << d.dump(1);
  }
  // One core: nothing to balance, no finding.
  KernelProfile single = profileWith("");
  single.cores = 1;
  EXPECT_FALSE(kindsOf(diagnose(single)).count("fine-grained-schedule"));
  fs::remove_all(dir);
}

TEST(Diagnose, NcuFindings) {
  KernelProfile p;
  NcuKernel k{"0", "sweep", "(8,8,1)", "(1,1,1)", {}, {}};
  k.metrics = {{"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 1600},
               {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 100},
               {"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum", 50},
               {"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum", 100},
               {"sm__warps_active.avg.pct_of_peak_sustained_active", 30},
               {"smsp__thread_inst_executed_per_inst_executed.ratio", 12},
               {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 85},
               {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 20}};
  p.ncu = {k};
  auto kinds = kindsOf(diagnose(p));
  for (const char *kind : {"uncoalesced", "bank-conflicts", "low-occupancy", "divergence", "memory-bound"})
    EXPECT_TRUE(kinds.count(kind)) << kind;
}

TEST(Diagnose, EveryKindHasARuleAndEveryActionIsInTheCatalogue) {
  auto guide = hone::autoguide::AutoGuide::withDefaults();
  ASSERT_TRUE(guide) << guide.error().message;
  auto catalogue = loadCatalogue();
  ASSERT_TRUE(catalogue) << catalogue.error().message;
  size_t cpu = 0, gpu = 0;
  for (const auto &t : *catalogue) {
    (t.target == "cpu" ? cpu : gpu)++;
    EXPECT_FALSE(t.reference.empty()) << t.id;
  }
  EXPECT_GE(cpu, 15u);
  EXPECT_GE(gpu, 10u);
  std::set<std::string> ruled;
  for (const auto &r : guide->rules()) {
    if (r.domain != "kernel")
      continue;
    if (r.match == hone::autoguide::MatchKind::Bottleneck) {
      ruled.insert(r.pattern);
      EXPECT_FALSE(r.transformations.empty()) << r.id;
      EXPECT_TRUE(parseFindingKind(r.pattern)) << r.id << " names the kind '" << r.pattern
                                               << "', which the diagnosis does not declare";
    }
    for (const auto &t : r.transformations)
      EXPECT_TRUE(std::any_of(catalogue->begin(), catalogue->end(), [&](const Transformation &x) { return x.id == t; }))
          << r.id << " names " << t;
  }
  // Every declared kind has an id (the enum and the table agree), a rule, and its id reads back.
  EXPECT_EQ(findingKinds().size(), static_cast<size_t>(FindingKind::ComputeBound) + 1);
  for (int i = 0; i <= static_cast<int>(FindingKind::ComputeBound); ++i)
    EXPECT_NE(toString(static_cast<FindingKind>(i)), "unknown") << i;
  for (FindingKind k : findingKinds()) {
    EXPECT_TRUE(ruled.count(std::string(toString(k)))) << "no rule explains " << toString(k);
    EXPECT_EQ(parseFindingKind(toString(k)), k);
  }
  EXPECT_EQ(findingKinds().size(), ruled.size());
  EXPECT_FALSE(parseFindingKind("cache-miss"));
  KernelProfile p = syntheticProfile();
  json d = diagnose(p);
  KernelProfile n;
  n.ncu = {{"0", "k", "", "", {{"l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", 1600}, {"l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum", 100}, {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 90}, {"dram__throughput.avg.pct_of_peak_sustained_elapsed", 10}}, {}}};
  for (const json &diag : {d, diagnose(n)})
    for (const auto &b : diag["bottlenecks"])
      EXPECT_TRUE(ruled.count(b["kind"].get<std::string>())) << "no rule explains " << b["kind"];
  // Every finding names the tool that measured it, and every number it cites has a unit.
  for (const Diagnosis &typed : {diagnosis(p), diagnosis(n)})
    for (const auto &b : typed.evidence.bottlenecks) {
      EXPECT_FALSE(b.tool.empty()) << b.kind;
      for (const auto &[name, q] : b.numbers)
        EXPECT_FALSE(q.unit.empty()) << b.kind << " cites " << name << " without a unit";
    }
  // The rules explain with the finding's numbers and carry the action.
  auto findings = guide->interpret("", diagnosis(p).evidence, "kernel");
  bool cited = false;
  for (const auto &f : findings)
    if (f.rule == "kernel-cache-misses") {
      cited = f.explanation.find("50.0%") != std::string::npos;
      EXPECT_EQ(f.transformations.front(), "loop-tiling");
      ASSERT_TRUE(f.subject);
      EXPECT_EQ(f.subject->line, 20);
    }
  EXPECT_TRUE(cited);
}

TEST(Diagnose, EachProfilerIsRegisteredOnceAndItsFindingsNameIt) {
  std::set<std::string> names;
  for (const hone::kernel::profilers::Profiler *p : hone::kernel::profilers::profilers()) {
    EXPECT_TRUE(names.insert(std::string(p->name)).second) << p->name << " is registered twice";
    EXPECT_TRUE(p->run && p->diagnose && p->toJson) << p->name;
  }
  EXPECT_GE(names.size(), 7u);
  std::set<std::string> tools;
  for (const auto &b : diagnosis(syntheticProfile()).evidence.bottlenecks) {
    EXPECT_TRUE(names.count(b.tool)) << b.kind << " names " << b.tool;
    tools.insert(b.tool);
  }
  // The synthetic profile has numbers of every profiler but Nsight Compute's report.
  EXPECT_EQ(tools, (std::set<std::string>{"cachegrind", "remarks", "omp-schedules", "perf", "llvm-mca", "ptxas"}));
}

TEST(Diagnose, AProfilerSaysWhetherItCanMeasureBeforeItRuns) {
  namespace pr = hone::kernel::profilers;
  Manifest two;
  two.sources = {"a.c", "b.c"};
  ProfileOptions o;
  KernelProfile cpu, gpu;
  gpu.gpu = true;
  // Said (in the profile's skipped list): llvm-mca needs one source file's assembly.
  EXPECT_EQ(pr::kMca.unavailable(two, o, cpu).value_or("available"),
            pr::onPath("llvm-mca") ? "needs the assembly of one source file; the project has several"
                                   : "not installed (apt-get install llvm)");
  // Left out silently: CPU tools on a GPU program, ptxas on a CPU one, Nsight Compute without a report.
  for (const pr::Profiler *p : {&pr::kCachegrind, &pr::kMca, &pr::kRemarks})
    EXPECT_EQ(p->unavailable(two, o, gpu), std::optional<std::string>("")) << p->name;
  EXPECT_EQ(pr::kPtxas.unavailable(two, o, cpu), std::optional<std::string>(""));
  EXPECT_EQ(pr::kNcu.unavailable(two, o, gpu), std::optional<std::string>(""));
  o.ncuReport = "report.csv";
  EXPECT_EQ(pr::kNcu.unavailable(two, o, gpu), std::nullopt);
  EXPECT_EQ(pr::kPtxas.unavailable(two, o, gpu), std::nullopt);
}

TEST(Diagnose, FailureRulesReadHonesOwnMessages) {
  auto guide = hone::autoguide::AutoGuide::withDefaults();
  ASSERT_TRUE(guide);
  auto fired = [&](const std::string &raw) {
    std::set<std::string> out;
    for (const auto &f : guide->interpret(raw, {}, "kernel"))
      out.insert(f.rule);
    return out;
  };
  EXPECT_TRUE(fired("k.c:12:5: error: 'x' undeclared").count("kernel-compile-error"));
  EXPECT_TRUE(fired("wrong result on input 1 of 3: output 3 is 2.5, the reference's 2 (difference 0.5, allowed 2e-08)")
                  .count("kernel-wrong-result"));
  EXPECT_TRUE(fired("outputs do not change with the input: seeds 1001 and 1002").count("kernel-constant-output"));
  EXPECT_TRUE(fired("seed 1001: timed out after 2.0 s").count("kernel-timeout"));
  EXPECT_TRUE(fired("seed 1001: killed by signal 11").count("kernel-crash"));
}

TEST(Catalogue, BadFilesAreLocated) {
  auto c = parseCatalogue("t.toml", "[[transformation]]\nid = \"x\"\nname = \"X\"\ntarget = \"fpga\"\n");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("t.toml:4:"), std::string::npos) << c.error().message;
  c = parseCatalogue("t.toml", "[[transformation]]\nid = \"x\"\nname = \"X\"\ntarget = \"cpu\"\nchanges = \"c\"\n"
                               "effect = \"e\"\nrisk = \"r\"\nreference = \"R\"\nknob_roles = [\"tiles\"]\n");
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("unknown knob role"), std::string::npos);
}

// ---- the knob space and the guided agent ----------------------------------------------

TEST(KnobSpace, DefaultsFirstAndRendering) {
  Manifest m = manifest();
  KnobSpace s(m);
  EXPECT_EQ(s.sizes(), (std::vector<size_t>{3, 3, 2}));
  auto v = s.values({0, 0, 0});
  EXPECT_EQ(v, defaultValues(m));
  EXPECT_EQ(s.values({1, 0, 0}).at("TILE"), "8");
  auto parsed = parseVariant(m, s.render({2, 1, 1}));
  ASSERT_FALSE(parsed); // TILE 32 violates the constraint: a rendered variant is still checked
  auto ok = parseVariant(m, s.render({1, 1, 1}));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->knobs.at("OMP_NUM_THREADS"), "1");
}

namespace {
using hone::engine::Candidate;
using hone::engine::EvalResult;
using hone::engine::Step;

/// One finding as AutoGuide's feedback carries it: the rule, its evidence, the one transformation
/// it names and, when given, the share of the time it could save (in its subject).
json finding(const char *rule, const char *evidence, const char *transformation, std::optional<double> share = {}) {
  json f{{"rule", rule}, {"evidence", evidence}, {"transformations", json::array({transformation})}};
  if (share)
    f["subject"] = {{"share", *share}};
  return f;
}

/// A synthetic kernel: time falls with a bigger TILE up to 16 (8 fails validation), flags help a little.
Step evaluateSynthetic(const Manifest &m, const Candidate &c, bool withFindings) {
  Step s;
  s.candidate = c;
  auto v = parseVariant(m, c.artifact);
  if (!v) {
    s.result.status = hone::engine::EvalStatus::Rejected;
    return s;
  }
  if (v->knobs.at("TILE") == "8") {
    s.result.status = hone::engine::EvalStatus::Invalid;
    s.result.error = "wrong result";
    return s;
  }
  double t = v->knobs.at("TILE") == "16" ? 1.0 : 2.0;
  if (v->knobs.at("flags") == "-O3")
    t *= 0.8;
  s.result.score = 2.0 / t;
  s.result.metrics = {{"time_s", t}, {"ci95_s", 0.0}};
  if (withFindings)
    s.result.evidence.tool = "kernel profilers"; // profiled: the findings are a diagnosis
  if (withFindings)
    s.feedback = hone::test::feedbackOf(json{{"findings",
                   json::array({finding("kernel-cache-misses", "mm.c:20 misses L1 on 50% of its references", "loop-tiling")})}});
  return s;
}
} // namespace

TEST(GuidedKernelAgent, ActsOnTheDiagnosisAndKeepsImprovements) {
  Manifest m = manifest();
  m.constraints.clear();
  auto catalogue = loadCatalogue();
  ASSERT_TRUE(catalogue);
  KnobValues start = defaultValues(m);
  start["TILE"] = "32";
  auto agent = makeGuidedKernelAgent(m, *catalogue, renderVariant({start, {}}), "a start with TILE 32");
  std::vector<Step> steps;
  std::set<std::string> seen;
  for (int i = 0; i < 8; ++i) {
    auto proposed = agent->propose(1);
    if (proposed.empty())
      break;
    ASSERT_TRUE(seen.insert(proposed[0].hash).second) << "proposed twice: " << proposed[0].artifact;
    Step s = evaluateSynthetic(m, proposed[0], true);
    steps.push_back(s);
    agent->notify({s});
  }
  ASSERT_GE(steps.size(), 3u);
  // The first edit after the start is a tiling edit that cites the finding and the literature.
  EXPECT_NE(steps[1].candidate.rationale.find("TILE 32 ->"), std::string::npos) << steps[1].candidate.rationale;
  EXPECT_NE(steps[1].candidate.rationale.find("misses L1"), std::string::npos);
  EXPECT_NE(steps[1].candidate.rationale.find("Wolf & Lam"), std::string::npos);
  // It reaches TILE 16 with -O3 (the synthetic optimum) and never goes back to a worse base.
  double best = 0;
  for (const auto &s : steps)
    best = std::max(best, s.result.score);
  EXPECT_DOUBLE_EQ(best, 2.0 / 0.8);
}

TEST(GuidedKernelAgent, ActsOnTheFindingThatCouldSaveMostFirst) {
  // AutoGuide lists findings in its rules' order; the agent ranks them by the share of the time
  // each could save (the subject's share), so the small tiling finding listed first waits.
  Manifest m = manifest();
  m.constraints.clear();
  auto catalogue = loadCatalogue();
  ASSERT_TRUE(catalogue);
  auto agent = makeGuidedKernelAgent(m, *catalogue, renderVariant(referenceVariant(m)), "the reference");
  auto start = agent->propose(1);
  ASSERT_EQ(start.size(), 1u);
  Step s;
  s.candidate = start[0];
  s.result.score = 1;
  s.result.evidence.tool = "kernel profilers";
  s.feedback = hone::test::feedbackOf(json{{"findings",
                 json::array({finding("kernel-not-vectorized-outer", "the loop at k.c:3 is not vectorized", "loop-tiling", 0.01),
                              finding("kernel-serial", "the program keeps 1.00 of 4 cores busy", "openmp-parallel-for",
                                      0.75)})}});
  agent->notify({s});
  auto next = agent->propose(1);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_NE(next[0].rationale.find("OMP_NUM_THREADS"), std::string::npos) << next[0].rationale;
  EXPECT_NE(next[0].rationale.find("cores busy"), std::string::npos) << next[0].rationale;
}

namespace {
/// A project with a TILE knob (role tile, default 64, `values`) and the knobs in `more`.
Manifest tileProject(const std::string &values, const std::string &more) {
  return manifest("[project]\nname = \"k\"\nsources = [\"k.c\"]\n[build]\n"
                  "command = \"cc {cflags} {defines} {sources} -o {out}\"\n[run]\ncommand = \"{exe} {seed}\"\n"
                  "[[knob]]\nname = \"TILE\"\nrole = \"tile\"\nvalues = " +
                  values + "\ndefault = 64\n" + more);
}

struct Proposal {
  KnobValues knobs;
  std::string rationale;
};

/// The guided agent from the reference for `steps` evaluations against a synthetic time of the
/// knob values; every step is profiled and its feedback carries `findings` (`profiled`, when given,
/// says which steps are: the others' feedback has no findings, as the evaluator's is for a candidate
/// that is not its new best). Returns what it proposed and the best score.
std::pair<std::vector<Proposal>, double> drive(const Manifest &m, int steps,
                                               const std::function<double(const KnobValues &)> &time,
                                               const json &findings,
                                               const std::function<bool(const KnobValues &)> &profiled = {}) {
  auto catalogue = loadCatalogue();
  EXPECT_TRUE(catalogue);
  std::vector<Proposal> out;
  double best = 0;
  if (!catalogue)
    return {out, best};
  auto agent = makeGuidedKernelAgent(m, *catalogue, renderVariant(referenceVariant(m)), "the reference");
  for (int i = 0; i < steps; ++i) {
    auto p = agent->propose(1);
    if (p.empty())
      break;
    auto v = parseVariant(m, p[0].artifact);
    EXPECT_TRUE(v) << p[0].artifact;
    if (!v)
      break;
    Step s;
    s.candidate = p[0];
    double t = time(v->knobs);
    s.result.score = 10 / t;
    s.result.metrics = {{"time_s", t}, {"ci95_s", 0.0}};
    if (t <= 0) { // a time of 0 or less stands for wrong results
      s.result.status = hone::engine::EvalStatus::Invalid;
      s.result.score = 0;
      s.result.metrics.clear();
      s.result.error = "wrong result on input 1 of 1";
    }
    if (!profiled || profiled(v->knobs)) {
      s.result.evidence.tool = "kernel profilers";
      s.feedback = hone::test::feedbackOf(json{{"findings", findings}});
    } else {
      s.feedback = hone::test::feedbackOf(json{{"findings", json::array()}});
    }
    best = std::max(best, s.result.score);
    out.push_back({v->knobs, p[0].rationale});
    agent->notify({s});
  }
  return {out, best};
}
} // namespace

TEST(GuidedKernelAgent, TriesTheValuesTheDiagnosisPredictsFirst) {
  // A static-occupancy finding names the flag set that would lift the binding limit (its subject's
  // "prefer"): the agent tries that value before the knob's others; without it, in the knob's order.
  Manifest m = tileProject("[16, 32, 64]", "[[knob]]\nname = \"flags\"\nkind = \"flags\"\n"
                                           "values = [\"\", \"-O3\", \"-O2 -g\", \"-maxrregcount=32\"]\n");
  json plain = finding("kernel-occupancy-registers", "k: 44 registers per thread limit occupancy to 62.5% on sm_90",
                       "gpu-register-pressure", 0.3);
  json predicted = plain;
  predicted["subject"]["prefer"] = {{"flags", {"-maxrregcount=32"}}};
  auto flat = [](const KnobValues &) { return 1.0; };
  auto [with, best] = drive(m, 2, flat, json::array({predicted}));
  ASSERT_EQ(with.size(), 2u);
  EXPECT_EQ(with[1].knobs.at("flags"), "-maxrregcount=32") << with[1].rationale;
  auto [without, best2] = drive(m, 2, flat, json::array({plain}));
  ASSERT_EQ(without.size(), 2u);
  EXPECT_NE(without[1].knobs.at("flags"), "-maxrregcount=32") << without[1].rationale;
}

TEST(GuidedKernelAgent, SearchesANumericKnobLikeALineSearch) {
  // A tile whose time is unimodal in log2(tile) with its best at 256; the search starts at 64.
  Manifest m = tileProject("[8, 16, 32, 64, 128, 256, 512, 1024]",
                           "[[knob]]\nname = \"flags\"\nkind = \"flags\"\nvalues = [\"\", \"-O3\"]\n");
  auto [proposals, best] = drive(
      m, 12,
      [](const KnobValues &k) {
        return 1 + std::abs(std::log2(std::stod(k.at("TILE"))) - 8) * (k.at("flags") == "-O3" ? 0.9 : 1);
      },
      json::array({finding("kernel-cache-misses", "k.c:20 misses L1 on 30% of its references", "loop-tiling")}));
  EXPECT_DOUBLE_EQ(best, 10.0); // TILE 256 found
  // 32 measured worse than 64, so 16 and 8 (further that way) are never proposed; 512 measured
  // worse than 256, so 1024 is not either.
  std::set<std::string> tiles;
  for (const auto &p : proposals)
    tiles.insert(p.knobs.at("TILE"));
  for (const char *never : {"8", "16", "1024"})
    EXPECT_FALSE(tiles.count(never)) << never;
  EXPECT_TRUE(tiles.count("32"));
  EXPECT_TRUE(tiles.count("512"));
}

TEST(GuidedKernelAgent, AValueThatImprovedNothingTwiceIsNotProposedAgain) {
  // Idle cores are diagnosed after every improvement, but more threads never help (as on a VM
  // whose two CPUs share a core): each thread count is tried from at most two bests.
  Manifest m = tileProject("[16, 32, 64, 128, 256, 512, 1024]",
                           "[[knob]]\nname = \"OMP_NUM_THREADS\"\nkind = \"env\"\nvalues = [\"\", \"1\", \"2\", \"4\"]\n");
  auto [proposals, best] = drive(
      m, 20,
      [](const KnobValues &k) {
        return (1 + std::abs(std::log2(std::stod(k.at("TILE"))) - 9)) * (k.at("OMP_NUM_THREADS").empty() ? 1 : 1.05);
      },
      json::array({finding("kernel-serial", "the program keeps 1.00 of 2 cores busy (50%)", "openmp-parallel-for", 0.5),
                   finding("kernel-cache-misses", "k.c:20 misses L1 on 30% of its references", "loop-tiling", 0.3)}));
  EXPECT_DOUBLE_EQ(best, 10.0); // TILE 512 found through three improvements
  std::map<std::string, int> threadEdits;
  for (const auto &p : proposals)
    if (p.rationale.rfind("OMP_NUM_THREADS", 0) == 0 || p.rationale.rfind("exploring OMP_NUM_THREADS", 0) == 0)
      ++threadEdits[p.knobs.at("OMP_NUM_THREADS")];
  ASSERT_FALSE(threadEdits.empty());
  for (const auto &[threads, n] : threadEdits)
    EXPECT_LE(n, 2) << "OMP_NUM_THREADS=" << threads << " proposed alone " << n << " times";
}

TEST(GuidedKernelAgent, DoesNotTryTheCoreCountWhereTheThreadsAreUnset) {
  // Unset threads are the runtime's default, a thread per core: setting the core count changes
  // nothing, so from a best with either the other is not proposed (an evaluation saved).
  std::string cores = std::to_string(std::max(1u, std::thread::hardware_concurrency()));
  Manifest m = tileProject("[32, 64, 128]", "[[knob]]\nname = \"OMP_NUM_THREADS\"\nkind = \"env\"\nvalues = [\"\", \"" +
                                                (cores == "1" ? std::string("2") : std::string("1")) + "\", \"" + cores +
                                                "\", \"509\"]\n");
  auto [proposals, best] = drive(
      m, 12, [](const KnobValues &k) { return k.at("TILE") == "128" ? 1.0 : 2.0; },
      json::array({finding("kernel-serial", "the program keeps 1.00 of 2 cores busy (50%)", "openmp-parallel-for", 0.5)}));
  EXPECT_DOUBLE_EQ(best, 10.0);
  std::set<std::string> seen;
  for (const auto &p : proposals) {
    std::string t = p.knobs.at("OMP_NUM_THREADS");
    EXPECT_TRUE(seen.insert((t.empty() ? cores : t) + "@" + p.knobs.at("TILE")).second)
        << "OMP_NUM_THREADS='" << t << "' with TILE " << p.knobs.at("TILE") << " is a variant already measured";
  }
  EXPECT_GE(proposals.size(), 4u); // it did explore the other thread counts
}

TEST(GuidedKernelAgent, AnEditThatClearlyLostIsTriedWithACompanion) {
  // Privatizing the loop loses six-fold while its schedule deals iterations out one at a time and
  // wins two-fold with a static one; the schedule alone changes nothing (the loop is not parallel
  // before). Neither single edit improves: only the pair does.
  Manifest m = manifest("[project]\nname = \"h\"\nsources = [\"h.c\"]\n[build]\n"
                        "command = \"cc {cflags} {defines} {sources} -o {out}\"\n[run]\ncommand = \"{exe} {seed}\"\n"
                        "[[knob]]\nname = \"PRIVATE\"\nrole = \"loop-order\"\nvalues = [0, 1]\n"
                        "[[knob]]\nname = \"OMP_SCHEDULE\"\nkind = \"env\"\nrole = \"schedule\"\n"
                        "values = [\"\", \"dynamic\", \"static\", \"guided\"]\n"
                        "[[knob]]\nname = \"flags\"\nkind = \"flags\"\nvalues = [\"\", \"-O3\", \"-O3 -funroll-loops\"]\n");
  auto time = [](const KnobValues &k) {
    if (k.at("PRIVATE") == "0")
      return 1.0;
    return k.at("OMP_SCHEDULE") == "static" ? 0.5 : 6.0;
  };
  json findings = json::array(
      {finding("kernel-serial", "the program keeps 1.00 of 2 cores busy (50%)", "privatization", 0.5),
       finding("kernel-fine-grained-schedule", "the loop at h.c:20 runs dynamic,1", "openmp-schedule", 0.05)});
  auto [proposals, best] = drive(m, 8, time, findings);
  std::string trace; // what it tried, for a failure's message
  for (const auto &p : proposals)
    trace += p.rationale + "\n";
  EXPECT_DOUBLE_EQ(best, 20.0) << trace;
  auto winner = std::find_if(proposals.begin(), proposals.end(), [&](const Proposal &p) { return time(p.knobs) == 0.5; });
  ASSERT_NE(winner, proposals.end());
  EXPECT_NE(winner->rationale.find("PRIVATE -> 1 lost"), std::string::npos) << winner->rationale;
  EXPECT_NE(winner->rationale.find("OMP_SCHEDULE -> static"), std::string::npos) << winner->rationale;
  // Before it, the diagnosis's single edits (the schedule's values that change nothing are not losses).
  EXPECT_LE(winner - proposals.begin(), 6);
}

TEST(GuidedKernelAgent, AValueThatMadeTheProgramInvalidIsNotTriedAgainNorPaired) {
  // -ffast-math gives wrong results whatever the tile; the tiles change the time a little, so the
  // agent explores and pairs them; PAD 1 loses clearly, so it gets companions. Without the rule,
  // each improvement would bring -ffast-math back alone, every pair would carry it too, and it would
  // be PAD 1's first companion (the diagnosis calls for it).
  Manifest m = tileProject("[16, 32, 64, 128]", "[[knob]]\nname = \"flags\"\nkind = \"flags\"\n"
                                                "values = [\"\", \"-O3 -ffast-math\", \"-O3\"]\n"
                                                "[[knob]]\nname = \"UNROLL\"\nrole = \"unroll\"\nvalues = [1, 2, 4]\n"
                                                "[[knob]]\nname = \"PAD\"\nrole = \"tile\"\nvalues = [0, 1]\n");
  auto time = [](const KnobValues &k) {
    if (k.at("flags") == "-O3 -ffast-math")
      return -1.0;
    double t = 1.0 - 0.1 * std::stod(k.at("TILE")) / 128 - 0.1 * std::stod(k.at("UNROLL")) / 4;
    return k.at("PAD") == "1" ? 2 * t : t;
  };
  json findings =
      json::array({finding("kernel-not-vectorized-reduction", "the loop at k.c:3 is not vectorized",
                           "fast-math-reassociation", 0.5),
                   finding("kernel-cache-misses", "k.c:3 misses L1 on 40% of its references", "loop-tiling", 0.4)});
  auto [proposals, best] = drive(m, 40, time, findings);
  size_t fastMath = std::count_if(proposals.begin(), proposals.end(),
                                  [](const Proposal &p) { return p.knobs.at("flags") == "-O3 -ffast-math"; });
  EXPECT_EQ(fastMath, 1u);
  EXPECT_NEAR(best, 10 / 0.8, 1e-9); // the tiles and unrolls were still explored: TILE 128, UNROLL 4
}

TEST(KernelEvaluator, OnlyWrongResultsAndRacesBlameTheVariantsResults) {
  EXPECT_TRUE(variantComputesWrongly("wrong result on input 2 of 3: output 4 is 2.5, the reference's 2"));
  EXPECT_TRUE(variantComputesWrongly(std::string(kTimedWrongResult) + ": output 1 is 3"));
  EXPECT_TRUE(variantComputesWrongly("outputs do not change with the input: inputs 1 and 2 of 3 give identical"));
  EXPECT_TRUE(variantComputesWrongly("ThreadSanitizer: data race on a (a race between the threads)"));
  EXPECT_FALSE(variantComputesWrongly(std::string(kUntrustedTimer) + ": more than the whole process"));
  EXPECT_FALSE(variantComputesWrongly("the reference fails on input 1 of 3: exit 1"));
  EXPECT_FALSE(variantComputesWrongly("input 1 of 3: no number in the output"));
}

TEST(GuidedKernelAgent, DeterministicForResume) {
  Manifest m = manifest();
  auto catalogue = loadCatalogue();
  ASSERT_TRUE(catalogue);
  auto run = [&] {
    auto agent = makeGuidedKernelAgent(m, *catalogue, renderVariant(referenceVariant(m)), "the reference");
    std::vector<std::string> out;
    for (int i = 0; i < 6; ++i) {
      auto p = agent->propose(1);
      if (p.empty())
        break;
      out.push_back(p[0].hash);
      agent->notify({evaluateSynthetic(m, p[0], false)});
    }
    return out;
  };
  EXPECT_EQ(run(), run());
}

namespace {
/// A project with a thread count, a tile (whose parallel slack idle cores call for) and a loop order.
Manifest threadsTileOrderProject() {
  return tileProject("[16, 32, 64, 128, 256]", "[[knob]]\nname = \"OMP_NUM_THREADS\"\nkind = \"env\"\n"
                                                 "values = [\"\", \"1\", \"3\", \"5\", \"7\"]\n"
                                                 "[[knob]]\nname = \"LOOP_ORDER\"\nrole = \"loop-order\"\nvalues = [0, 1]\n");
}

json idleAndMissesFindings() {
  return json::array({finding("kernel-serial", "the program keeps 1.00 of 2 cores busy (50%)", "openmp-parallel-for", 0.5),
                      finding("kernel-serial", "the program keeps 1.00 of 2 cores busy (50%)", "parallel-slack", 0.5),
                      finding("kernel-cache-misses", "k.c:20 misses L1 on 50% of its references", "loop-interchange", 0.4)});
}

/// A time where the loop order 1 is 3x quicker and `tile` quicker by `gain` on top.
std::function<double(const KnobValues &)> orderAndTile(std::string tile, double gain) {
  return [tile, gain](const KnobValues &k) {
    double t = k.at("LOOP_ORDER") == "1" ? 1.0 : 3.0;
    return k.at("TILE") == tile ? t / gain : t;
  };
}

/// What the agent proposed, a rationale a line, for a failure's message.
std::string traceOf(const std::vector<Proposal> &proposals) {
  std::string trace;
  for (const auto &p : proposals)
    trace += p.rationale + "\n";
  return trace;
}

size_t firstWith(const std::vector<Proposal> &proposals, const char *knob, const char *value) {
  auto it = std::find_if(proposals.begin(), proposals.end(),
                         [&](const Proposal &p) { return p.knobs.at(knob) == value; });
  return it - proposals.begin();
}
} // namespace

TEST(GuidedKernelAgent, TriesEveryKnobTheDiagnosisNamesBeforeASecondValueOfAny) {
  // Idle cores (the larger share) name the thread count and the tile; cache misses name the loop
  // order, which alone pays off (3x). Every knob named gets its first edit before any its second.
  Manifest m = threadsTileOrderProject();
  auto [proposals, best] =
      drive(m, 8, [](const KnobValues &k) { return k.at("LOOP_ORDER") == "1" ? 1.0 : 3.0; }, idleAndMissesFindings());
  std::string trace = traceOf(proposals);
  EXPECT_DOUBLE_EQ(best, 10.0) << trace;
  ASSERT_GE(proposals.size(), 4u) << trace;
  EXPECT_NE(proposals[1].rationale.find("OMP_NUM_THREADS"), std::string::npos) << trace; // the largest share first
  EXPECT_NE(proposals[2].rationale.find("TILE"), std::string::npos) << trace;
  EXPECT_EQ(firstWith(proposals, "LOOP_ORDER", "1"), 3u) << trace;
}

TEST(GuidedKernelAgent, AMoveTheEvaluatorDidNotProfileKeepsTheDiagnosis) {
  // The agent moves to TILE 32 (2% quicker) whose evaluation was not profiled (the evaluator's own
  // best was another candidate): its empty findings are no diagnosis, and the agent goes on with
  // the reference's (the loop order the cache misses name) instead of exploring blindly.
  Manifest m = threadsTileOrderProject();
  auto time = orderAndTile("32", 1.02);
  auto [proposals, best] = drive(m, 8, time, idleAndMissesFindings(),
                                 [](const KnobValues &k) { return k.at("TILE") == "64"; });
  std::string trace = traceOf(proposals);
  size_t order = firstWith(proposals, "LOOP_ORDER", "1");
  ASSERT_LT(order, proposals.size()) << trace;
  EXPECT_EQ(proposals[order].rationale.find("exploring"), std::string::npos) << trace;
  EXPECT_NE(proposals[order].rationale.find("misses L1"), std::string::npos) << trace;
}

TEST(GuidedKernelAgent, AMoveWithinTheNoiseDoesNotRetryWhatLostBeforeIt) {
  // Thread counts change nothing; TILE 32 is 2% quicker (a move, but within kSettle): the thread
  // counts that lost from the reference are not tried again from TILE 32, a program that times the
  // same. The loop order's 3x is a new epoch: from there each may be tried once more.
  Manifest m = threadsTileOrderProject();
  auto time = orderAndTile("32", 1.02);
  auto [proposals, best] = drive(m, 14, time, idleAndMissesFindings());
  std::string trace = traceOf(proposals);
  size_t moved = firstWith(proposals, "TILE", "32"), order = firstWith(proposals, "LOOP_ORDER", "1");
  ASSERT_LT(moved, order) << trace;
  ASSERT_LT(order, proposals.size()) << trace;
  std::map<std::string, int> before; // thread counts tried alone before the 3x move
  for (size_t i = 1; i < order; ++i) {
    const std::string &threads = proposals[i].knobs.at("OMP_NUM_THREADS");
    if (!threads.empty()) {
      EXPECT_EQ(++before[threads], 1) << "OMP_NUM_THREADS=" << threads << " tried twice before the move\n" << trace;
    }
  }
  EXPECT_FALSE(before.empty()) << trace;
}

TEST(GuidedKernelAgent, AValueLeftWithALargeGainIsNotTriedAgainAlone) {
  // The loop order's 3x is the run's large move; the tile adds 1.4x after it. Going back to the old
  // loop order (named again by the cache misses that persist) undoes the 3x: it is not proposed
  // alone (the best has not moved by another 3x since), only in pairs once every single edit has
  // been tried.
  Manifest m = threadsTileOrderProject();
  auto time = orderAndTile("128", 1.4);
  auto [proposals, best] = drive(m, 16, time, idleAndMissesFindings());
  std::string trace = traceOf(proposals);
  size_t order = firstWith(proposals, "LOOP_ORDER", "1");
  ASSERT_LT(order, proposals.size()) << trace;
  EXPECT_DOUBLE_EQ(best, 14.0) << trace;
  for (size_t i = order + 1; i < proposals.size(); ++i)
    if (proposals[i].knobs.at("LOOP_ORDER") == "0") {
      EXPECT_EQ(proposals[i].rationale.rfind("combining", 0), 0u) << "undoes the 3x alone\n" << trace;
    }
}

TEST(GuidedKernelAgent, AKnobThatAlreadyPaidOffIsNotCombinedForItsLoss) {
  // -ffast-math makes the program 3x quicker; the other flag sets lose to it, as they must. That
  // loss says nothing new about the flags (they matter: they just paid off), so it is not tried with
  // companions; the evaluations go to the other knobs' values instead.
  Manifest m = tileProject("[32, 64, 128]",
                           "[[knob]]\nname = \"flags\"\nkind = \"flags\"\nvalues = [\"\", \"-O3\", \"-O3 -funroll-loops\", "
                           "\"-O3 -ffast-math\"]\n"
                           "[[knob]]\nname = \"OMP_SCHEDULE\"\nkind = \"env\"\nrole = \"schedule\"\n"
                           "values = [\"\", \"static\", \"dynamic\"]\n");
  auto time = [](const KnobValues &k) {
    double t = k.at("flags") == "-O3 -ffast-math" ? 1.0 : 3.0;
    return k.at("TILE") == "32" ? t / 1.1 : t;
  };
  json findings = json::array(
      {finding("kernel-dependency-chain", "llvm-mca: the loop at k.c:9 is bound by a dependency chain",
               "fast-math-reassociation", 0.6),
       finding("kernel-not-vectorized", "the loop at k.c:9 is not vectorized", "vectorize-hints", 0.5),
       finding("kernel-cache-misses", "k.c:9 misses L1 on 30% of its references", "loop-tiling", 0.3),
       finding("kernel-fine-grained-schedule", "the loop at k.c:8 runs dynamic,1", "openmp-schedule", 0.1)});
  auto [proposals, best] = drive(m, 14, time, findings);
  std::string trace = traceOf(proposals);
  EXPECT_NEAR(best, 11.0, 1e-9) << trace; // fast-math and TILE 32
  for (const auto &p : proposals)
    EXPECT_FALSE(p.rationale.rfind("flags -> ", 0) == 0 && p.rationale.find(" lost (") != std::string::npos)
        << "the flags' loss combined\n" << trace;
}

TEST(GuidedKernelAgent, AKnobThatPaidOffIsExploredBackOnlyAfterTheOthers) {
  Manifest m = manifest();
  m.constraints.clear();
  auto catalogue = loadCatalogue();
  ASSERT_TRUE(catalogue);
  auto agent = makeGuidedKernelAgent(m, *catalogue, renderVariant({defaultValues(m), {}}), "the start");
  std::vector<Step> steps;
  for (int i = 0; i < 4; ++i) {
    auto proposed = agent->propose(1);
    if (proposed.empty())
      break;
    Step s;
    s.candidate = proposed[0];
    auto v = parseVariant(m, s.candidate.artifact);
    ASSERT_TRUE(v);
    double t = v->knobs.at("OMP_NUM_THREADS") == "1" ? 1.0 : 2.0; // one thread pays off (no findings: exploring)
    if (v->knobs.at("flags") == "-O3")
      t *= 0.9;
    s.result.score = 2.0 / t;
    s.result.metrics = {{"time_s", t}, {"ci95_s", 0.0}};
    steps.push_back(s);
    agent->notify({s});
  }
  ASSERT_GE(steps.size(), 3u);
  ASSERT_NE(steps[1].candidate.rationale.find("OMP_NUM_THREADS"), std::string::npos) << steps[1].candidate.rationale;
  // The threads moved and paid off: the flags are explored next, not the threads back to unset.
  EXPECT_NE(steps[2].candidate.rationale.find("exploring flags"), std::string::npos) << steps[2].candidate.rationale;
}
