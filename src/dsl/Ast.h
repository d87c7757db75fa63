// The AST of a mapper policy. Every node carries its source range. Statements
// are a closed variant; expressions are one node type whose operand layout
// depends on its kind (the table on Expr). `dumpAst` prints the tree as text
// for golden tests and for `hone dump --emit=ast`.
#pragma once

#include "model/Kinds.h"
#include "support/SourceFile.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace hone::dsl {

using support::SourceRange;

// ---- kinds of the machine -------------------------------------------------

// The kinds are shared with the machine models (model/Kinds.h).
using model::kMemKindNames;
using model::kProcKindNames;
using model::MemKind;
using model::parseMemKind;
using model::parseProcKind;
using model::ProcKind;
using model::toString;
inline constexpr std::array<std::string_view, 8> kConstraintNames = {"SOA",     "AOS",   "C_order", "F_order",
                                                                      "Compact", "Align", "Exact",   "No_Align"};
inline constexpr std::array<std::string_view, 16> kPropertyNames = {
    "size",  "len",   "volume", "has",     "ipoint",  "ispace",        "parent",     "processor",
    "merge", "split", "swap",   "slice",   "reverse", "balance_split", "auto_split", "greedy_split"};


// ---- comments (kept for the formatter) ------------------------------------

struct Comment {
  SourceRange range;
  std::string text; // including the leading '#' or '//'
  bool ownLine;     // no token precedes it on its line
};

// ---- expressions ----------------------------------------------------------

enum class ParamType { Int, Bool, IPoint, ISpace, MSpace, Task };
std::string_view toString(ParamType type);

enum class BinaryOp { Add, Sub, Mul, Div, Mod, Lt, Gt, Le, Ge, Eq, Ne, And, Or };
std::string_view toString(BinaryOp op);
/// Binding strength: higher binds tighter (|| = 1 ... * / % = 6).
int precedence(BinaryOp op);

enum class UnaryOp { Neg, Not };

enum class ExprKind {
  Int,           // intValue
  Bool,          // boolValue
  Name,          // name
  ProcKind,      // proc                     e.g. GPU in Machine(GPU)
  MemKind,       // mem                      e.g. FBMEM in m[0].has(FBMEM)
  Star,          //                          '*' in an index: any processor along a dim
  Unpack,        // operands[0]              '*t' spreads a tuple into a list
  Unary,         // unaryOp, operands[0]
  Binary,        // operands[0..n-1], n >= 2, joined left to right by binaryOps[0..n-2], all of one
                 // precedence: a chain such as 1+2-3+... is one node, however long
  Ternary,       // operands[0] ? operands[1] : operands[2]
  Tuple,         // operands = elements      (a, b), and (a,) for one element
  Call,          // operands[0] = callee, operands[1..] = arguments
  Index,         // operands[0] = base, operands[1..] = indices
  Slice,         // operands[0] = base, operands[1] = low or null, operands[2] = high or null
  Property,      // operands[0] = base, name = property, nameRange
  Comprehension, // tuple(operands[0] for name in operands[1])
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

/// The deepest expression tree the parser builds: every pass over a tree (checking, formatting,
/// interpreting, compiling, destroying) recurses on it, so a deeper one is refused with a located
/// error instead of exhausting the stack (docs/DEVELOPING.md lists hone's limits). Only real nesting
/// counts: parentheses, operands of unary operators, calls, indices, conditionals and operators of
/// different precedence; a chain of operators of one precedence is one node, walked in a loop.
inline constexpr int kMaxExprDepth = 200;

struct Expr {
  ExprKind kind = ExprKind::Int;
  SourceRange range;
  int64_t intValue = 0;
  bool boolValue = false;
  std::string name;
  SourceRange nameRange;
  std::vector<BinaryOp> binaryOps; // Binary: binaryOps[i - 1] joins operands[i] to what precedes it
  UnaryOp unaryOp = UnaryOp::Neg;
  ProcKind proc = ProcKind::CPU;
  MemKind mem = MemKind::SYSMEM;
  std::vector<ExprPtr> operands;
  int height = 1; // of the tree below and including this node

  Expr(ExprKind k, SourceRange r) : kind(k), range(r) {}
  const Expr *operand(size_t i) const { return i < operands.size() ? operands[i].get() : nullptr; }
};

// ---- statements -----------------------------------------------------------

struct Ident {
  std::string text;
  SourceRange range;
};

/// What a statement applies to: '*', a list of names, a 0-based argument
/// index (regions), or a processor kind (IndexTaskMap GPU f; = all tasks on GPU).
struct Selector {
  enum class Kind { Wildcard, Names, Index, ProcKind };
  Kind kind = Kind::Wildcard;
  std::vector<Ident> names;
  int64_t index = 0;
  ProcKind proc = ProcKind::CPU;
  SourceRange range;

  bool isWildcard() const { return kind == Kind::Wildcard; }
  /// Canonical spelling: "*", "a,b", "0", "GPU".
  std::string spelling() const;
};

template <typename K> struct KindRef {
  K kind;
  SourceRange range;
};

struct LayoutConstraint {
  enum class Kind { SOA, AOS, COrder, FOrder, Compact, Exact, NoAlign, Align };
  Kind kind = Kind::SOA;
  BinaryOp alignOp = BinaryOp::Eq; // for Align: Eq Ne Lt Le Gt Ge
  int64_t alignBytes = 0;
  SourceRange range;
  std::string spelling() const; // "SOA", "Align==128"
};

struct TaskStmt {
  Selector tasks;
  std::vector<KindRef<ProcKind>> procs;
};

struct RegionStmt {
  Selector task;
  Selector region;                       // Wildcard, Names (one) or Index
  std::optional<KindRef<ProcKind>> proc; // nullopt: '*'
  SourceRange procRange;
  std::vector<KindRef<MemKind>> mems;
};

struct LayoutStmt {
  enum class Target { Any, Memory, Processor };
  Selector task;
  Selector region;
  Target target = Target::Any;
  MemKind mem = MemKind::SYSMEM;
  ProcKind proc = ProcKind::CPU;
  SourceRange targetRange;
  std::vector<LayoutConstraint> constraints;
};

struct InstanceLimitStmt {
  Selector task;
  std::optional<KindRef<ProcKind>> proc; // the older form: InstanceLimit T GPU 1;
  int64_t limit = 0;
  SourceRange limitRange;
};

struct CollectMemoryStmt {
  Selector task;
  Selector region;
};

struct TaskMapStmt {
  bool single = false; // SingleTaskMap (true) or IndexTaskMap (false)
  Selector tasks;
  Ident function;
};

struct ControlReplicateStmt {
  Selector tasks;
};

struct AssignStmt {
  Ident target;
  ExprPtr value;
};

struct PrintStmt {
  std::string format; // without the quotes
  SourceRange formatRange;
  std::vector<ExprPtr> args;
};

struct ReturnStmt {
  ExprPtr value;
};

struct Param {
  ParamType type = ParamType::Int;
  SourceRange typeRange;
  Ident name;
};

struct Stmt;

struct FuncDef {
  Ident name;
  std::vector<Param> params;
  std::vector<Stmt> body; // AssignStmt, ReturnStmt, PrintStmt
  bool colonForm = false;  // written as 'def f(...):' (rejected, recovered)
  bool incomplete = false; // a body statement failed to parse (already reported)
};

struct Stmt {
  using Node = std::variant<TaskStmt, RegionStmt, LayoutStmt, InstanceLimitStmt, CollectMemoryStmt, TaskMapStmt,
                            ControlReplicateStmt, AssignStmt, PrintStmt, ReturnStmt, FuncDef>;
  SourceRange range;
  Node node;

  template <typename T> const T *as() const { return std::get_if<T>(&node); }
};

struct Program {
  std::vector<Stmt> stmts;
  std::vector<Comment> comments;
  /// Names whose defining statement failed to parse (semantic checks do not
  /// report them as undefined: that would only repeat the syntax error).
  std::vector<std::string> brokenNames;

  /// The function named `name`, if one is defined at top level.
  const FuncDef *findFunction(std::string_view name) const;
};

/// Prints the tree, one node per line, indented by depth. With locations,
/// each node carries "@line:col"; without, the dump compares meaning only.
std::string dumpAst(const Program &program, bool withLocations = true);
std::string dumpExpr(const Expr &expr, bool withLocations = true);

} // namespace hone::dsl
