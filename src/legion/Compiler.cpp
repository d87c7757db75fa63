// The compiler from policies to C++ Legion mappers.
//
// Reader's map: compileToCpp writes the file top to bottom: header comment,
// includes, the Policy class (decision tables from the statements in
// Tables, globals and functions from Codegen), then the Legion entry point.
// Codegen::expr turns one DSL expression into one C++ expression over
// hone_rt values; names are mangled (v_ locals, g_ globals, f_ functions) so
// no DSL name can clash with C++ or with the runtime.
#include "legion/Compiler.h"

#include "dsl/Formatter.h"
#include "support/Check.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace hone::legion {

using namespace hone::dsl;

std::string defaultClassName(std::string_view stem) {
  std::string out;
  bool upper = true;
  for (char c : stem) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
      upper = false;
    } else {
      upper = true;
    }
  }
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0])))
    out = "Policy" + out;
  return out + "Mapper";
}

bool isValidIdentifier(std::string_view name) {
  static const std::set<std::string_view> kKeywords = {
      "alignas", "alignof", "and", "asm", "auto", "bool", "break", "case", "catch", "char", "class", "const",
      "constexpr", "continue", "default", "delete", "do", "double", "else", "enum", "explicit", "export", "extern",
      "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new",
      "noexcept", "not", "nullptr", "operator", "or", "private", "protected", "public", "register", "return",
      "short", "signed", "sizeof", "static", "struct", "switch", "template", "this", "throw", "true", "try",
      "typedef", "typename", "union", "unsigned", "using", "virtual", "void", "volatile", "while", "xor"};
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) || name.substr(0, 2) == "__")
    return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
      return false;
  return kKeywords.count(name) == 0;
}

namespace {

std::string procName(ProcKind k) { return fmt::format("ProcKind::{}", toString(k)); }
std::string memName(MemKind k) { return fmt::format("MemKind::{}", toString(k)); }

std::string quoted(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string nameList(const Selector &s) {
  if (s.kind != Selector::Kind::Names)
    return "{}";
  std::string out = "{";
  for (size_t i = 0; i < s.names.size(); ++i)
    out += (i ? ", " : "") + quoted(s.names[i].text);
  return out + "}";
}

// One line of a policy, for the comments that cite each decision.
std::string cite(const CompileOptions &o, const SourceRange &r) {
  return fmt::format("{}:{}", o.sourceName, r.begin.line);
}

class Codegen {
public:
  Codegen(const Program &program, const CompileOptions &options) : options_(options) {
    for (const auto &s : program.stmts)
      if (auto a = s.as<AssignStmt>())
        globals_.insert(a->target.text);
  }

  // ---- expressions --------------------------------------------------------
  // `scopes` holds the names visible as C++ locals (parameters, locals,
  // comprehension variables), innermost last.
  std::string expr(const Expr &e) {
    switch (e.kind) {
    case ExprKind::Int: return fmt::format("num({})", e.intValue);
    case ExprKind::Bool: return e.boolValue ? "Value(true)" : "Value(false)";
    case ExprKind::ProcKind: return "Value(" + procName(e.proc) + ")";
    case ExprKind::MemKind: return "Value(" + memName(e.mem) + ")";
    case ExprKind::Name: return name(e.name);
    case ExprKind::Star:
    case ExprKind::Unpack: return "Value()"; // rejected by the checks outside lists
    case ExprKind::Unary:
      return fmt::format("{}({})", e.unaryOp == UnaryOp::Neg ? "neg" : "lnot", expr(*e.operands[0]));
    case ExprKind::Binary: return binary(e);
    case ExprKind::Ternary:
      return fmt::format("(truth({}, \"the condition of '?:'\") ? {} : {})", expr(*e.operands[0]),
                         expr(*e.operands[1]), expr(*e.operands[2]));
    case ExprKind::Tuple:
      if (allPlain(e.operands, 0))
        return "tuple_of(" + plainList(e.operands, 0) + ")";
      return "make_tuple(" + items(e.operands, 0) + ")";
    case ExprKind::Index:
      if (allPlain(e.operands, 1))
        return fmt::format("at({}, {})", expr(*e.operands[0]), plainList(e.operands, 1));
      return fmt::format("index({}, build({}, true))", expr(*e.operands[0]), items(e.operands, 1));
    case ExprKind::Slice:
      return fmt::format("slice({}, {}, {}, {}, {})", expr(*e.operands[0]), e.operands[1] ? "true" : "false",
                         e.operands[1] ? expr(*e.operands[1]) : "Value()", e.operands[2] ? "true" : "false",
                         e.operands[2] ? expr(*e.operands[2]) : "Value()");
    case ExprKind::Property: return fmt::format("prop({}, {})", expr(*e.operands[0]), quoted(e.name));
    case ExprKind::Call: return call(e);
    case ExprKind::Comprehension: {
      std::string range = expr(*e.operands[1]);
      scopes_.push_back(e.name);
      std::string body = expr(*e.operands[0]);
      scopes_.pop_back();
      return fmt::format("comprehend({}, [&](const Value &v_{}) -> Value {{ return {}; }})", range, e.name, body);
    }
    }
    HONE_UNREACHABLE("unknown expression kind");
  }

  static bool allPlain(const std::vector<ExprPtr> &ops, size_t from) {
    for (size_t i = from; i < ops.size(); ++i)
      if (ops[i]->kind == ExprKind::Star || ops[i]->kind == ExprKind::Unpack)
        return false;
    return true;
  }

  // "{a, b}": a list without '*' items, which C++ evaluates left to right.
  std::string plainList(const std::vector<ExprPtr> &ops, size_t from) {
    std::string out = "{";
    for (size_t i = from; i < ops.size(); ++i)
      out += (i > from ? ", " : "") + expr(*ops[i]);
    return out + "}";
  }

  // A list as the runtime's build() takes it: item(v), spread(t), star().
  std::string list(const std::vector<ExprPtr> &ops, size_t from) {
    return allPlain(ops, from) ? plainList(ops, from) : "build(" + items(ops, from) + ")";
  }

  std::string items(const std::vector<ExprPtr> &ops, size_t from) {
    std::string out = "{";
    for (size_t i = from; i < ops.size(); ++i) {
      const Expr &e = *ops[i];
      out += i > from ? ", " : "";
      if (e.kind == ExprKind::Star)
        out += "star()";
      else if (e.kind == ExprKind::Unpack)
        out += "spread(" + expr(*e.operands[0]) + ")";
      else
        out += "item(" + expr(e) + ")";
    }
    return out + "}";
  }

  std::string name(const std::string &n) {
    if (std::find(scopes_.begin(), scopes_.end(), n) != scopes_.end())
      return "v_" + n;
    if (globals_.count(n))
      return "g_" + n;
    // Checked programs name nothing else in value position.
    return "v_" + n;
  }

  static constexpr size_t kNestedChain = 16;

  // A chain `a op b op c ...` of one precedence: nested calls while short, as a reader would write it;
  // a long one folds in a lambda, one statement per operand, so that neither this compiler nor the C++
  // compiler after it recurses once per operand.
  std::string binary(const Expr &e) {
    BinaryOp first = e.binaryOps.front();
    bool logical = first == BinaryOp::And || first == BinaryOp::Or;
    if (e.operands.size() > kNestedChain) {
      std::string out = "[&]() -> Value { ";
      if (logical) {
        const char *op = first == BinaryOp::And ? "&&" : "||";
        for (size_t i = 0; i + 1 < e.operands.size(); ++i)
          out += fmt::format("if ({}truth({}, \"'{}'\")) return Value({}); ", first == BinaryOp::And ? "!" : "",
                             expr(*e.operands[i]), op, first == BinaryOp::Or);
        return out + fmt::format("return Value(truth({}, \"'{}'\")); }}()", expr(*e.operands.back()), op);
      }
      out += fmt::format("Value acc = {}; ", expr(*e.operands[0]));
      for (size_t i = 1; i < e.operands.size(); ++i)
        out += fmt::format("acc = {}(acc, {}); ", function(e.binaryOps[i - 1]), expr(*e.operands[i]));
      return out + "return acc; }()";
    }
    std::string out = expr(*e.operands[0]);
    for (size_t i = 1; i < e.operands.size(); ++i) {
      BinaryOp op = e.binaryOps[i - 1];
      if (logical) {
        const char *text = op == BinaryOp::And ? "&&" : "||";
        out = fmt::format("Value(truth({}, \"'{}'\") {} truth({}, \"'{}'\"))", out, text, text, expr(*e.operands[i]),
                          text);
      } else {
        out = fmt::format("{}({}, {})", function(op), out, expr(*e.operands[i]));
      }
    }
    return out;
  }

  static const char *function(BinaryOp op) {
    const char *fn = nullptr;
    switch (op) {
    case BinaryOp::And:
    case BinaryOp::Or: HONE_UNREACHABLE("logical operators are no function calls");
    case BinaryOp::Add: fn = "add"; break;
    case BinaryOp::Sub: fn = "sub"; break;
    case BinaryOp::Mul: fn = "mul"; break;
    case BinaryOp::Div: fn = "div"; break;
    case BinaryOp::Mod: fn = "mod"; break;
    case BinaryOp::Lt: fn = "lt"; break;
    case BinaryOp::Gt: fn = "gt"; break;
    case BinaryOp::Le: fn = "le"; break;
    case BinaryOp::Ge: fn = "ge"; break;
    case BinaryOp::Eq: fn = "eq"; break;
    case BinaryOp::Ne: fn = "ne"; break;
    }
    return fn;
  }

  std::string call(const Expr &e) {
    const Expr &callee = *e.operands[0];
    if (callee.kind == ExprKind::Name && callee.name == "Machine")
      return fmt::format("machine(m_, {})", procName(e.operands[1]->proc));
    if (callee.kind == ExprKind::Name)
      return fmt::format("f_{}(fr, {})", callee.name, list(e.operands, 1));
    HONE_CHECK(callee.kind == ExprKind::Property, "checked programs call only functions and methods");
    const Expr &base = *callee.operands[0];
    if (callee.name == "has" && base.kind == ExprKind::Index && base.operands.size() == 2 &&
        base.operands[1]->kind != ExprKind::Star && base.operands[1]->kind != ExprKind::Unpack)
      return fmt::format("has_indexed(m_, {}, {}, {})", expr(*base.operands[0]), expr(*base.operands[1]),
                         list(e.operands, 1));
    return fmt::format("method({}, {}, {})", expr(base), quoted(callee.name), list(e.operands, 1));
  }

  // ---- functions ----------------------------------------------------------

  void function(std::string &out, const FuncDef &f, const SourceRange &range) {
    std::string params;
    for (size_t i = 0; i < f.params.size(); ++i)
      params += fmt::format("{}{} {}", i ? ", " : "", toString(f.params[i].type), f.params[i].name.text);
    out += fmt::format("  // {}: def {}({})\n", cite(options_, range), f.name.text, params);
    out += fmt::format("  Value f_{}(Frame &fr, const std::vector<Value> &args) const {{\n", f.name.text);
    out += fmt::format("    CallDepth depth(fr.depth, {});\n", quoted(f.name.text));
    std::string types;
    for (size_t i = 0; i < f.params.size(); ++i)
      types += fmt::format("{}ParamType::{}", i ? ", " : "", paramTypeName(f.params[i].type));
    out += fmt::format("    check_args(args, {{{}}}, {});\n", types, quoted(f.name.text));
    scopes_.clear();
    for (size_t i = 0; i < f.params.size(); ++i) {
      out += fmt::format("    Value v_{} = args[{}];\n", f.params[i].name.text, i);
      scopes_.push_back(f.params[i].name.text);
    }
    std::vector<std::string> locals;
    for (const auto &s : f.body)
      if (auto a = s.as<AssignStmt>())
        if (std::find(scopes_.begin(), scopes_.end(), a->target.text) == scopes_.end() &&
            std::find(locals.begin(), locals.end(), a->target.text) == locals.end())
          locals.push_back(a->target.text);
    if (!locals.empty()) {
      out += "    Value";
      for (size_t i = 0; i < locals.size(); ++i)
        out += fmt::format("{} v_{}", i ? "," : "", locals[i]);
      out += ";\n";
    }
    for (const auto &s : f.body) {
      out += "    // " + sourceText(s) + "\n";
      std::string line = fmt::format("    fr.line = {};", s.range.begin.line);
      if (auto a = s.as<AssignStmt>()) {
        std::string value = expr(*a->value); // before the name is in scope: 'x = x + 1' reads the old x
        if (std::find(scopes_.begin(), scopes_.end(), a->target.text) == scopes_.end())
          scopes_.push_back(a->target.text);
        out += fmt::format("{} v_{} = {};\n", line, a->target.text, value);
      } else if (auto r = s.as<ReturnStmt>()) {
        out += fmt::format("{} return {};\n", line, expr(*r->value));
        break; // statements after return never run
      } else if (auto p = s.as<PrintStmt>()) {
        out += fmt::format("{} {}\n", line, printCall(*p));
      }
    }
    out += "  }\n\n";
    scopes_.clear();
  }

  // The statement as the policy says it (canonical form), for comments.
  static std::string sourceText(const Stmt &s) {
    if (auto a = s.as<AssignStmt>())
      return a->target.text + " = " + formatExpr(*a->value) + ";";
    if (auto r = s.as<ReturnStmt>())
      return "return " + formatExpr(*r->value) + ";";
    if (auto p = s.as<PrintStmt>()) {
      std::string out = "print(\"" + p->format + "\"";
      for (const auto &a : p->args)
        out += ", " + formatExpr(*a);
      return out + ");";
    }
    return "";
  }

  std::string printCall(const PrintStmt &p) {
    std::string args;
    for (const auto &a : p.args)
      args += (args.empty() ? "" : ", ") + expr(*a);
    return fmt::format("print({}, {{{}}});", quoted(p.format), args);
  }

  static const char *paramTypeName(ParamType t) {
    switch (t) {
    case ParamType::Int: return "Int";
    case ParamType::Bool: return "Bool";
    case ParamType::IPoint: return "IPoint";
    case ParamType::ISpace: return "ISpace";
    case ParamType::MSpace: return "MSpace";
    case ParamType::Task: return "Task";
    }
    return "Int";
  }

private:
  const CompileOptions &options_;
  std::set<std::string> globals_;
  std::vector<std::string> scopes_;
};

// ---- decision tables --------------------------------------------------------

std::string regionSelector(const Selector &s) {
  if (s.kind == Selector::Kind::Index)
    return fmt::format("\"\", {}", s.index);
  if (s.kind == Selector::Kind::Names)
    return fmt::format("{}, -1", quoted(s.names[0].text));
  return "\"\", -1";
}

std::string taskName(const Selector &s) { return s.kind == Selector::Kind::Names ? quoted(s.names[0].text) : "\"\""; }

struct LayoutFlags {
  bool soa = false, aos = false, c = false, f = false, compact = false, exact = false, noAlign = false, align = false;
  int op = 0;
  int64_t bytes = 0;
};

LayoutFlags layoutFlags(const LayoutStmt &l) {
  LayoutFlags x;
  for (const auto &c : l.constraints) {
    switch (c.kind) { // the later of two conflicting constraints wins
    case LayoutConstraint::Kind::SOA: x.soa = true, x.aos = false; break;
    case LayoutConstraint::Kind::AOS: x.aos = true, x.soa = false; break;
    case LayoutConstraint::Kind::COrder: x.c = true, x.f = false; break;
    case LayoutConstraint::Kind::FOrder: x.f = true, x.c = false; break;
    case LayoutConstraint::Kind::Compact: x.compact = true; break;
    case LayoutConstraint::Kind::Exact: x.exact = true; break;
    case LayoutConstraint::Kind::NoAlign: x.noAlign = true, x.align = false; break;
    case LayoutConstraint::Kind::Align:
      x.align = true, x.noAlign = false;
      x.bytes = c.alignBytes;
      switch (c.alignOp) {
      case BinaryOp::Eq: x.op = 0; break;
      case BinaryOp::Ne: x.op = 1; break;
      case BinaryOp::Lt: x.op = 2; break;
      case BinaryOp::Le: x.op = 3; break;
      case BinaryOp::Gt: x.op = 4; break;
      default: x.op = 5; break;
      }
      break;
    }
  }
  return x;
}

template <typename T> std::string table(const std::string &type, const std::string &fn, const std::vector<T> &rows) {
  std::string out = fmt::format("  static const std::vector<{}> &{}() {{\n    static const std::vector<{}> rules = {{\n",
                                type, fn, type);
  for (const auto &r : rows)
    out += r;
  return out + "    };\n    return rules;\n  }\n";
}

} // namespace

namespace {

/// The rows of the policy's decision tables, each citing its statement's line.
struct Rows {
  std::vector<std::string> taskRows, regionRows, layoutRows, limitRows, collectRows, mapRows;
  std::vector<std::string> replicated;
};

Rows decisionRows(const Program &program, const CompileOptions &options, const std::vector<std::string> &placement) {
  Rows rows;
  for (const auto &s : program.stmts) {
    std::string c = "// " + cite(options, s.range);
    if (auto t = s.as<TaskStmt>()) {
      std::string kinds;
      for (const auto &p : t->procs)
        kinds += (kinds.empty() ? "" : ", ") + procName(p.kind);
      rows.taskRows.push_back(fmt::format("        {{{}, {{{}}}, {}}}, {}: Task {}\n", nameList(t->tasks), kinds,
                                          s.range.begin.line, c, t->tasks.spelling()));
    } else if (auto r = s.as<RegionStmt>()) {
      std::string mems;
      for (const auto &m : r->mems)
        mems += (mems.empty() ? "" : ", ") + memName(m.kind);
      rows.regionRows.push_back(fmt::format(
          "        {{{}, {}, {}, {{{}}}, {}}}, {}\n", taskName(r->task), regionSelector(r->region),
          r->proc ? fmt::format("int(ProcKind::{})", toString(r->proc->kind)) : "-1", mems, s.range.begin.line, c));
    } else if (auto l = s.as<LayoutStmt>()) {
      LayoutFlags x = layoutFlags(*l);
      std::string target = l->target == LayoutStmt::Target::Any ? "0, 0"
                           : l->target == LayoutStmt::Target::Memory
                               ? fmt::format("1, int(MemKind::{})", toString(l->mem))
                               : fmt::format("2, int(ProcKind::{})", toString(l->proc));
      rows.layoutRows.push_back(fmt::format("        {{{}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}}}, {}\n",
                                            taskName(l->task), regionSelector(l->region), target, x.soa, x.aos, x.c,
                                            x.f, x.compact, x.exact, x.noAlign, x.align, x.op, x.bytes,
                                            s.range.begin.line, c));
    } else if (auto i = s.as<InstanceLimitStmt>()) {
      rows.limitRows.push_back(fmt::format("        {{{}, {}, {}, {}}}, {}\n", nameList(i->task),
                                           i->proc ? fmt::format("int(ProcKind::{})", toString(i->proc->kind)) : "-1",
                                           i->limit, s.range.begin.line, c));
    } else if (auto m = s.as<CollectMemoryStmt>()) {
      rows.collectRows.push_back(fmt::format("        {{{}, {}, {}}}, {}\n", nameList(m->task),
                                             regionSelector(m->region), s.range.begin.line, c));
    } else if (auto t = s.as<TaskMapStmt>()) {
      int selector = t->tasks.kind == Selector::Kind::Wildcard ? 0 : t->tasks.kind == Selector::Kind::Names ? 1 : 2;
      rows.mapRows.push_back(fmt::format(
          "        {{{}, {}, {}, {}, {}, {}}}, {}: {} {} {}\n", t->single, selector, nameList(t->tasks),
          selector == 2 ? fmt::format("int(ProcKind::{})", toString(t->tasks.proc)) : "-1",
          static_cast<int>(std::find(placement.begin(), placement.end(), t->function.text) - placement.begin()),
          s.range.begin.line, c, t->single ? "SingleTaskMap" : "IndexTaskMap", t->tasks.spelling(), t->function.text));
    } else if (auto r = s.as<ControlReplicateStmt>()) {
      for (const auto &n : r->tasks.names)
        rows.replicated.push_back(fmt::format("{} /* {} */", quoted(n.text), cite(options, s.range)));
    }
  }
  return rows;
}

} // namespace

std::string compileToCpp(const Program &program, const CompileOptions &options) {
  const std::string &cls = options.className;
  Codegen gen(program, options);

  // Placement functions: those named by IndexTaskMap/SingleTaskMap, numbered in order of first use.
  std::vector<std::string> placement;
  for (const auto &s : program.stmts)
    if (auto m = s.as<TaskMapStmt>())
      if (std::find(placement.begin(), placement.end(), m->function.text) == placement.end())
        placement.push_back(m->function.text);

  Rows rows = decisionRows(program, options, placement);
  std::string out;
  out += fmt::format(
      "// {}: a Legion mapper generated by hone from {}.\n"
      "// Do not edit: change the policy and run `hone compile` again.\n"
      "//\n"
      "// Use: call {}() before Legion's Runtime::start() (see hone's docs/LEGION.md).\n"
      "// Build: -std=c++17 -I<legion>/runtime -I<the folder of hone_mapper_support.h>\n"
      "//   -DHONE_USE_LOGGING_WRAPPER=1  wrap the mapper in Legion's LoggingWrapper (-level mapper=2)\n"
      "//   -DHONE_SHARDING_ID_BASE=N     first sharding functor ID (default {})\n"
      "//   -DHONE_POLICY_ONLY            compile only the policy (no Legion), e.g. for tests\n",
      cls, options.sourceName, options.registerFunction, options.shardingIdBase);
  out += fmt::format("#ifndef HONE_USE_LOGGING_WRAPPER\n#define HONE_USE_LOGGING_WRAPPER {}\n#endif\n",
                     options.loggingWrapper ? 1 : 0);
  out += "#ifndef HONE_POLICY_ONLY\n#include \"legion.h\"\n#include \"mappers/default_mapper.h\"\n"
         "#if HONE_USE_LOGGING_WRAPPER\n#include \"mappers/logging_wrapper.h\"\n#define HONE_RT_HAVE_LOGGING_WRAPPER 1\n"
         "#endif\n#define HONE_RT_LEGION 1\n#endif\n#include \"hone_mapper_support.h\"\n\n";
  out += fmt::format("namespace hone_generated_{} {{\nusing namespace hone_rt;\n\n", cls);
  out += fmt::format("// The policy of {}: its decisions as tables (each row cites its line) and its\n"
                     "// functions compiled to C++. Pure C++17: no Legion needed.\nclass Policy {{\npublic:\n",
                     options.sourceName);
  out += "  /// Per-call state of a placement: the policy line running, the call depth.\n"
         "  struct Frame {\n    int line = 0;\n    int depth = 0;\n  };\n\n";
  out += fmt::format("  static const char *file() {{ return {}; }}\n", quoted(options.sourceName));
  out += fmt::format("  static int function_count() {{ return {}; }}\n", placement.size());
  out += "  static const char *function_name(int i) {\n    static const char *const names[] = {";
  for (size_t i = 0; i < placement.size(); ++i)
    out += (i ? ", " : "") + quoted(placement[i]);
  out += placement.empty() ? "\"\"};\n" : "};\n";
  out += "    return i >= 0 && i < function_count() ? names[i] : \"?\";\n  }\n\n";
  out += "  // Task T K1,K2;  {tasks ({} = *), kinds, line}\n" + table("TaskRule", "task_rules", rows.taskRows);
  out += "  // Region T R P M1,M2;  {task (\"\" = *), region name, or argument index, processor (-1 = *), "
         "memories, line}\n" +
         table("RegionRule", "region_rules", rows.regionRows);
  out += "  // Layout T R M C...;  {task, region, index, target (0 *, 1 memory, 2 processor), kind,\n"
         "  //   SOA, AOS, C_order, F_order, Compact, Exact, No_Align, Align, op (== != < <= > >=), bytes, line}\n" +
         table("LayoutRule", "layout_rules", rows.layoutRows);
  out += "  // InstanceLimit T [P] N;  {tasks, processor (-1 = any), limit, line}\n" +
         table("LimitRule", "limit_rules", rows.limitRows);
  out += "  // CollectMemory T R;  {tasks, region, index, line}\n" +
         table("CollectRule", "collect_rules", rows.collectRows);
  out += "  // IndexTaskMap / SingleTaskMap  {single, selector (0 *, 1 names, 2 kind), tasks, kind, function, "
         "line}\n" +
         table("MapRule", "map_rules", rows.mapRows);
  out += "  // ControlReplicate\n  static const std::vector<std::string> &replicated() {\n"
         "    static const std::vector<std::string> tasks = {";
  for (size_t i = 0; i < rows.replicated.size(); ++i)
    out += (i ? ", " : "") + rows.replicated[i];
  out += "};\n    return tasks;\n  }\n\n";

  // Globals, in order, as the runtime runs the top level.
  out += "  /// Runs the policy's top-level statements on machine `m`; throws hone_rt::Fault.\n";
  out += "  explicit Policy(const Machine &m) : m_(m) {\n    Frame fr;\n";
  std::vector<std::string> globals;
  for (const auto &s : program.stmts) {
    if (auto a = s.as<AssignStmt>()) {
      out += fmt::format("    // {}: {} = {};\n", cite(options, s.range), a->target.text, formatExpr(*a->value));
      out += fmt::format("    fr.line = {}; g_{} = {};\n", s.range.begin.line, a->target.text, gen.expr(*a->value));
      if (std::find(globals.begin(), globals.end(), a->target.text) == globals.end())
        globals.push_back(a->target.text);
    } else if (auto p = s.as<PrintStmt>()) {
      out += fmt::format("    fr.line = {}; {}\n", s.range.begin.line, gen.printCall(*p));
    }
  }
  out += "    (void)fr;\n  }\n\n";
  out += "  /// Calls placement function `function` (see function_name).\n"
         "  Value call(Frame &fr, int function, const std::vector<Value> &args) const {\n    switch (function) {\n";
  for (size_t i = 0; i < placement.size(); ++i)
    out += fmt::format("    case {}: return f_{}(fr, args);\n", i, placement[i]);
  out += "    default: fault(\"no placement function \" + std::to_string(function));\n    }\n  }\n\nprivate:\n";
  for (const auto &s : program.stmts)
    if (auto f = s.as<FuncDef>())
      gen.function(out, *f, s.range);
  out += "  Machine m_;\n";
  for (const auto &g : globals)
    out += fmt::format("  Value g_{};\n", g);
  out += "};\n\n";
  out += fmt::format("}} // namespace hone_generated_{}\n\n", cls);

  out += fmt::format("#ifndef HONE_POLICY_ONLY\n#ifndef HONE_SHARDING_ID_BASE\n#define HONE_SHARDING_ID_BASE {}\n"
                     "#endif\n\nnamespace {{\nvoid hone_create_{}(Legion::Machine machine, Legion::Runtime *rt,\n"
                     "                  const std::set<Legion::Processor> &local_procs) {{\n"
                     "  hone_rt::legion_glue::create_mappers<hone_generated_{}::Policy>(\n"
                     "      machine, rt, local_procs, {}, HONE_SHARDING_ID_BASE, HONE_USE_LOGGING_WRAPPER != 0);\n"
                     "}}\n}} // namespace\n\n"
                     "/// Replaces Legion's default mapper with {} on every processor; call\n"
                     "/// before Runtime::start().\nvoid {}() {{ Legion::Runtime::add_registration_callback(hone_create_{}); }}\n"
                     "#endif // HONE_POLICY_ONLY\n",
                     options.shardingIdBase, cls, cls, quoted(cls), cls, options.registerFunction, cls);
  return out;
}

} // namespace hone::legion
