// Semantic checks.
//
// Scoping mirrors how the runtime executes a policy: top-level statements run
// once, in order, so a global or function must be defined above its use there;
// function bodies run later, at mapping time, and see every global of the file
// plus their parameters and the locals assigned above.
#include "dsl/Sema.h"

#include "dsl/Builtins.h"
#include "support/StringUtil.h"

#include <fmt/format.h>

#include <map>
#include <set>

namespace hone::dsl {
namespace {

using support::SourceRange;

struct GlobalSymbol {
  const FuncDef *function = nullptr; // null: a global variable
  SourceRange range;
  size_t order = 0; // index of the defining statement
};

class Sema {
public:
  Sema(const Program &program, support::DiagnosticEngine &diags) : program_(program), diags_(diags) {}

  void run() {
    // Every global defined anywhere in the file, for function bodies and for
    // "defined later" notes.
    for (size_t i = 0; i < program_.stmts.size(); ++i) {
      const auto &s = program_.stmts[i];
      if (auto a = s.as<AssignStmt>(); a && !all_.count(a->target.text))
        all_[a->target.text] = GlobalSymbol{nullptr, a->target.range, i};
      if (auto f = s.as<FuncDef>(); f && !all_.count(f->name.text))
        all_[f->name.text] = GlobalSymbol{f, f->name.range, i};
    }
    for (size_t i = 0; i < program_.stmts.size(); ++i) {
      order_ = i;
      std::visit([&](const auto &n) { visit(n, program_.stmts[i].range); }, program_.stmts[i].node);
    }
  }

private:
  // ---- scopes ---------------------------------------------------------------
  struct Scope {
    bool inFunction = false;
    std::set<std::string> locals;
  };

  const GlobalSymbol *lookupGlobal(const std::string &name, const Scope &scope) const {
    if (scope.inFunction) {
      auto it = all_.find(name);
      return it == all_.end() ? nullptr : &it->second;
    }
    auto it = defined_.find(name);
    return it == defined_.end() ? nullptr : &it->second;
  }

  std::vector<std::string> visibleNames(const Scope &scope) const {
    std::vector<std::string> out(scope.locals.begin(), scope.locals.end());
    for (const auto &[name, sym] : scope.inFunction ? all_ : defined_)
      out.push_back(name);
    out.push_back("Machine");
    return out;
  }

  void reportUndefined(const std::string &name, const SourceRange &range, const Scope &scope, bool asFunction) {
    for (const auto &broken : program_.brokenNames)
      if (broken == name)
        return; // its definition had a syntax error, already reported
    auto b = diags_.error(range, asFunction ? fmt::format("function '{}' not found", name)
                                            : fmt::format("'{}' not found", name));
    auto later = all_.find(name);
    if (!scope.inFunction && later != all_.end()) {
      b.note(later->second.range, fmt::format("'{}' is defined here, after its use; top-level statements run in "
                                              "order, so move the definition above",
                                              name));
      return;
    }
    if (auto s = support::closestMatch(name, visibleNames(scope))) {
      b.note(fmt::format("did you mean '{}'?", *s)).fixIt(range, *s);
    } else if (!asFunction) {
      b.note(fmt::format("define it before using it, e.g. '{} = Machine(GPU);' for a machine space", name));
    }
  }

  // ---- expressions ----------------------------------------------------------
  enum class Ctx { Value, ListItem, IndexItem };

  void checkExpr(const Expr &e, Scope &scope, Ctx ctx = Ctx::Value) {
    switch (e.kind) {
    case ExprKind::Int:
    case ExprKind::Bool:
    case ExprKind::ProcKind:
    case ExprKind::MemKind: return;
    case ExprKind::Star:
      if (ctx != Ctx::IndexItem)
        diags_.error(e.range, "'*' alone means 'any processor' and is only allowed in a machine-space index, as in "
                              "m[node, *]");
      return;
    case ExprKind::Unpack:
      if (ctx == Ctx::Value)
        diags_.error(e.range, "'*' unpacking is only allowed inside a tuple, an index or an argument list");
      checkExpr(*e.operands[0], scope);
      return;
    case ExprKind::Name: checkName(e, scope); return;
    case ExprKind::Unary:
    case ExprKind::Binary:
    case ExprKind::Ternary:
      for (const auto &op : e.operands)
        checkExpr(*op, scope);
      return;
    case ExprKind::Tuple:
      for (const auto &op : e.operands)
        checkExpr(*op, scope, Ctx::ListItem);
      return;
    case ExprKind::Index:
      checkExpr(*e.operands[0], scope);
      for (size_t i = 1; i < e.operands.size(); ++i)
        checkExpr(*e.operands[i], scope, Ctx::IndexItem);
      return;
    case ExprKind::Slice:
      for (const auto &op : e.operands)
        if (op)
          checkExpr(*op, scope);
      return;
    case ExprKind::Property: {
      checkExpr(*e.operands[0], scope);
      auto p = findProperty(e.name);
      if (p && p->arity >= 0)
        diags_.error(e.nameRange, fmt::format("'{}' is a method; call it with {} argument{}, as in {}", e.name,
                                              p->arity, p->arity == 1 ? "" : "s", p->usage));
      return;
    }
    case ExprKind::Call: checkCall(e, scope); return;
    case ExprKind::Comprehension: {
      checkExpr(*e.operands[1], scope);
      Scope inner = scope;
      inner.locals.insert(e.name);
      checkExpr(*e.operands[0], inner);
      return;
    }
    }
  }

  void checkName(const Expr &e, Scope &scope) {
    if (scope.locals.count(e.name))
      return;
    if (e.name == "Machine") {
      diags_.error(e.range, "'Machine' is a built-in function; call it with a processor kind, as in Machine(GPU)");
      return;
    }
    const GlobalSymbol *g = lookupGlobal(e.name, scope);
    if (!g) {
      reportUndefined(e.name, e.range, scope, false);
      return;
    }
    if (g->function)
      diags_.error(e.range, fmt::format("'{}' is a function, not a value; call it with its arguments", e.name))
          .note(g->range, "defined here");
  }

  void checkCall(const Expr &e, Scope &scope) {
    const Expr &callee = *e.operands[0];
    size_t argc = e.operands.size() - 1;
    bool hasUnpack = false;
    for (size_t i = 1; i < e.operands.size(); ++i) {
      checkExpr(*e.operands[i], scope, Ctx::ListItem);
      hasUnpack |= e.operands[i]->kind == ExprKind::Unpack;
    }
    if (callee.kind == ExprKind::Name) {
      if (callee.name == "Machine") {
        if (argc != 1 || e.operands[1]->kind != ExprKind::ProcKind)
          diags_.error(e.range, "Machine takes one processor kind, as in Machine(GPU)");
        return;
      }
      if (scope.locals.count(callee.name)) {
        diags_.error(callee.range, fmt::format("'{}' is a local value, not a function", callee.name));
        return;
      }
      const GlobalSymbol *g = lookupGlobal(callee.name, scope);
      if (!g) {
        reportUndefined(callee.name, callee.range, scope, true);
        return;
      }
      if (!g->function) {
        diags_.error(callee.range, fmt::format("'{}' is not a function", callee.name)).note(g->range, "defined here");
        return;
      }
      size_t want = g->function->params.size();
      if (!hasUnpack && argc != want)
        diags_
            .error(e.range, fmt::format("function '{}' takes {} argument{}, but {} {} given", callee.name, want,
                                        want == 1 ? "" : "s", argc, argc == 1 ? "was" : "were"))
            .note(g->range, "defined here");
      return;
    }
    if (callee.kind == ExprKind::Property) {
      checkExpr(*callee.operands[0], scope);
      auto p = findProperty(callee.name);
      if (!p)
        return; // unknown property: reported by the parser
      if (p->arity < 0) {
        diags_.error(e.range, fmt::format("'{}' is a property, not a method; remove the parentheses", callee.name));
        return;
      }
      if (!hasUnpack && static_cast<int>(argc) != p->arity)
        diags_.error(e.range, fmt::format("'{}' takes {} argument{}, but {} {} given; usage: {}", callee.name,
                                          p->arity, p->arity == 1 ? "" : "s", argc, argc == 1 ? "was" : "were",
                                          p->usage));
      return;
    }
    checkExpr(callee, scope);
    diags_.error(callee.range, "only functions and methods can be called");
  }

  void checkPrint(const PrintStmt &p, Scope &scope) {
    size_t placeholders = 0;
    for (size_t pos = p.format.find("{}"); pos != std::string::npos; pos = p.format.find("{}", pos + 2))
      ++placeholders;
    if (placeholders != p.args.size())
      diags_.error(p.formatRange, fmt::format("print has {} '{{}}' placeholder{} but {} argument{}", placeholders,
                                              placeholders == 1 ? "" : "s", p.args.size(),
                                              p.args.size() == 1 ? "" : "s"));
    for (const auto &a : p.args)
      checkExpr(*a, scope);
  }

  // ---- duplicates -----------------------------------------------------------
  // Two statements with the same key: identical ones are redundant, different
  // ones conflict and the first one wins (as in the reference implementation).
  void noteDuplicate(std::map<std::string, std::pair<std::string, SourceRange>> &seen, const std::string &what,
                     const std::string &key, const std::string &value, const SourceRange &range) {
    auto [it, fresh] = seen.try_emplace(key, value, range);
    if (fresh)
      return;
    if (it->second.first == value)
      diags_.warning(range, fmt::format("duplicate {} statement for {}", what, key))
          .note(it->second.second, "the same statement is here");
    else
      diags_.warning(range, fmt::format("conflicting {} statements for {}; this later one has no effect (the "
                                        "first one wins, as in the reference implementation, DSLMapper)",
                                        what, key))
          .note(it->second.second, "the statement that applies is here");
  }

  static std::vector<std::string> keysOf(const Selector &s) {
    if (s.kind != Selector::Kind::Names)
      return {s.spelling()};
    std::vector<std::string> keys;
    for (const auto &n : s.names)
      keys.push_back("'" + n.text + "'");
    return keys;
  }

  // ---- statements -----------------------------------------------------------
  void visit(const TaskStmt &s, const SourceRange &r) {
    std::string list;
    std::set<ProcKind> seen;
    for (const auto &p : s.procs) {
      list += std::string(toString(p.kind)) + ",";
      if (!seen.insert(p.kind).second)
        diags_.warning(p.range, fmt::format("'{}' is listed twice; the second has no effect", toString(p.kind)));
    }
    for (const auto &k : keysOf(s.tasks))
      noteDuplicate(taskSeen_, "Task", k, list, r);
  }

  void visit(const RegionStmt &s, const SourceRange &r) {
    std::string list;
    std::set<MemKind> seen;
    for (const auto &m : s.mems) {
      list += std::string(toString(m.kind)) + ",";
      if (!seen.insert(m.kind).second)
        diags_.warning(m.range, fmt::format("'{}' is listed twice; the second has no effect", toString(m.kind)));
    }
    std::string key = fmt::format("task {}, region {}, processor {}", s.task.spelling(), s.region.spelling(),
                                  s.proc ? std::string(toString(s.proc->kind)) : "*");
    noteDuplicate(regionSeen_, "Region", key, list, r);
  }

  void visit(const LayoutStmt &s, const SourceRange &r) {
    const LayoutConstraint *order = nullptr, *fields = nullptr, *align = nullptr;
    std::string list;
    for (const auto &c : s.constraints) {
      list += c.spelling() + " ";
      const LayoutConstraint **slot = nullptr;
      switch (c.kind) {
      case LayoutConstraint::Kind::COrder:
      case LayoutConstraint::Kind::FOrder: slot = &order; break;
      case LayoutConstraint::Kind::SOA:
      case LayoutConstraint::Kind::AOS: slot = &fields; break;
      case LayoutConstraint::Kind::Align:
      case LayoutConstraint::Kind::NoAlign: slot = &align; break;
      default: break;
      }
      if (!slot)
        continue;
      if (*slot && (*slot)->spelling() != c.spelling())
        diags_.warning(c.range, fmt::format("'{}' conflicts with '{}' in the same Layout; the later one wins",
                                            c.spelling(), (*slot)->spelling()))
            .note((*slot)->range, "the earlier constraint is here");
      *slot = &c;
    }
    std::string target = s.target == LayoutStmt::Target::Any      ? "*"
                         : s.target == LayoutStmt::Target::Memory ? std::string(toString(s.mem))
                                                                  : std::string(toString(s.proc));
    noteDuplicate(layoutSeen_, "Layout",
                  fmt::format("task {}, region {}, {}", s.task.spelling(), s.region.spelling(), target), list, r);
  }

  void visit(const InstanceLimitStmt &s, const SourceRange &r) {
    for (const auto &k : keysOf(s.task))
      noteDuplicate(limitSeen_, "InstanceLimit", k + (s.proc ? " on " + std::string(toString(s.proc->kind)) : ""),
                    std::to_string(s.limit), r);
  }

  void visit(const CollectMemoryStmt &s, const SourceRange &r) {
    for (const auto &k : keysOf(s.task))
      noteDuplicate(collectSeen_, "CollectMemory", fmt::format("task {}, region {}", k, s.region.spelling()), "", r);
  }

  void visit(const TaskMapStmt &s, const SourceRange &r) {
    const char *what = s.single ? "SingleTaskMap" : "IndexTaskMap";
    Scope top;
    auto it = defined_.find(s.function.text);
    bool broken = false;
    for (const auto &n : program_.brokenNames)
      broken |= n == s.function.text;
    if (it == defined_.end() && broken) {
      // the function's definition had a syntax error, already reported
    } else if (it == defined_.end()) {
      auto b = diags_.error(s.function.range,
                            fmt::format("{}'s function undefined: '{}' is not defined before this statement", what,
                                        s.function.text));
      auto later = all_.find(s.function.text);
      if (later != all_.end() && later->second.function)
        b.note(later->second.range, "it is defined here, later; define the function before the statement that uses it");
      else if (auto m = support::closestMatch(s.function.text, functionNames()))
        b.note(fmt::format("did you mean '{}'?", *m)).fixIt(s.function.range, *m);
    } else if (!it->second.function) {
      diags_.error(s.function.range, fmt::format("{}'s mapping function is undefined: '{}' is a value, not a function",
                                                 what, s.function.text))
          .note(it->second.range, "defined here");
    } else {
      const FuncDef &f = *it->second.function;
      if (f.params.size() != 1 || f.params[0].type != ParamType::Task)
        diags_.error(s.function.range,
                     fmt::format("placement function '{}' must take exactly one Task parameter, as in 'def {}(Task "
                                 "task)'",
                                 f.name.text, f.name.text))
            .note(f.name.range, "defined here");
    }
    for (const auto &k : keysOf(s.tasks))
      noteDuplicate(s.single ? singleSeen_ : indexSeen_, what, k, s.function.text, r);
  }

  void visit(const ControlReplicateStmt &s, const SourceRange &r) {
    for (const auto &k : keysOf(s.tasks))
      noteDuplicate(replicateSeen_, "ControlReplicate", k, "", r);
  }

  void visit(const AssignStmt &s, const SourceRange &) {
    Scope top;
    checkExpr(*s.value, top);
    defineGlobal(s.target, nullptr);
  }

  void visit(const PrintStmt &s, const SourceRange &) {
    Scope top;
    checkPrint(s, top);
  }

  void visit(const ReturnStmt &, const SourceRange &) {} // rejected by the parser at top level

  void visit(const FuncDef &f, const SourceRange &) {
    Scope scope;
    scope.inFunction = true;
    for (const auto &p : f.params) {
      if (!scope.locals.insert(p.name.text).second)
        diags_.error(p.name.range, fmt::format("duplicate parameter '{}'", p.name.text));
    }
    bool returned = false;
    bool warnedUnreachable = false;
    std::map<std::string, SourceRange> assigned; // locals, where first assigned
    for (const auto &b : f.body) {
      if (returned && !warnedUnreachable) {
        diags_.warning(b.range, "statement after 'return' is never executed");
        warnedUnreachable = true;
      }
      if (auto a = b.as<AssignStmt>()) {
        checkExpr(*a->value, scope);
        if (a->target.text == "Machine")
          diags_.error(a->target.range, "cannot assign to the built-in 'Machine'");
        if (auto first = assigned.find(a->target.text); first != assigned.end())
          // The reference implementation (DSLMapper) keeps a local's first value; hone, the later one.
          diags_.warning(a->target.range,
                         fmt::format("'{}' is assigned again in '{}': hone uses this value below, the reference "
                                     "implementation keeps the first; use a new name",
                                     a->target.text, f.name.text))
              .note(first->second, "first assigned here");
        else
          assigned.emplace(a->target.text, a->target.range);
        scope.locals.insert(a->target.text);
      } else if (auto r = b.as<ReturnStmt>()) {
        checkExpr(*r->value, scope);
        returned = true;
      } else if (auto p = b.as<PrintStmt>()) {
        checkPrint(*p, scope);
      }
    }
    if (!returned && !f.incomplete)
      diags_.error(f.name.range, fmt::format("function '{}' has no return statement", f.name.text))
          .note("a function must end with 'return <expr>;'");
    defineGlobal(f.name, &f);
  }

  void defineGlobal(const Ident &name, const FuncDef *function) {
    if (name.text == "Machine") {
      diags_.error(name.range, "cannot redefine the built-in 'Machine'");
      return;
    }
    auto it = defined_.find(name.text);
    if (it != defined_.end()) {
      if (function || it->second.function)
        diags_.error(name.range, fmt::format("redefinition of '{}'", name.text))
            .note(it->second.range, "previous definition is here");
      else
        diags_.warning(name.range, fmt::format("'{}' is assigned again; statements below see the new value",
                                               name.text))
            .note(it->second.range, "first assigned here");
    }
    defined_[name.text] = GlobalSymbol{function, name.range, order_};
  }

  std::vector<std::string> functionNames() const {
    std::vector<std::string> out;
    for (const auto &[name, sym] : all_)
      if (sym.function)
        out.push_back(name);
    return out;
  }

  const Program &program_;
  support::DiagnosticEngine &diags_;
  std::map<std::string, GlobalSymbol> all_;
  std::map<std::string, GlobalSymbol> defined_;
  size_t order_ = 0;
  std::map<std::string, std::pair<std::string, SourceRange>> taskSeen_, regionSeen_, layoutSeen_, limitSeen_,
      collectSeen_, indexSeen_, singleSeen_, replicateSeen_;
};

} // namespace

void check(const Program &program, support::DiagnosticEngine &diags) { Sema(program, diags).run(); }

} // namespace hone::dsl
