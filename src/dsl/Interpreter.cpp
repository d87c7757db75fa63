// Interpreter implementation.
//
// Reader's map: Evaluator::eval dispatches on the expression kind; binary
// arithmetic (with tuple broadcasting) is in arith(); indexing of tuples and
// machine spaces in index(); properties and methods in property() and
// method(). A fault throws the internal Fault, which the public entry points
// turn into an Expected error carrying the expression's location.
#include "dsl/Interpreter.h"

#include "dsl/Policy.h"

#include <fmt/format.h>

#include <ostream>

namespace hone::dsl {

using support::Error;
using support::Expected;

// ---- values -------------------------------------------------------------------

std::string Value::typeName() const {
  switch (v.index()) {
  case 0: return "int";
  case 1: return "bool";
  case 2: return "tuple";
  case 3: return "machine space";
  case 4: return "task";
  case 5: return "processor kind";
  case 6: return "memory kind";
  case 7: return "'*'";
  case 8: return "processor";
  case 9: return "processor set";
  }
  return "value";
}

namespace {
std::string pointStr(const Point2 &p) { return fmt::format("({}, {})", p[0], p[1]); }
} // namespace

std::string Value::str() const {
  if (auto i = as<int64_t>())
    return std::to_string(*i);
  if (auto b = as<bool>())
    return *b ? "True" : "False";
  if (auto t = as<TupleValue>()) {
    std::string out = "(";
    for (size_t i = 0; i < t->items.size(); ++i)
      out += (i ? ", " : "") + t->items[i].str();
    return out + (t->items.size() == 1 ? ",)" : ")");
  }
  if (auto s = as<MachineSpace::Ptr>())
    return (*s)->describe();
  if (auto t = as<TaskRef>())
    return fmt::format("Task({})", (*t)->name);
  if (auto k = as<ProcKind>())
    return std::string(toString(*k));
  if (auto m = as<MemKind>())
    return std::string(toString(*m));
  if (as<StarValue>())
    return "*";
  if (auto p = as<PointValue>())
    return pointStr(p->point);
  if (auto ps = as<PointSetValue>()) {
    std::string out = "{";
    for (size_t i = 0; i < ps->points.size(); ++i)
      out += (i ? ", " : "") + pointStr(ps->points[i]);
    return out + "}";
  }
  return "?";
}

std::string Placement::str() const {
  if (!isSet && points.size() == 1)
    return pointStr(points[0]);
  std::string out = "{";
  for (size_t i = 0; i < points.size(); ++i)
    out += (i ? ", " : "") + pointStr(points[i]);
  return out + "}";
}

namespace {

struct Fault {
  SourceRange range;
  std::string message;
};

[[noreturn]] void fault(const SourceRange &range, std::string message) { throw Fault{range, std::move(message)}; }

Error toError(const Fault &f) {
  return Error{f.message, static_cast<int>(f.range.begin.line), static_cast<int>(f.range.begin.column)};
}

Value makeInt(int64_t i) { return Value{i}; }
Value makeTuple(std::vector<Value> items) { return Value{TupleValue{std::move(items)}}; }
Value makeIntTuple(const std::vector<int64_t> &ints) {
  std::vector<Value> items;
  items.reserve(ints.size());
  for (auto i : ints)
    items.push_back(makeInt(i));
  return makeTuple(std::move(items));
}

bool equalValues(const Value &a, const Value &b) {
  if (a.v.index() != b.v.index())
    return false;
  if (auto i = a.as<int64_t>())
    return *i == *b.as<int64_t>();
  if (auto x = a.as<bool>())
    return *x == *b.as<bool>();
  if (auto t = a.as<TupleValue>()) {
    const auto &u = *b.as<TupleValue>();
    if (t->items.size() != u.items.size())
      return false;
    for (size_t i = 0; i < t->items.size(); ++i)
      if (!equalValues(t->items[i], u.items[i]))
        return false;
    return true;
  }
  if (auto k = a.as<ProcKind>())
    return *k == *b.as<ProcKind>();
  if (auto m = a.as<MemKind>())
    return *m == *b.as<MemKind>();
  if (auto p = a.as<PointValue>())
    return p->kind == b.as<PointValue>()->kind && p->point == b.as<PointValue>()->point;
  if (auto s = a.as<MachineSpace::Ptr>())
    return *s == *b.as<MachineSpace::Ptr>();
  return false;
}

constexpr int kMaxCallDepth = 64;
constexpr size_t kMaxSetPoints = 1 << 16;
// A policy is a few lines of arithmetic: these bound what a hostile or runaway one can cost
// (docs/DEVELOPING.md lists hone's limits). Work is counted per call into the interpreter
// (the globals, or one placement): expressions evaluated plus tuple items copied.
constexpr size_t kMaxTupleItems = 1 << 16;
constexpr size_t kMaxWork = 1'000'000;

} // namespace

class Interpreter::Evaluator {
public:
  using Locals = std::map<std::string, Value>;

  explicit Evaluator(Interpreter &in) : in_(in) {}

  Value callFunction(const FuncDef &f, std::vector<Value> args, const SourceRange &site) {
    if (args.size() != f.params.size())
      fault(site, fmt::format("function '{}' takes {} argument{}, but {} {} given", f.name.text, f.params.size(),
                              f.params.size() == 1 ? "" : "s", args.size(), args.size() == 1 ? "was" : "were"));
    if (depth_ >= kMaxCallDepth)
      fault(site, fmt::format("calls nested deeper than {} (is '{}' recursive?)", kMaxCallDepth, f.name.text));
    Locals locals;
    for (size_t i = 0; i < args.size(); ++i) {
      checkParam(f, i, args[i], site);
      locals[f.params[i].name.text] = std::move(args[i]);
    }
    ++depth_;
    struct Guard {
      int &d;
      ~Guard() { --d; }
    } guard{depth_};
    for (const auto &s : f.body) {
      if (auto a = s.as<AssignStmt>()) {
        locals[a->target.text] = eval(*a->value, &locals);
      } else if (auto p = s.as<PrintStmt>()) {
        print(*p, &locals);
      } else if (auto r = s.as<ReturnStmt>()) {
        return eval(*r->value, &locals);
      }
    }
    fault(f.name.range, fmt::format("function '{}' ended without returning a value", f.name.text));
  }

  void print(const PrintStmt &p, Locals *locals) {
    std::string out;
    size_t arg = 0, pos = 0;
    while (true) {
      size_t next = p.format.find("{}", pos);
      if (next == std::string::npos) {
        out += p.format.substr(pos);
        break;
      }
      out += p.format.substr(pos, next - pos);
      if (arg >= p.args.size())
        fault(p.formatRange, "Not enough arguments for print()");
      out += eval(*p.args[arg++], locals).str();
      pos = next + 2;
    }
    if (in_.printSink_)
      *in_.printSink_ << out << '\n';
  }

  Value eval(const Expr &e, Locals *locals) {
    spend(1, e.range);
    switch (e.kind) {
    case ExprKind::Int: return makeInt(e.intValue);
    case ExprKind::Bool: return Value{e.boolValue};
    case ExprKind::ProcKind: return Value{e.proc};
    case ExprKind::MemKind: return Value{e.mem};
    case ExprKind::Star: fault(e.range, "'*' alone is only allowed in a machine-space index");
    case ExprKind::Unpack: fault(e.range, "'*' unpacking is only allowed inside a tuple, an index or a call");
    case ExprKind::Name: return lookup(e, locals);
    case ExprKind::Unary: return unary(e, locals);
    case ExprKind::Binary: return binary(e, locals);
    case ExprKind::Ternary: {
      Value c = eval(*e.operands[0], locals);
      auto b = c.as<bool>();
      if (!b)
        fault(e.operands[0]->range, fmt::format("the condition of '?:' must be a bool, not {}", c.typeName()));
      return eval(*e.operands[*b ? 1 : 2], locals);
    }
    case ExprKind::Tuple: return makeTuple(items(e.operands, 0, locals, false));
    case ExprKind::Call: return call(e, locals);
    case ExprKind::Index: return index(e, locals);
    case ExprKind::Slice: return slice(e, locals);
    case ExprKind::Property: return property(e, eval(*e.operands[0], locals));
    case ExprKind::Comprehension: {
      Value range = eval(*e.operands[1], locals);
      auto t = range.as<TupleValue>();
      if (!t)
        fault(e.operands[1]->range, fmt::format("tuple(... for {} in X) needs a tuple X, not {}", e.name,
                                                range.typeName()));
      std::vector<Value> out;
      spend(t->items.size() * (1 + (locals ? locals->size() : 0)), e.range);
      for (const auto &item : t->items) {
        Locals inner = locals ? *locals : Locals{};
        inner[e.name] = item;
        out.push_back(eval(*e.operands[0], &inner));
      }
      return makeTuple(std::move(out));
    }
    }
    fault(e.range, "unsupported expression");
  }

private:
  void spend(size_t units, const SourceRange &where) {
    work_ += units;
    if (work_ > kMaxWork)
      fault(where, fmt::format("the policy did more than {} steps of work here (a runaway computation?)", kMaxWork));
  }

  void checkParam(const FuncDef &f, size_t i, const Value &v, const SourceRange &site) {
    const Param &p = f.params[i];
    bool ok = false;
    switch (p.type) {
    case ParamType::Int: ok = v.as<int64_t>() != nullptr; break;
    case ParamType::Bool: ok = v.as<bool>() != nullptr; break;
    case ParamType::IPoint:
    case ParamType::ISpace: {
      auto t = v.as<TupleValue>();
      ok = t != nullptr;
      if (t)
        for (const auto &x : t->items)
          ok = ok && x.as<int64_t>();
      break;
    }
    case ParamType::MSpace: ok = v.as<MachineSpace::Ptr>() != nullptr; break;
    case ParamType::Task: ok = v.as<TaskRef>() != nullptr; break;
    }
    if (!ok)
      fault(site, fmt::format("argument {} of '{}' ('{}') must be {} {}, not {} {}", i + 1, f.name.text, p.name.text,
                              p.type == ParamType::Int ? "an" : "a", toString(p.type), v.typeName(), v.str()));
  }

  Value lookup(const Expr &e, Locals *locals) {
    if (locals) {
      auto it = locals->find(e.name);
      if (it != locals->end())
        return it->second;
    }
    auto g = in_.globals_.find(e.name);
    if (g != in_.globals_.end())
      return g->second;
    if (in_.functions_.count(e.name))
      fault(e.range, fmt::format("'{}' is a function, not a value", e.name));
    fault(e.range, fmt::format("{} not found", e.name));
  }

  int64_t asInt(const Value &v, const SourceRange &r, std::string_view what) {
    auto i = v.as<int64_t>();
    if (!i)
      fault(r, fmt::format("{} must be an int, not {} {}", what, v.typeName(), v.str()));
    return *i;
  }

  std::vector<int64_t> asIntTuple(const Value &v, const SourceRange &r, std::string_view what) {
    auto t = v.as<TupleValue>();
    if (!t)
      fault(r, fmt::format("{} must be a tuple of ints, not {} {}", what, v.typeName(), v.str()));
    std::vector<int64_t> out;
    for (const auto &x : t->items) {
      auto i = x.as<int64_t>();
      if (!i)
        fault(r, fmt::format("{} must be a tuple of ints; it holds {} {}", what, x.typeName(), x.str()));
      out.push_back(*i);
    }
    return out;
  }

  // Items of a tuple, index or argument list: '*t' spreads t; '*' alone is
  // kept (as StarValue) only where allowed.
  std::vector<Value> items(const std::vector<ExprPtr> &ops, size_t from, Locals *locals, bool allowStar) {
    std::vector<Value> out;
    for (size_t i = from; i < ops.size(); ++i) {
      const Expr &e = *ops[i];
      if (e.kind == ExprKind::Star) {
        if (!allowStar)
          fault(e.range, "'*' alone is only allowed in a machine-space index");
        out.push_back(Value{StarValue{}});
      } else if (e.kind == ExprKind::Unpack) {
        Value v = eval(*e.operands[0], locals);
        auto t = v.as<TupleValue>();
        if (!t)
          fault(e.range, fmt::format("'*' can only unpack a tuple, not {} {}", v.typeName(), v.str()));
        if (out.size() + t->items.size() > kMaxTupleItems)
          fault(e.range, fmt::format("a tuple of more than {} items", kMaxTupleItems));
        spend(t->items.size(), e.range);
        out.insert(out.end(), t->items.begin(), t->items.end());
      } else {
        out.push_back(eval(e, locals));
      }
    }
    return out;
  }

  Value unary(const Expr &e, Locals *locals) {
    Value v = eval(*e.operands[0], locals);
    if (e.unaryOp == UnaryOp::Not) {
      auto b = v.as<bool>();
      if (!b)
        fault(e.range, fmt::format("'!' needs a bool, not {}", v.typeName()));
      return Value{!*b};
    }
    if (auto i = v.as<int64_t>()) {
      if (*i == INT64_MIN)
        fault(e.range, "integer overflow");
      return makeInt(-*i);
    }
    if (v.as<TupleValue>()) {
      std::vector<int64_t> out;
      for (auto x : asIntTuple(v, e.range, "the operand of '-'"))
        out.push_back(-x);
      return makeIntTuple(out);
    }
    fault(e.range, fmt::format("'-' needs an int or a tuple of ints, not {}", v.typeName()));
  }

  int64_t intOp(BinaryOp op, int64_t a, int64_t b, const SourceRange &r) {
    int64_t out = 0;
    switch (op) {
    case BinaryOp::Add:
      if (__builtin_add_overflow(a, b, &out))
        fault(r, "integer overflow");
      return out;
    case BinaryOp::Sub:
      if (__builtin_sub_overflow(a, b, &out))
        fault(r, "integer overflow");
      return out;
    case BinaryOp::Mul:
      if (__builtin_mul_overflow(a, b, &out))
        fault(r, "integer overflow");
      return out;
    case BinaryOp::Div:
      if (b == 0)
        fault(r, fmt::format("division by zero ({} / 0)", a));
      if (a == INT64_MIN && b == -1)
        fault(r, "integer overflow");
      return a / b; // truncates toward zero, as the runtime's C++ does
    case BinaryOp::Mod:
      if (b == 0)
        fault(r, fmt::format("modulo by zero ({} % 0)", a));
      if (b == -1)
        return 0;
      return a % b;
    default: HONE_UNREACHABLE("intOp on a non-arithmetic operator");
    }
  }

  // A chain `a op b op c ...` (one precedence) folds left to right in a loop: its length costs no
  // stack. `&&` and `||` stop at the first operand that decides.
  Value binary(const Expr &e, Locals *locals) {
    BinaryOp first = e.binaryOps.front();
    if (first == BinaryOp::And || first == BinaryOp::Or) { // '&&' and '||' differ in precedence: one kind a chain
      bool decides = first == BinaryOp::Or; // the value that ends the chain
      for (size_t i = 0; i < e.operands.size(); ++i) {
        Value v = eval(*e.operands[i], locals);
        auto b = v.as<bool>();
        if (!b)
          fault(e.operands[i]->range, fmt::format("'{}' needs bools, not {}", toString(first), v.typeName()));
        if (*b == decides || i + 1 == e.operands.size())
          return Value{*b};
      }
    }
    Value acc = eval(*e.operands[0], locals);
    for (size_t i = 1; i < e.operands.size(); ++i) {
      if (i > 1)
        spend(1, e.range);
      SourceRange whole{e.range.begin, e.operands[i]->range.end};
      SourceRange left{e.range.begin, e.operands[i - 1]->range.end};
      acc = apply(e.binaryOps[i - 1], acc, eval(*e.operands[i], locals), whole, left, e.operands[i]->range);
    }
    return acc;
  }

  // One operator on two values; `whole`, `left` and `right` locate the step and its operands.
  Value apply(BinaryOp op, const Value &a, const Value &b, SourceRange whole, SourceRange left, SourceRange right) {
    if (op == BinaryOp::Eq || op == BinaryOp::Ne) {
      if (a.v.index() != b.v.index())
        fault(whole, fmt::format("cannot compare {} with {}", a.typeName(), b.typeName()));
      bool eq = equalValues(a, b);
      return Value{op == BinaryOp::Eq ? eq : !eq};
    }
    if (op == BinaryOp::Lt || op == BinaryOp::Gt || op == BinaryOp::Le || op == BinaryOp::Ge) {
      auto x = a.as<int64_t>();
      auto y = b.as<int64_t>();
      if (!x || !y)
        fault(whole, fmt::format("'{}' compares ints, not {} and {}", toString(op), a.typeName(), b.typeName()));
      switch (op) {
      case BinaryOp::Lt: return Value{*x < *y};
      case BinaryOp::Gt: return Value{*x > *y};
      case BinaryOp::Le: return Value{*x <= *y};
      default: return Value{*x >= *y};
      }
    }
    // Arithmetic: int op int, tuple op tuple (same length), tuple op int, int op tuple.
    auto x = a.as<int64_t>();
    auto y = b.as<int64_t>();
    if (x && y)
      return makeInt(intOp(op, *x, *y, whole));
    bool at = a.as<TupleValue>() != nullptr, bt = b.as<TupleValue>() != nullptr;
    if ((at || x) && (bt || y)) {
      std::vector<int64_t> l = at ? asIntTuple(a, left, "a tuple in arithmetic") : std::vector<int64_t>{};
      std::vector<int64_t> r = bt ? asIntTuple(b, right, "a tuple in arithmetic") : std::vector<int64_t>{};
      if (at && bt && l.size() != r.size())
        fault(whole, fmt::format("tuples of different lengths ({} and {}) in '{}'", l.size(), r.size(),
                                 toString(op)));
      size_t n = at ? l.size() : r.size();
      std::vector<int64_t> out;
      for (size_t i = 0; i < n; ++i)
        out.push_back(intOp(op, at ? l[i] : *x, bt ? r[i] : *y, whole));
      return makeIntTuple(out);
    }
    fault(whole, fmt::format("'{}' needs ints or tuples of ints, not {} and {}", toString(op), a.typeName(),
                             b.typeName()));
  }

  static int64_t normalizeIndex(int64_t i, size_t n) { return i < 0 ? static_cast<int64_t>(n) + i : i; }

  Value index(const Expr &e, Locals *locals) {
    Value base = eval(*e.operands[0], locals);
    if (auto space = base.as<MachineSpace::Ptr>()) {
      std::vector<Value> coords = items(e.operands, 1, locals, true);
      return indexSpace(*space, coords, e);
    }
    if (auto t = base.as<TupleValue>()) {
      std::vector<Value> idx = items(e.operands, 1, locals, false);
      if (idx.size() != 1)
        fault(e.range, fmt::format("a tuple is indexed with one int, not {}", idx.size()));
      int64_t i = asInt(idx[0], e.operands[1]->range, "a tuple index");
      int64_t n = normalizeIndex(i, t->items.size());
      if (n < 0 || n >= static_cast<int64_t>(t->items.size()))
        fault(e.range, fmt::format("index {} is out of range for a tuple of length {}", i, t->items.size()));
      return t->items[static_cast<size_t>(n)];
    }
    fault(e.operands[0]->range, fmt::format("only tuples and machine spaces can be indexed, not {} {}",
                                            base.typeName(), base.str()));
  }

  Value indexSpace(const MachineSpace::Ptr &space, const std::vector<Value> &coords, const Expr &e) {
    std::vector<int64_t> point;
    std::vector<size_t> stars;
    for (size_t i = 0; i < coords.size(); ++i) {
      if (coords[i].as<StarValue>()) {
        stars.push_back(i);
        point.push_back(0);
      } else {
        point.push_back(asInt(coords[i], e.range, "a machine-space coordinate"));
      }
    }
    if (point.size() != space->dims().size())
      fault(e.range, fmt::format("{} is {}-dimensional but was indexed with {} coordinate{}", space->describe(),
                                 space->dims().size(), point.size(), point.size() == 1 ? "" : "s"));
    if (stars.empty()) {
      auto r = space->toRoot(point);
      if (!r)
        fault(e.range, r.error().message);
      return Value{PointValue{space->kind(), *r}};
    }
    // Enumerate every value of the '*' coordinates, first star slowest.
    size_t total = 1;
    for (auto s : stars) {
      total *= static_cast<size_t>(std::max<int64_t>(space->dims()[s], 0));
      if (total > kMaxSetPoints)
        fault(e.range, "'*' selects too many processors");
    }
    PointSetValue set{space->kind(), {}};
    for (size_t n = 0; n < total; ++n) {
      size_t rest = n;
      for (auto it = stars.rbegin(); it != stars.rend(); ++it) {
        auto extent = static_cast<size_t>(space->dims()[*it]);
        point[*it] = static_cast<int64_t>(rest % extent);
        rest /= extent;
      }
      auto r = space->toRoot(point);
      if (!r)
        fault(e.range, r.error().message);
      set.points.push_back(*r);
    }
    return Value{set};
  }

  // t[a:b]: as the runtime does, a missing or zero high bound means "to the
  // end", negative bounds count from the end, and a high bound past the end
  // is an error.
  Value slice(const Expr &e, Locals *locals) {
    Value base = eval(*e.operands[0], locals);
    std::vector<Value> src;
    if (auto t = base.as<TupleValue>())
      src = t->items;
    else if (auto s = base.as<MachineSpace::Ptr>())
      src = makeIntTuple((*s)->dims()).as<TupleValue>()->items;
    else
      fault(e.operands[0]->range, fmt::format("only tuples and machine spaces can be sliced, not {}",
                                              base.typeName()));
    int64_t n = static_cast<int64_t>(src.size());
    int64_t lo = e.operands[1] ? asInt(eval(*e.operands[1], locals), e.operands[1]->range, "a slice bound") : 0;
    int64_t hi = e.operands[2] ? asInt(eval(*e.operands[2], locals), e.operands[2]->range, "a slice bound") : 0;
    if (hi > n)
      fault(e.range, fmt::format("slice's right index {} is out of bound for length {}", hi, n));
    lo = lo < 0 ? n + lo : lo;
    hi = hi <= 0 ? n + hi : hi;
    if (lo < 0 || lo > n || hi < 0)
      fault(e.range, fmt::format("slice bounds are out of range for length {}", n));
    std::vector<Value> out;
    for (int64_t i = lo; i < hi; ++i)
      out.push_back(src[static_cast<size_t>(i)]);
    return makeTuple(std::move(out));
  }

  Value property(const Expr &e, const Value &base) {
    const std::string &p = e.name;
    if (auto t = base.as<TupleValue>()) {
      if (p == "size")
        return base;
      if (p == "len")
        return makeInt(static_cast<int64_t>(t->items.size()));
      if (p == "volume") {
        int64_t v = 1;
        for (auto x : asIntTuple(base, e.range, "the tuple"))
          v = intOp(BinaryOp::Mul, v, x, e.range);
        return makeInt(v);
      }
    } else if (auto s = base.as<MachineSpace::Ptr>()) {
      if (p == "size")
        return makeIntTuple((*s)->dims());
      if (p == "len")
        return makeInt(static_cast<int64_t>((*s)->dims().size()));
      if (p == "volume")
        return makeInt((*s)->volume());
    } else if (auto task = base.as<TaskRef>()) {
      const TaskInfo &ti = **task;
      if (p == "ipoint" || p == "ispace") {
        if (!ti.indexLaunch)
          fault(e.range, fmt::format("task.{} is only defined for index launches; '{}' is a single task", p, ti.name));
        return makeIntTuple(p == "ipoint" ? ti.ipoint : ti.ispace);
      }
      if (p == "parent") {
        if (ti.indexLaunch)
          fault(e.range, "task.parent is only available to single tasks (SingleTaskMap), not to index launches");
        if (!ti.parent)
          fault(e.range, fmt::format("task '{}' has no parent task here", ti.name));
        return Value{ti.parent};
      }
    }
    fault(e.nameRange, fmt::format("{} has no property '{}'", base.typeName(), p));
  }

  Value call(const Expr &e, Locals *locals) {
    const Expr &callee = *e.operands[0];
    if (callee.kind == ExprKind::Name) {
      if (callee.name == "Machine") {
        std::vector<Value> args = items(e.operands, 1, locals, false);
        if (args.size() != 1 || !args[0].as<ProcKind>())
          fault(e.range, "Machine takes one processor kind, as in Machine(GPU)");
        ProcKind k = *args[0].as<ProcKind>();
        return Value{MachineSpace::root(k, in_.machine_.nodes, in_.machine_.count(k))};
      }
      auto f = in_.functions_.find(callee.name);
      if (f == in_.functions_.end()) {
        if ((locals && locals->count(callee.name)) || in_.globals_.count(callee.name))
          fault(callee.range, fmt::format("'{}' is not a function", callee.name));
        fault(callee.range, fmt::format("function {} not found", callee.name));
      }
      return callFunction(*f->second, items(e.operands, 1, locals, false), e.range);
    }
    if (callee.kind == ExprKind::Property)
      return method(e, callee, locals);
    fault(callee.range, "only functions and methods can be called");
  }

  Value method(const Expr &e, const Expr &callee, Locals *locals) {
    const std::string &m = callee.name;
    // m[i].has(MEM): whether processor i of the space's kind reaches memory MEM.
    if (m == "has" && callee.operands[0]->kind == ExprKind::Index) {
      const Expr &idx = *callee.operands[0];
      Value base = eval(*idx.operands[0], locals);
      if (auto space = base.as<MachineSpace::Ptr>(); space && idx.operands.size() == 2) {
        int64_t i = asInt(eval(*idx.operands[1], locals), idx.operands[1]->range, "a processor index");
        int64_t procs = in_.machine_.count((*space)->kind());
        if (i < 0 || i >= procs)
          fault(idx.range, fmt::format("processor index {} is outside 0..{}", i, procs - 1));
        std::vector<Value> args = items(e.operands, 1, locals, false);
        if (args.size() != 1 || !args[0].as<MemKind>())
          fault(e.range, "has takes one memory kind here, as in m[0].has(FBMEM)");
        return Value{in_.machine_.hasMemory((*space)->kind(), *args[0].as<MemKind>())};
      }
    }
    Value base = eval(*callee.operands[0], locals);
    std::vector<Value> args = items(e.operands, 1, locals, false);
    auto argc = [&](size_t n) {
      if (args.size() != n)
        fault(e.range, fmt::format("'{}' takes {} argument{}, but {} {} given", m, n, n == 1 ? "" : "s", args.size(),
                                   args.size() == 1 ? "was" : "were"));
    };
    auto intArg = [&](size_t i) { return asInt(args[i], e.range, fmt::format("argument {} of '{}'", i + 1, m)); };
    if (auto s = base.as<MachineSpace::Ptr>()) {
      const MachineSpace &space = **s;
      Expected<MachineSpace::Ptr> r = Error{""};
      if (m == "merge" || m == "split" || m == "swap" || m == "balance_split") {
        argc(2);
        int64_t a = intArg(0), b = intArg(1);
        r = m == "merge" ? space.merge(a, b) : m == "split" ? space.split(a, b) : m == "swap" ? space.swap(a, b)
                                                                                                : space.balanceSplit(a, b);
      } else if (m == "slice") {
        argc(3);
        r = space.slice(intArg(0), intArg(1), intArg(2));
      } else if (m == "reverse") {
        argc(1);
        r = space.reverse(intArg(0));
      } else if (m == "auto_split" || m == "greedy_split") {
        argc(2);
        auto workload = asIntTuple(args[1], e.range, fmt::format("the second argument of '{}'", m));
        r = m == "auto_split" ? space.autoSplit(intArg(0), workload) : space.greedySplit(intArg(0), workload);
      } else {
        fault(callee.nameRange, fmt::format("a machine space has no method '{}'", m));
      }
      if (!r)
        fault(e.range, r.error().message);
      return Value{*r};
    }
    if (auto task = base.as<TaskRef>()) {
      if (m != "processor")
        fault(callee.nameRange, fmt::format("a task has no method '{}'", m));
      argc(1);
      auto space = args[0].as<MachineSpace::Ptr>();
      if (!space)
        fault(e.range, fmt::format("task.processor needs a machine space, not {}", args[0].typeName()));
      if (!(*task)->processor)
        fault(e.range, fmt::format("the processor of task '{}' is not known here", (*task)->name));
      auto p = (*space)->fromRoot(*(*task)->processor);
      if (!p)
        fault(e.range, p.error().message);
      return makeIntTuple(*p);
    }
    if (auto t = base.as<TupleValue>(); t && m == "has") {
      argc(1);
      for (const auto &x : t->items)
        if (x.v.index() == args[0].v.index() && equalValues(x, args[0]))
          return Value{true};
      return Value{false};
    }
    fault(callee.nameRange, fmt::format("{} has no method '{}'", base.typeName(), m));
  }

  Interpreter &in_;
  int depth_ = 0;
  size_t work_ = 0;
};

// ---- Interpreter ----------------------------------------------------------------

Interpreter::Interpreter(const Program &program, MachineShape machine, std::ostream *printSink)
    : program_(program), machine_(std::move(machine)), printSink_(printSink) {}

Interpreter::~Interpreter() = default;

Expected<bool> Interpreter::initialize() {
  Evaluator ev(*this);
  try {
    for (const auto &s : program_.stmts) {
      if (auto a = s.as<AssignStmt>())
        globals_[a->target.text] = ev.eval(*a->value, nullptr);
      else if (auto f = s.as<FuncDef>())
        functions_[f->name.text] = f;
      else if (auto p = s.as<PrintStmt>())
        ev.print(*p, nullptr);
    }
  } catch (const Fault &f) {
    return toError(f);
  }
  return true;
}

std::optional<ProcKind> Interpreter::processorKindFor(const std::string &task) const {
  const TaskStmt *use = taskStatementFor(program_, task);
  if (!use)
    return std::nullopt;
  for (const auto &p : use->procs)
    if (machine_.count(p.kind) > 0)
      return p.kind;
  return std::nullopt;
}

const FuncDef *Interpreter::placementFunctionFor(const std::string &task, ProcKind kind, bool single) const {
  const TaskMapStmt *use = taskMapStatementFor(program_, task, kind, single);
  return use ? program_.findFunction(use->function.text) : nullptr;
}

Expected<Value> Interpreter::call(const FuncDef &function, std::vector<Value> args) {
  Evaluator ev(*this);
  try {
    return ev.callFunction(function, std::move(args), function.name.range);
  } catch (const Fault &f) {
    return toError(f);
  }
}

Expected<Placement> Interpreter::place(const FuncDef &function, const TaskInfo &task) {
  auto result = call(function, {Value{std::make_shared<const TaskInfo>(task)}});
  if (!result)
    return result.error();
  const Value &v = *result;
  auto located = [&](std::string message) {
    return Error{std::move(message), static_cast<int>(function.name.range.begin.line),
                 static_cast<int>(function.name.range.begin.column)};
  };
  auto checkKind = [&](ProcKind k) -> std::optional<Error> {
    if (k != task.kind)
      return located(fmt::format("task '{}' is mapped to {} but '{}' returned a processor of a {} machine space",
                                 task.name, toString(task.kind), function.name.text, toString(k)));
    return std::nullopt;
  };
  if (auto p = v.as<PointValue>()) {
    if (auto err = checkKind(p->kind))
      return *err;
    return Placement{p->kind, {p->point}, false};
  }
  if (auto s = v.as<PointSetValue>()) {
    if (auto err = checkKind(s->kind))
      return *err;
    if (s->points.empty())
      return located(fmt::format("'{}' returned an empty set of processors", function.name.text));
    return Placement{s->kind, s->points, true};
  }
  if (auto t = v.as<TupleValue>(); t && t->items.size() == 2 && t->items[0].as<int64_t>() && t->items[1].as<int64_t>()) {
    // A plain (node, processor) tuple: checked against the task's kind.
    auto root = MachineSpace::root(task.kind, machine_.nodes, machine_.count(task.kind));
    auto r = root->toRoot({*t->items[0].as<int64_t>(), *t->items[1].as<int64_t>()});
    if (!r)
      return located(r.error().message);
    return Placement{task.kind, {*r}, false};
  }
  return located(fmt::format("placement function '{}' must return a processor of a machine space, such as "
                             "m[i, j]; it returned {} {}",
                             function.name.text, v.typeName(), v.str()));
}

} // namespace hone::dsl
