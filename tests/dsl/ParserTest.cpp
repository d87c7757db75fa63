// Parser: every statement form, expression precedence, recovery.
#include "TestUtil.h"

#include "dsl/Formatter.h"

#include <gtest/gtest.h>

using namespace hone;
using hone::test::checkText;
using hone::test::diagText;

namespace {
const dsl::Expr &valueOf(const dsl::Program &p, size_t i) { return *p.stmts.at(i).as<dsl::AssignStmt>()->value; }
} // namespace

TEST(Parser, EveryStatementForm) {
  auto c = checkText(R"(
Task * GPU,OMP,CPU;
Task a,b CPU;
Region * * GPU FBMEM,ZCMEM;
Region t rp_ghost * SYSMEM;
Region t 2 CPU VIRTUAL;
Layout * * * SOA C_order;
Layout t r FBMEM AOS F_order Align>=64 Compact Exact;
Layout t r2 SYSMEM No_Align;
InstanceLimit task_4 1;
InstanceLimit task_5 GPU 2;
CollectMemory task_4 *;
CollectMemory task_4 1;
ControlReplicate main_task,other;
m = Machine(GPU);
def f(Task task) { return m[0, 0]; }
def g(int a, bool b, IPoint p, ISpace s, MSpace ms, Task t) { x = a; print("{}", x); return x; }
IndexTaskMap a,b f;
IndexTaskMap GPU f;
IndexTaskMap * f;
SingleTaskMap leaf f;
print("done");
)");
  ASSERT_TRUE(c.ok()) << diagText(c);
  const auto &s = c.program.stmts;
  ASSERT_EQ(s.size(), 21u);
  auto t = s[1].as<dsl::TaskStmt>();
  ASSERT_TRUE(t);
  EXPECT_EQ(t->tasks.names.size(), 2u);
  auto r = s[3].as<dsl::RegionStmt>();
  EXPECT_FALSE(r->proc.has_value());
  EXPECT_EQ(r->region.names[0].text, "rp_ghost");
  auto r2 = s[4].as<dsl::RegionStmt>();
  EXPECT_EQ(r2->region.kind, dsl::Selector::Kind::Index);
  EXPECT_EQ(r2->region.index, 2);
  EXPECT_EQ(r2->mems[0].kind, dsl::MemKind::VIRTUAL);
  auto l = s[6].as<dsl::LayoutStmt>();
  ASSERT_EQ(l->constraints.size(), 5u);
  EXPECT_EQ(l->constraints[2].kind, dsl::LayoutConstraint::Kind::Align);
  EXPECT_EQ(l->constraints[2].alignOp, dsl::BinaryOp::Ge);
  EXPECT_EQ(l->constraints[2].alignBytes, 64);
  EXPECT_EQ(s[7].as<dsl::LayoutStmt>()->constraints[0].kind, dsl::LayoutConstraint::Kind::NoAlign);
  EXPECT_EQ(s[9].as<dsl::InstanceLimitStmt>()->proc->kind, dsl::ProcKind::GPU);
  EXPECT_EQ(s[9].as<dsl::InstanceLimitStmt>()->limit, 2);
  EXPECT_EQ(s[11].as<dsl::CollectMemoryStmt>()->region.kind, dsl::Selector::Kind::Index);
  EXPECT_EQ(s[12].as<dsl::ControlReplicateStmt>()->tasks.names.size(), 2u);
  EXPECT_EQ(s[15].as<dsl::FuncDef>()->params.size(), 6u);
  EXPECT_EQ(s[17].as<dsl::TaskMapStmt>()->tasks.kind, dsl::Selector::Kind::ProcKind);
  EXPECT_TRUE(s[19].as<dsl::TaskMapStmt>()->single);
}

TEST(Parser, PrecedenceAndAssociativity) {
  auto c = checkText("a = 1 + 2 * 3 - 4 / 2 % 3;\nb = a < 3 && a > 1 || a == 2 ? 1 : 0;\n"
                     "c = -a * 2;\nd = 10 - 3 - 2;\ne = True ? 1 : False ? 2 : 3;\n");
  ASSERT_TRUE(c.ok()) << diagText(c);
  EXPECT_EQ(dsl::formatExpr(valueOf(c.program, 0)), "1 + 2 * 3 - 4 / 2 % 3");
  const auto &b = valueOf(c.program, 1);
  EXPECT_EQ(b.kind, dsl::ExprKind::Ternary);
  EXPECT_EQ(b.operands[0]->binaryOps, std::vector<dsl::BinaryOp>{dsl::BinaryOp::Or});
  // Operators of one precedence make one chain, read left to right: (10 - 3) - 2.
  const auto &d = valueOf(c.program, 3);
  EXPECT_EQ(d.kind, dsl::ExprKind::Binary);
  EXPECT_EQ(d.operands.size(), 3u);
  EXPECT_EQ(d.binaryOps, (std::vector<dsl::BinaryOp>{dsl::BinaryOp::Sub, dsl::BinaryOp::Sub}));
  const auto &a = valueOf(c.program, 0); // 1 + (2 * 3) - (4 / 2 % 3): a chain of three, two of them chains
  ASSERT_EQ(a.operands.size(), 3u);
  EXPECT_EQ(a.operands[1]->binaryOps, std::vector<dsl::BinaryOp>{dsl::BinaryOp::Mul});
  EXPECT_EQ(a.operands[2]->binaryOps, (std::vector<dsl::BinaryOp>{dsl::BinaryOp::Div, dsl::BinaryOp::Mod}));
  const auto &e = valueOf(c.program, 4);
  EXPECT_EQ(e.operands[2]->kind, dsl::ExprKind::Ternary) << "right-nested ternary";
}

TEST(Parser, TuplesIndexingSlicesUnpackAndComprehensions) {
  auto c = checkText(R"(
m = Machine(GPU);
t = (1, 2, 3);
one = (4,);
u = t[-1];
s1 = t[1:];
s2 = t[:-1];
s3 = t[:];
s4 = t[0:2];
w = (*t, 4);
p = m[*s2];
q = m[0, *];
k = tuple(i * 2 for i in t);
r = m.size[1];
)");
  ASSERT_TRUE(c.ok()) << diagText(c);
  EXPECT_EQ(valueOf(c.program, 2).kind, dsl::ExprKind::Tuple);
  EXPECT_EQ(valueOf(c.program, 2).operands.size(), 1u);
  EXPECT_EQ(valueOf(c.program, 4).kind, dsl::ExprKind::Slice);
  EXPECT_EQ(valueOf(c.program, 4).operands[2], nullptr);
  EXPECT_EQ(valueOf(c.program, 8).operands[0]->kind, dsl::ExprKind::Unpack);
  EXPECT_EQ(valueOf(c.program, 10).operands[2]->kind, dsl::ExprKind::Star);
  EXPECT_EQ(valueOf(c.program, 11).kind, dsl::ExprKind::Comprehension);
}

TEST(Parser, RecoversAndReportsEveryIndependentError) {
  auto c = checkText("Task * GPUU;\nRegion * * GPU FBMEMM;\nx = (1, ;\ny = 2\nz = y + 1;\n");
  EXPECT_EQ(c.diags->errorCount(), 4u) << diagText(c);
  // The statements after the errors are still parsed and checked.
  bool sawZ = false;
  for (const auto &s : c.program.stmts)
    if (auto a = s.as<dsl::AssignStmt>(); a && a->target.text == "z")
      sawZ = true;
  EXPECT_TRUE(sawZ);
}

TEST(Parser, MissingSemicolonHasFixItAtEndOfPreviousToken) {
  auto c = checkText("m = Machine(GPU)\nTask * GPU;\n");
  ASSERT_EQ(c.diags->errorCount(), 1u) << diagText(c);
  const auto &d = c.diags->diagnostics()[0];
  EXPECT_EQ(d.range.begin.line, 1u);
  EXPECT_EQ(d.range.begin.column, 17u);
  ASSERT_EQ(d.fixIts.size(), 1u);
  EXPECT_EQ(d.fixIts[0].replacement, ";");
  EXPECT_EQ(c.program.stmts.size(), 2u);
}

TEST(Parser, ColonFunctionFormIsRejectedWithFixItAndRecovered) {
  auto c = checkText("def f(Task t):\n    x = 1;\n    return x;\nIndexTaskMap a f;\n");
  ASSERT_EQ(c.diags->errorCount(), 1u) << diagText(c);
  const auto &d = c.diags->diagnostics()[0];
  EXPECT_NE(d.message.find("remove ':'"), std::string::npos);
  EXPECT_EQ(d.range.begin.column, 14u);
  ASSERT_EQ(d.fixIts.size(), 2u);
  EXPECT_EQ(d.fixIts[0].replacement, "{");
  EXPECT_EQ(d.fixIts[1].replacement, "\n}");
  EXPECT_EQ(d.fixIts[1].range.begin.line, 3u) << "the closing brace goes after the body's last statement";
  const auto *f = c.program.findFunction("f");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->body.size(), 2u) << "the indented body is kept";
}

TEST(Parser, AColonFunctionWhoseBodyIsClosedGetsOnlyTheBraceForTheColon) {
  // `check --fix` used to add a second '}' here.
  std::string text = "Task * GPU;\ndef f(Task t):\n  return t.processor(GPU)[0];\n}\nIndexTaskMap a f;\n";
  auto c = checkText(text);
  ASSERT_EQ(c.diags->errorCount(), 1u) << diagText(c);
  ASSERT_EQ(c.diags->diagnostics()[0].fixIts.size(), 1u);
  size_t applied = 0;
  std::string fixed = support::applyFixIts(*c.file, c.diags->diagnostics(), &applied);
  EXPECT_EQ(applied, 1u);
  auto again = checkText(fixed);
  EXPECT_TRUE(again.ok()) << fixed << diagText(again);
}

TEST(Parser, AChainedConditionalWarnsThatTheReferenceGroupsItTheOtherWay) {
  auto c = checkText("x = True ? 1 : False ? 2 : 3;\n");
  ASSERT_EQ(c.diags->errorCount(), 0u) << diagText(c);
  ASSERT_EQ(c.diags->diagnostics().size(), 1u) << diagText(c);
  const auto &d = c.diags->diagnostics()[0];
  EXPECT_NE(d.message.find("'(c ? a : d) ? x : y'"), std::string::npos) << d.message;
  ASSERT_EQ(d.fixIts.size(), 2u);
  EXPECT_EQ(d.fixIts[0].replacement, "(");
  EXPECT_EQ(d.fixIts[0].range.begin.column, 16u);
  EXPECT_EQ(d.fixIts[1].replacement, ")");
  EXPECT_EQ(d.fixIts[1].range.begin.column, 29u);
  std::string fixed = "x = True ? 1 : (False ? 2 : 3);\n";
  auto again = checkText(fixed);
  EXPECT_TRUE(again.diags->diagnostics().empty()) << diagText(again);
  EXPECT_EQ(dsl::format(again.program), fixed); // fmt keeps the parentheses
}

TEST(Parser, SyntaxErrorInDefinitionDoesNotCascade) {
  auto c = checkText("mgpu = Machine(GPU) +;\ndef f(Task t) { return mgpu[0, 0]; }\nIndexTaskMap a f;\n");
  EXPECT_EQ(c.diags->errorCount(), 1u) << diagText(c);
}

TEST(Parser, NamesThatArePropertyWordsAreAllowedAsTaskNames) {
  auto c = checkText("Task merge GPU;\nRegion split size GPU FBMEM;\n");
  EXPECT_TRUE(c.ok()) << diagText(c);
}

TEST(Parser, StatementsMaySpanLines) {
  auto c = checkText("Layout * * *\n    SOA\n    C_order Align==128;\nTask a,\n     b GPU,\n     CPU;\n");
  ASSERT_TRUE(c.ok()) << diagText(c);
  EXPECT_EQ(c.program.stmts.at(0).as<dsl::LayoutStmt>()->constraints.size(), 3u);
  EXPECT_EQ(c.program.stmts.at(1).as<dsl::TaskStmt>()->procs.size(), 2u);
}

TEST(Parser, MissingSemicolonAfterLayoutBeforeAnAssignment) {
  auto c = checkText("Layout * * * SOA\nmgpu = Machine(GPU);\n");
  ASSERT_EQ(c.diags->errorCount(), 1u) << diagText(c);
  EXPECT_NE(c.diags->diagnostics()[0].message.find("expected ';' after the Layout statement"), std::string::npos);
}
