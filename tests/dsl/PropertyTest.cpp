// Property test: random valid programs generated from the grammar, written
// in random (valid) styles. For each: it checks cleanly, fmt is idempotent,
// and the formatted program means the same (same AST without locations, and
// the same values for every global on a machine).
#include "TestUtil.h"

#include "dsl/Formatter.h"
#include "dsl/Interpreter.h"

#include <gtest/gtest.h>

#include <random>

namespace {

class Generator {
public:
  explicit Generator(uint64_t seed) : rng_(seed) {}

  std::string program() {
    out_.clear();
    ints_.clear();
    tuples_.clear();
    spaces_.clear();
    functions_.clear();
    taskFunctions_.clear();
    int n = pick(4, 14);
    for (int i = 0; i < n; ++i)
      statement();
    return out_;
  }

private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(int percent) { return pick(1, 100) <= percent; }
  template <typename T> const T &oneOf(const std::vector<T> &v) { return v[static_cast<size_t>(pick(0, static_cast<int>(v.size()) - 1))]; }

  std::string sp() { return oneOf<std::string>({"", " ", "  ", "\t"}); }
  std::string ws() { return chance(10) ? "\n  " : oneOf<std::string>({" ", "  ", "\t"}); }

  void comment() {
    if (chance(20))
      out_ += oneOf<std::string>({"# note\n", "// another note\n", "\n\n", "#\n"});
  }
  void endStatement() {
    out_ += sp() + ";";
    if (chance(20))
      out_ += sp() + "# trailing";
    out_ += "\n";
  }

  std::string name(const char *prefix) { return prefix + std::to_string(counter_++); }
  std::string taskName() { return oneOf<std::string>({"t_a", "t_b", "calc", "init_piece", "task_4"}); }
  std::string procs() {
    std::vector<std::string> kinds = {"CPU", "GPU", "OMP", "IO", "PY", "PROC"};
    std::shuffle(kinds.begin(), kinds.end(), rng_);
    std::string out = kinds[0];
    for (int i = 1, n = pick(1, 3); i < n; ++i)
      out += "," + sp() + kinds[static_cast<size_t>(i)];
    return out;
  }
  std::string mems() {
    std::vector<std::string> kinds = {"SYSMEM", "FBMEM", "RDMEM", "ZCMEM", "SOCKMEM", "VIRTUAL"};
    std::shuffle(kinds.begin(), kinds.end(), rng_);
    std::string out = kinds[0];
    for (int i = 1, n = pick(1, 3); i < n; ++i)
      out += "," + kinds[static_cast<size_t>(i)];
    return out;
  }

  // An int-valued expression over the ints defined so far. `depth` bounds nesting.
  std::string intExpr(int depth, const std::vector<std::string> &extraInts = {}) {
    std::vector<std::string> pool = ints_;
    pool.insert(pool.end(), extraInts.begin(), extraInts.end());
    if (depth <= 0 || chance(30)) {
      if (!pool.empty() && chance(50))
        return oneOf(pool);
      return std::to_string(pick(0, 9));
    }
    switch (pick(0, 6)) {
    case 0:
    case 1: {
      std::string op = oneOf<std::string>({"+", "-", "*"});
      std::string e = intExpr(depth - 1, extraInts) + ws() + op + ws() + intExpr(depth - 1, extraInts);
      return chance(50) ? "(" + e + ")" : e;
    }
    case 2: // division by a positive constant keeps evaluation fault-free
      return "(" + intExpr(depth - 1, extraInts) + sp() + oneOf<std::string>({"/", "%"}) + sp() +
             std::to_string(pick(1, 5)) + ")";
    case 3: return "-" + sp() + "(" + intExpr(depth - 1, extraInts) + ")";
    case 4:
      return "(" + boolExpr(depth - 1, extraInts) + sp() + "?" + sp() + intExpr(depth - 1, extraInts) + sp() + ":" +
             sp() + intExpr(depth - 1, extraInts) + ")";
    case 5:
      if (!tuples_.empty())
        return oneOf(tuples_).first + "[" + std::to_string(pick(0, 1)) + "]";
      return "1";
    default:
      if (!spaces_.empty())
        return oneOf(spaces_) + oneOf<std::string>({".size[0]", ".size[1]", ".volume", ".len"});
      return "2";
    }
  }

  std::string boolExpr(int depth, const std::vector<std::string> &extraInts = {}) {
    if (depth <= 0 || chance(30))
      return oneOf<std::string>({"True", "False"});
    switch (pick(0, 2)) {
    case 0:
      return intExpr(depth - 1, extraInts) + sp() + oneOf<std::string>({"<", ">", "<=", ">=", "==", "!="}) + sp() +
             intExpr(depth - 1, extraInts);
    case 1:
      return "(" + boolExpr(depth - 1, extraInts) + sp() + oneOf<std::string>({"&&", "||"}) + sp() +
             boolExpr(depth - 1, extraInts) + ")";
    default: return "!" + sp() + "(" + boolExpr(depth - 1, extraInts) + ")";
    }
  }

  std::string tupleExpr(int len) {
    std::string out = "(";
    for (int i = 0; i < len; ++i)
      out += (i ? "," + sp() : "") + intExpr(2);
    if (len == 1)
      out += ",";
    return out + ")";
  }

  void statement() {
    comment();
    switch (pick(0, 13)) {
    case 0: out_ += "Task" + ws() + oneOf<std::string>({"*", taskName(), "t_a,t_b"}) + ws() + procs(); break;
    case 1:
      out_ += "Region " + oneOf<std::string>({"*", taskName()}) + " " +
              oneOf<std::string>({"*", "rp_shared", "0", "2"}) + " " + oneOf<std::string>({"*", "GPU", "CPU"}) +
              " " + mems();
      break;
    case 2: {
      out_ += "Layout " + oneOf<std::string>({"*", taskName()}) + " " + oneOf<std::string>({"*", "r"}) + " " +
              oneOf<std::string>({"*", "FBMEM", "SYSMEM"});
      for (int i = 0, n = pick(0, 3); i < n; ++i)
        out_ += " " + oneOf<std::string>({"SOA", "C_order", "Compact", "Exact", "Align==64", "Align <= 128"});
      break;
    }
    case 3: out_ += "InstanceLimit " + taskName() + " " + std::to_string(pick(1, 9)); break;
    case 4: out_ += "CollectMemory " + taskName() + " " + oneOf<std::string>({"*", "1", "rp"}); break;
    case 5: out_ += "ControlReplicate " + taskName(); break;
    case 6: {
      std::string n = name("i");
      out_ += n + sp() + "=" + sp() + intExpr(3);
      ints_.push_back(n);
      break;
    }
    case 7: {
      std::string n = name("t");
      int len = pick(1, 3);
      out_ += n + " = " + tupleExpr(len);
      tuples_.push_back({n, len});
      break;
    }
    case 8: {
      std::string n = name("m");
      std::string kind = oneOf<std::string>({"GPU", "CPU"});
      std::string e = "Machine(" + kind + ")";
      if (chance(50))
        e += oneOf<std::string>({".merge(0, 1)", ".swap(0,1)", ".reverse(1)", ".split(1, 2)", ".balance_split(1, 2)",
                                 ".auto_split(0, (2, 2))"});
      out_ += n + " = " + e;
      if (e.find("merge") == std::string::npos && e.find("split") == std::string::npos)
        spaces_.push_back(n); // keep 2-D spaces for .size[1]
      break;
    }
    case 9: {
      if (ints_.empty()) {
        out_ += "print(\"no ints\")";
        break;
      }
      out_ += "print(\"{} and {}\"," + sp() + oneOf(ints_) + ", " + intExpr(2) + ")";
      break;
    }
    case 10:
    case 11: taskFunction(); return;
    case 12: helperFunction(); return;
    default:
      if (taskFunctions_.empty()) {
        out_ += "Task * GPU";
        break;
      }
      out_ += oneOf<std::string>({"IndexTaskMap ", "SingleTaskMap "}) +
              oneOf<std::string>({"*", "GPU", taskName(), "t_a,t_b"}) + " " + oneOf(taskFunctions_);
      break;
    }
    endStatement();
  }

  // A placement function over a 1-D launch, always in bounds.
  void taskFunction() {
    std::string f = name("place");
    out_ += "def " + f + "(Task task)" + sp() + "{\n";
    out_ += "    m" + sp() + "=" + sp() + "Machine(GPU);\n";
    out_ += "    ip = task.ipoint;\n";
    if (chance(50))
      out_ += "    k = tuple(x * 2 for x in (1, 2));\n";
    if (!functions_.empty() && chance(50))
      out_ += "    h = " + oneOf(functions_) + "(ip[0], 3);\n";
    if (chance(30))
      out_ += "    print(\"point {}\", ip);\n";
    out_ += "    return m[ip[0] % m.size[0], (" + intExpr(2, {"ip[0]"}) + ") % m.size[1] * 0 + ip[0] % m.size[1]];\n";
    out_ += "}\n";
    taskFunctions_.push_back(f);
  }

  void helperFunction() {
    std::string f = name("helper");
    out_ += "def " + f + "(int a, int b) {\n    c = a + b;\n    return " + intExpr(2, {"a", "b", "c"}) + ";\n}\n";
    functions_.push_back(f);
  }

  std::mt19937_64 rng_;
  std::string out_;
  int counter_ = 0;
  std::vector<std::string> ints_, spaces_, functions_, taskFunctions_;
  std::vector<std::pair<std::string, int>> tuples_;
};

std::string globalsOf(const hone::dsl::Program &p) {
  hone::dsl::Interpreter in(p, *hone::dsl::MachineShape::parse("nodes=2,gpus=4,cpus=8"));
  auto init = in.initialize();
  if (!init)
    return "fault: " + init.error().message;
  std::string out;
  for (const auto &[name, value] : in.globals())
    out += name + "=" + value.str() + "\n";
  return out;
}

TEST(Property, RandomProgramsFormatIdempotentlyAndKeepTheirMeaning) {
  constexpr int kPrograms = 400;
  for (int seed = 1; seed <= kPrograms; ++seed) {
    Generator gen(static_cast<uint64_t>(seed));
    std::string text = gen.program();
    auto original = hone::test::checkText(text);
    ASSERT_FALSE(original.diags->hasErrors()) << "seed " << seed << "\n" << text << hone::test::diagText(original);
    std::string once = hone::dsl::format(original.program);
    auto reparsed = hone::test::checkText(once);
    ASSERT_FALSE(reparsed.diags->hasErrors()) << "seed " << seed << "\n" << once << hone::test::diagText(reparsed);
    EXPECT_EQ(hone::dsl::format(reparsed.program), once) << "not idempotent, seed " << seed << "\n" << text;
    EXPECT_EQ(hone::dsl::dumpAst(original.program, false), hone::dsl::dumpAst(reparsed.program, false))
        << "AST changed, seed " << seed << "\n" << text << "\n---\n" << once;
    EXPECT_EQ(globalsOf(original.program), globalsOf(reparsed.program)) << "values changed, seed " << seed;
    EXPECT_EQ(original.program.comments.size(), reparsed.program.comments.size()) << "comments lost, seed " << seed;
  }
}

} // namespace
