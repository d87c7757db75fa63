// The simulator on small hand-computed cases (exact times), its failure
// paths, determinism and noise, and the shipped models end to end.
#include "sim/AppCheck.h"
#include "sim/SimTestUtil.h"

#include <gtest/gtest.h>

namespace hone::sim::test {
namespace {

// One node: one CPU, one GPU at 1 GFLOP/s. FBMEM at 1 GB/s, ZCMEM at
// 0.5 GB/s from the GPU, a 1 GB/s PCIe link. The runtime analyses a task in
// 100 us; nothing else costs time.
const char *kMachine = R"(name = "hand"
nodes = 1
[runtime]
task_analysis_us = 100
[[processor]]
kind = "CPU"
per_node = 1
gflops = 1
[[processor]]
kind = "GPU"
per_node = 1
gflops = 1
[[memory]]
kind = "SYSMEM"
capacity_gb = 1
  [[memory.access]]
  proc = "CPU"
  bandwidth_gbs = 1
  affinity = 100
[[memory]]
kind = "FBMEM"
per = "GPU"
capacity_gb = 0.02
  [[memory.access]]
  proc = "GPU"
  scope = "own"
  bandwidth_gbs = 1
  affinity = 200
[[memory]]
kind = "ZCMEM"
capacity_gb = 1
  [[memory.access]]
  proc = "GPU"
  bandwidth_gbs = 0.5
  affinity = 20
  [[memory.access]]
  proc = "CPU"
  bandwidth_gbs = 1
  affinity = 40
[[channel]]
name = "pcie"
between = ["FBMEM", "*"]
scope = "node"
bandwidth_gbs = 1
ports = ["FBMEM"]
[[channel]]
name = "host"
between = ["*", "*"]
scope = "node"
bandwidth_gbs = 1
)";

// `init` (CPU) writes an 8 MB region; `work` (GPU) reads it 3 times and
// computes 10 MFLOP each time (10 ms at 1 GFLOP/s; reading 8 MB from FBMEM
// takes 8 ms, from ZCMEM 16 ms).
const char *kApp = R"(name = "hand"
top_task = "main"
iterations = 3
[metric]
kind = "time"
[size]
name = "elements"
default = 1000000
[[region]]
name = "r"
fields = { v = 8 }
elements = "elements"
[[task]]
name = "init"
variants = ["CPU"]
  [[task.arg]]
  region = "r"
  privilege = "write"
[[task]]
name = "work"
variants = ["GPU", "CPU"]
flops = 1e7
  [[task.arg]]
  region = "r"
  privilege = "read"
[[setup]]
task = "init"
[[body]]
task = "work"
)";

std::unique_ptr<Setup> hand(std::optional<double> size = std::nullopt) {
  auto m = model::parseMachine("hand.toml", kMachine);
  auto a = model::parseApp("hand-app.toml", kApp);
  EXPECT_TRUE(m.ok()) << m.error().message;
  EXPECT_TRUE(a.ok()) << a.error().message;
  return std::make_unique<Setup>(std::move(*m), std::move(*a), size);
}

TEST(SimHand, FramebufferTimesAreExact) {
  auto s = hand();
  Result r = s->run("Task work GPU;\n");
  ASSERT_TRUE(r.ok) << r.error;
  // Body: the first task is analysed by 0.1 ms, then 8 MB cross PCIe (8 ms),
  // then three 10 ms tasks back to back (compute-bound: 10 ms > 8 ms of reading).
  EXPECT_NEAR(r.timeS, 0.1e-3 + 8e-3 + 3 * 10e-3, 1e-9);
  EXPECT_EQ(r.copies, 1);
  EXPECT_DOUBLE_EQ(r.bytesCopied, 8e6);
  EXPECT_NEAR(r.throughput, 3 / r.timeS, 1e-9);
  EXPECT_EQ(r.throughputUnit, "iterations/s");
  // Lower bound: three tasks at their fastest (10 ms each) on the one GPU, or split with the CPU.
  EXPECT_GT(r.lowerBoundS, 0);
  EXPECT_LE(r.lowerBoundS, r.timeS);
}

TEST(SimHand, ZeroCopyMemoryIsSlowerToRead) {
  auto s = hand();
  Result r = s->run("Task work GPU;\nRegion work r GPU ZCMEM;\n");
  ASSERT_TRUE(r.ok) << r.error;
  // The CPU wrote r in SYSMEM; the host channel copies it to ZCMEM (8 ms at
  // 1 GB/s); each task then reads it at 0.5 GB/s: 16 ms > 10 ms of compute.
  EXPECT_NEAR(r.timeS, 0.1e-3 + 8e-3 + 3 * 16e-3, 1e-9);
}

TEST(SimHand, CpuVariantRunsOnTheCpu) {
  auto s = hand();
  Result r = s->run("Task work CPU;\n");
  ASSERT_TRUE(r.ok) << r.error;
  // Data already in SYSMEM: three tasks of max(10 ms, 8 ms) after the analysis of the first.
  EXPECT_NEAR(r.timeS, 0.1e-3 + 3 * 10e-3, 1e-9);
  EXPECT_EQ(r.copies, 0);
}

TEST(SimHand, OutOfMemoryNamesTheMemoryUnlessAFallbackIsListed) {
  auto s = hand(3e6); // 24 MB: more than the 20 MB framebuffer
  Result r = s->run("Task work GPU;\nRegion * * GPU FBMEM;\n");
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.errorKind, "memory");
  EXPECT_NE(r.error.find("Out of memory"), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("FBMEM node0 GPU0"), std::string::npos) << r.error;
  Result fallback = s->run("Task work GPU;\nRegion * * GPU FBMEM,ZCMEM;\n");
  ASSERT_TRUE(fallback.ok) << fallback.error;
  EXPECT_EQ(fallback.taskStats.front().memories.front(), "ZCMEM");
}

TEST(SimHand, NoVariantFails) {
  auto s = hand();
  Result r = s->run("Task init GPU;\n");
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.errorKind, "variant");
  EXPECT_NE(r.error.find("No valid task variant for task init"), std::string::npos) << r.error;
}

TEST(SimHand, NoAffinityFails) {
  auto s = hand();
  Result r = s->run("Task work GPU;\nRegion work r GPU SYSMEM;\n");
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.errorKind, "memory");
  EXPECT_NE(r.error.find("No memory of kind SYSMEM has affinity to node0 GPU0"), std::string::npos) << r.error;
}

TEST(SimHand, VirtualInstanceForALeafTaskFails) {
  auto s = hand();
  Result r = s->run("Task work GPU;\nRegion work r GPU VIRTUAL;\n");
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.errorKind, "policy");
  EXPECT_NE(r.error.find("virtual instance"), std::string::npos) << r.error;
}

TEST(SimHand, PlacementOutOfBoundsFails) {
  auto s = hand();
  Result r = s->run("Task work GPU;\nm = Machine(GPU);\ndef f(Task t) {\n    return m[0, 1];\n}\n"
                    "SingleTaskMap work f;\n");
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.errorKind, "placement");
  EXPECT_NE(r.error.find("Slice processor index out of bound"), std::string::npos) << r.error;
  EXPECT_NE(r.errorDetail.find("policy line 4"), std::string::npos) << r.errorDetail;
}

TEST(SimHand, PolicyGlobalsThatFailAreReported) {
  auto s = hand();
  Result r = s->run("m = Machine(GPU);\nx = m.split(0, 0);\n");
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.errorKind, "policy");
}

// The hand machine with three GPUs joined by 1 GB/s links. `pa` on GPU0 writes a,
// `pb` on GPU1 writes b (8 MB each), then `use` on GPU2 reads both: two copies into
// GPU2's framebuffer.
TEST(SimHand, PointToPointLinksCarryCopiesBetweenDifferentPairsAtOnce) {
  const std::string machine =
      replaced(replaced(kMachine, "kind = \"GPU\"\nper_node = 1", "kind = \"GPU\"\nper_node = 3"), "[[channel]]\n",
               "[[channel]]\nname = \"nvlink\"\nbetween = [\"FBMEM\", \"FBMEM\"]\nscope = \"node\"\n"
               "bandwidth_gbs = 1\nports = PORTS\n[[channel]]\n");
  const std::string app = R"(name = "links"
top_task = "main"
iterations = 1
[metric]
kind = "time"
[size]
name = "elements"
default = 1000000
[[region]]
name = "a"
fields = { v = 8 }
elements = "elements"
[[region]]
name = "b"
fields = { v = 8 }
elements = "elements"
[[task]]
name = "pa"
variants = ["GPU"]
  [[task.arg]]
  region = "a"
  privilege = "write"
[[task]]
name = "pb"
variants = ["GPU"]
  [[task.arg]]
  region = "b"
  privilege = "write"
[[task]]
name = "use"
variants = ["GPU"]
flops = 1e6
  [[task.arg]]
  region = "a"
  privilege = "read"
  [[task.arg]]
  region = "b"
  privilege = "read"
[[setup]]
task = "pa"
[[setup]]
task = "pb"
[[body]]
task = "use"
)";
  const std::string policy = "m = Machine(GPU);\n"
                             "def gpu0(Task task) {\n    return m[0, 0];\n}\n"
                             "def gpu1(Task task) {\n    return m[0, 1];\n}\n"
                             "def gpu2(Task task) {\n    return m[0, 2];\n}\n"
                             "SingleTaskMap pa gpu0;\nSingleTaskMap pb gpu1;\nSingleTaskMap use gpu2;\n";
  auto timeWith = [&](const std::string &ports, const std::string &mapping) {
    auto m = model::parseMachine("links.toml", replaced(machine, "PORTS", ports));
    auto a = model::parseApp("links-app.toml", app);
    if (!m.ok() || !a.ok()) {
      ADD_FAILURE() << (m.ok() ? a.error().message : m.error().message);
      return 0.0;
    }
    sim::test::Setup s(std::move(*m), std::move(*a));
    Result r = s.run(mapping);
    EXPECT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.copies, 2);
    EXPECT_DOUBLE_EQ(r.bytesCopied, 16e6);
    return r.timeS;
  };
  double perMemory = timeWith("[\"FBMEM\"]", policy); // GPU2's one incoming port: 8 ms, then 8 ms more
  double perLink = timeWith("[\"link\"]", policy);    // GPU0->GPU2 and GPU1->GPU2 at once: 8 ms
  double none = timeWith("[]", policy);
  EXPECT_NEAR(perMemory - perLink, 8e-3, 1e-6);
  EXPECT_NEAR(perLink, none, 1e-9);
  // Both blocks from GPU0: one link, one copy after the other.
  std::string samePair = replaced(policy, "SingleTaskMap pb gpu1;", "SingleTaskMap pb gpu0;");
  EXPECT_NEAR(timeWith("[\"link\"]", samePair), perMemory, 1e-9);
}

TEST(SimHand, CollectMemoryAndInstanceLimit) {
  auto s = hand();
  auto fbPeak = [](const Result &r) {
    for (const auto &m : r.memories)
      if (m.kind == MemKind::FBMEM)
        return m.peak;
    return -1.0;
  };
  Result keep = s->run("Task work GPU;\n");
  // The runtime maps ahead: the three tasks are mapped before the first ends,
  // so they share the one instance and its release waits for the last.
  Result collect = s->run("Task work GPU;\nCollectMemory work r;\n");
  // With one task in flight the instance is released after each task, then
  // re-created and filled again by the next.
  Result limited = s->run("Task work GPU;\nCollectMemory work r;\nInstanceLimit work 1;\n");
  ASSERT_TRUE(keep.ok && collect.ok && limited.ok) << collect.error << limited.error;
  EXPECT_EQ(keep.copies, 1);
  EXPECT_EQ(collect.copies, 1);
  EXPECT_EQ(limited.copies, 3);
  EXPECT_DOUBLE_EQ(fbPeak(keep), 8e6);
  EXPECT_DOUBLE_EQ(fbPeak(limited), 8e6);
  // Each re-fill is 8 ms on the critical path: two more than with the instance kept.
  EXPECT_NEAR(limited.timeS - keep.timeS, 2 * 8e-3, 1e-6);
  // The profile says which task copies data again because its instance was released.
  auto recopied = [](const Result &r) {
    for (const auto &t : r.taskStats)
      if (t.name == "work")
        return t.recopiedBytes;
    return -1.0;
  };
  EXPECT_DOUBLE_EQ(recopied(keep), 0);
  EXPECT_DOUBLE_EQ(recopied(collect), 0);
  EXPECT_DOUBLE_EQ(recopied(limited), 2 * 8e6);
  const auto limitedJson = toJson(limited); // a range over a temporary's member would dangle
  for (const auto &t : limitedJson["task_stats"]) {
    if (t.value("name", "") == "work") {
      EXPECT_DOUBLE_EQ(t.value("recopied_bytes", -1.0), 2 * 8e6);
    }
  }
}

TEST(SimHand, DeterministicAndSeededNoise) {
  auto s = hand();
  std::string policy = "Task work GPU;\n";
  EXPECT_EQ(toJson(s->run(policy)).dump(), toJson(s->run(policy)).dump());
  Result a = s->run(policy, {0.1, 7}), b = s->run(policy, {0.1, 7}), c = s->run(policy, {0.1, 8});
  EXPECT_DOUBLE_EQ(a.timeS, b.timeS);
  EXPECT_NE(a.timeS, c.timeS);
  Result quiet = s->run(policy);
  EXPECT_NE(a.timeS, quiet.timeS);
  EXPECT_NEAR(a.timeS / quiet.timeS, 1.0, 0.6); // sigma 0.1: within a few sigma
}

TEST(SimHand, JsonHasTheDocumentedFields) {
  auto s = hand();
  auto ok = toJson(s->run("Task work GPU;\n"));
  for (const char *key : {"status", "error", "time_s", "throughput", "throughput_unit", "lower_bound_s",
                          "processors", "channels", "memories", "bottlenecks"})
    EXPECT_TRUE(ok.contains(key)) << key;
  EXPECT_EQ(ok["status"], "ok");
  EXPECT_TRUE(ok["error"].is_null());
  auto bad = toJson(s->run("Task init GPU;\n"));
  EXPECT_EQ(bad["status"], "error");
  EXPECT_TRUE(bad["error"].is_string());
  EXPECT_EQ(bad["throughput"], 0);
}

TEST(AppCheck, UnknownNamesGetDidYouMean) {
  auto a = model::parseApp("hand-app.toml", kApp);
  auto checked = hone::test::checkText("Task wrok GPU;\nRegion work q GPU FBMEM;\nRegion work 3 GPU FBMEM;\n", "p.map");
  ASSERT_TRUE(checked.ok());
  checkAgainstApp(checked.program, *a, *checked.diags);
  std::string text = support::renderText(*checked.file, checked.diags->diagnostics());
  EXPECT_NE(text.find("app 'hand' has no task named 'wrok'"), std::string::npos) << text;
  EXPECT_NE(text.find("did you mean 'work'?"), std::string::npos) << text;
  EXPECT_NE(text.find("has no region named 'q'"), std::string::npos) << text;
  EXPECT_NE(text.find("argument index 3 matches no region argument"), std::string::npos) << text;
  EXPECT_EQ(checked.diags->errorCount(), 2u);
}

// ---- the shipped models ------------------------------------------------------


TEST(SimShipped, EveryExpertMapperRunsOnEveryGpuMachine) {
  for (const std::string machine : {"p100x4", "p100x4-2nodes", "p100x4-4nodes"})
    for (const auto &app : hone::test::kExampleApps) {
      auto s = Setup::shipped(app, machine);
      Result r = s->runFile(expertPath(app));
      EXPECT_TRUE(r.ok) << app << " on " << machine << ": " << r.error << " (" << r.errorDetail << ")";
      EXPECT_GT(r.timeS, 0);
      EXPECT_GE(r.timeS, r.lowerBoundS * 0.999) << app << " on " << machine;
      EXPECT_FALSE(r.processors.empty());
    }
}

TEST(SimShipped, CpuOnlyMachineRunsCpuPolicies) {
  for (const auto &app : hone::test::kExampleApps) {
    auto s = Setup::shipped(app, "cpu-only");
    Result r = s->run("Task * CPU;\nLayout * * * SOA C_order;\n");
    if (app == "stencil") // the stencil kernel needs F_order
      r = s->run("Task * CPU;\nLayout * * * SOA F_order;\n");
    EXPECT_TRUE(r.ok) << app << ": " << r.error;
  }
}

TEST(SimShipped, MatmulReportsGflops) {
  auto s = Setup::shipped("cannon");
  Result r = s->runFile(expertPath("cannon"));
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.throughputUnit, "GFLOP/s");
  EXPECT_NEAR(r.throughput, 2 * 20000.0 * 20000.0 * 20000.0 / r.timeS / 1e9, 1e-6 * r.throughput);
  // Four P100s at most: 4 x 4700 GFLOP/s.
  EXPECT_LT(r.throughput, 4 * 4700);
}

} // namespace
} // namespace hone::sim::test
