// Semantic checks that accept: the scoping rules of the runtime.
// (Rejections are in tests/dsl/negative/*.map.)
#include "TestUtil.h"

#include <gtest/gtest.h>

using hone::test::checkText;
using hone::test::diagText;

TEST(Sema, FunctionBodiesSeeGlobalsDefinedLater) {
  // Bodies run at mapping time, after every top-level statement.
  auto c = checkText("def f(Task t) { return m[0, 0]; }\nm = Machine(GPU);\nIndexTaskMap a f;\n");
  EXPECT_TRUE(c.ok()) << diagText(c);
  EXPECT_EQ(c.diags->warningCount(), 0u);
}

TEST(Sema, FunctionsMayCallFunctionsDefinedLater) {
  auto c = checkText("def f(Task t) { return g(t); }\ndef g(Task t) { return 1; }\n");
  EXPECT_TRUE(c.ok()) << diagText(c);
}

TEST(Sema, LocalsParametersAndComprehensionVariablesResolve) {
  auto c = checkText("def f(IPoint p, int k) { a = p[0] + k; b = tuple(a + i for i in p); return b; }\n");
  EXPECT_TRUE(c.ok()) << diagText(c);
}

TEST(Sema, ComprehensionVariableDoesNotLeak) {
  auto c = checkText("def f(IPoint p) { b = tuple(i for i in p); return i; }\n");
  EXPECT_FALSE(c.ok());
  EXPECT_NE(diagText(c).find("'i' not found"), std::string::npos) << diagText(c);
}

TEST(Sema, EveryExampleMapperChecksCleanly) {
  for (const auto &app : hone::test::kExampleApps) {
    auto c = checkText(hone::test::readFile(hone::test::sourcePath("examples/mappers/" + app + ".map")), app);
    EXPECT_TRUE(c.ok()) << app << "\n" << diagText(c);
    EXPECT_EQ(c.diags->warningCount(), 0u) << app << "\n" << diagText(c);
  }
}

TEST(Sema, AcceptsMappersInTheReferenceImplementationsStyle) {
  // The shapes real mapping files use: older InstanceLimit with a kind, names
  // lists with spaces, comments in both styles, unused Machine() spaces.
  auto c = checkText(R"(Task * GPU,OMP,CPU;
Region * * * SOCKMEM,SYSMEM;
Region * * GPU FBMEM,ZCMEM;
Layout * * * SOA C_order; // Align==128 Compact
InstanceLimit task_5 GPU 1;
CollectMemory task_4 *;
m_2d = Machine(GPU); # nodes * processors
m_1d = m_2d.merge(0, 1);
m_omp_2d = Machine(OMP);
def same_point(Task task) {
    return m_2d[*task.parent.processor(m_2d)]; # same point as parent
}
def same_node(Task task) {
    return m_2d[task.parent.processor(m_2d)[0], *];
}
def block1d(Task task) {
    return m_1d[task.ipoint[0] * m_1d.size[0] / task.ispace[0]];
}
IndexTaskMap task_1,task_2, task_3 block1d;
SingleTaskMap task_4 same_point;
SingleTaskMap task_6 same_node;
)");
  EXPECT_TRUE(c.ok()) << diagText(c);
}

TEST(Sema, ALocalAssignedTwiceWarnsThatTheReferenceKeepsTheFirst) {
  auto c = checkText("def f(Task t) {\n  x = 1;\n  x = 2;\n  return x;\n}\n");
  ASSERT_TRUE(c.ok()) << diagText(c);
  ASSERT_EQ(c.diags->diagnostics().size(), 1u) << diagText(c);
  EXPECT_NE(c.diags->diagnostics()[0].message.find("the reference implementation keeps the first"),
            std::string::npos)
      << diagText(c);
  EXPECT_EQ(c.diags->diagnostics()[0].range.begin.line, 3u);
}
