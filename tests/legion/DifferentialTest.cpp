// Differential test: for every example (and the kitchen-sink policy), on
// several machine shapes, the placement functions compiled to C++ by `hone
// compile` and the DSL interpreter must agree on every point of every launch:
// the same processors, or both a fault.
#define HONE_POLICY_ONLY
#include "cannon_mapper.cc"
#include "circuit_mapper.cc"
#include "cosma_mapper.cc"
#include "johnson_mapper.cc"
#include "kitchen_sink_mapper.cc"
#include "pennant_mapper.cc"
#include "pumma_mapper.cc"
#include "solomonik_mapper.cc"
#include "stencil_mapper.cc"
#include "summa_mapper.cc"

#include "TestUtil.h"
#include "dsl/Interpreter.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace {

using hone::dsl::Interpreter;
using hone::dsl::MachineShape;

hone_rt::Machine toRuntime(const MachineShape &shape) {
  hone_rt::Machine m;
  m.nodes = shape.nodes;
  for (int k = 0; k < hone_rt::kNumProcKinds; ++k) {
    auto kind = static_cast<hone::dsl::ProcKind>(k);
    m.per_node[k] = shape.count(kind);
    for (int mem = 0; mem < hone_rt::kNumMemKinds; ++mem)
      m.reaches[k][mem] = shape.hasMemory(kind, static_cast<hone::dsl::MemKind>(mem));
  }
  return m;
}

// Every point of a domain, dimension 0 fastest.
std::vector<std::vector<int64_t>> pointsOf(const std::vector<int64_t> &extents) {
  int64_t total = 1;
  for (auto e : extents)
    total *= e;
  std::vector<std::vector<int64_t>> out;
  for (int64_t n = 0; n < total; ++n) {
    std::vector<int64_t> p;
    int64_t rest = n;
    for (auto e : extents) {
      p.push_back(rest % e);
      rest /= e;
    }
    out.push_back(p);
  }
  return out;
}

const std::vector<std::vector<int64_t>> kLaunches = {{1},    {4},    {8},       {16},      {6},       {2, 2},
                                                     {4, 4}, {4, 2}, {3, 5},    {8, 8},    {2, 2, 2}, {4, 4, 4},
                                                     {2, 2, 1}, {4, 1, 4}, {1, 4, 4}, {3, 3, 2}};
// The GPU-less shapes are the machines real CPU runs use: there the expert mappers' GPU spaces are
// empty (a merge of an empty dimension once divided by zero in both implementations).
const std::vector<std::string> kShapes = {"nodes=1,gpus=4,cpus=4", "nodes=2,gpus=4,cpus=4", "nodes=4,gpus=4,cpus=2",
                                          "nodes=3,gpus=2,cpus=3", "nodes=1,gpus=0,cpus=4", "nodes=2,gpus=0,cpus=2"};

template <typename Policy> struct Checker {
  std::string app;
  int compared = 0, faults = 0;

  void run() {
    auto checked = hone::test::checkText(hone::test::readFile(hone::test::sourcePath(
                                             app == "kitchen_sink" ? "tests/legion/kitchen_sink.map"
                                                                   : "examples/mappers/" + app + ".map")),
                                         app + ".map");
    ASSERT_TRUE(checked.ok()) << hone::test::diagText(checked);
    for (const auto &spec : kShapes) {
      MachineShape shape = *MachineShape::parse(spec);
      Interpreter interp(checked.program, shape);
      auto init = interp.initialize();
      std::unique_ptr<Policy> policy;
      std::string policyFault;
      try {
        policy = std::make_unique<Policy>(toRuntime(shape));
      } catch (const hone_rt::Fault &f) {
        policyFault = f.what();
      }
      ASSERT_EQ(init.ok(), policy != nullptr) << app << " on " << spec << ": top level disagrees: "
                                              << (init.ok() ? policyFault : init.error().message);
      if (!policy)
        continue;
      for (const auto &rule : Policy::map_rules()) {
        const hone::dsl::FuncDef *fn = checked.program.findFunction(Policy::function_name(rule.function));
        ASSERT_NE(fn, nullptr);
        std::vector<std::string> tasks = rule.tasks.empty() ? std::vector<std::string>{"any"} : rule.tasks;
        for (const auto &task : tasks) {
          for (int k = 0; k < hone_rt::kNumProcKinds; ++k) {
            if (rule.selector == 2 && rule.proc != k)
              continue;
            if (shape.count(static_cast<hone::dsl::ProcKind>(k)) == 0)
              continue;
            if (rule.single)
              compareSingle(interp, *policy, *fn, rule.function, task, k, shape, spec);
            else
              compareIndex(interp, *policy, *fn, rule.function, task, k, spec);
          }
        }
      }
    }
  }

  void compare(const hone::support::Expected<hone::dsl::Placement> &want, Policy &policy, int function,
               const hone_rt::TaskView &view, const std::string &where) {
    typename Policy::Frame frame;
    std::string got, error;
    try {
      hone_rt::Value v = policy.call(frame, function, {hone_rt::Value(std::make_shared<const hone_rt::TaskView>(view))});
      auto placed = hone_rt::to_placement(v, view, toRuntimeShape_, Policy::function_name(function));
      for (const auto &p : placed.points)
        got += fmt::format("({}, {})", p.node, p.proc);
    } catch (const hone_rt::Fault &f) {
      error = f.what();
    }
    ++compared;
    if (!want.ok()) {
      ++faults;
      EXPECT_FALSE(error.empty()) << where << ": the interpreter faults (" << want.error().message
                                  << ") but the compiled function returned " << got;
      return;
    }
    std::string expected;
    for (const auto &p : want->points)
      expected += fmt::format("({}, {})", p[0], p[1]);
    EXPECT_EQ(expected, got) << where << (error.empty() ? "" : ": compiled function faulted: " + error);
  }

  void compareIndex(Interpreter &interp, Policy &policy, const hone::dsl::FuncDef &fn, int function,
                    const std::string &task, int kind, const std::string &spec) {
    toRuntimeShape_ = toRuntime(interp.machine());
    for (const auto &launch : kLaunches)
      for (const auto &point : pointsOf(launch)) {
        hone::dsl::TaskInfo t;
        t.name = task;
        t.kind = static_cast<hone::dsl::ProcKind>(kind);
        t.ipoint = point;
        t.ispace = launch;
        hone_rt::TaskView v;
        v.name = task;
        v.kind = static_cast<hone_rt::ProcKind>(kind);
        v.ipoint = point;
        v.ispace = launch;
        compare(interp.place(fn, t), policy, function, v,
                fmt::format("{} {} on {}: point {} of {}", app, fn.name.text, spec, hone_rt::str_of(point),
                            hone_rt::str_of(launch)));
      }
  }

  void compareSingle(Interpreter &interp, Policy &policy, const hone::dsl::FuncDef &fn, int function,
                     const std::string &task, int kind, const MachineShape &shape, const std::string &spec) {
    toRuntimeShape_ = toRuntime(shape);
    auto pk = static_cast<hone::dsl::ProcKind>(kind);
    for (int64_t node = 0; node < shape.nodes; ++node)
      for (int64_t proc = 0; proc < shape.count(pk); ++proc) {
        auto parent = std::make_shared<hone::dsl::TaskInfo>();
        parent->indexLaunch = false;
        parent->kind = pk;
        parent->processor = hone::dsl::Point2{node, proc};
        hone::dsl::TaskInfo t;
        t.name = task;
        t.indexLaunch = false;
        t.kind = pk;
        t.parent = parent;
        auto rparent = std::make_shared<hone_rt::TaskView>();
        rparent->index_launch = false;
        rparent->kind = static_cast<hone_rt::ProcKind>(kind);
        rparent->has_processor = true;
        rparent->processor = hone_rt::Point2{node, proc};
        hone_rt::TaskView v;
        v.name = task;
        v.index_launch = false;
        v.kind = static_cast<hone_rt::ProcKind>(kind);
        v.parent = rparent;
        compare(interp.place(fn, t), policy, function, v,
                fmt::format("{} {} on {}: parent on ({}, {})", app, fn.name.text, spec, node, proc));
      }
  }

  hone_rt::Machine toRuntimeShape_;
};

template <typename Policy> void check(const std::string &app, int minimumCompared) {
  Checker<Policy> c;
  c.app = app;
  c.run();
  EXPECT_GE(c.compared, minimumCompared) << app << ": too few placements compared";
  std::printf("%s: %d placements compared, %d of them faults in both\n", app.c_str(), c.compared, c.faults);
}

TEST(Differential, Circuit) { check<hone_generated_CircuitMapper::Policy>("circuit", 1000); }
TEST(Differential, Stencil) { check<hone_generated_StencilMapper::Policy>("stencil", 1000); }
TEST(Differential, Pennant) { check<hone_generated_PennantMapper::Policy>("pennant", 1000); }
TEST(Differential, Cannon) { check<hone_generated_CannonMapper::Policy>("cannon", 1000); }
TEST(Differential, Summa) { check<hone_generated_SummaMapper::Policy>("summa", 1000); }
TEST(Differential, Pumma) { check<hone_generated_PummaMapper::Policy>("pumma", 1000); }
TEST(Differential, Johnson) { check<hone_generated_JohnsonMapper::Policy>("johnson", 1000); }
TEST(Differential, Solomonik) { check<hone_generated_SolomonikMapper::Policy>("solomonik", 1000); }
TEST(Differential, Cosma) { check<hone_generated_CosmaMapper::Policy>("cosma", 1000); }
TEST(Differential, KitchenSink) { check<hone_generated_KitchenSinkMapper::Policy>("kitchen_sink", 1000); }

} // namespace

// ---- the decision tables the compiler emits, and the runtime's lookups -------

namespace {

using namespace hone_rt;
using KS = hone_generated_KitchenSinkMapper::Policy;

TEST(GeneratedTables, TaskRulesKeepOrderKindsAndLines) {
  const auto &rules = KS::task_rules();
  ASSERT_EQ(rules.size(), 2u);
  EXPECT_TRUE(rules[0].tasks.empty()); // Task *
  EXPECT_EQ(rules[0].kinds, (std::vector<ProcKind>{ProcKind::GPU, ProcKind::OMP, ProcKind::CPU}));
  EXPECT_EQ(rules[0].line, 3);
  EXPECT_EQ(rules[1].tasks, (std::vector<std::string>{"setup", "teardown"}));
  EXPECT_EQ(find_task_rule(rules, "setup"), &rules[1]);
  EXPECT_EQ(find_task_rule(rules, "other"), &rules[0]);
}

TEST(GeneratedTables, RegionRulesMostSpecificWins) {
  const auto &rules = KS::region_rules();
  ASSERT_EQ(rules.size(), 4u);
  // Region leaf 0 GPU VIRTUAL: by argument index.
  const RegionRule *leaf0 = find_region_rule(rules, "leaf", {}, 0, ProcKind::GPU);
  ASSERT_NE(leaf0, nullptr);
  EXPECT_EQ(leaf0->mems, std::vector<MemKind>{MemKind::VIRTUAL});
  // Argument 1 of leaf falls back to Region * * GPU.
  EXPECT_EQ(find_region_rule(rules, "leaf", {}, 1, ProcKind::GPU)->mems,
            (std::vector<MemKind>{MemKind::FBMEM, MemKind::ZCMEM}));
  // A region named rp_ghost (by its partition's name) on any processor.
  EXPECT_EQ(find_region_rule(rules, "t", {"sub", "rp_ghost"}, 3, ProcKind::CPU)->mems,
            std::vector<MemKind>{MemKind::ZCMEM});
  EXPECT_EQ(find_region_rule(rules, "t", {}, 3, ProcKind::CPU)->mems,
            (std::vector<MemKind>{MemKind::SYSMEM, MemKind::SOCKMEM}));
  EXPECT_EQ(find_region_rule(rules, "t", {}, 3, ProcKind::IO), nullptr);
}

TEST(GeneratedTables, LayoutRulesCarryEveryConstraint) {
  const auto &rules = KS::layout_rules();
  ASSERT_EQ(rules.size(), 4u);
  const LayoutRule *l = find_layout_rule(rules, "leaf", {"r"}, 0, MemKind::FBMEM, ProcKind::GPU);
  ASSERT_NE(l, nullptr);
  EXPECT_TRUE(l->aos && !l->soa && l->f_order && !l->c_order && l->compact && l->align);
  EXPECT_EQ(l->align_op, 5); // >=
  EXPECT_EQ(l->align_bytes, 64);
  const LayoutRule *g = find_layout_rule(rules, "leaf", {"rp_ghost"}, 2, MemKind::ZCMEM, ProcKind::GPU);
  EXPECT_TRUE(g->soa && g->exact && g->no_align && !g->align);
  const LayoutRule *s = find_layout_rule(rules, "x", {}, 1, MemKind::SYSMEM, ProcKind::CPU);
  EXPECT_TRUE(s->align && s->align_op == 1 && s->align_bytes == 8); // Align!=8
  EXPECT_TRUE(find_layout_rule(rules, "x", {}, 0, MemKind::SYSMEM, ProcKind::CPU)->c_order);
}

TEST(GeneratedTables, LimitsCollectionReplicationAndTaskMaps) {
  EXPECT_EQ(find_limit_rule(KS::limit_rules(), "leaf", ProcKind::CPU)->limit, 2);
  EXPECT_EQ(find_limit_rule(KS::limit_rules(), "inner", ProcKind::GPU)->limit, 1);
  EXPECT_EQ(find_limit_rule(KS::limit_rules(), "inner", ProcKind::CPU), nullptr);
  EXPECT_TRUE(collects(KS::collect_rules(), "leaf", {}, 5));
  EXPECT_TRUE(collects(KS::collect_rules(), "other", {"rp_ghost"}, 0));
  EXPECT_FALSE(collects(KS::collect_rules(), "other", {"rp_shared"}, 0));
  EXPECT_EQ(KS::replicated(), (std::vector<std::string>{"main_task", "inner"}));
  const MapRule *byName = find_map_rule(KS::map_rules(), "stencil", ProcKind::GPU, false);
  EXPECT_STREQ(KS::function_name(byName->function), "linear");
  const MapRule *byKind = find_map_rule(KS::map_rules(), "unnamed", ProcKind::CPU, false);
  EXPECT_STREQ(KS::function_name(byKind->function), "cpu_of");
  EXPECT_EQ(find_map_rule(KS::map_rules(), "unnamed", ProcKind::GPU, false), nullptr);
  EXPECT_STREQ(KS::function_name(find_map_rule(KS::map_rules(), "leaf", ProcKind::GPU, true)->function),
               "with_parent");
  EXPECT_STREQ(KS::function_name(find_map_rule(KS::map_rules(), "other", ProcKind::GPU, true)->function),
               "parent_node");
}

// As in the reference implementation (DSLMapper): the first of equals wins.
TEST(Runtime, TheFirstRuleWinsAmongEquals) {
  std::vector<TaskRule> tasks = {{{}, {ProcKind::GPU}, 1}, {{}, {ProcKind::CPU}, 2}, {{"a"}, {ProcKind::OMP}, 3},
                                 {{"a"}, {ProcKind::IO}, 4}};
  EXPECT_EQ(find_task_rule(tasks, "a")->line, 3);
  EXPECT_EQ(find_task_rule(tasks, "b")->line, 1);
  std::vector<RegionRule> regions = {{"", "r", -1, -1, {MemKind::FBMEM}, 1}, {"t", "", -1, -1, {MemKind::ZCMEM}, 2},
                                     {"t", "", -1, -1, {MemKind::SYSMEM}, 3}};
  // The task-specific line beats the region-specific one; of two equal ones, the first.
  EXPECT_EQ(find_region_rule(regions, "t", {"r"}, 0, ProcKind::GPU)->line, 2);
  std::vector<LimitRule> limits = {{{"a"}, -1, 4, 1}, {{"a"}, -1, 2, 2}};
  EXPECT_EQ(find_limit_rule(limits, "a", ProcKind::GPU)->limit, 4);
}

TEST(Runtime, FaultsAreExceptionsWithTheRuntimesMessages) {
  auto m = MSpace::root(ProcKind::GPU, 2, 4);
  try {
    m->to_root({2, 0});
    FAIL() << "no fault";
  } catch (const Fault &f) {
    EXPECT_NE(std::string(f.what()).find("Sharding node index out of bound"), std::string::npos);
  }
  EXPECT_THROW(div(Value(int64_t{1}), Value(int64_t{0})), Fault);
  EXPECT_EQ(auto_split_factors(4, {4, 2, 4}), (std::vector<int64_t>{2, 1, 2}));
}

} // namespace
