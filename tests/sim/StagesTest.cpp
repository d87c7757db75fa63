// The simulator's stages on their own: resolution answers what the policy
// decides without any notion of time, execution's record adds up to what the
// report says, and the report of a failure keeps the lower bound.
#include "sim/Execution.h"
#include "sim/Report.h"
#include "sim/Resolution.h"
#include "sim/SimTestUtil.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <numeric>
#include <set>
#include <variant>

namespace hone::sim {
namespace {

using test::expertText;
using test::Setup;

// The checked source stays alive: the program points into it.
dsl::CheckedSource checked(const std::string &text) {
  auto c = hone::test::checkText(text, "policy.map");
  EXPECT_TRUE(c.ok()) << text;
  return c;
}

TEST(SimStages, TheResolverFollowsTaskStatementsAndLegionsDefaults) {
  auto s = Setup::shipped("circuit");
  dsl::CheckedSource cpu = checked("Task * CPU;\n");
  Resolver r(*s->context, cpu.program);
  ASSERT_FALSE(r.initialize().has_value());
  const model::PointTask &pt = s->program->tasks.back();
  EXPECT_EQ(r.kindFor(pt), ProcKind::CPU);
  dsl::CheckedSource none = checked("# no statements\n");
  Resolver d(*s->context, none.program);
  ASSERT_FALSE(d.initialize().has_value());
  // Legion's DefaultMapper prefers GPUs when a task has a GPU variant.
  const model::Task &task = s->app.tasks[static_cast<size_t>(pt.task)];
  EXPECT_EQ(d.kindFor(pt), task.hasVariant(ProcKind::GPU) ? ProcKind::GPU : ProcKind::CPU);
}

// Conflicting statements for the same task: the first one wins, as in the
// reference implementation (DSLMapper), for Task and IndexTaskMap alike.
TEST(SimStages, TheFirstOfConflictingStatementsWins) {
  auto s = Setup::shipped("circuit");
  const model::PointTask *pt = nullptr;
  for (const auto &p : s->program->tasks)
    if (p.index && !s->app.tasks[static_cast<size_t>(p.task)].inner() &&
        s->app.tasks[static_cast<size_t>(p.task)].hasVariant(ProcKind::GPU)) {
      pt = &p;
      break;
    }
  ASSERT_NE(pt, nullptr);
  const std::string name = s->app.tasks[static_cast<size_t>(pt->task)].name;
  dsl::CheckedSource policy = hone::test::checkText(fmt::format(R"(Task * GPU;
Task * CPU;
m = Machine(GPU);
def first(Task t) {{
    return m[0, 1];
}}
def second(Task t) {{
    return m[0, 2];
}}
IndexTaskMap {0} first;
IndexTaskMap {0} second;
)",
                                                                 name),
                                                     "policy.map");
  ASSERT_TRUE(policy.ok()) << hone::test::diagText(policy);
  // Both conflicts are warned about, each pointing at the statement that applies.
  size_t conflicts = 0;
  for (const auto &d : policy.diags->diagnostics())
    conflicts += d.message.find("this later one has no effect") != std::string::npos;
  EXPECT_EQ(conflicts, 2u) << hone::test::diagText(policy);
  Resolver r(*s->context, policy.program);
  ASSERT_FALSE(r.initialize().has_value());
  EXPECT_EQ(r.kindFor(*pt), ProcKind::GPU);
  ProcId placed = r.place(*pt, ProcKind::GPU, ProcId(), nullptr);
  EXPECT_EQ(placed, s->context->tables().procId(ProcKind::GPU, 0, 1));
}

TEST(SimStages, AnIndexLaunchWithoutAPlacementIsBlockedOverTheProcessors) {
  auto s = Setup::shipped("circuit");
  dsl::CheckedSource none = checked("Task * GPU;\n");
  Resolver r(*s->context, none.program);
  ASSERT_FALSE(r.initialize().has_value());
  const Context::Tables &tb = s->context->tables();
  std::set<int> used;
  for (const auto &pt : s->program->tasks)
    if (pt.index && !s->app.tasks[static_cast<size_t>(pt.task)].inner()) {
      ProcId p = r.place(pt, ProcKind::GPU, ProcId(), nullptr);
      ASSERT_TRUE(p.valid());
      EXPECT_EQ(tb.proc(p).kind, ProcKind::GPU);
      used.insert(p.value());
    }
  EXPECT_EQ(used.size(), static_cast<size_t>(s->machine.count(ProcKind::GPU) * s->machine.nodes));
}

TEST(SimStages, AnUnknownVariantIsAFailureOfTheResolver) {
  auto s = Setup::shipped("circuit");
  dsl::CheckedSource py = checked("Task * PY;\n");
  Resolver r(*s->context, py.program);
  ASSERT_FALSE(r.initialize().has_value());
  try {
    r.kindFor(s->program->tasks.back());
    FAIL() << "no failure";
  } catch (const Failure &f) {
    EXPECT_EQ(f.kind, "variant");
    EXPECT_NE(f.message.find("No valid task variant"), std::string::npos) << f.message;
  }
}

TEST(SimStages, TheReportAddsUpTheExecutionsRecord) {
  auto s = Setup::shipped("stencil");
  dsl::CheckedSource expert = checked(expertText("stencil"));
  auto run = execute(*s->context, expert.program);
  ASSERT_TRUE(std::holds_alternative<Execution>(run));
  const Execution &ex = std::get<Execution>(run);
  EXPECT_GT(ex.endS, ex.startS);
  Result r = report(*s->context, ex, {});
  ASSERT_TRUE(r.ok);
  EXPECT_DOUBLE_EQ(r.timeS, ex.endS - ex.startS);
  int tasks = std::accumulate(ex.procTasks.begin(), ex.procTasks.end(), 0);
  int points = 0;
  for (const auto &t : r.taskStats)
    points += t.points;
  EXPECT_EQ(tasks, points);
  EXPECT_EQ(r.copies, ex.copies);
  double portBytes = 0;
  for (const auto &c : r.channels)
    portBytes += c.bytes;
  EXPECT_GE(portBytes, ex.bytesCopied); // each copy crosses at least one port
  // The whole pipeline is what simulate() returns.
  Result whole = simulate(*s->context, expert.program);
  EXPECT_DOUBLE_EQ(whole.timeS, r.timeS);
}

TEST(SimStages, ThresholdsDecideWhatIsABottleneck) {
  auto s = Setup::shipped("stencil");
  dsl::CheckedSource expert = checked(expertText("stencil"));
  const Execution ex = std::get<Execution>(execute(*s->context, expert.program));
  BottleneckThresholds none;
  none.channelBusy = none.processorBusy = none.runtimeShare = none.memoryPeak = 2;
  none.idleBusy = -1;
  none.variantRatio = 0;
  none.accessRatio = 1e9;
  EXPECT_TRUE(report(*s->context, ex, {}, none).bottlenecks.empty());
  BottleneckThresholds all;
  all.channelBusy = all.processorBusy = all.runtimeShare = all.memoryPeak = 0;
  all.imbalanceRatio = 2;
  EXPECT_FALSE(report(*s->context, ex, {}, all).bottlenecks.empty());
}

TEST(SimStages, AFailureKeepsTheLowerBound) {
  auto s = Setup::shipped("circuit");
  Result r = failed(*s->context, Failure{"memory", "Out of memory", "somewhere"});
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.errorKind, "memory");
  EXPECT_DOUBLE_EQ(r.lowerBoundS, s->context->lowerBoundS());
}

} // namespace
} // namespace hone::sim
