// Parser for the mapper DSL.
//
// Reader's map: parseProgram drives statement parsing; each statement parser
// (parseTask, parseRegion, ...) reads one statement; expressions go through
// precedence levels parseTernary -> parseBinary -> parseUnary -> parsePostfix
// -> parsePrimary. A syntax error throws the internal SyntaxError, which the
// statement loop catches before skipping to the next statement (synchronize).
// Missing ';' at a line end is reported with a fix-it and not thrown, since
// the next statement is intact.
#include "dsl/Parser.h"

#include "dsl/Lexer.h"
#include "support/StringUtil.h"

#include <fmt/format.h>

namespace hone::dsl {
namespace {

using support::SourceRange;

struct SyntaxError {};

std::vector<std::string> names(const auto &array) { return {array.begin(), array.end()}; }

const std::vector<std::string> kStatementWords = {"Task",          "Region",        "Layout",
                                                  "InstanceLimit", "CollectMemory", "IndexTaskMap",
                                                  "SingleTaskMap", "ControlReplicate", "def",
                                                  "print",         "return"};
const std::vector<std::string> kTypeWords = {"int", "bool", "IPoint", "ISpace", "MSpace", "Task"};

bool startsStatement(TokenKind k) {
  switch (k) {
  case TokenKind::KwTask:
  case TokenKind::KwRegion:
  case TokenKind::KwLayout:
  case TokenKind::KwInstanceLimit:
  case TokenKind::KwCollectMemory:
  case TokenKind::KwIndexTaskMap:
  case TokenKind::KwSingleTaskMap:
  case TokenKind::KwControlReplicate:
  case TokenKind::KwDef:
  case TokenKind::KwPrint:
  case TokenKind::KwReturn: return true;
  default: return false;
  }
}

class Parser {
public:
  Parser(const support::SourceFile &file, support::DiagnosticEngine &diags)
      : file_(file), diags_(diags) {}

  Program run() {
    Program program;
    tokens_ = lex(file_, diags_, &program.comments);
    while (!at(TokenKind::Eof)) {
      size_t before = pos_;
      try {
        program.stmts.push_back(parseStatement(/*inFunction=*/false));
      } catch (const SyntaxError &) {
        rememberBrokenName(before, program.brokenNames);
        synchronize(/*inFunction=*/false);
      }
      if (pos_ == before) // never loop without progress
        advance();
    }
    program.brokenNames.insert(program.brokenNames.end(), brokenLocals_.begin(), brokenLocals_.end());
    return program;
  }

private:
  // The name a failed statement was defining, if any ('x = ...', 'def f').
  void rememberBrokenName(size_t start, std::vector<std::string> &out) const {
    if (start + 1 >= tokens_.size())
      return;
    const Token &a = tokens_[start], &b = tokens_[start + 1];
    if ((a.kind == TokenKind::Identifier && b.kind == TokenKind::Assign) ||
        (a.kind == TokenKind::KwDef && b.kind == TokenKind::Identifier))
      out.push_back(std::string(a.kind == TokenKind::KwDef ? b.text : a.text));
  }

  // ---- token helpers ------------------------------------------------------
  const Token &cur() const { return tokens_[pos_]; }
  const Token &peek(size_t n = 1) const { return tokens_[std::min(pos_ + n, tokens_.size() - 1)]; }
  const Token &prev() const { return tokens_[pos_ == 0 ? 0 : pos_ - 1]; }
  bool at(TokenKind k) const { return cur().kind == k; }
  const Token &advance() {
    const Token &t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size())
      ++pos_;
    return t;
  }
  bool accept(TokenKind k) {
    if (!at(k))
      return false;
    advance();
    return true;
  }
  // True when the current token is the first one on its line.
  bool firstOnLine() const { return pos_ == 0 || prev().range.end.line < cur().range.begin.line; }

  SourceRange from(const SourceRange &begin) const { return SourceRange{begin.begin, prev().range.end}; }
  SourceRange endOfPrev() const { return SourceRange{prev().range.end, prev().range.end}; }

  std::string found() const {
    const Token &t = cur();
    if (t.kind == TokenKind::Eof)
      return "end of file";
    return fmt::format("'{}'", t.text);
  }

  // Reports at the current token and unwinds to the statement loop. An
  // invalid character was already reported by the lexer: no second error.
  [[noreturn]] void fail(const std::string &message) {
    if (!at(TokenKind::Invalid))
      diags_.error(cur().range, message);
    throw SyntaxError{};
  }

  const Token &expect(TokenKind k, std::string_view context) {
    if (!at(k))
      fail(fmt::format("expected {} {}, found {}", describe(k), context, found()));
    return advance();
  }

  // ';' ends every statement. When it is missing at the end of a line, the
  // next line is intact: report with a fix-it and carry on without skipping.
  void expectSemicolon(std::string_view what) {
    if (accept(TokenKind::Semicolon))
      return;
    if (at(TokenKind::Eof) || at(TokenKind::RBrace) || cur().range.begin.line > prev().range.end.line) {
      diags_.error(endOfPrev(), fmt::format("expected ';' after {}", what)).fixIt(endOfPrev(), ";");
      return;
    }
    fail(fmt::format("expected ';' after {}, found {}", what, found()));
  }

  // Skips to the start of the next statement: past a ';' at brace depth 0,
  // past a whole '{ ... }' block, or up to a statement keyword that begins a line.
  void synchronize(bool inFunction) {
    int depth = 0;
    bool first = true; // always move past the token that failed
    while (!at(TokenKind::Eof)) {
      TokenKind k = cur().kind;
      if (depth == 0 && k == TokenKind::Semicolon) {
        advance();
        return;
      }
      if (k == TokenKind::LBrace)
        ++depth;
      if (k == TokenKind::RBrace) {
        if (depth == 0) {
          if (inFunction)
            return; // the body's closing brace
          advance();
          return;
        }
        if (--depth == 0) {
          advance();
          return;
        }
      }
      if (!first && depth == 0 && firstOnLine() &&
          (startsStatement(k) || (k == TokenKind::Identifier && peek().kind == TokenKind::Assign)))
        return;
      first = false;
      advance();
    }
  }

  // ---- statements ---------------------------------------------------------

  // statement := task | region | layout | instance_limit | collect | index_map
  //            | single_map | control_replicate | assign | print | def | return
  Stmt parseStatement(bool inFunction) {
    const Token start = cur();
    switch (start.kind) {
    case TokenKind::KwTask: return parseTask();
    case TokenKind::KwRegion: return parseRegion();
    case TokenKind::KwLayout: return parseLayout();
    case TokenKind::KwInstanceLimit: return parseInstanceLimit();
    case TokenKind::KwCollectMemory: return parseCollectMemory();
    case TokenKind::KwIndexTaskMap:
    case TokenKind::KwSingleTaskMap: return parseTaskMap();
    case TokenKind::KwControlReplicate: return parseControlReplicate();
    case TokenKind::KwPrint: return parsePrint();
    case TokenKind::KwDef:
      if (inFunction)
        fail("functions cannot be nested; define 'def' at top level");
      return parseDef();
    case TokenKind::KwReturn:
      if (!inFunction) {
        diags_.error(start.range, "'return' outside a function");
        throw SyntaxError{};
      }
      return parseReturn();
    case TokenKind::Identifier:
      if (peek().kind == TokenKind::Assign)
        return parseAssign();
      unknownStatement();
    default:
      if (peek().kind == TokenKind::Assign && start.text.size() > 0 && std::isalpha(static_cast<unsigned char>(start.text[0])))
        fail(fmt::format("'{}' is a reserved word of the DSL and cannot be assigned; choose another name", start.text));
      fail(fmt::format("expected a statement, found {}", found()));
    }
  }

  [[noreturn]] void unknownStatement() {
    const Token &t = cur();
    auto builder = diags_.error(t.range, fmt::format("unknown statement '{}'", t.text));
    if (auto s = support::closestMatch(t.text, kStatementWords)) {
      builder.note(t.range, fmt::format("did you mean '{}'?", *s)).fixIt(t.range, *s);
    } else if (peek().kind == TokenKind::LParen) {
      builder.note("a statement cannot be a bare call; assign its result: 'x = f(...);'");
    } else {
      builder.note("statements start with Task, Region, Layout, InstanceLimit, CollectMemory, IndexTaskMap, "
                   "SingleTaskMap, ControlReplicate, def, print, or 'name ='");
    }
    throw SyntaxError{};
  }

  // task_selector := '*' | name (',' name)* | proc_kind (when allowed)
  Selector parseTaskSelector(bool allowProcKind, std::string_view context) {
    Selector sel;
    const Token &t = cur();
    if (accept(TokenKind::Star)) {
      sel.kind = Selector::Kind::Wildcard;
      sel.range = t.range;
      return sel;
    }
    if (allowProcKind && at(TokenKind::ProcKind)) {
      sel.kind = Selector::Kind::ProcKind;
      sel.proc = *parseProcKind(t.text);
      sel.range = t.range;
      advance();
      return sel;
    }
    if (!isNameToken(cur().kind))
      fail(fmt::format("expected a task name or '*' {}, found {}", context, found()));
    sel.kind = Selector::Kind::Names;
    sel.names.push_back(Ident{std::string(cur().text), cur().range});
    advance();
    while (at(TokenKind::Comma) && isNameToken(peek().kind)) {
      advance();
      sel.names.push_back(Ident{std::string(cur().text), cur().range});
      advance();
    }
    sel.range = from(t.range);
    return sel;
  }

  // Task and region names may collide with property words (a task called
  // 'merge'); the position makes them unambiguous.
  static bool isNameToken(TokenKind k) { return k == TokenKind::Identifier || k == TokenKind::Property; }

  // region_selector := '*' | name | integer
  Selector parseRegionSelector(std::string_view context) {
    Selector sel;
    const Token &t = cur();
    sel.range = t.range;
    if (accept(TokenKind::Star))
      return sel;
    if (at(TokenKind::Integer)) {
      sel.kind = Selector::Kind::Index;
      sel.index = t.intValue;
      advance();
      return sel;
    }
    if (isNameToken(t.kind)) {
      sel.kind = Selector::Kind::Names;
      sel.names.push_back(Ident{std::string(t.text), t.range});
      advance();
      return sel;
    }
    fail(fmt::format("expected a region name, an argument index or '*' {}, found {}", context, found()));
  }

  // Reports a word that is not one of `valid` (a kind or constraint name) with a did-you-mean.
  void reportUnknownWord(const Token &t, std::string_view what, const std::vector<std::string> &valid) {
    auto b = diags_.error(t.range, fmt::format("unknown {} '{}'", what, t.text));
    if (auto s = support::closestMatch(t.text, valid))
      b.note(t.range, fmt::format("did you mean '{}'?", *s)).fixIt(t.range, *s);
    else
      b.note(fmt::format("valid {}s: {}", what, support::joinOr(valid)));
  }

  // proc_list := proc_kind (',' proc_kind)*      mem_list := mem_kind (',' mem_kind)*
  // Kinds of the other family and unknown words are reported and skipped.
  template <typename K>
  std::vector<KindRef<K>> parseKindList(std::string_view context, TokenKind want, TokenKind other,
                                        std::optional<K> (*parseKind)(std::string_view), std::string_view what,
                                        std::string_view otherWhat, const std::vector<std::string> &valid) {
    std::vector<KindRef<K>> list;
    do {
      const Token &t = cur();
      if (at(want)) {
        list.push_back({*parseKind(t.text), t.range});
        advance();
      } else if (at(TokenKind::Identifier)) {
        reportUnknownWord(t, what, valid);
        advance();
      } else if (at(other)) {
        diags_.error(t.range, fmt::format("'{}' is a {}; expected a {} {}", t.text, otherWhat, what, context))
            .note(fmt::format("{}s: {}", what, support::joinOr(valid)));
        advance();
      } else {
        fail(fmt::format("expected a {} {}, found {}", what, context, found()));
      }
    } while (accept(TokenKind::Comma));
    return list;
  }

  std::vector<KindRef<ProcKind>> parseProcList(std::string_view context) {
    return parseKindList<ProcKind>(context, TokenKind::ProcKind, TokenKind::MemKind, parseProcKind,
                                   "processor kind", "memory kind", names(kProcKindNames));
  }

  std::vector<KindRef<MemKind>> parseMemList(std::string_view context) {
    return parseKindList<MemKind>(context, TokenKind::MemKind, TokenKind::ProcKind, parseMemKind, "memory kind",
                                  "processor kind", names(kMemKindNames));
  }

  // task := 'Task' task_selector proc_list ';'
  Stmt parseTask() {
    const Token start = advance();
    TaskStmt s;
    s.tasks = parseTaskSelector(false, "after 'Task'");
    s.procs = parseProcList("in the Task statement");
    expectSemicolon("the Task statement");
    return Stmt{from(start.range), std::move(s)};
  }

  // region := 'Region' task_selector region_selector (proc_kind | '*') mem_list ';'
  Stmt parseRegion() {
    const Token start = advance();
    RegionStmt s;
    s.task = parseTaskSelector(false, "after 'Region'");
    if (s.task.names.size() > 1)
      diags_.error(s.task.range, "Region takes one task name or '*'")
          .note("write one Region statement per task");
    s.region = parseRegionSelector("in the Region statement");
    const Token &p = cur();
    s.procRange = p.range;
    if (accept(TokenKind::Star)) {
      // any processor
    } else if (at(TokenKind::ProcKind)) {
      s.proc = KindRef<ProcKind>{*parseProcKind(p.text), p.range};
      advance();
    } else if (at(TokenKind::MemKind)) {
      diags_.error(p.range, "missing processor kind before the memory list")
          .note("Region statements read: Region <task> <region> <processor kind or *> <memories>;")
          .fixIt(SourceRange{p.range.begin, p.range.begin}, "* ");
    } else if (at(TokenKind::Identifier)) {
      reportUnknownWord(p, "processor kind", names(kProcKindNames));
      advance();
    } else {
      fail(fmt::format("expected a processor kind or '*' in the Region statement, found {}", found()));
    }
    s.mems = parseMemList("in the Region statement");
    expectSemicolon("the Region statement");
    return Stmt{from(start.range), std::move(s)};
  }

  // layout := 'Layout' task_selector region_selector (mem_kind | proc_kind | '*') constraint* ';'
  // constraint := SOA | AOS | C_order | F_order | Compact | Exact | No_Align | 'Align' cmp integer
  Stmt parseLayout() {
    const Token start = advance();
    LayoutStmt s;
    s.task = parseTaskSelector(false, "after 'Layout'");
    if (s.task.names.size() > 1)
      diags_.error(s.task.range, "Layout takes one task name or '*'").note("write one Layout statement per task");
    s.region = parseRegionSelector("in the Layout statement");
    const Token &t = cur();
    s.targetRange = t.range;
    if (accept(TokenKind::Star)) {
      s.target = LayoutStmt::Target::Any;
    } else if (at(TokenKind::MemKind)) {
      s.target = LayoutStmt::Target::Memory;
      s.mem = *parseMemKind(t.text);
      advance();
    } else if (at(TokenKind::ProcKind)) {
      s.target = LayoutStmt::Target::Processor;
      s.proc = *parseProcKind(t.text);
      diags_.warning(t.range, fmt::format("Layout's third field is a memory kind or '*'; '{}' is a processor kind, "
                                          "read as 'instances used by tasks running on {}'",
                                          t.text, t.text));
      advance();
    } else if (at(TokenKind::Constraint)) {
      diags_.error(t.range, "missing memory kind before the layout constraints")
          .note("Layout statements read: Layout <task> <region> <memory kind or *> <constraints>;")
          .fixIt(SourceRange{t.range.begin, t.range.begin}, "* ");
    } else if (at(TokenKind::Identifier)) {
      reportUnknownWord(t, "memory kind", names(kMemKindNames));
      advance();
    } else {
      fail(fmt::format("expected a memory kind or '*' in the Layout statement, found {}", found()));
    }
    // Constraints may continue on later lines; an identifier counts as a
    // misspelt constraint only on the same line (on a new line it is more
    // likely the next statement after a missing ';').
    while (at(TokenKind::Constraint) ||
           (at(TokenKind::Identifier) && cur().range.begin.line == prev().range.end.line)) {
      const Token &c = cur();
      if (at(TokenKind::Constraint)) {
        advance();
        LayoutConstraint lc;
        lc.range = c.range;
        if (c.text == "SOA")
          lc.kind = LayoutConstraint::Kind::SOA;
        else if (c.text == "AOS")
          lc.kind = LayoutConstraint::Kind::AOS;
        else if (c.text == "C_order")
          lc.kind = LayoutConstraint::Kind::COrder;
        else if (c.text == "F_order")
          lc.kind = LayoutConstraint::Kind::FOrder;
        else if (c.text == "Compact")
          lc.kind = LayoutConstraint::Kind::Compact;
        else if (c.text == "Exact")
          lc.kind = LayoutConstraint::Kind::Exact;
        else if (c.text == "No_Align")
          lc.kind = LayoutConstraint::Kind::NoAlign;
        else {
          lc.kind = LayoutConstraint::Kind::Align;
          if (!parseAlign(lc, c))
            continue;
        }
        lc.range = from(c.range);
        s.constraints.push_back(lc);
      } else if (at(TokenKind::Identifier)) {
        reportUnknownWord(c, "layout constraint", names(kConstraintNames));
        advance();
      } else {
        break;
      }
    }
    expectSemicolon("the Layout statement");
    return Stmt{from(start.range), std::move(s)};
  }

  // 'Align' ('==' | '!=' | '<' | '<=' | '>' | '>=') positive_integer
  bool parseAlign(LayoutConstraint &lc, const Token &alignTok) {
    static const char *kHelp = "Align needs a comparison and a positive byte count, e.g. 'Align==128'";
    std::optional<BinaryOp> op;
    switch (cur().kind) {
    case TokenKind::EqEq: op = BinaryOp::Eq; break;
    case TokenKind::NotEq: op = BinaryOp::Ne; break;
    case TokenKind::Less: op = BinaryOp::Lt; break;
    case TokenKind::LessEq: op = BinaryOp::Le; break;
    case TokenKind::Greater: op = BinaryOp::Gt; break;
    case TokenKind::GreaterEq: op = BinaryOp::Ge; break;
    case TokenKind::Assign:
      diags_.error(cur().range, "Align compares with '==', not '='").fixIt(cur().range, "==");
      op = BinaryOp::Eq;
      break;
    default: break;
    }
    if (!op) {
      diags_.error(alignTok.range, "Align without a comparison").note(kHelp);
      if (at(TokenKind::Integer))
        advance(); // 'Align 128': the count is there, only the comparison is missing
      return false;
    }
    advance();
    if (!at(TokenKind::Integer)) {
      diags_.error(at(TokenKind::Minus) ? cur().range : endOfPrev(),
                   at(TokenKind::Minus) ? "Align's byte count must be a positive integer"
                                        : "Align without a byte count")
          .note(kHelp);
      if (at(TokenKind::Minus))
        advance();
      if (at(TokenKind::Integer))
        advance();
      return false;
    }
    const Token &n = advance();
    if (n.intValue <= 0) {
      diags_.error(n.range, "Align's byte count must be a positive integer").note(kHelp);
      return false;
    }
    lc.alignOp = *op;
    lc.alignBytes = n.intValue;
    return true;
  }

  // instance_limit := 'InstanceLimit' task_selector proc_kind? integer ';'
  Stmt parseInstanceLimit() {
    const Token start = advance();
    InstanceLimitStmt s;
    s.task = parseTaskSelector(false, "after 'InstanceLimit'");
    if (at(TokenKind::ProcKind)) {
      s.proc = KindRef<ProcKind>{*parseProcKind(cur().text), cur().range};
      advance();
    }
    if (at(TokenKind::Minus)) {
      diags_.error(cur().range, "InstanceLimit must be a positive integer");
      advance();
    }
    const Token &n = expect(TokenKind::Integer, "(the number of instances) in the InstanceLimit statement");
    s.limit = n.intValue;
    s.limitRange = n.range;
    if (n.intValue < 1)
      diags_.error(n.range, "InstanceLimit must be at least 1").note("a limit of 0 would never let the task map");
    expectSemicolon("the InstanceLimit statement");
    return Stmt{from(start.range), std::move(s)};
  }

  // collect := 'CollectMemory' task_selector region_selector ';'
  Stmt parseCollectMemory() {
    const Token start = advance();
    CollectMemoryStmt s;
    s.task = parseTaskSelector(false, "after 'CollectMemory'");
    s.region = parseRegionSelector("in the CollectMemory statement");
    expectSemicolon("the CollectMemory statement");
    return Stmt{from(start.range), std::move(s)};
  }

  // index_map := 'IndexTaskMap' (task_selector | proc_kind) name ';'
  // single_map := 'SingleTaskMap' (task_selector | proc_kind) name ';'
  Stmt parseTaskMap() {
    const Token start = advance();
    TaskMapStmt s;
    s.single = start.kind == TokenKind::KwSingleTaskMap;
    std::string ctx = fmt::format("after '{}'", start.text);
    s.tasks = parseTaskSelector(true, ctx);
    if (!at(TokenKind::Identifier)) {
      if (s.tasks.kind == Selector::Kind::Names && s.tasks.names.size() >= 1 &&
          (at(TokenKind::Semicolon) || at(TokenKind::Eof)))
        fail(fmt::format("{} needs a placement function after the task names", start.text));
      fail(fmt::format("expected the name of a placement function in the {} statement, found {}", start.text,
                       found()));
    }
    s.function = Ident{std::string(cur().text), cur().range};
    advance();
    expectSemicolon(fmt::format("the {} statement", start.text));
    return Stmt{from(start.range), std::move(s)};
  }

  // control_replicate := 'ControlReplicate' name (',' name)* ';'
  Stmt parseControlReplicate() {
    const Token start = advance();
    ControlReplicateStmt s;
    if (at(TokenKind::Star))
      fail("ControlReplicate names its tasks; '*' is not supported");
    s.tasks = parseTaskSelector(false, "after 'ControlReplicate'");
    expectSemicolon("the ControlReplicate statement");
    return Stmt{from(start.range), std::move(s)};
  }

  // assign := name '=' expr ';'
  Stmt parseAssign() {
    const Token name = advance();
    advance(); // '='
    AssignStmt s;
    s.target = Ident{std::string(name.text), name.range};
    s.value = parseExpr();
    expectSemicolon("the assignment");
    return Stmt{from(name.range), std::move(s)};
  }

  // print := 'print' '(' string (',' expr)* ')' ';'
  Stmt parsePrint() {
    const Token start = advance();
    PrintStmt s;
    expect(TokenKind::LParen, "after 'print'");
    const Token &f = expect(TokenKind::String, "(the format string) in print");
    if (f.unterminated)
      throw SyntaxError{}; // reported by the lexer
    s.format = std::string(f.stringValue());
    s.formatRange = f.range;
    while (accept(TokenKind::Comma))
      s.args.push_back(parseExpr());
    expect(TokenKind::RParen, "to close print(");
    expectSemicolon("the print statement");
    return Stmt{from(start.range), std::move(s)};
  }

  // return := 'return' expr ';'
  Stmt parseReturn() {
    const Token start = advance();
    ReturnStmt s;
    s.value = parseExpr();
    expectSemicolon("the return statement");
    return Stmt{from(start.range), std::move(s)};
  }

  // def := 'def' name '(' (type name (',' type name)*)? ')' '{' body_stmt* '}'
  // body_stmt := assign | return | print
  Stmt parseDef() {
    const Token start = advance();
    FuncDef f;
    if (!at(TokenKind::Identifier)) {
      if (at(TokenKind::Property) || isReservedWord(cur().text))
        fail(fmt::format("'{}' is a reserved word of the DSL; choose another function name", cur().text));
      fail(fmt::format("expected a function name after 'def', found {}", found()));
    }
    f.name = Ident{std::string(cur().text), cur().range};
    advance();
    expect(TokenKind::LParen, fmt::format("after the function name '{}'", f.name.text));
    if (!at(TokenKind::RParen)) {
      do {
        f.params.push_back(parseParam());
      } while (accept(TokenKind::Comma));
    }
    expect(TokenKind::RParen, "to close the parameter list");
    if (at(TokenKind::Colon)) {
      // The paper's Python-like form. LLMs write it; give the exact fix:
      // '{' for the ':' and a '}' after the indented body.
      const Token colon = advance();
      f.colonForm = true;
      parseColonBody(f, start);
      if (accept(TokenKind::RBrace)) { // the body is closed already: only the ':' is wrong
        diags_.error(colon.range, "syntax error, unexpected ':', expecting '{': function bodies are wrapped in { }")
            .fixIt(colon.range, "{");
        return Stmt{from(start.range), std::move(f)};
      }
      diags_.error(colon.range, "syntax error, unexpected ':', expecting '{': function bodies are wrapped in { }; "
                                "remove ':'")
          .fixIt(colon.range, "{")
          .fixIt(endOfPrev(), "\n}")
          .note("close the body with '}' after its last statement");
      return Stmt{from(start.range), std::move(f)};
    }
    const Token &open = expect(TokenKind::LBrace, fmt::format("to open the body of '{}'", f.name.text));
    while (!at(TokenKind::RBrace) && !at(TokenKind::Eof)) {
      if (startsStatement(cur().kind) && cur().kind != TokenKind::KwReturn && cur().kind != TokenKind::KwPrint &&
          firstOnLine() && cur().range.begin.column == 1) {
        break; // a top-level statement: the body's '}' is missing
      }
      size_t before = pos_;
      try {
        f.body.push_back(parseStatement(/*inFunction=*/true));
      } catch (const SyntaxError &) {
        rememberBrokenName(before, brokenLocals_);
        f.incomplete = true;
        synchronize(/*inFunction=*/true);
      }
      if (pos_ == before)
        advance();
    }
    if (!accept(TokenKind::RBrace)) {
      diags_.error(endOfPrev(), fmt::format("expected '}}' to close the body of '{}'", f.name.text))
          .note(open.range, "the body opens here")
          .fixIt(endOfPrev(), "\n}");
    }
    return Stmt{from(start.range), std::move(f)};
  }

  // Recovery for 'def f(...):': the body is the following lines indented
  // past column 1.
  void parseColonBody(FuncDef &f, const Token &defTok) {
    while (!at(TokenKind::Eof) && cur().range.begin.line > defTok.range.begin.line && cur().range.begin.column > 1 &&
           (at(TokenKind::KwReturn) || at(TokenKind::KwPrint) ||
            (at(TokenKind::Identifier) && peek().kind == TokenKind::Assign))) {
      size_t before = pos_;
      try {
        f.body.push_back(parseStatement(/*inFunction=*/true));
      } catch (const SyntaxError &) {
        f.incomplete = true;
        synchronize(/*inFunction=*/true);
      }
      if (pos_ == before)
        advance();
    }
  }

  // param := type name
  Param parseParam() {
    Param p;
    const Token &t = cur();
    p.typeRange = t.range;
    switch (t.kind) {
    case TokenKind::KwInt: p.type = ParamType::Int; break;
    case TokenKind::KwBool: p.type = ParamType::Bool; break;
    case TokenKind::KwIPoint: p.type = ParamType::IPoint; break;
    case TokenKind::KwISpace: p.type = ParamType::ISpace; break;
    case TokenKind::KwMSpace: p.type = ParamType::MSpace; break;
    case TokenKind::KwTask: p.type = ParamType::Task; break;
    case TokenKind::Identifier:
      if (peek().kind == TokenKind::Comma || peek().kind == TokenKind::RParen) {
        diags_.error(t.range, fmt::format("parameter '{}' needs a type", t.text))
            .note(fmt::format("parameter types: {}", support::joinOr(kTypeWords)));
        throw SyntaxError{};
      }
      reportUnknownWord(t, "parameter type", kTypeWords);
      throw SyntaxError{};
    default: fail(fmt::format("expected a parameter type, found {}", found()));
    }
    advance();
    if (!at(TokenKind::Identifier)) {
      if (isReservedWord(cur().text) && cur().kind != TokenKind::Eof)
        fail(fmt::format("'{}' is a reserved word of the DSL; choose another parameter name", cur().text));
      fail(fmt::format("expected a parameter name after '{}', found {}", t.text, found()));
    }
    p.name = Ident{std::string(cur().text), cur().range};
    advance();
    return p;
  }

  // ---- expressions --------------------------------------------------------

  ExprPtr make(ExprKind k, SourceRange r) { return std::make_unique<Expr>(k, r); }

  // Every node with operands goes through here: its height is known, and a tree deeper than
  // kMaxExprDepth is refused where it grows past the limit.
  ExprPtr sealed(ExprPtr e) {
    for (const auto &o : e->operands)
      if (o)
        e->height = std::max(e->height, o->height + 1);
    if (e->height > kMaxExprDepth) {
      diags_.error(e->range, fmt::format("expression nested deeper than {} levels", kMaxExprDepth));
      throw SyntaxError{};
    }
    return e;
  }

  // The parser's own recursion, bounded the same way: parentheses add no node, so `((((1))))` is
  // deep here before it is deep as a tree. One level of nesting enters parseTernary and parseUnary.
  struct Nesting {
    Parser &p;
    explicit Nesting(Parser &parser) : p(parser) {
      if (++p.nesting_ > 2 * kMaxExprDepth) {
        --p.nesting_;
        p.fail(fmt::format("expression nested deeper than {} levels", kMaxExprDepth));
      }
    }
    ~Nesting() { --p.nesting_; }
    Nesting(const Nesting &) = delete;
    Nesting &operator=(const Nesting &) = delete;
  };

  ExprPtr parseExpr() { return parseTernary(); }

  // ternary := or_expr ('?' ternary ':' ternary)?
  ExprPtr parseTernary() {
    Nesting nesting(*this);
    ExprPtr cond = parseBinary(1);
    if (!at(TokenKind::Question))
      return cond;
    advance();
    ExprPtr a = parseTernary();
    expect(TokenKind::Colon, "in the conditional expression 'c ? a : b'");
    bool parenthesized = at(TokenKind::LParen);
    ExprPtr b = parseTernary();
    if (b->kind == ExprKind::Ternary && !parenthesized)
      // hone reads `c ? a : d ? x : y` as `c ? a : (d ? x : y)`; the reference implementation (DSLMapper)
      // as `(c ? a : d) ? x : y`. Say so, and give the parentheses that keep hone's meaning everywhere.
      diags_.warning(b->range, "a conditional in the else branch of another: hone reads 'c ? a : (d ? x : y)', the "
                               "reference implementation '(c ? a : d) ? x : y'; add parentheses")
          .fixIt(SourceRange{b->range.begin, b->range.begin}, "(")
          .fixIt(SourceRange{b->range.end, b->range.end}, ")");
    auto e = make(ExprKind::Ternary, SourceRange{cond->range.begin, b->range.end});
    e->operands.push_back(std::move(cond));
    e->operands.push_back(std::move(a));
    e->operands.push_back(std::move(b));
    return sealed(std::move(e));
  }

  std::optional<BinaryOp> binaryOpAt() const {
    switch (cur().kind) {
    case TokenKind::OrOr: return BinaryOp::Or;
    case TokenKind::AndAnd: return BinaryOp::And;
    case TokenKind::EqEq: return BinaryOp::Eq;
    case TokenKind::NotEq: return BinaryOp::Ne;
    case TokenKind::Less: return BinaryOp::Lt;
    case TokenKind::Greater: return BinaryOp::Gt;
    case TokenKind::LessEq: return BinaryOp::Le;
    case TokenKind::GreaterEq: return BinaryOp::Ge;
    case TokenKind::Plus: return BinaryOp::Add;
    case TokenKind::Minus: return BinaryOp::Sub;
    case TokenKind::Star: return BinaryOp::Mul;
    case TokenKind::Slash: return BinaryOp::Div;
    case TokenKind::Percent: return BinaryOp::Mod;
    default: return std::nullopt;
    }
  }

  // binary := unary (op unary)*, by precedence climbing; all operators are left-associative. A run of
  // operators of one precedence makes one node (a chain), so `1+1+...+1` is as deep as `1+1`. A left
  // operand in parentheses that is a chain of the same precedence joins it: `(a + b) - c` means
  // `a + b - c`, and both read as one tree (as they did when every operator was a node of its own).
  ExprPtr parseBinary(int minPrec) {
    ExprPtr lhs = parseUnary();
    while (auto op = binaryOpAt()) {
      int prec = precedence(*op);
      if (prec < minPrec)
        break;
      advance();
      ExprPtr rhs = parseBinary(prec + 1);
      if (lhs->kind == ExprKind::Binary && precedence(lhs->binaryOps.front()) == prec) {
        lhs->range.end = rhs->range.end;
        lhs->height = std::max(lhs->height, rhs->height + 1);
        lhs->binaryOps.push_back(*op);
        lhs->operands.push_back(std::move(rhs));
        if (lhs->height > kMaxExprDepth) {
          diags_.error(lhs->range, fmt::format("expression nested deeper than {} levels", kMaxExprDepth));
          throw SyntaxError{};
        }
        continue;
      }
      auto e = make(ExprKind::Binary, SourceRange{lhs->range.begin, rhs->range.end});
      e->binaryOps.push_back(*op);
      e->operands.push_back(std::move(lhs));
      e->operands.push_back(std::move(rhs));
      lhs = sealed(std::move(e));
    }
    return lhs;
  }

  // unary := ('-' | '!') unary | postfix
  ExprPtr parseUnary() {
    Nesting nesting(*this);
    if (at(TokenKind::Minus) || at(TokenKind::Bang)) {
      const Token op = advance();
      ExprPtr inner = parseUnary();
      auto e = make(ExprKind::Unary, SourceRange{op.range.begin, inner->range.end});
      e->unaryOp = op.kind == TokenKind::Minus ? UnaryOp::Neg : UnaryOp::Not;
      e->operands.push_back(std::move(inner));
      return sealed(std::move(e));
    }
    return parsePostfix(parsePrimary());
  }

  // postfix := primary ('(' args ')' | '[' index ']' | '.' property)*
  ExprPtr parsePostfix(ExprPtr base) {
    while (true) {
      if (at(TokenKind::LParen)) {
        advance();
        auto call = make(ExprKind::Call, base->range);
        call->operands.push_back(std::move(base));
        if (!at(TokenKind::RParen)) {
          do {
            call->operands.push_back(parseListItem());
          } while (accept(TokenKind::Comma));
        }
        expect(TokenKind::RParen, "to close the argument list");
        call->range = from(call->range);
        base = sealed(std::move(call));
      } else if (at(TokenKind::LBracket)) {
        base = parseIndex(std::move(base));
      } else if (at(TokenKind::Dot)) {
        advance();
        const Token &p = cur();
        if (at(TokenKind::Property)) {
          advance();
        } else if (at(TokenKind::Identifier)) {
          reportUnknownWord(p, "property", names(kPropertyNames));
          advance();
        } else {
          fail(fmt::format("expected a property name after '.', found {}", found()));
        }
        auto e = make(ExprKind::Property, SourceRange{base->range.begin, p.range.end});
        e->name = std::string(p.text);
        e->nameRange = p.range;
        e->operands.push_back(std::move(base));
        base = sealed(std::move(e));
      } else {
        return base;
      }
    }
  }

  // index := '[' (slice | item (',' item)*) ']'     slice := expr? ':' expr?
  ExprPtr parseIndex(ExprPtr base) {
    advance(); // '['
    SourceRange begin = base->range;
    if (at(TokenKind::Colon) || !at(TokenKind::RBracket)) {
      ExprPtr first;
      if (!at(TokenKind::Colon))
        first = parseListItem();
      if (accept(TokenKind::Colon)) {
        auto e = make(ExprKind::Slice, begin);
        e->operands.push_back(std::move(base));
        e->operands.push_back(std::move(first));
        e->operands.push_back(at(TokenKind::RBracket) ? nullptr : parseExpr());
        expect(TokenKind::RBracket, "to close the slice");
        e->range = from(begin);
        return sealed(std::move(e));
      }
      auto e = make(ExprKind::Index, begin);
      e->operands.push_back(std::move(base));
      e->operands.push_back(std::move(first));
      while (accept(TokenKind::Comma))
        e->operands.push_back(parseListItem());
      expect(TokenKind::RBracket, "to close the index");
      e->range = from(begin);
      return sealed(std::move(e));
    }
    fail("an index needs at least one expression or a slice");
  }

  // item := '*' | '*' unary | expr      ('*' alone: any processor; '*e': unpack)
  ExprPtr parseListItem() {
    if (at(TokenKind::Star)) {
      const Token star = advance();
      if (at(TokenKind::Comma) || at(TokenKind::RBracket) || at(TokenKind::RParen))
        return make(ExprKind::Star, star.range);
      ExprPtr inner = parseUnary();
      auto e = make(ExprKind::Unpack, SourceRange{star.range.begin, inner->range.end});
      e->operands.push_back(std::move(inner));
      return sealed(std::move(e));
    }
    return parseExpr();
  }

  // primary := integer | True | False | name | proc_kind | mem_kind
  //          | '(' item (',' item)* ','? ')' | 'tuple' '(' expr 'for' name 'in' expr ')'
  ExprPtr parsePrimary() {
    const Token t = cur();
    switch (t.kind) {
    case TokenKind::Integer: {
      advance();
      auto e = make(ExprKind::Int, t.range);
      e->intValue = t.intValue;
      return e;
    }
    case TokenKind::KwTrue:
    case TokenKind::KwFalse: {
      advance();
      auto e = make(ExprKind::Bool, t.range);
      e->boolValue = t.kind == TokenKind::KwTrue;
      return e;
    }
    case TokenKind::Identifier: {
      advance();
      auto e = make(ExprKind::Name, t.range);
      e->name = std::string(t.text);
      return e;
    }
    case TokenKind::ProcKind: {
      advance();
      auto e = make(ExprKind::ProcKind, t.range);
      e->proc = *parseProcKind(t.text);
      return e;
    }
    case TokenKind::MemKind: {
      advance();
      auto e = make(ExprKind::MemKind, t.range);
      e->mem = *parseMemKind(t.text);
      return e;
    }
    case TokenKind::Star: return parseListItem();
    case TokenKind::LParen: {
      advance();
      ExprPtr first = parseListItem();
      if (accept(TokenKind::RParen)) {
        if (first->kind == ExprKind::Unpack || first->kind == ExprKind::Star) {
          auto tuple = make(ExprKind::Tuple, from(t.range));
          tuple->operands.push_back(std::move(first));
          return sealed(std::move(tuple));
        }
        return first; // parenthesised expression
      }
      auto tuple = make(ExprKind::Tuple, t.range);
      tuple->operands.push_back(std::move(first));
      expect(TokenKind::Comma, "or ')' in the parenthesised expression");
      while (!at(TokenKind::RParen)) {
        tuple->operands.push_back(parseListItem());
        if (!accept(TokenKind::Comma))
          break;
      }
      expect(TokenKind::RParen, "to close the tuple");
      tuple->range = from(t.range);
      return sealed(std::move(tuple));
    }
    case TokenKind::KwTuple: {
      advance();
      expect(TokenKind::LParen, "after 'tuple' (write tuple(e for i in t))");
      auto e = make(ExprKind::Comprehension, t.range);
      e->operands.push_back(parseExpr());
      expect(TokenKind::KwFor, "in tuple(e for i in t)");
      const Token &var = expect(TokenKind::Identifier, "(the loop variable) in tuple(e for i in t)");
      e->name = std::string(var.text);
      e->nameRange = var.range;
      expect(TokenKind::KwIn, "in tuple(e for i in t)");
      e->operands.push_back(parseExpr());
      expect(TokenKind::RParen, "to close tuple(...)");
      e->range = from(t.range);
      return sealed(std::move(e));
    }
    case TokenKind::String:
      if (t.unterminated)
        throw SyntaxError{}; // reported by the lexer
      fail("strings are only allowed as the first argument of print");
    case TokenKind::Property:
      fail(fmt::format("'{}' is a property name and a reserved word; use it after '.', as in 'm.{}'", t.text,
                       t.text));
    default:
      if (isReservedWord(t.text) && t.kind != TokenKind::Eof)
        fail(fmt::format("'{}' is a reserved word and cannot be used as a value", t.text));
      fail(fmt::format("expected an expression, found {}", found()));
    }
  }

  const support::SourceFile &file_;
  support::DiagnosticEngine &diags_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int nesting_ = 0; // expression levels being parsed (Nesting)
  std::vector<std::string> brokenLocals_;
};

} // namespace

Program parse(const support::SourceFile &file, support::DiagnosticEngine &diags) {
  return Parser(file, diags).run();
}

} // namespace hone::dsl
