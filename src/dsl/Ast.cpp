// AST helpers: kind names and the text dump used by golden tests.
#include "dsl/Ast.h"

#include <fmt/format.h>

namespace hone::dsl {

std::string_view toString(ParamType type) {
  switch (type) {
  case ParamType::Int: return "int";
  case ParamType::Bool: return "bool";
  case ParamType::IPoint: return "IPoint";
  case ParamType::ISpace: return "ISpace";
  case ParamType::MSpace: return "MSpace";
  case ParamType::Task: return "Task";
  }
  return "?";
}

std::string_view toString(BinaryOp op) {
  switch (op) {
  case BinaryOp::Add: return "+";
  case BinaryOp::Sub: return "-";
  case BinaryOp::Mul: return "*";
  case BinaryOp::Div: return "/";
  case BinaryOp::Mod: return "%";
  case BinaryOp::Lt: return "<";
  case BinaryOp::Gt: return ">";
  case BinaryOp::Le: return "<=";
  case BinaryOp::Ge: return ">=";
  case BinaryOp::Eq: return "==";
  case BinaryOp::Ne: return "!=";
  case BinaryOp::And: return "&&";
  case BinaryOp::Or: return "||";
  }
  return "?";
}

int precedence(BinaryOp op) {
  switch (op) {
  case BinaryOp::Or: return 1;
  case BinaryOp::And: return 2;
  case BinaryOp::Eq:
  case BinaryOp::Ne: return 3;
  case BinaryOp::Lt:
  case BinaryOp::Gt:
  case BinaryOp::Le:
  case BinaryOp::Ge: return 4;
  case BinaryOp::Add:
  case BinaryOp::Sub: return 5;
  case BinaryOp::Mul:
  case BinaryOp::Div:
  case BinaryOp::Mod: return 6;
  }
  return 0;
}

std::string Selector::spelling() const {
  switch (kind) {
  case Kind::Wildcard: return "*";
  case Kind::Index: return std::to_string(index);
  case Kind::ProcKind: return std::string(toString(proc));
  case Kind::Names: {
    std::string out;
    for (size_t i = 0; i < names.size(); ++i) {
      if (i)
        out += ",";
      out += names[i].text;
    }
    return out;
  }
  }
  return "*";
}

std::string LayoutConstraint::spelling() const {
  switch (kind) {
  case Kind::SOA: return "SOA";
  case Kind::AOS: return "AOS";
  case Kind::COrder: return "C_order";
  case Kind::FOrder: return "F_order";
  case Kind::Compact: return "Compact";
  case Kind::Exact: return "Exact";
  case Kind::NoAlign: return "No_Align";
  case Kind::Align: return fmt::format("Align{}{}", toString(alignOp), alignBytes);
  }
  return "?";
}

const FuncDef *Program::findFunction(std::string_view name) const {
  for (const auto &s : stmts)
    if (auto f = s.as<FuncDef>(); f && f->name.text == name)
      return f;
  return nullptr;
}

namespace {

class Dumper {
public:
  explicit Dumper(bool withLocations) : loc_(withLocations) {}

  std::string take() { return std::move(out_); }

  void line(int depth, const std::string &text, const SourceRange &range) {
    out_.append(static_cast<size_t>(depth) * 2, ' ');
    out_ += text;
    if (loc_ && range.valid())
      out_ += fmt::format(" @{}:{}", range.begin.line, range.begin.column);
    out_ += '\n';
  }

  void expr(const Expr &e, int depth) {
    switch (e.kind) {
    case ExprKind::Int: line(depth, fmt::format("Int {}", e.intValue), e.range); return;
    case ExprKind::Bool: line(depth, e.boolValue ? "Bool True" : "Bool False", e.range); return;
    case ExprKind::Name: line(depth, "Name " + e.name, e.range); return;
    case ExprKind::ProcKind: line(depth, fmt::format("ProcKind {}", toString(e.proc)), e.range); return;
    case ExprKind::MemKind: line(depth, fmt::format("MemKind {}", toString(e.mem)), e.range); return;
    case ExprKind::Star: line(depth, "Star", e.range); break;
    case ExprKind::Unpack: line(depth, "Unpack", e.range); break;
    case ExprKind::Unary: line(depth, e.unaryOp == UnaryOp::Neg ? "Unary -" : "Unary !", e.range); break;
    case ExprKind::Binary: {
      std::string ops;
      for (BinaryOp op : e.binaryOps)
        ops += fmt::format(" {}", toString(op));
      line(depth, "Binary" + ops, e.range);
      break;
    }
    case ExprKind::Ternary: line(depth, "Ternary", e.range); break;
    case ExprKind::Tuple: line(depth, fmt::format("Tuple {}", e.operands.size()), e.range); break;
    case ExprKind::Call: line(depth, "Call", e.range); break;
    case ExprKind::Index: line(depth, "Index", e.range); break;
    case ExprKind::Slice: line(depth, "Slice", e.range); break;
    case ExprKind::Property: line(depth, "Property " + e.name, e.range); break;
    case ExprKind::Comprehension: line(depth, "Comprehension " + e.name, e.range); break;
    }
    for (const auto &op : e.operands) {
      if (op)
        expr(*op, depth + 1);
      else
        line(depth + 1, "<none>", SourceRange{});
    }
  }

  void stmt(const Stmt &s, int depth) {
    std::visit([&](const auto &n) { node(n, s.range, depth); }, s.node);
  }

private:
  static std::string procs(const std::vector<KindRef<ProcKind>> &list) {
    std::string out;
    for (size_t i = 0; i < list.size(); ++i)
      out += (i ? "," : "") + std::string(toString(list[i].kind));
    return out;
  }
  static std::string mems(const std::vector<KindRef<MemKind>> &list) {
    std::string out;
    for (size_t i = 0; i < list.size(); ++i)
      out += (i ? "," : "") + std::string(toString(list[i].kind));
    return out;
  }

  void node(const TaskStmt &s, const SourceRange &r, int d) {
    line(d, fmt::format("Task tasks={} procs={}", s.tasks.spelling(), procs(s.procs)), r);
  }
  void node(const RegionStmt &s, const SourceRange &r, int d) {
    line(d,
         fmt::format("Region task={} region={} proc={} mems={}", s.task.spelling(), s.region.spelling(),
                     s.proc ? std::string(toString(s.proc->kind)) : "*", mems(s.mems)),
         r);
  }
  void node(const LayoutStmt &s, const SourceRange &r, int d) {
    std::string target = s.target == LayoutStmt::Target::Any      ? "*"
                         : s.target == LayoutStmt::Target::Memory ? std::string(toString(s.mem))
                                                                  : std::string(toString(s.proc));
    std::string cs;
    for (const auto &c : s.constraints)
      cs += " " + c.spelling();
    line(d, fmt::format("Layout task={} region={} target={} constraints=[{}]", s.task.spelling(),
                        s.region.spelling(), target, cs.empty() ? "" : cs.substr(1)),
         r);
  }
  void node(const InstanceLimitStmt &s, const SourceRange &r, int d) {
    line(d,
         fmt::format("InstanceLimit task={}{} limit={}", s.task.spelling(),
                     s.proc ? " proc=" + std::string(toString(s.proc->kind)) : "", s.limit),
         r);
  }
  void node(const CollectMemoryStmt &s, const SourceRange &r, int d) {
    line(d, fmt::format("CollectMemory task={} region={}", s.task.spelling(), s.region.spelling()), r);
  }
  void node(const TaskMapStmt &s, const SourceRange &r, int d) {
    line(d,
         fmt::format("{} tasks={} function={}", s.single ? "SingleTaskMap" : "IndexTaskMap", s.tasks.spelling(),
                     s.function.text),
         r);
  }
  void node(const ControlReplicateStmt &s, const SourceRange &r, int d) {
    line(d, fmt::format("ControlReplicate tasks={}", s.tasks.spelling()), r);
  }
  void node(const AssignStmt &s, const SourceRange &r, int d) {
    line(d, "Assign " + s.target.text, r);
    expr(*s.value, d + 1);
  }
  void node(const PrintStmt &s, const SourceRange &r, int d) {
    line(d, fmt::format("Print \"{}\"", s.format), r);
    for (const auto &a : s.args)
      expr(*a, d + 1);
  }
  void node(const ReturnStmt &s, const SourceRange &r, int d) {
    line(d, "Return", r);
    expr(*s.value, d + 1);
  }
  void node(const FuncDef &s, const SourceRange &r, int d) {
    std::string params;
    for (size_t i = 0; i < s.params.size(); ++i)
      params += fmt::format("{}{} {}", i ? ", " : "", toString(s.params[i].type), s.params[i].name.text);
    line(d, fmt::format("FuncDef {}({})", s.name.text, params), r);
    for (const auto &b : s.body)
      stmt(b, d + 1);
  }

  bool loc_;
  std::string out_;
};

} // namespace

std::string dumpAst(const Program &program, bool withLocations) {
  Dumper d(withLocations);
  d.line(0, "Program", SourceRange{});
  for (const auto &s : program.stmts)
    d.stmt(s, 1);
  return d.take();
}

std::string dumpExpr(const Expr &expr, bool withLocations) {
  Dumper d(withLocations);
  d.expr(expr, 0);
  return d.take();
}

} // namespace hone::dsl
