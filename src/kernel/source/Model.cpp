// The source model from libclang (Model.h). Clang parses each editable file
// as the build compiles it; hone walks the cursors of every function's loops.
// Operators are not exposed by libclang 14's C API, so they are read from the
// file's tokens between an operator's operands (the file is tokenized once).
#include "kernel/source/Model.h"

#include "kernel/source/LibClang.h"
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <functional>
#include <memory>
#include <string_view>

namespace hone::kernel::source {

std::string Affine::toString() const {
  std::string out;
  for (const auto &[var, c] : terms) {
    if (!out.empty())
      out += c < 0 ? " - " : " + ";
    else if (c < 0)
      out += "-";
    int64_t a = c < 0 ? -c : c;
    out += a == 1 ? var : fmt::format("{}*{}", a, var);
  }
  if (constant != 0 || out.empty())
    out += out.empty() ? std::to_string(constant)
                       : (constant < 0 ? " - " : " + ") + std::to_string(constant < 0 ? -constant : constant);
  return out;
}

std::vector<int> Nest::bandFrom(int loop) const {
  std::vector<int> out;
  if (loop < 0 || static_cast<size_t>(loop) >= loops.size())
    return out;
  int l = loop;
  out.push_back(l);
  while (loops[static_cast<size_t>(l)].onlyChildLoop) {
    l = loops[static_cast<size_t>(l)].children.front();
    out.push_back(l);
  }
  return out;
}

std::vector<int> Nest::innerBands() const {
  std::vector<int> out;
  for (size_t l = 1; l < loops.size(); ++l) {
    const Loop &L = loops[l];
    if (L.parent >= 0 && !loops[static_cast<size_t>(L.parent)].onlyChildLoop && L.onlyChildLoop)
      out.push_back(static_cast<int>(l));
  }
  return out;
}

std::string Nest::label() const { return fmt::format("{}:{}", file, line); }

const FileModel *Program::file(const std::string &name) const {
  for (const auto &f : files)
    if (f.name == name)
      return &f;
  return nullptr;
}

bool isPureFunction(const std::string &name) {
  static const std::set<std::string> pure = {
      "sqrt",  "sqrtf", "exp",   "expf",  "exp2",  "log",   "logf",  "log2",  "log10", "pow",   "powf",
      "fabs",  "fabsf", "abs",   "labs",  "sin",   "sinf",  "cos",   "cosf",  "tan",   "tanh",  "atan",
      "atan2", "floor", "ceil",  "fmin",  "fmax",  "fminf", "fmaxf", "fma",   "hypot", "cbrt",  "erf",
      "round", "trunc", "fmod",  "acos",  "asin",  "sinh",  "cosh",  "expm1", "log1p", "min",   "max",
      "std::min", "std::max", "std::abs", "std::sqrt", "std::exp"};
  return pure.count(name) > 0;
}

namespace {

/// An OpenMP directive's cursor (seen when the parse arguments have -fopenmp; CXCursor_OMP*: 232 on,
/// but for two kinds of other statements in that range).
bool isOpenMpDirective(CXCursorKind k) {
  return clang_isStatement(k) && k >= CXCursor_OMPParallelDirective && k != CXCursor_SEHLeaveStmt &&
         k != CXCursor_BuiltinBitCastExpr;
}

bool isIoFunction(const std::string &name) {
  static const std::set<std::string> io = {"printf", "fprintf", "sprintf", "snprintf", "puts",  "fputs", "putchar",
                                           "fputc",  "fwrite",  "fread",   "scanf",    "fscanf", "fopen", "fclose",
                                           "write",  "read",    "fflush",  "perror",   "getline", "fgets"};
  return io.count(name) > 0;
}

struct Tok {
  std::string text;
  CXTokenKind kind;
  size_t begin, end;
};

std::string str(CXString s) {
  const char *c = clang_getCString(s);
  std::string out = c ? c : "";
  clang_disposeString(s);
  return out;
}

size_t offsetOf(CXSourceLocation loc) {
  unsigned offset = 0;
  clang_getFileLocation(loc, nullptr, nullptr, nullptr, &offset);
  return offset;
}
int lineOf(CXSourceLocation loc) {
  unsigned line = 0;
  clang_getFileLocation(loc, nullptr, &line, nullptr, nullptr);
  return static_cast<int>(line);
}

std::vector<CXCursor> childrenOf(CXCursor c) {
  std::vector<CXCursor> out;
  clang_visitChildren(
      c,
      [](CXCursor child, CXCursor, CXClientData data) {
        static_cast<std::vector<CXCursor> *>(data)->push_back(child);
        return CXChildVisit_Continue;
      },
      &out);
  return out;
}

/// Peels parentheses and implicit conversions.
CXCursor strip(CXCursor c) {
  for (int guard = 0; guard < 64; ++guard) {
    CXCursorKind k = clang_getCursorKind(c);
    if (k != CXCursor_ParenExpr && k != CXCursor_UnexposedExpr)
      break;
    auto kids = childrenOf(c);
    if (kids.size() != 1)
      break;
    c = kids[0];
  }
  return c;
}

constexpr int kMaxDepth = 400; // deeper expressions are not analysed (the nest is left alone)

class NestBuilder {
public:
  NestBuilder(CXTranslationUnit tu, const std::string &text, const std::vector<Tok> &toks, Nest &nest)
      : tu_(tu), text_(text), toks_(toks), nest_(nest) {}

  int loop(CXCursor c, int parent) {
    int index = static_cast<int>(nest_.loops.size());
    nest_.loops.emplace_back();
    {
      Loop &l = nest_.loops.back();
      l.parent = parent;
      l.depth = parent < 0 ? 0 : nest_.loops[static_cast<size_t>(parent)].depth + 1;
      CXSourceRange r = clang_getCursorExtent(c);
      l.begin = offsetOf(clang_getRangeStart(r));
      l.end = statementEnd(offsetOf(clang_getRangeEnd(r)));
      l.line = lineOf(clang_getRangeStart(r));
      l.endLine = lineOf(clang_getRangeEnd(r));
      CXSourceLocation start = clang_getRangeStart(r);
      unsigned spelling = 0, expansion = 0;
      clang_getSpellingLocation(start, nullptr, nullptr, nullptr, &spelling);
      clang_getExpansionLocation(start, nullptr, nullptr, nullptr, &expansion);
      l.inMacro = spelling != expansion || l.begin + 3 > text_.size() || text_.compare(l.begin, 3, "for") != 0;
    }
    if (parent >= 0)
      nest_.loops[static_cast<size_t>(parent)].children.push_back(index);
    header(index);
    auto kids = childrenOf(c);
    if (kids.empty())
      return index;
    bounds(nest_.loops[static_cast<size_t>(index)], kids);
    CXCursor body = kids.back();
    {
      Loop &l = nest_.loops[static_cast<size_t>(index)];
      CXSourceRange br = clang_getCursorExtent(body);
      l.bodyBegin = offsetOf(clang_getRangeStart(br));
      l.bodyEnd = statementEnd(offsetOf(clang_getRangeEnd(br)));
      l.bodyIsCompound = clang_getCursorKind(body) == CXCursor_CompoundStmt;
      CXCursor only = body;
      if (l.bodyIsCompound) {
        auto inner = childrenOf(body);
        only = inner.size() == 1 ? inner[0] : clang_getNullCursor();
      }
      l.onlyChildLoop = !clang_Cursor_isNull(only) && clang_getCursorKind(only) == CXCursor_ForStmt;
    }
    // The header's parts other than the body: reads (the loop's own variable aside).
    std::string var = nest_.loops[static_cast<size_t>(index)].var;
    for (size_t i = 0; i + 1 < kids.size(); ++i)
      expr(kids[i], Mode::Read, index, 0, var);
    statement(body, index, false, 0);
    return index;
  }

private:
  enum class Mode { Read, Write, ReadWrite };

  /// The end of a statement whose extent ends at `end`: past its ';' unless it ends with a brace.
  /// An extent that ends inside a macro's arguments (`x / SCALAR_VAL(9.0)` ends at `9.0`: clang
  /// maps the last token to where the argument is spelled) is carried to the ';' that follows, over
  /// the rest of the invocation; a brace or a statement keyword on the way leaves it as it was.
  size_t statementEnd(size_t end) const {
    if (end > 0 && end <= text_.size() && text_[end - 1] == '}')
      return end;
    auto it = std::lower_bound(toks_.begin(), toks_.end(), end, [](const Tok &t, size_t o) { return t.begin < o; });
    for (int depth = 0; it != toks_.end(); ++it) {
      if (it->kind == CXToken_Comment)
        continue;
      const std::string &t = it->text;
      if (t == ";" && depth <= 0)
        return it->end;
      if (t == "{" || t == "}" || t == "for" || t == "if" || t == "while" || t == "do" || t == "return" ||
          t == "else" || t == ";")
        break;
      depth += t == "(" || t == "[" ? 1 : t == ")" || t == "]" ? -1 : 0;
    }
    return end;
  }

  /// The tokens in [begin, end).
  std::vector<const Tok *> tokens(size_t begin, size_t end) const {
    std::vector<const Tok *> out;
    auto it = std::lower_bound(toks_.begin(), toks_.end(), begin, [](const Tok &t, size_t o) { return t.begin < o; });
    for (; it != toks_.end() && it->begin < end; ++it)
      if (it->kind != CXToken_Comment)
        out.push_back(&*it);
    return out;
  }

  std::string slice(const std::vector<const Tok *> &t, size_t from, size_t to) const {
    if (from >= to || to > t.size())
      return "";
    return text_.substr(t[from]->begin, t[to - 1]->end - t[from]->begin);
  }

  /// Reads `for (init; cond; inc)` from the tokens: the canonical form hone rewrites.
  void header(int index) {
    Loop &l = nest_.loops[static_cast<size_t>(index)];
    auto t = tokens(l.begin, l.end);
    if (t.size() < 6 || t[0]->text != "for" || t[1]->text != "(")
      return;
    std::vector<size_t> semis;
    int depth = 0;
    size_t close = 0;
    for (size_t i = 1; i < t.size() && !close; ++i) {
      const std::string &s = t[i]->text;
      if (s == "(" || s == "[" || s == "{")
        ++depth;
      else if (s == ")" || s == "]" || s == "}") {
        if (--depth == 0)
          close = i;
      } else if (s == ";" && depth == 1)
        semis.push_back(i);
    }
    if (!close || semis.size() != 2)
      return;
    // init: [type] var = lower
    size_t a = 2, b = semis[0];
    size_t eq = a;
    while (eq < b && t[eq]->text != "=")
      ++eq;
    if (eq >= b || eq == a)
      return;
    for (size_t i = a; i < b; ++i)
      if (t[i]->text == ",")
        return;
    l.var = t[eq - 1]->text;
    if (t[eq - 1]->kind != CXToken_Identifier)
      return (void)(l.var.clear());
    l.declaresVar = eq - 1 > a;
    l.varType = l.declaresVar ? slice(t, a, eq - 1) : "";
    l.lower = slice(t, eq + 1, b);
    // cond: var < upper | var <= upper | upper > var | upper >= var
    size_t c0 = semis[0] + 1, c1 = semis[1];
    bool inclusive = false;
    if (c1 - c0 >= 3 && t[c0]->text == l.var && (t[c0 + 1]->text == "<" || t[c0 + 1]->text == "<=")) {
      inclusive = t[c0 + 1]->text == "<=";
      l.upper = slice(t, c0 + 2, c1);
    } else if (c1 - c0 >= 3 && t[c1 - 1]->text == l.var && (t[c1 - 2]->text == ">" || t[c1 - 2]->text == ">=")) {
      inclusive = t[c1 - 2]->text == ">=";
      l.upper = slice(t, c0, c1 - 2);
    } else {
      return;
    }
    for (size_t i = c0; i < c1; ++i)
      if (t[i]->text == "," || t[i]->text == "&&" || t[i]->text == "||" || t[i]->text == "?")
        return;
    if (inclusive)
      l.upper = "(" + l.upper + ") + 1";
    // inc: var++ | ++var | var += K | var = var + K
    size_t i0 = semis[1] + 1, i1 = close;
    auto n = i1 - i0;
    auto integer = [](const std::string &s) -> int64_t {
      if (s.empty() || !std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; }) || s.size() > 9)
        return 0;
      return std::stoll(s);
    };
    if (n == 2 && ((t[i0]->text == l.var && t[i0 + 1]->text == "++") || (t[i0]->text == "++" && t[i0 + 1]->text == l.var)))
      l.step = 1;
    else if (n == 3 && t[i0]->text == l.var && t[i0 + 1]->text == "+=")
      l.step = integer(t[i0 + 2]->text);
    else if (n == 5 && t[i0]->text == l.var && t[i0 + 1]->text == "=" && t[i0 + 2]->text == l.var &&
             t[i0 + 3]->text == "+")
      l.step = integer(t[i0 + 4]->text);
    for (size_t i = eq + 1; i < b; ++i)
      if (t[i]->kind == CXToken_Identifier)
        l.boundNames.insert(t[i]->text);
    for (size_t i = c0; i < c1; ++i)
      if (t[i]->kind == CXToken_Identifier && t[i]->text != l.var)
        l.boundNames.insert(t[i]->text);
    l.canonical = l.step > 0 && !l.lower.empty() && !l.upper.empty();
  }

  /// The bounds of a canonical loop as affine forms, from its header's cursors
  /// (`for (init; cond; inc) body`).
  void bounds(Loop &l, const std::vector<CXCursor> &kids) const {
    if (!l.canonical || kids.size() != 4)
      return;
    std::optional<Affine> lower, upper;
    CXCursor init = kids[0];
    if (clang_getCursorKind(init) == CXCursor_DeclStmt) {
      auto decls = childrenOf(init);
      if (decls.size() == 1 && clang_getCursorKind(decls[0]) == CXCursor_VarDecl) {
        auto value = childrenOf(decls[0]);
        if (!value.empty())
          lower = affine(value.back(), 0);
      }
    } else if (clang_getCursorKind(strip(init)) == CXCursor_BinaryOperator && operatorOf(strip(init)) == "=") {
      auto sides = childrenOf(strip(init));
      if (sides.size() == 2)
        lower = affine(sides[1], 0);
    }
    CXCursor cond = strip(kids[1]);
    auto sides = childrenOf(cond);
    if (clang_getCursorKind(cond) != CXCursor_BinaryOperator || sides.size() != 2)
      return;
    std::string op = operatorOf(cond), name;
    CXType type;
    if (variableRef(strip(sides[0]), &name, &type) && name == l.var && (op == "<" || op == "<="))
      upper = affine(sides[1], 0);
    else if (variableRef(strip(sides[1]), &name, &type) && name == l.var && (op == ">" || op == ">="))
      upper = affine(sides[0], 0);
    else
      return;
    if (upper && (op == "<=" || op == ">="))
      upper->constant += 1;
    l.lowerAffine = lower;
    l.upperAffine = upper;
  }

  /// The operator of a unary or binary expression ("post++" for a postfix one), read from the
  /// file's tokens between the operands. libclang 14 has no accessor for it and prints no
  /// expressions, so an operator that comes from inside a macro (its operands then share the
  /// expansion's location) reads as "": unknown, and whatever depends on it stays unproven.
  std::string operatorOf(CXCursor c) const {
    auto kids = childrenOf(c);
    CXSourceRange r = clang_getCursorExtent(c);
    size_t begin = offsetOf(clang_getRangeStart(r)), end = offsetOf(clang_getRangeEnd(r));
    auto isOperator = [](const Tok *t) {
      return t->kind == CXToken_Punctuation && t->text != ")" && t->text != "]" &&
             t->text != "(" && t->text != "[";
    };
    if (kids.size() == 2) {
      size_t lhsEnd = offsetOf(clang_getRangeEnd(clang_getCursorExtent(kids[0])));
      size_t rhsBegin = offsetOf(clang_getRangeStart(clang_getCursorExtent(kids[1])));
      if (rhsBegin <= lhsEnd)
        return "";
      std::string op;
      for (const Tok *t : tokens(lhsEnd, rhsBegin)) {
        if (!isOperator(t))
          continue;
        if (!op.empty())
          return ""; // two operators between the operands: not a reading to trust
        op = t->text;
      }
      return op;
    }
    if (kids.size() == 1) { // unary: prefix when the operand starts after the operator
      auto t = tokens(begin, end);
      if (t.empty())
        return "";
      CXSourceRange o = clang_getCursorExtent(kids[0]);
      size_t operand = offsetOf(clang_getRangeStart(o)), operandEnd = offsetOf(clang_getRangeEnd(o));
      if (isOperator(t.front()) && t.front()->begin < operand)
        return t.front()->text;
      if (isOperator(t.back()) && t.back()->begin >= operandEnd)
        return "post" + t.back()->text;
      return "";
    }
    return "";
  }

  void record(Access a, CXCursor at, int loop) {
    a.line = lineOf(clang_getCursorLocation(at));
    CXSourceRange r = clang_getCursorExtent(at);
    auto plain = [](CXSourceLocation loc) { // the text there is the file's own, not a macro's expansion
      unsigned spelling = 0, expansion = 0;
      clang_getSpellingLocation(loc, nullptr, nullptr, nullptr, &spelling);
      clang_getExpansionLocation(loc, nullptr, nullptr, nullptr, &expansion);
      return spelling == expansion;
    };
    if (plain(clang_getRangeStart(r)) && plain(clang_getRangeEnd(r))) {
      size_t begin = offsetOf(clang_getRangeStart(r)), end = offsetOf(clang_getRangeEnd(r));
      // The text must be the access itself (`A[i][j]`), not a macro's call that expands to it.
      auto identifier = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
      bool own = end > begin && end <= text_.size() && text_.compare(begin, a.base.size(), a.base) == 0 &&
                 (begin + a.base.size() == end || !identifier(text_[begin + a.base.size()])) &&
                 (a.subscripts.empty() || text_[end - 1] == ']');
      if (own) {
        a.begin = begin;
        a.end = end;
      }
    }
    a.loop = loop;
    a.order = order_++;
    a.inCondition = conditional_ > 0;
    nest_.accesses.push_back(std::move(a));
  }

  /// An access through a pointer or a member: memory hone cannot name.
  void recordIndirect(CXCursor at, Mode m, int loop) {
    Access a;
    a.base = "*";
    a.indirect = true;
    setMode(a, m);
    record(std::move(a), at, loop);
  }

  static void setMode(Access &a, Mode m) {
    a.read = m != Mode::Write;
    a.write = m != Mode::Read;
  }

  /// A variable of the program (not a function or a constant), by the name the nest uses. A field
  /// reached from a variable (`g.u`, `p->n`, `s.a.b`, a member `u` or `this->u` in a method) is a
  /// variable named by its path (`g.u`, `p.n`, `s.a.b`, `this.u`): distinct fields never share storage,
  /// and, as for two pointer parameters, two paths are taken to name different objects.
  static bool variableRef(CXCursor c, std::string *name, CXType *type, int depth = 0) {
    if (clang_getCursorKind(c) == CXCursor_MemberRefExpr) {
      CXCursor field = clang_getCursorReferenced(c);
      if (clang_getCursorKind(field) != CXCursor_FieldDecl || depth > 16 ||
          clang_getCursorKind(clang_getCursorSemanticParent(field)) == CXCursor_UnionDecl)
        return false; // a method, a union's member (they share storage), or a path too long
      auto kids = childrenOf(c);
      std::string base = "this";
      if (!kids.empty()) {
        CXCursor b = strip(kids[0]);
        CXType bt;
        if (clang_getCursorKind(b) != CXCursor_CXXThisExpr && !variableRef(b, &base, &bt, depth + 1))
          return false;
      }
      *name = base + "." + str(clang_getCursorSpelling(field));
      *type = clang_getCanonicalType(clang_getCursorType(field));
      return true;
    }
    if (clang_getCursorKind(c) != CXCursor_DeclRefExpr)
      return false;
    CXCursor d = clang_getCursorReferenced(c);
    CXCursorKind k = clang_getCursorKind(d);
    if (k != CXCursor_VarDecl && k != CXCursor_ParmDecl)
      return false;
    *name = str(clang_getCursorSpelling(d));
    *type = clang_getCanonicalType(clang_getCursorType(d));
    return true;
  }

  /// A polynomial over named integer variables: each monomial (its variables sorted, repeated for a
  /// power; empty for the constant) with its coefficient.
  using Monomial = std::vector<std::string>;
  using Poly = std::map<Monomial, int64_t>;
  static constexpr size_t kMaxMonomials = 64, kMaxDegree = 4;

  static size_t degree(const Poly &p) {
    size_t d = 0;
    for (const auto &[m, c] : p)
      d = std::max(d, m.size());
    return d;
  }

  static void prune(Poly &p) {
    for (auto it = p.begin(); it != p.end();)
      it = it->second == 0 ? p.erase(it) : std::next(it);
  }

  static std::optional<Poly> times(const Poly &a, const Poly &b) {
    Poly out;
    for (const auto &[ma, ca] : a)
      for (const auto &[mb, cb] : b) {
        Monomial m = ma;
        m.insert(m.end(), mb.begin(), mb.end());
        std::sort(m.begin(), m.end());
        int64_t c = 0, sum = 0;
        if (m.size() > kMaxDegree || __builtin_mul_overflow(ca, cb, &c) || __builtin_add_overflow(out[m], c, &sum))
          return std::nullopt;
        out[m] = sum;
      }
    prune(out);
    if (out.size() > kMaxMonomials)
      return std::nullopt;
    return out;
  }

  static Affine toAffine(const Poly &p) {
    Affine a;
    for (const auto &[m, c] : p) {
      if (m.empty())
        a.constant = c;
      else
        a.terms[m.front()] = c;
    }
    return a;
  }

  /// An integer expression as a polynomial of the variables it reads; nullopt for anything else
  /// (a call, a division, a non-integer variable, a value from memory).
  std::optional<Poly> poly(CXCursor c, int depth) const {
    if (depth > 64)
      return std::nullopt;
    CXCursorKind k = clang_getCursorKind(c);
    if (k == CXCursor_IntegerLiteral || k == CXCursor_CharacterLiteral) {
      CXEvalResult r = clang_Cursor_Evaluate(c);
      if (!r)
        return std::nullopt;
      std::optional<Poly> out;
      if (clang_EvalResult_getKind(r) == CXEval_Int) {
        out = Poly{{Monomial{}, clang_EvalResult_getAsLongLong(r)}};
        prune(*out);
      }
      clang_EvalResult_dispose(r);
      return out;
    }
    if (k == CXCursor_ParenExpr || k == CXCursor_UnexposedExpr || k == CXCursor_CStyleCastExpr) {
      auto kids = childrenOf(c);
      return kids.empty() ? std::nullopt : poly(kids.back(), depth + 1);
    }
    std::string name;
    CXType type;
    if (variableRef(c, &name, &type)) {
      if (type.kind < CXType_Bool || type.kind > CXType_Int128) // not an integer: not a subscript term
        return std::nullopt;
      return Poly{{Monomial{name}, 1}};
    }
    if (k == CXCursor_BinaryOperator) {
      auto kids = childrenOf(c);
      std::string op = operatorOf(c);
      if (kids.size() != 2)
        return std::nullopt;
      auto l = poly(kids[0], depth + 1), r = poly(kids[1], depth + 1);
      if (!l || !r)
        return std::nullopt;
      if (op == "*")
        return times(*l, *r);
      if (op != "+" && op != "-")
        return std::nullopt;
      for (const auto &[m, co] : *r)
        if (op == "+" ? __builtin_add_overflow((*l)[m], co, &(*l)[m]) : __builtin_sub_overflow((*l)[m], co, &(*l)[m]))
          return std::nullopt;
      prune(*l);
      if (l->size() > kMaxMonomials)
        return std::nullopt;
      return l;
    }
    if (k == CXCursor_UnaryOperator) {
      auto kids = childrenOf(c);
      std::string op = operatorOf(c);
      if (kids.size() != 1 || (op != "-" && op != "+"))
        return std::nullopt;
      auto a = poly(kids[0], depth + 1);
      if (a && op == "-")
        for (auto &[m, co] : *a)
          if (__builtin_sub_overflow(int64_t{0}, co, &co))
            return std::nullopt;
      return a;
    }
    return std::nullopt;
  }

  std::optional<Affine> affine(CXCursor c, int depth) const {
    auto p = poly(c, depth);
    if (!p || degree(*p) > 1)
      return std::nullopt;
    return toAffine(*p);
  }

  bool isLoopVar(const std::string &name) const {
    return std::any_of(nest_.loops.begin(), nest_.loops.end(), [&](const Loop &l) { return l.var == name; });
  }

  /// The least and the greatest value of `f` over the iterations of the loops enclosing `loop`,
  /// as affine forms of the invariants, when every loop variable in `f` has affine bounds free of
  /// loop variables.
  std::optional<std::pair<Affine, Affine>> range(const Affine &f, int loop) const {
    Affine lo, hi;
    lo.constant = hi.constant = f.constant;
    auto add = [](Affine &into, const Affine &term, int64_t scale) {
      int64_t x = 0;
      for (const auto &[v, c] : term.terms)
        if (__builtin_mul_overflow(scale, c, &x) || __builtin_add_overflow(into.terms[v], x, &into.terms[v]))
          return false;
      return !__builtin_mul_overflow(scale, term.constant, &x) && !__builtin_add_overflow(into.constant, x, &into.constant);
    };
    for (const auto &[var, co] : f.terms) {
      const Loop *owner = nullptr;
      for (int l = loop, guard = 0; l >= 0 && guard < 1000 && !owner; ++guard) {
        const Loop &L = nest_.loops[static_cast<size_t>(l)];
        if (L.var == var)
          owner = &L;
        l = L.parent;
      }
      if (!owner) {
        if (isLoopVar(var))
          return std::nullopt;
        if (!add(lo, Affine{{{var, 1}}, 0}, co) || !add(hi, Affine{{{var, 1}}, 0}, co))
          return std::nullopt; // an invariant: itself at both ends
        continue;
      }
      if (!owner->canonical || !owner->lowerAffine || !owner->upperAffine)
        return std::nullopt;
      for (const auto *b : {&*owner->lowerAffine, &*owner->upperAffine})
        for (const auto &[v, c] : b->terms)
          if (isLoopVar(v))
            return std::nullopt; // a triangular bound: not handled
      Affine last = *owner->upperAffine; // the last value is at most upper - 1
      if (__builtin_sub_overflow(last.constant, 1, &last.constant) || !add(co > 0 ? lo : hi, *owner->lowerAffine, co) ||
          !add(co > 0 ? hi : lo, last, co))
        return std::nullopt;
    }
    for (Affine *a : {&lo, &hi})
      for (auto it = a->terms.begin(); it != a->terms.end();)
        it = it->second == 0 ? a->terms.erase(it) : std::next(it);
    return std::make_pair(lo, hi);
  }

  /// A linearised subscript read back as dimensions: `q * P + r` with P an invariant of the nest and
  /// r provably in [0, P) for every iteration is [q][r], recursively on q (delinearisation; Maslov,
  /// "Delinearization: an efficient way to break multiloop dependence equations", PLDI 1992). The
  /// map from (q, r) to q * P + r is one to one there, so testing the dimensions is exact.
  bool delinearize(const Poly &p, int loop, std::vector<Affine> &dims, std::vector<std::string> &layout,
                   int depth) const {
    if (degree(p) <= 1) {
      dims.push_back(toAffine(p));
      return true;
    }
    if (depth > 4)
      return false;
    std::set<std::string> candidates;
    for (const auto &[m, c] : p)
      if (m.size() >= 2)
        for (const auto &v : m)
          if (!isLoopVar(v))
            candidates.insert(v);
    for (const auto &size : candidates) {
      Poly q, r;
      for (const auto &[m, c] : p) {
        auto at = std::find(m.begin(), m.end(), size);
        if (at == m.end()) {
          r[m] = c;
          continue;
        }
        Monomial rest = m;
        rest.erase(rest.begin() + (at - m.begin()));
        q[rest] = c;
      }
      if (degree(r) > 1 || q.empty())
        continue;
      Affine rest = toAffine(r);
      auto span = range(rest, loop);
      if (!span || !span->first.terms.empty() || span->first.constant < 0)
        continue;
      Affine slack = span->second; // must be at most size - 1
      if (--slack.terms[size] != 0 || slack.terms.size() != 1 || slack.constant > -1)
        continue;
      size_t mark = dims.size(), markLayout = layout.size();
      if (delinearize(q, loop, dims, layout, depth + 1)) {
        dims.push_back(rest);
        layout.push_back(size);
        return true;
      }
      dims.resize(mark);
      layout.resize(markLayout);
    }
    return false;
  }

  /// Appends the dimensions of one subscript as written to `a` (several for a linearised one).
  void subscript(Access &a, CXCursor ix, int loop) const {
    auto p = poly(ix, 0);
    std::vector<Affine> dims;
    std::vector<std::string> layout;
    if (p && delinearize(*p, loop, dims, layout, 0)) {
      for (const auto &size : layout) // where the subscript stands, with its row length
        a.layout.push_back(fmt::format("{}:{}", a.subscripts.size(), size));
      for (auto &d : dims)
        a.subscripts.emplace_back(std::move(d));
    } else {
      a.subscripts.emplace_back(std::nullopt);
    }
  }

  void statement(CXCursor c, int loop, bool conditional, int depth) {
    if (depth > kMaxDepth) {
      tooDeep(c, loop);
      return;
    }
    CXCursorKind k = clang_getCursorKind(c);
    auto walk = [&](bool cond) {
      for (CXCursor kid : childrenOf(c))
        statement(kid, loop, cond, depth + 1);
    };
    conditional_ += conditional ? 1 : 0;
    switch (k) {
    case CXCursor_ForStmt:
      this->loop(c, loop);
      break;
    case CXCursor_WhileStmt:
    case CXCursor_DoStmt:
    case CXCursor_SwitchStmt:
      nest_.irregular = true;
      walk(true);
      break;
    case CXCursor_IfStmt: {
      auto kids = childrenOf(c);
      for (size_t i = 0; i < kids.size(); ++i)
        statement(kids[i], loop, i > 0, depth + 1);
      break;
    }
    case CXCursor_ReturnStmt:
    case CXCursor_GotoStmt:
    case CXCursor_BreakStmt:
    case CXCursor_IndirectGotoStmt:
      nest_.jumps = true;
      walk(false);
      break;
    case CXCursor_CompoundStmt:
    case CXCursor_NullStmt:
    case CXCursor_ContinueStmt:
    case CXCursor_LabelStmt:
      walk(false);
      break;
    case CXCursor_DeclStmt:
      for (CXCursor d : childrenOf(c)) {
        if (clang_getCursorKind(d) != CXCursor_VarDecl)
          continue;
        nest_.locals[str(clang_getCursorSpelling(d))] = loop;
        for (CXCursor init : childrenOf(d))
          expr(init, Mode::Read, loop, depth + 1, "");
      }
      break;
    default:
      if (clang_isExpression(k))
        expr(c, Mode::Read, loop, depth + 1, "");
      else if (clang_isStatement(k)) {
        nest_.irregular = true; // asm, OpenMP directives, ...: not something hone rewrites
        nest_.openmp = nest_.openmp || isOpenMpDirective(k); // and libclang shows nothing under a directive
        walk(false);
      }
      break;
    }
    conditional_ -= conditional ? 1 : 0;
  }

  /// Code nested too deep to analyse: whatever it does is unknown.
  void tooDeep(CXCursor c, int loop) {
    nest_.irregular = nest_.unknownCalls = true;
    nest_.effects.push_back({"(code nested too deep to analyse)", loop, lineOf(clang_getCursorLocation(c)), false});
  }

  /// The canonical type of a variable, through a reference.
  static CXType referred(CXType t) {
    t = clang_getCanonicalType(t);
    if (t.kind == CXType_LValueReference || t.kind == CXType_RValueReference)
      t = clang_getCanonicalType(clang_getPointeeType(t));
    return t;
  }

  /// A standard container whose operator[] names one element and keeps no state (vector<bool>'s
  /// elements share words, so it is not one).
  static bool isContainer(CXType t) {
    std::string s = str(clang_getTypeSpelling(referred(t)));
    if (s.rfind("const ", 0) == 0)
      s = s.substr(6);
    for (const char *prefix : {"std::vector<", "std::array<", "std::valarray<", "std::deque<", "std::span<",
                               "std::__1::vector<", "std::__1::array<"})
      if (s.rfind(prefix, 0) == 0)
        return s.find("std::vector<bool") != 0 && s.find("std::__1::vector<bool") != 0;
    return false;
  }

  /// `p[i].x` (a field of an array's element, the array a variable): an array of its own named
  /// `p[].x`, with the element's subscripts; distinct fields of the elements never share storage.
  /// False when `c` is something else.
  bool arrayField(CXCursor c, Mode mode, int loop, int depth, const std::string &skip) {
    CXCursor field = clang_getCursorReferenced(c);
    auto kids = childrenOf(c);
    if (clang_getCursorKind(field) != CXCursor_FieldDecl || kids.size() != 1 ||
        clang_getCursorKind(clang_getCursorSemanticParent(field)) == CXCursor_UnionDecl)
      return false;
    std::vector<CXCursor> indices;
    CXCursor cur = subscriptChain(strip(kids[0]), indices);
    std::string name;
    CXType type;
    if (indices.empty() || !variableRef(cur, &name, &type))
      return false;
    CXType ft = clang_getCanonicalType(clang_getCursorType(field));
    Access a;
    setMode(a, mode);
    a.base = name + "[]." + str(clang_getCursorSpelling(field));
    // A field that is itself an array or a structure is used past what this access names.
    a.indirect = ft.kind == CXType_ConstantArray || ft.kind == CXType_Record;
    element(std::move(a), indices, c, loop, depth, skip);
    return true;
  }

  /// `c` with its subscripts (`a[i][j]`: i, j into `indices`, outermost first) taken off: the array.
  static CXCursor subscriptChain(CXCursor c, std::vector<CXCursor> &indices) {
    for (int guard = 0; guard < 32 && clang_getCursorKind(c) == CXCursor_ArraySubscriptExpr; ++guard) {
      auto ab = childrenOf(c);
      if (ab.size() != 2)
        break;
      indices.insert(indices.begin(), ab[1]);
      c = strip(ab[0]);
    }
    return c;
  }

  /// Records `a`, an element access at `at`, with `indices` as its subscripts, and the indices' reads.
  void element(Access a, const std::vector<CXCursor> &indices, CXCursor at, int loop, int depth,
               const std::string &skip) {
    for (CXCursor ix : indices)
      subscript(a, ix, loop);
    record(std::move(a), at, loop);
    for (CXCursor ix : indices)
      expr(ix, Mode::Read, loop, depth + 1, skip);
  }

  /// `v[i][j]` on standard containers (operator[] calls), recorded as the array access it is; false
  /// when the object is something else.
  bool containerElement(CXCursor c, Mode mode, int loop, int depth, const std::string &skip) {
    return containerAt(c, &mode, loop, depth, skip);
  }

  /// `v`, `v[i]`, `v[i][j]` on standard containers: the indices' reads are recorded, and with `mode`
  /// the element's access (without, the container is only asked its length).
  bool containerAt(CXCursor c, const Mode *mode, int loop, int depth, const std::string &skip) {
    std::vector<CXCursor> indices;
    CXCursor cur = c;
    for (int guard = 0; guard < 32; ++guard) {
      auto kids = childrenOf(cur);
      if (clang_getCursorKind(cur) != CXCursor_CallExpr || str(clang_getCursorSpelling(cur)) != "operator[]" ||
          kids.size() != 3 || !isContainer(clang_getCursorType(strip(kids[0]))))
        break;
      indices.insert(indices.begin(), kids[2]);
      cur = strip(kids[0]);
    }
    std::string name;
    CXType type;
    if ((mode && indices.empty()) || !variableRef(cur, &name, &type) || !isContainer(type))
      return false;
    if (!mode) {
      for (CXCursor ix : indices)
        expr(ix, Mode::Read, loop, depth + 1, skip);
      return true;
    }
    Access a;
    setMode(a, *mode);
    a.base = name;
    element(std::move(a), indices, c, loop, depth, skip);
    return true;
  }

  void expr(CXCursor c, Mode mode, int loop, int depth, const std::string &skip) {
    if (depth > kMaxDepth) {
      tooDeep(c, loop);
      return;
    }
    CXCursorKind k = clang_getCursorKind(c);
    auto kids = childrenOf(c);
    auto all = [&](Mode m) {
      for (CXCursor kid : kids)
        expr(kid, m, loop, depth + 1, skip);
    };
    std::string name;
    CXType type;
    switch (k) {
    case CXCursor_BinaryOperator: {
      std::string op = operatorOf(c);
      if (kids.size() != 2)
        return all(Mode::Read);
      if (op == "=")
        return assignment(kids, loop, depth, skip);
      if (op == "&&" || op == "||") {
        expr(kids[0], Mode::Read, loop, depth + 1, skip);
        ++conditional_;
        expr(kids[1], Mode::Read, loop, depth + 1, skip);
        --conditional_;
        return;
      }
      return all(Mode::Read);
    }
    case CXCursor_CompoundAssignOperator: {
      std::string op = operatorOf(c);
      if (kids.size() != 2)
        return all(Mode::Read);
      size_t before = nest_.accesses.size();
      expr(kids[0], Mode::ReadWrite, loop, depth + 1, skip);
      if (nest_.accesses.size() > before && op.size() == 2 && op[1] == '=')
        nest_.accesses[before].updateOp = op[0];
      expr(kids[1], Mode::Read, loop, depth + 1, skip);
      return;
    }
    case CXCursor_UnaryOperator: {
      std::string op = operatorOf(c);
      if (kids.size() != 1)
        return all(Mode::Read);
      if (op == "++" || op == "--" || op == "post++" || op == "post--") {
        size_t before = nest_.accesses.size();
        expr(kids[0], Mode::ReadWrite, loop, depth + 1, skip);
        if (nest_.accesses.size() > before)
          nest_.accesses[before].updateOp = '+';
        return;
      }
      if (op == "*") { // through a pointer: where it points is not known
        recordIndirect(c, mode, loop);
        return all(Mode::Read);
      }
      return all(Mode::Read);
    }
    case CXCursor_ArraySubscriptExpr: {
      std::vector<CXCursor> indices;
      CXCursor cur = subscriptChain(c, indices);
      Access a;
      setMode(a, mode);
      // A whole structure element (copied, passed on): it overlaps every field access `p[].x` of its
      // array, which the test compares by field, so it counts as memory hone cannot follow.
      bool whole = clang_getCanonicalType(clang_getCursorType(c)).kind == CXType_Record;
      if (!whole && variableRef(cur, &name, &type)) {
        a.base = name;
      } else {
        a.base = "*";
        a.indirect = true;
        expr(cur, Mode::Read, loop, depth + 1, skip);
      }
      return element(std::move(a), indices, c, loop, depth, skip);
    }
    case CXCursor_DeclRefExpr:
    case CXCursor_MemberRefExpr: // a field of a variable is a variable of its own
      if (variableRef(c, &name, &type)) {
        if (name == skip)
          return;
        Access a;
        a.base = name;
        setMode(a, mode);
        // An array named alone (passed on, or decayed to a pointer) is used where hone cannot see.
        if (type.kind == CXType_ConstantArray || type.kind == CXType_IncompleteArray ||
            type.kind == CXType_VariableArray)
          a.indirect = true;
        record(std::move(a), c, loop);
        return;
      }
      if (k == CXCursor_DeclRefExpr)
        return;
      if (arrayField(c, mode, loop, depth, skip))
        return;
      recordIndirect(c, mode, loop);
      return all(Mode::Read);
    case CXCursor_CallExpr:
      return call(c, kids, mode, loop, depth, skip);
    case CXCursor_ConditionalOperator: {
      for (size_t i = 0; i < kids.size(); ++i) {
        conditional_ += i > 0 ? 1 : 0;
        expr(kids[i], Mode::Read, loop, depth + 1, skip);
        conditional_ -= i > 0 ? 1 : 0;
      }
      return;
    }
    case CXCursor_ParenExpr:
    case CXCursor_UnexposedExpr:
    case CXCursor_CStyleCastExpr:
      return all(mode);
    case CXCursor_StmtExpr:
      nest_.irregular = true;
      for (CXCursor kid : kids)
        statement(kid, loop, false, depth + 1);
      return;
    default:
      return all(Mode::Read);
    }
  }

  /// `lhs = rhs`: the first access the left side records is its target; `x = x op e` is an update (a
  /// reduction when nothing else reads x), and so is `a[i] = a[i] op e` with the element read once.
  void assignment(const std::vector<CXCursor> &kids, int loop, int depth, const std::string &skip) {
    size_t before = nest_.accesses.size();
    expr(kids[0], Mode::Write, loop, depth + 1, skip);
    size_t lhs = nest_.accesses.size();
    expr(kids[1], Mode::Read, loop, depth + 1, skip);
    if (lhs > before) { // the first access the left side records is its target
      Access &target = nest_.accesses[before];
      bool selfRead = false;
      for (size_t i = lhs; i < nest_.accesses.size(); ++i)
        if (nest_.accesses[i].base == target.base)
          selfRead = true;
      target.plainAssign = !selfRead;
      // x = x op e: an update (a reduction when nothing else reads x)
      CXCursor rhs = strip(kids[1]);
      if (selfRead && clang_getCursorKind(rhs) == CXCursor_BinaryOperator) {
        std::string rop = operatorOf(rhs);
        auto rk = childrenOf(rhs);
        std::string n2;
        CXType t2;
        if ((rop == "+" || rop == "*" || rop == "-") && rk.size() == 2 && variableRef(strip(rk[0]), &n2, &t2) &&
            n2 == target.base && target.subscripts.empty())
          target.updateOp = rop[0];
        // a[i] = a[i] op e, the element read once: both references are the update's
        if ((rop == "+" || rop == "*" || rop == "-") && rk.size() == 2 && !target.subscripts.empty()) {
          CXSourceRange left = clang_getCursorExtent(strip(rk[0]));
          size_t first = offsetOf(clang_getRangeStart(left)), last = offsetOf(clang_getRangeEnd(left));
          std::vector<size_t> same;
          for (size_t i = lhs; i < nest_.accesses.size(); ++i) {
            const Access &r = nest_.accesses[i];
            if (r.base == target.base && r.subscripts == target.subscripts && r.layout == target.layout)
              same.push_back(i);
          }
          if (same.size() == 1 && nest_.accesses[same[0]].begin == first && nest_.accesses[same[0]].end == last &&
              first < last) // the left operand is the element itself, not `a[i] * 2`
            target.updateOp = nest_.accesses[same[0]].updateOp = rop[0];
        }
      }
    }
  }

  /// A call: an element of a standard container, its length, or a function whose effects hone cannot
  /// see unless it is known to be pure.
  void call(CXCursor c, const std::vector<CXCursor> &kids, Mode mode, int loop, int depth, const std::string &skip) {
    std::string callee = str(clang_getCursorSpelling(c));
    if (callee == "operator[]" && containerElement(c, mode, loop, depth, skip))
      return;
    if ((callee == "size" || callee == "empty") && kids.size() == 1 &&
        clang_getCursorKind(kids[0]) == CXCursor_MemberRefExpr) {
      auto object = childrenOf(kids[0]);
      if (object.size() == 1 && containerAt(strip(object[0]), nullptr, loop, depth, skip))
        return; // a container's length: elements written in the nest do not change it
    }
    if (std::find(nest_.calls.begin(), nest_.calls.end(), callee) == nest_.calls.end())
      nest_.calls.push_back(callee);
    bool io = isIoFunction(callee);
    nest_.io = nest_.io || io;
    if (!isPureFunction(callee)) {
      nest_.unknownCalls = true;
      nest_.effects.push_back({callee, loop, lineOf(clang_getCursorLocation(c)), io});
    }
    for (CXCursor kid : kids)
      expr(kid, Mode::Read, loop, depth + 1, skip);
  }

  [[maybe_unused]] CXTranslationUnit tu_;
  const std::string &text_;
  const std::vector<Tok> &toks_;
  Nest &nest_;
  size_t order_ = 0;
  int conditional_ = 0;
};

/// Linearised subscripts were read back as dimensions from the loop bounds; a loop variable that the
/// body changes breaks those bounds, and such subscripts are unknown again.
void distrustLayouts(Nest &n) {
  bool changed = std::any_of(n.accesses.begin(), n.accesses.end(), [&](const Access &a) {
    return a.write && a.subscripts.empty() &&
           std::any_of(n.loops.begin(), n.loops.end(), [&](const Loop &l) { return l.var == a.base; });
  });
  if (changed)
    for (auto &a : n.accesses)
      if (!a.layout.empty())
        for (auto &d : a.subscripts)
          d.reset();
}

/// The functions defined in `c`: at file scope, in namespaces and `extern "C"` blocks, and the
/// methods, constructors and templates defined inside classes.
void functionsIn(CXCursor c, std::vector<CXCursor> &out, int depth) {
  if (depth > kMaxDepth)
    return;
  for (CXCursor kid : childrenOf(c)) {
    switch (clang_getCursorKind(kid)) {
    case CXCursor_FunctionDecl:
    case CXCursor_CXXMethod:
    case CXCursor_FunctionTemplate:
    case CXCursor_Constructor:
    case CXCursor_Destructor:
      out.push_back(kid);
      break;
    case CXCursor_Namespace:
    case CXCursor_LinkageSpec:
    case CXCursor_StructDecl:
    case CXCursor_ClassDecl:
    case CXCursor_ClassTemplate:
    case CXCursor_UnionDecl:
      functionsIn(kid, out, depth + 1);
      break;
    default: break;
    }
  }
}

/// Every top-level `for` in a function body (loops inside other loops belong to those; libclang shows
/// nothing under an OpenMP directive, whose body is a captured statement).
void findLoops(CXCursor c, std::vector<CXCursor> &out, int depth) {
  if (depth > kMaxDepth)
    return;
  for (CXCursor kid : childrenOf(c)) {
    if (clang_getCursorKind(kid) == CXCursor_ForStmt)
      out.push_back(kid);
    else
      findLoops(kid, out, depth + 1);
  }
}

/// A line that is an OpenMP directive: `#pragma omp ...`, spaces allowed around `#`.
bool isOpenMpPragmaLine(std::string_view line) {
  auto skip = [&](size_t at) { return std::min(line.find_first_not_of(" \t", at), line.size()); };
  size_t at = skip(0);
  if (at >= line.size() || line[at] != '#')
    return false;
  at = skip(at + 1);
  if (line.compare(at, 6, "pragma") != 0)
    return false;
  size_t omp = skip(at + 6);
  if (omp == at + 6 || line.compare(omp, 3, "omp") != 0)
    return false;
  return omp + 3 == line.size() || !(std::isalnum(static_cast<unsigned char>(line[omp + 3])) || line[omp + 3] == '_');
}

/// `#pragma omp` on a line of text[begin, end), or on the line just above `begin` (blank lines and
/// comment lines between): the directives clang does not show when it parses without -fopenmp.
bool openMpPragmaNear(std::string_view text, size_t begin, size_t end) {
  auto lineStart = [&](size_t at) { return at == 0 ? 0 : text.rfind('\n', at - 1) + 1; };
  begin = std::min(begin, text.size());
  end = std::min(end, text.size());
  for (size_t at = lineStart(begin); at < end;) {
    size_t eol = std::min(text.find('\n', at), text.size());
    if (isOpenMpPragmaLine(text.substr(at, eol - at)))
      return true;
    at = eol + 1;
  }
  for (size_t at = lineStart(begin); at > 0;) {
    size_t prev = lineStart(at - 1);
    std::string_view line = text.substr(prev, at - 1 - prev);
    size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string_view::npos || line.compare(first, 2, "//") == 0)
      at = prev; // blank or a comment: look further up
    else
      return isOpenMpPragmaLine(line);
  }
  return false;
}

std::string readAll(const std::string &path, std::string *why) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f) {
    *why = fmt::format("cannot read {}: {}", path, std::strerror(errno));
    return "";
  }
  std::string out;
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0 && out.size() < (64u << 20))
    out.append(buf, n);
  std::fclose(f);
  return out;
}

} // namespace

support::Expected<Program> analyze(const std::vector<std::pair<std::string, std::string>> &files,
                                   const std::vector<std::string> &args) {
  Program program;
  std::string why;
  if (!loadLibClang(&why))
    return support::Error{"libclang could not be loaded (" + why + "): install it with scripts/install-deps.sh"};
  std::unique_ptr<void, void (*)(CXIndex)> index(clang_createIndex(0, 0),
                                                 [](CXIndex i) { clang_disposeIndex(i); });
  if (!index)
    return support::Error{"libclang could not start"};
  std::vector<const char *> argv;
  for (const auto &a : args)
    argv.push_back(a.c_str());
  for (const auto &[name, path] : files) {
    FileModel fm;
    fm.name = name;
    std::string why;
    fm.text = readAll(path, &why);
    if (!why.empty()) {
      program.warnings.push_back(why);
      program.files.push_back(std::move(fm));
      continue;
    }
    CXTranslationUnit tu = nullptr;
    CXErrorCode rc = clang_parseTranslationUnit2(index.get(), path.c_str(), argv.data(), static_cast<int>(argv.size()),
                                                 nullptr, 0, CXTranslationUnit_KeepGoing, &tu);
    if (rc != CXError_Success || !tu) {
      program.warnings.push_back(fmt::format("{}: Clang could not parse it (libclang error {})", name, int(rc)));
      program.files.push_back(std::move(fm));
      continue;
    }
    std::unique_ptr<CXTranslationUnitImpl, void (*)(CXTranslationUnit)> guard(
        tu, [](CXTranslationUnit t) { clang_disposeTranslationUnit(t); });
    for (unsigned i = 0, n = clang_getNumDiagnostics(tu); i < n; ++i) {
      CXDiagnostic d = clang_getDiagnostic(tu, i);
      if (clang_getDiagnosticSeverity(d) >= CXDiagnostic_Error) {
        program.warnings.push_back(fmt::format(
            "{}: {} (its loops are not analysed)", name,
            str(clang_formatDiagnostic(d, CXDiagnostic_DisplaySourceLocation | CXDiagnostic_DisplayColumn))));
        clang_disposeDiagnostic(d);
        break;
      }
      clang_disposeDiagnostic(d);
    }
    if (!program.warnings.empty() && program.warnings.back().find(name + ":") == 0 &&
        program.warnings.back().find("not analysed") != std::string::npos) {
      program.files.push_back(std::move(fm));
      continue;
    }
    CXFile file = clang_getFile(tu, path.c_str());
    std::vector<Tok> toks;
    {
      CXSourceRange all = clang_getRange(clang_getLocationForOffset(tu, file, 0),
                                         clang_getLocationForOffset(tu, file, static_cast<unsigned>(fm.text.size())));
      CXToken *t = nullptr;
      unsigned count = 0;
      clang_tokenize(tu, all, &t, &count);
      toks.reserve(count);
      for (unsigned i = 0; i < count; ++i) {
        CXSourceRange r = clang_getTokenExtent(tu, t[i]);
        toks.push_back({str(clang_getTokenSpelling(tu, t[i])), clang_getTokenKind(t[i]), offsetOf(clang_getRangeStart(r)),
                        offsetOf(clang_getRangeEnd(r))});
      }
      clang_disposeTokens(tu, t, count);
    }
    std::vector<CXCursor> functions;
    functionsIn(clang_getTranslationUnitCursor(tu), functions, 0);
    for (CXCursor top : functions) {
      if (!clang_isCursorDefinition(top) || !clang_Location_isFromMainFile(clang_getCursorLocation(top)))
        continue;
      std::string function = str(clang_getCursorSpelling(top));
      std::vector<CXCursor> loops;
      findLoops(top, loops, 0);
      for (CXCursor l : loops) {
        if (!clang_Location_isFromMainFile(clang_getCursorLocation(l)))
          continue;
        Nest nest;
        nest.file = name;
        nest.function = function;
        NestBuilder(tu, fm.text, toks, nest).loop(l, -1);
        distrustLayouts(nest);
        nest.line = nest.loops.front().line;
        nest.endLine = nest.loops.front().endLine;
        nest.openmp = nest.openmp || openMpPragmaNear(fm.text, nest.loops.front().begin, nest.loops.front().end);
        fm.nests.push_back(std::move(nest));
      }
    }
    program.files.push_back(std::move(fm));
  }
  return program;
}

} // namespace hone::kernel::source
