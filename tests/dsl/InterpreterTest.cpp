// Interpreter: the expression language, placement, and runtime faults with
// locations.
#include "TestUtil.h"

#include "dsl/Interpreter.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace hone;
using namespace hone::dsl;

namespace {

struct Run {
  CheckedSource checked;
  std::unique_ptr<Interpreter> interp;
  std::ostringstream printed;
  support::Expected<bool> init = support::Error{"not run"};
};

std::unique_ptr<Run> run(const std::string &text, const std::string &machine = "nodes=2,gpus=4,cpus=8") {
  auto r = std::make_unique<Run>();
  r->checked = test::checkText(text);
  EXPECT_TRUE(r->checked.ok()) << test::diagText(r->checked);
  r->interp = std::make_unique<Interpreter>(r->checked.program, *MachineShape::parse(machine), &r->printed);
  r->init = r->interp->initialize();
  return r;
}

std::string global(const Run &r, const std::string &name) {
  EXPECT_TRUE(r.init.ok()) << r.init.error().message;
  auto it = r.interp->globals().find(name);
  return it == r.interp->globals().end() ? "<missing>" : it->second.str();
}

TaskInfo point(std::vector<int64_t> ip, std::vector<int64_t> is, ProcKind kind = ProcKind::GPU) {
  TaskInfo t;
  t.name = "t";
  t.ipoint = std::move(ip);
  t.ispace = std::move(is);
  t.kind = kind;
  return t;
}

} // namespace

TEST(Interpreter, IntegerArithmeticTruncatesLikeCpp) {
  auto r = run("a = 7 / 2; b = -7 / 2; c = -7 % 3; d = 2 + 3 * 4; e = (2 + 3) * 4; f = 10 - 3 - 2;");
  EXPECT_EQ(global(*r, "a"), "3");
  EXPECT_EQ(global(*r, "b"), "-3");
  EXPECT_EQ(global(*r, "c"), "-1");
  EXPECT_EQ(global(*r, "d"), "14");
  EXPECT_EQ(global(*r, "e"), "20");
  EXPECT_EQ(global(*r, "f"), "5");
}

TEST(Interpreter, ComparisonsLogicAndTernary) {
  auto r = run("a = 3 < 4 && 4 >= 4; b = 1 == 2 || !(2 != 2); c = a ? 10 : 20; d = (1, 2) == (1, 2);");
  EXPECT_EQ(global(*r, "a"), "True");
  EXPECT_EQ(global(*r, "b"), "True");
  EXPECT_EQ(global(*r, "c"), "10");
  EXPECT_EQ(global(*r, "d"), "True");
}

TEST(Interpreter, TuplesElementwiseIndexSliceUnpackComprehension) {
  auto r = run(R"(
t = (4, 6, 8);
a = t / (2, 3, 4);
b = t + 1;
c = 10 - t;
d = t[-1];
e = t[1:];
f = t[:-1];
g = t[:];
h = (*t, 9);
i = tuple(x * x for x in t);
j = t.len;
k = t.volume;
l = t.size;
n = -t;
o = t.has(6);
one = (5,);
)");
  EXPECT_EQ(global(*r, "a"), "(2, 2, 2)");
  EXPECT_EQ(global(*r, "b"), "(5, 7, 9)");
  EXPECT_EQ(global(*r, "c"), "(6, 4, 2)");
  EXPECT_EQ(global(*r, "d"), "8");
  EXPECT_EQ(global(*r, "e"), "(6, 8)");
  EXPECT_EQ(global(*r, "f"), "(4, 6)");
  EXPECT_EQ(global(*r, "g"), "(4, 6, 8)");
  EXPECT_EQ(global(*r, "h"), "(4, 6, 8, 9)");
  EXPECT_EQ(global(*r, "i"), "(16, 36, 64)");
  EXPECT_EQ(global(*r, "j"), "3");
  EXPECT_EQ(global(*r, "k"), "192");
  EXPECT_EQ(global(*r, "l"), "(4, 6, 8)");
  EXPECT_EQ(global(*r, "n"), "(-4, -6, -8)");
  EXPECT_EQ(global(*r, "o"), "True");
  EXPECT_EQ(global(*r, "one"), "(5,)");
}

TEST(Interpreter, MachineSpacesPropertiesAndIndexing) {
  auto r = run(R"(
m = Machine(GPU);
c = Machine(CPU);
s = m.size;
v = m.volume;
m1 = m.merge(0, 1);
p = m1[5];
q = m[1, *];
h = m[0].has(FBMEM);
hc = c[0].has(FBMEM);
w = (8,) / m[:-1];
)");
  EXPECT_EQ(global(*r, "s"), "(2, 4)");
  EXPECT_EQ(global(*r, "v"), "8");
  EXPECT_EQ(global(*r, "m"), "MSpace(GPU; 2, 4)");
  EXPECT_EQ(global(*r, "c"), "MSpace(CPU; 2, 8)");
  EXPECT_EQ(global(*r, "p"), "(1, 1)");
  EXPECT_EQ(global(*r, "q"), "{(1, 0), (1, 1), (1, 2), (1, 3)}");
  EXPECT_EQ(global(*r, "h"), "True");
  EXPECT_EQ(global(*r, "hc"), "False");
  EXPECT_EQ(global(*r, "w"), "(4,)");
}

TEST(Interpreter, FunctionsAndPrint) {
  auto r = run("def add(int a, int b) { s = a + b; print(\"sum {} of {}\", s, (a, b)); return s; }\n"
               "x = add(2, 3);\nprint(\"x={}\", x);\n");
  EXPECT_EQ(global(*r, "x"), "5");
  EXPECT_EQ(r->printed.str(), "sum 5 of (2, 3)\nx=5\n");
}

TEST(Interpreter, PlacesTheCircuitExampleOnTwoNodes) {
  auto r = run(test::readFile(test::sourcePath("examples/mappers/circuit.map")));
  ASSERT_TRUE(r->init.ok());
  auto kind = r->interp->processorKindFor("calculate_new_currents");
  ASSERT_TRUE(kind.has_value());
  EXPECT_EQ(*kind, ProcKind::GPU);
  EXPECT_EQ(*r->interp->processorKindFor("init_piece"), ProcKind::CPU);
  const FuncDef *f = r->interp->placementFunctionFor("calculate_new_currents", ProcKind::GPU, false);
  ASSERT_TRUE(f);
  for (int64_t i = 0; i < 8; ++i) {
    auto p = r->interp->place(*f, point({i}, {8}));
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_EQ(p->points[0], (Point2{i / 4, i % 4})) << i;
  }
}

TEST(Interpreter, PlacementFunctionLookupPrefersNameThenKindThenWildcard) {
  auto r = run("m = Machine(GPU);\ndef a(Task t) { return m[0, 0]; }\ndef b(Task t) { return m[0, 1]; }\n"
               "def c(Task t) { return m[0, 2]; }\nIndexTaskMap * a;\nIndexTaskMap GPU b;\nIndexTaskMap x c;\n");
  EXPECT_EQ(r->interp->placementFunctionFor("x", ProcKind::GPU, false)->name.text, "c");
  EXPECT_EQ(r->interp->placementFunctionFor("y", ProcKind::GPU, false)->name.text, "b");
  EXPECT_EQ(r->interp->placementFunctionFor("y", ProcKind::CPU, false)->name.text, "a");
  EXPECT_EQ(r->interp->placementFunctionFor("y", ProcKind::CPU, true), nullptr);
}

TEST(Interpreter, SameProcessorAsTheParent) {
  auto r = run("m = Machine(GPU);\ndef same(Task task) { return m[*task.parent.processor(m)]; }\n"
               "m1 = m.merge(0, 1);\ndef lin(Task task) { return m1[task.parent.processor(m1)[0]]; }\n");
  auto parent = std::make_shared<TaskInfo>();
  parent->indexLaunch = false;
  parent->processor = Point2{1, 2};
  TaskInfo leaf;
  leaf.name = "leaf";
  leaf.indexLaunch = false;
  leaf.parent = parent;
  auto p = r->interp->place(*r->checked.program.findFunction("same"), leaf);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->points[0], (Point2{1, 2}));
  auto q = r->interp->place(*r->checked.program.findFunction("lin"), leaf);
  ASSERT_TRUE(q.ok()) << q.error().message;
  EXPECT_EQ(q->points[0], (Point2{1, 2}));
}

TEST(Interpreter, AutoSplitPlacementOfA3DLaunch) {
  // Blocks over nodes, round-robin over each node's GPUs (the earlier experts' tile3d).
  auto r = run("m2 = Machine(GPU);\n"
               "def block(IPoint p, ISpace s, MSpace m, int pd, int md) {\n"
               "    return p[pd] * m.size[md] / s[pd];\n}\n"
               "def cyclic(IPoint p, ISpace s, MSpace m, int pd, int md) {\n"
               "    return p[pd] % m.size[md];\n}\n"
               "def tile3d(Task task) {\n"
               "    m4 = m2.auto_split(0, task.ispace);\n"
               "    m6 = m4.auto_split(3, task.ispace / m4[:-1]);\n"
               "    nodes = tuple(block(task.ipoint, task.ispace, m6, i, i) for i in (0, 1, 2));\n"
               "    gpus = tuple(cyclic(task.ipoint, task.ispace, m6, i, i + 3) for i in (0, 1, 2));\n"
               "    return m6[*nodes, *gpus];\n}\n"
               "IndexTaskMap task_4 tile3d;\n",
               "nodes=4,gpus=4");
  const FuncDef *f = r->interp->placementFunctionFor("task_4", ProcKind::GPU, false);
  ASSERT_TRUE(f);
  // 4 nodes over (4,4,4) split as (2,2,1) (a tie among three splits, won by
  // the greedy one); each node's (2,2,4) share over 4 GPUs as (2,1,2), again
  // the greedy one among the tied (1,1,4), (1,2,2), (2,1,2).
  std::map<Point2, int> load;
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 4; ++j)
      for (int64_t k = 0; k < 4; ++k) {
        auto p = r->interp->place(*f, point({i, j, k}, {4, 4, 4}));
        ASSERT_TRUE(p.ok()) << p.error().message;
        EXPECT_EQ(p->points[0][0], i / 2 + 2 * (j / 2)) << i << j << k;
        EXPECT_EQ(p->points[0][1], i % 2 + 2 * (k % 2)) << i << j << k;
        ++load[p->points[0]];
      }
  EXPECT_EQ(load.size(), 16u);
  for (const auto &[proc, n] : load)
    EXPECT_EQ(n, 4);
}

TEST(Interpreter, FaultsCarryTheLocationOfTheFailingExpression) {
  auto r = run("m = Machine(GPU);\n"
               "def node_oob(Task t) { return m[t.ipoint[0], 0]; }\n"
               "def proc_oob(Task t) { return m[0, t.ipoint[0]]; }\n"
               "def divz(Task t) {\n  z = t.ipoint[0] - t.ipoint[0];\n  return m[0, 1 / z];\n}\n"
               "def idx(Task t) { return m[t.ipoint[5], 0]; }\n"
               "def typ(Task t) { return m[True, 0]; }\n"
               "def notpoint(Task t) { return 3; }\n"
               "def single(Task t) { return m[t.ipoint[0], 0]; }\n");
  ASSERT_TRUE(r->init.ok());
  auto expectFault = [&](const char *fn, const TaskInfo &t, const std::string &text, int line, int col) {
    auto p = r->interp->place(*r->checked.program.findFunction(fn), t);
    ASSERT_FALSE(p.ok()) << fn;
    EXPECT_NE(p.error().message.find(text), std::string::npos) << fn << ": " << p.error().message;
    EXPECT_EQ(p.error().line, line) << fn;
    EXPECT_EQ(p.error().column, col) << fn;
  };
  expectFault("node_oob", point({5}, {8}), "Sharding node index out of bound", 2, 31);
  expectFault("proc_oob", point({5}, {8}), "Slice processor index out of bound", 3, 31);
  expectFault("divz", point({1}, {8}), "division by zero", 6, 15);
  expectFault("idx", point({1}, {8}), "index 5 is out of range for a tuple of length 1", 8, 28);
  expectFault("typ", point({1}, {8}), "must be an int, not bool", 9, 26);
  expectFault("notpoint", point({1}, {8}), "must return a processor", 10, 5);
  TaskInfo s;
  s.indexLaunch = false;
  s.name = "leaf";
  expectFault("single", s, "task.ipoint is only defined for index launches", 11, 31);
}

TEST(Interpreter, TopLevelFaultsStopInitialisationWithALocation) {
  auto c = test::checkText("a = 1;\nb = (1, 2)[3];\n");
  ASSERT_TRUE(c.ok());
  Interpreter in(c.program, *MachineShape::parse("nodes=1,gpus=1"));
  auto init = in.initialize();
  ASSERT_FALSE(init.ok());
  EXPECT_EQ(init.error().line, 2);
  EXPECT_NE(init.error().message.find("out of range"), std::string::npos);
}

TEST(Interpreter, RunawayRecursionIsAFaultNotACrash) {
  auto r = run("def f(int n) { return f(n + 1); }\ndef g(Task t) { return f(0); }\n");
  auto p = r->interp->place(*r->checked.program.findFunction("g"), point({0}, {1}));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("recursive"), std::string::npos);
}

TEST(Interpreter, IntegerOverflowIsAFault) {
  auto c = test::checkText("a = 9223372036854775807 + 1;\n");
  ASSERT_TRUE(c.ok());
  Interpreter in(c.program, *MachineShape::parse("nodes=1"));
  auto init = in.initialize();
  ASSERT_FALSE(init.ok());
  EXPECT_NE(init.error().message.find("overflow"), std::string::npos);
}
