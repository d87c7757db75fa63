// The typed evidence model: what it writes where a store keeps it, that it reads back equal, that
// the unversioned form of older stores is migrated, and that a newer version or a damaged bottleneck
// is refused with the place of the fault.
#include "support/Evidence.h"
#include "support/Feedback.h"

#include <gtest/gtest.h>

namespace hone::support {
namespace {

using nlohmann::json;

Evidence sample() {
  Evidence e;
  e.tool = "kernel profilers";
  Bottleneck b;
  b.kind = "cache-misses";
  b.subject = "k.c:20 (main)";
  b.share = 0.4;
  b.detail = "k.c:20 misses L1";
  b.numbers = {{"d1_miss_rate", {0.31, "fraction"}}, {"data_refs", {1e9, "references"}}, {"count", {3, ""}}};
  b.file = "k.c";
  b.line = 20;
  b.prefer = {{"BLOCK", {"128", "256"}}};
  b.tool = "cachegrind";
  Bottleneck plain;
  plain.kind = "idle";
  plain.subject = "CPU processors";
  plain.share = 1;
  plain.detail = "idle";
  e.bottlenecks = {b, plain};
  return e;
}

TEST(Evidence, WhatAStoreKeepsReadsBackEqualAndLeavesTheProfileAsItWas) {
  json profile{{"time_s", 2.5}, {"task_stats", json::array()}};
  json stored = withEvidence(profile, sample());
  EXPECT_EQ(stored["evidence_version"], Evidence::kVersion);
  EXPECT_EQ(stored["evidence_tool"], "kernel profilers");
  EXPECT_EQ(stored["bottlenecks"][0]["resource"], "k.c:20 (main)");
  EXPECT_EQ(stored["bottlenecks"][0]["numbers"]["d1_miss_rate"], 0.31);
  EXPECT_EQ(stored["bottlenecks"][0]["units"]["d1_miss_rate"], "fraction");
  EXPECT_FALSE(stored["bottlenecks"][0]["units"].contains("count")) << "no unit, no entry";
  EXPECT_TRUE(stored["bottlenecks"][0]["numbers"]["count"].is_number_integer()) << "a count stays an integer";
  EXPECT_TRUE(stored["bottlenecks"][0]["numbers"]["data_refs"].is_number_integer());
  EXPECT_TRUE(stored["bottlenecks"][0]["numbers"]["d1_miss_rate"].is_number_float());
  // The simulator's form stays what `hone simulate --json` always showed: four keys.
  EXPECT_EQ(stored["bottlenecks"][1].size(), 4u) << stored["bottlenecks"][1].dump();
  auto back = readEvidence(json::parse(stored.dump()));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(back->evidence, sample());
  EXPECT_EQ(back->profile, profile);
  // Evidence nobody gathered writes nothing, and reads back as not profiled.
  EXPECT_EQ(withEvidence(profile, Evidence{}), profile);
  auto none = readEvidence(profile);
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->evidence.profiled());
  // Gathered and empty is not the same as not gathered.
  Evidence nothingFound;
  nothingFound.tool = "simulator";
  auto empty = readEvidence(withEvidence(profile, nothingFound));
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->evidence.profiled());
  EXPECT_TRUE(empty->evidence.bottlenecks.empty());
}

TEST(Evidence, TheUnversionedFormOfOlderStoresIsMigrated) {
  json v1 = json::parse(R"({"time_s": 1, "bottlenecks": [
      {"kind": "processor", "resource": "GPU processors", "share": 0.84, "detail": "busy"},
      {"kind": "cache-misses", "resource": "k.c:20", "share": 0.2, "detail": "misses",
       "numbers": {"d1_miss_rate": 0.3}, "file": "k.c", "line": 20, "prefer": {"TILE": ["32"]}}]})");
  auto r = readEvidence(v1);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->profile, json({{"time_s", 1}}));
  ASSERT_EQ(r->evidence.bottlenecks.size(), 2u);
  EXPECT_TRUE(r->evidence.profiled());
  EXPECT_EQ(r->evidence.bottlenecks[0].subject, "GPU processors");
  EXPECT_DOUBLE_EQ(r->evidence.bottlenecks[0].share, 0.84);
  const Bottleneck &k = r->evidence.bottlenecks[1];
  EXPECT_EQ(k.numbers.at("d1_miss_rate"), (Quantity{0.3, ""}));
  EXPECT_EQ(k.file, "k.c");
  EXPECT_EQ(k.line, 20);
  EXPECT_EQ(k.prefer.at("TILE"), std::vector<std::string>{"32"});
  // Written again, it is version 2 and reads back equal.
  auto again = readEvidence(withEvidence(r->profile, r->evidence));
  ASSERT_TRUE(again);
  EXPECT_EQ(again->evidence, r->evidence);
}

TEST(Evidence, ANewerVersionOrADamagedBottleneckIsRefusedWithItsPlace) {
  auto refused = [](const std::string &text) {
    auto r = readEvidence(json::parse(text));
    return r ? std::string("read") : r.error().message;
  };
  EXPECT_EQ(refused(R"({"evidence_version": 3, "bottlenecks": []})"),
            "evidence_version 3: written by a newer hone (this one reads up to 2)");
  EXPECT_EQ(refused(R"({"evidence_version": "2"})"), "evidence_version: a version number, not \"2\"");
  EXPECT_EQ(refused(R"({"bottlenecks": {}})"), "bottlenecks: a list, not object");
  EXPECT_EQ(refused(R"({"bottlenecks": [{"kind": "idle"}, 7]})"),
            "bottlenecks[1]: a bottleneck is an object, not number");
  EXPECT_EQ(refused(R"({"bottlenecks": [{"resource": "x"}]})"), "bottlenecks[0]: no \"kind\"");
  EXPECT_EQ(refused(R"({"bottlenecks": [{"kind": ""}]})"), "bottlenecks[0].kind: empty");
  EXPECT_EQ(refused(R"({"bottlenecks": [{"kind": "idle"}, {"kind": "idle", "share": "big"}]})"),
            "bottlenecks[1].share: not a number (string)");
  EXPECT_EQ(refused(R"({"bottlenecks": [{"kind": "k", "numbers": {"rate": null}}]})"),
            "bottlenecks[0].numbers.rate: not a number (null)");
  EXPECT_EQ(refused(R"({"bottlenecks": [{"kind": "k", "numbers": {"rate": 1}, "units": {"rate": 2}}]})"),
            "bottlenecks[0].units.rate: a string, not number");
  EXPECT_EQ(refused(R"({"bottlenecks": [{"kind": "k", "line": -4}]})"), "bottlenecks[0].line: a line number, not -4");
  EXPECT_EQ(refused(R"({"bottlenecks": [{"kind": "k", "prefer": {"TILE": [32]}}]})"),
            "bottlenecks[0].prefer.TILE: a list of strings");
  EXPECT_EQ(refused(R"({"bottlenecks": [{"kind": "k", "detail": 3}]})"), "bottlenecks[0].detail: a string, not number");
  // Not an object at all: nothing to split, nothing lost.
  auto odd = readEvidence(json::array({1, 2}));
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->profile, json::array({1, 2}));
}

TEST(Feedback, WhatAStoreKeepsReadsBackEqual) {
  Feedback f;
  f.given = true;
  f.execution = "time 0.5 s";
  Finding finding;
  finding.rule = "kernel-cache-misses";
  finding.severity = "warning";
  finding.evidence = "k.c:20 misses L1";
  finding.explanation = "The loop misses.";
  finding.transformations = {"loop-tiling"};
  finding.subject = Bottleneck{};
  finding.subject->kind = "cache-misses";
  finding.subject->file = "k.c";
  finding.subject->line = 20;
  finding.subject->share = 0.4;
  finding.subject->detail = "k.c:20 misses L1";
  finding.subject->prefer = {{"TILE", {"32", "64"}}};
  f.findings = {finding, Finding{}};
  f.findings[1].rule = "oom";
  f.breakdown = {{"measure", "instructions"}};
  auto back = readFeedback(toJson(f));
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(*back, f);
  EXPECT_FALSE(toJson(f)["findings"][1].contains("suggestion")) << "what was not said is not written";
  // None given: null, and back.
  EXPECT_TRUE(toJson(Feedback{}).is_null());
  EXPECT_FALSE(readFeedback(json())->given);
}

TEST(Feedback, SubjectsStoredWithoutTheirKindStillRead) {
  // Before its subject was typed, a finding's subject left out the kind and detail it said itself.
  json old{{"execution", ""},
           {"findings", {{{"rule", "r"}, {"evidence", "the loop at k.c:3"}, {"subject", {{"line", 3}, {"share", 0.2}}}}}}};
  auto f = readFeedback(old);
  ASSERT_TRUE(f) << f.error().message;
  ASSERT_TRUE(f->findings[0].subject);
  EXPECT_EQ(f->findings[0].subject->line, 3);
  EXPECT_EQ(f->findings[0].subject->kind, "");
  EXPECT_EQ(f->findings[0].subject->detail, "the loop at k.c:3");
}

TEST(Feedback, DamagedFeedbackIsRefusedWithItsPlaceAndADamagedFindingLeftOut) {
  std::vector<std::pair<json, std::string>> refused = {
      {json::array(), "feedback: an object, not array"},
      {{{"execution", 3}}, "feedback.execution: a string, not number"},
      {{{"findings", "x"}}, "findings: a list, not string"},
  };
  for (const auto &[j, message] : refused) {
    auto f = readFeedback(j);
    ASSERT_FALSE(f) << j.dump();
    EXPECT_EQ(f.error().message, message) << j.dump();
  }
  // A finding that does not read is left out and said; the others are kept.
  std::vector<std::pair<json, std::string>> damaged = {
      {1, "findings[0]: a finding is an object, not number"},
      {{{"evidence", "e"}}, "findings[0]: no \"rule\""},
      {{{"rule", "r"}, {"transformations", {1}}}, "findings[0].transformations: a list of strings"},
      {{{"rule", "r"}, {"subject", {{"share", "big"}}}}, "findings[0].subject.share: not a number (string)"},
      {{{"rule", "r"}, {"subject", {{"numbers", {{"ipc", nullptr}}}}}}, "findings[0].subject.numbers.ipc: not a number (null)"},
  };
  for (const auto &[bad, message] : damaged) {
    json j{{"execution", "x"}, {"findings", {bad, {{"rule", "kept"}}}}};
    std::vector<std::string> leftOut;
    auto f = readFeedback(j, &leftOut);
    ASSERT_TRUE(f) << j.dump();
    ASSERT_EQ(f->findings.size(), 1u) << j.dump();
    EXPECT_EQ(f->findings[0].rule, "kept");
    EXPECT_EQ(leftOut, std::vector<std::string>{message}) << j.dump();
  }
}

} // namespace
} // namespace hone::support
