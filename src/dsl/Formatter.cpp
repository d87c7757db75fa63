// Formatter implementation: a printer over the AST that interleaves comments
// by source offset.
#include "dsl/Formatter.h"

#include <fmt/format.h>

namespace hone::dsl {
namespace {

constexpr int kUnaryPrec = 7;
constexpr int kPostfixPrec = 8;

std::string expr(const Expr &e, int parentPrec);

std::string list(const std::vector<ExprPtr> &items, size_t from) {
  std::string out;
  for (size_t i = from; i < items.size(); ++i) {
    if (i > from)
      out += ", ";
    out += expr(*items[i], 0);
  }
  return out;
}

std::string expr(const Expr &e, int parentPrec) {
  auto wrap = [&](std::string s, int prec) { return prec < parentPrec ? "(" + s + ")" : s; };
  switch (e.kind) {
  case ExprKind::Int: return std::to_string(e.intValue);
  case ExprKind::Bool: return e.boolValue ? "True" : "False";
  case ExprKind::Name: return e.name;
  case ExprKind::ProcKind: return std::string(toString(e.proc));
  case ExprKind::MemKind: return std::string(toString(e.mem));
  case ExprKind::Star: return "*";
  case ExprKind::Unpack: return "*" + expr(*e.operands[0], kUnaryPrec);
  case ExprKind::Unary:
    return wrap(std::string(e.unaryOp == UnaryOp::Neg ? "-" : "!") + expr(*e.operands[0], kUnaryPrec), kUnaryPrec);
  case ExprKind::Binary: {
    int p = precedence(e.binaryOps.front());
    std::string text = expr(*e.operands[0], p);
    for (size_t i = 1; i < e.operands.size(); ++i)
      text += fmt::format(" {} {}", toString(e.binaryOps[i - 1]), expr(*e.operands[i], p + 1));
    return wrap(std::move(text), p);
  }
  case ExprKind::Ternary:
    // A conditional inside another keeps its parentheses: the reference implementation groups an
    // unparenthesized `c ? a : d ? x : y` from the left, hone from the right.
    return wrap(fmt::format("{} ? {} : {}", expr(*e.operands[0], 1), expr(*e.operands[1], 1),
                            expr(*e.operands[2], 1)),
                0);
  case ExprKind::Tuple:
    if (e.operands.size() == 1)
      return "(" + expr(*e.operands[0], 0) + ",)";
    return "(" + list(e.operands, 0) + ")";
  case ExprKind::Call: return expr(*e.operands[0], kPostfixPrec) + "(" + list(e.operands, 1) + ")";
  case ExprKind::Index: return expr(*e.operands[0], kPostfixPrec) + "[" + list(e.operands, 1) + "]";
  case ExprKind::Slice:
    return expr(*e.operands[0], kPostfixPrec) + "[" + (e.operands[1] ? expr(*e.operands[1], 0) : "") + ":" +
           (e.operands[2] ? expr(*e.operands[2], 0) : "") + "]";
  case ExprKind::Property: return expr(*e.operands[0], kPostfixPrec) + "." + e.name;
  case ExprKind::Comprehension:
    return fmt::format("tuple({} for {} in {})", expr(*e.operands[0], 0), e.name, expr(*e.operands[1], 0));
  }
  return "?";
}

template <typename K> std::string kinds(const std::vector<KindRef<K>> &list) {
  std::string out;
  for (size_t i = 0; i < list.size(); ++i)
    out += (i ? "," : "") + std::string(toString(list[i].kind));
  return out;
}

class Printer {
public:
  explicit Printer(const Program &p) : program_(p) {}

  std::string run() {
    for (const auto &s : program_.stmts)
      item(s, 0);
    flushComments(UINT32_MAX, 0);
    return std::move(out_);
  }

private:
  void gapBefore(uint32_t line) {
    if (lastLine_ != 0 && line > lastLine_ + 1 && !out_.empty())
      out_ += '\n';
  }

  void flushComments(uint32_t beforeOffset, int indent) {
    const auto &cs = program_.comments;
    while (next_ < cs.size() && cs[next_].range.begin.offset < beforeOffset) {
      gapBefore(cs[next_].range.begin.line);
      out_.append(static_cast<size_t>(indent) * 4, ' ');
      out_ += cs[next_].text + "\n";
      lastLine_ = cs[next_].range.begin.line;
      ++next_;
    }
  }

  // An end-of-line comment on the statement's last line stays there.
  void trailingComment(uint32_t line) {
    const auto &cs = program_.comments;
    if (next_ < cs.size() && !cs[next_].ownLine && cs[next_].range.begin.line == line) {
      out_ += " " + cs[next_].text;
      ++next_;
    }
  }

  void item(const Stmt &s, int indent) {
    flushComments(s.range.begin.offset, indent);
    gapBefore(s.range.begin.line);
    out_.append(static_cast<size_t>(indent) * 4, ' ');
    if (auto f = s.as<FuncDef>()) {
      function(*f, s, indent);
    } else {
      out_ += statement(s);
      trailingComment(s.range.end.line);
      out_ += '\n';
    }
    lastLine_ = s.range.end.line;
  }

  void function(const FuncDef &f, const Stmt &s, int indent) {
    std::string params;
    for (size_t i = 0; i < f.params.size(); ++i)
      params += fmt::format("{}{} {}", i ? ", " : "", toString(f.params[i].type), f.params[i].name.text);
    out_ += fmt::format("def {}({}) {{\n", f.name.text, params);
    lastLine_ = s.range.begin.line;
    for (const auto &b : f.body)
      item(b, indent + 1);
    flushComments(s.range.end.offset, indent + 1);
    out_.append(static_cast<size_t>(indent) * 4, ' ');
    out_ += "}";
    trailingComment(s.range.end.line);
    out_ += '\n';
  }

  static std::string statement(const Stmt &s) {
    return std::visit([](const auto &n) { return text(n); }, s.node);
  }

  static std::string text(const TaskStmt &s) { return fmt::format("Task {} {};", s.tasks.spelling(), kinds(s.procs)); }
  static std::string text(const RegionStmt &s) {
    return fmt::format("Region {} {} {} {};", s.task.spelling(), s.region.spelling(),
                       s.proc ? std::string(toString(s.proc->kind)) : "*", kinds(s.mems));
  }
  static std::string text(const LayoutStmt &s) {
    std::string target = s.target == LayoutStmt::Target::Any      ? "*"
                         : s.target == LayoutStmt::Target::Memory ? std::string(toString(s.mem))
                                                                  : std::string(toString(s.proc));
    std::string out = fmt::format("Layout {} {} {}", s.task.spelling(), s.region.spelling(), target);
    for (const auto &c : s.constraints)
      out += " " + c.spelling();
    return out + ";";
  }
  static std::string text(const InstanceLimitStmt &s) {
    return fmt::format("InstanceLimit {} {}{};", s.task.spelling(),
                       s.proc ? std::string(toString(s.proc->kind)) + " " : "", s.limit);
  }
  static std::string text(const CollectMemoryStmt &s) {
    return fmt::format("CollectMemory {} {};", s.task.spelling(), s.region.spelling());
  }
  static std::string text(const TaskMapStmt &s) {
    return fmt::format("{} {} {};", s.single ? "SingleTaskMap" : "IndexTaskMap", s.tasks.spelling(), s.function.text);
  }
  static std::string text(const ControlReplicateStmt &s) {
    return fmt::format("ControlReplicate {};", s.tasks.spelling());
  }
  static std::string text(const AssignStmt &s) { return fmt::format("{} = {};", s.target.text, expr(*s.value, 0)); }
  static std::string text(const PrintStmt &s) {
    std::string out = fmt::format("print(\"{}\"", s.format);
    for (const auto &a : s.args)
      out += ", " + expr(*a, 0);
    return out + ");";
  }
  static std::string text(const ReturnStmt &s) { return fmt::format("return {};", expr(*s.value, 0)); }
  static std::string text(const FuncDef &) { return ""; } // printed by function()

  const Program &program_;
  std::string out_;
  size_t next_ = 0;
  uint32_t lastLine_ = 0;
};

} // namespace

std::string format(const Program &program) { return Printer(program).run(); }

std::string formatExpr(const Expr &e) { return expr(e, 0); }

} // namespace hone::dsl
