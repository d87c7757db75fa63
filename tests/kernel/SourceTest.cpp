// hone's source model, dependence test and source transformations
// (src/kernel/source): nests read from real C through libclang, the legality
// of parallel loops, interchanges and tiles on the classic cases (matmul,
// stencils that are and are not fully permutable, reductions, temporaries,
// indirect subscripts, calls), and rewritten programs that compile and print
// what the original prints.
#include "kernel/Diagnose.h"
#include "kernel/Evaluator.h"
#include "kernel/KernelDomain.h"
#include "kernel/Manifest.h"
#include "engine/Engine.h"
#include "kernel/Runner.h"
#include "kernel/SourceKnobs.h"
#include "kernel/source/Dependence.h"
#include "kernel/source/Model.h"
#include "kernel/source/Transform.h"
#include "TestUtil.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <sstream>
#include <unistd.h>

using namespace hone::kernel::source;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

struct Scratch {
  fs::path dir;
  Scratch() {
    dir = fs::temp_directory_path() / fmt::format("hone-source-test-{}-{}", getpid(), counter()++);
    fs::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  static int &counter() {
    static int c = 0;
    return c;
  }
  std::string write(const std::string &name, const std::string &text) const {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};

Program parseSource(const Scratch &s, const std::string &text, const std::vector<std::string> &args = {},
                    const std::string &name = "k.c") {
  s.write(name, text);
  auto p = analyze({{name, (s.dir / name).string()}}, args);
  EXPECT_TRUE(p) << (p ? "" : p.error().message);
  return p ? *p : Program{};
}

const Nest &onlyNest(const Program &p, size_t i = 0) {
  static Nest empty;
  if (p.files.empty() || p.files[0].nests.size() <= i) {
    ADD_FAILURE() << "no nest " << i;
    return empty;
  }
  return p.files[0].nests[i];
}

int loopWithVar(const Nest &n, const std::string &var) {
  for (size_t i = 0; i < n.loops.size(); ++i)
    if (n.loops[i].var == var)
      return static_cast<int>(i);
  ADD_FAILURE() << "no loop over " << var;
  return 0;
}

const char *kMatmulNest = R"(#define N 64
static double A[N][N], B[N][N], C[N][N];
void mm(int n) {
  int i, j, k;
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      for (k = 0; k < n; k++)
        C[i][j] += A[i][k] * B[k][j];
}
)";

} // namespace

TEST(SourceModel, ReadsANestItsLoopsAndItsAccesses) {
  Scratch s;
  Program p = parseSource(s, kMatmulNest);
  const Nest &n = onlyNest(p);
  EXPECT_EQ(n.function, "mm");
  EXPECT_EQ(n.line, 5);
  ASSERT_EQ(n.loops.size(), 3u);
  EXPECT_EQ(n.band().size(), 3u);
  EXPECT_EQ(n.loops[0].var, "i");
  EXPECT_EQ(n.loops[2].var, "k");
  EXPECT_TRUE(n.loops[1].canonical);
  EXPECT_EQ(n.loops[1].upper, "n");
  EXPECT_EQ(n.loops[1].step, 1);
  bool wroteC = false;
  for (const auto &a : n.accesses)
    if (a.base == "C" && a.write) {
      wroteC = true;
      ASSERT_EQ(a.subscripts.size(), 2u);
      ASSERT_TRUE(a.subscripts[0] && a.subscripts[1]);
      EXPECT_EQ(a.subscripts[0]->coefficient("i"), 1);
      EXPECT_EQ(a.subscripts[1]->coefficient("j"), 1);
      EXPECT_EQ(a.updateOp, '+');
    }
  EXPECT_TRUE(wroteC);
  // The statement ends at its semicolon: the nest's text is the whole loop.
  EXPECT_EQ(p.files[0].text.substr(n.loops[0].begin, 3), "for");
  EXPECT_EQ(p.files[0].text[n.loops[0].end - 1], ';');
}

TEST(SourceModel, MacrosInBoundsAndSubscriptsAreReadThroughClang) {
  Scratch s;
  s.write("sizes.h", "#define NI 32\n#define OFF 1\n#define SHIFT(x) ((x) + 1)\n");
  Program p = parseSource(s, R"(#include "sizes.h"
double a[NI + 2], b[NI + 2];
void f(void) {
  for (int i = 0; i <= NI - 1; ++i)
    a[i + OFF] = a[i + OFF] * 2.0;
  for (int i = 0; i <= NI - 1; ++i)
    b[SHIFT(i)] = b[SHIFT(i)] * 2.0;
}
)", {"-I" + s.dir.string()});
  ASSERT_EQ(p.files.size(), 1u);
  ASSERT_EQ(p.files[0].nests.size(), 2u);
  const Nest &n = p.files[0].nests[0];
  ASSERT_EQ(n.loops.size(), 1u);
  EXPECT_TRUE(n.loops[0].declaresVar);
  EXPECT_EQ(n.loops[0].varType, "int");
  EXPECT_EQ(n.loops[0].upper, "(NI - 1) + 1");
  ASSERT_FALSE(n.accesses.empty());
  ASSERT_TRUE(n.accesses[0].subscripts[0]);
  EXPECT_EQ(n.accesses[0].subscripts[0]->constant, 1); // the constant macro is evaluated
  EXPECT_EQ(n.accesses[0].subscripts[0]->coefficient("i"), 1);
  EXPECT_TRUE(parallelism(n, 0).legal);
  // An operator inside a function-like macro is not in the file's tokens: the subscript stays
  // unknown and nothing is claimed about it.
  const Nest &m = p.files[0].nests[1];
  ASSERT_FALSE(m.accesses.empty());
  EXPECT_FALSE(m.accesses[0].subscripts[0]);
  EXPECT_FALSE(parallelism(m, 0).legal);
}

TEST(SourceModel, AFileThatDoesNotParseIsAWarningNotAnError) {
  Scratch s;
  s.write("k.c", "void f( { for (;;) }\n");
  auto p = analyze({{"k.c", (s.dir / "k.c").string()}}, {});
  ASSERT_TRUE(p);
  ASSERT_FALSE(p->warnings.empty());
  EXPECT_NE(p->warnings[0].find("k.c"), std::string::npos) << p->warnings[0];
  EXPECT_TRUE(p->files[0].nests.empty());
}

TEST(Dependence, MatmulIsParallelOverRowsAndColumnsNotOverTheSum) {
  Scratch s;
  const Program p = parseSource(s, kMatmulNest);
  const Nest &n = onlyNest(p);
  EXPECT_TRUE(parallelism(n, loopWithVar(n, "i")).legal);
  EXPECT_TRUE(parallelism(n, loopWithVar(n, "j")).legal);
  Parallelism k = parallelism(n, loopWithVar(n, "k"));
  EXPECT_FALSE(k.legal);
  EXPECT_NE(k.why.find("C[i][j]"), std::string::npos) << k.why;
  // Parallel over i: the inner loops' variables are private; a rectangle needs no schedule.
  EXPECT_EQ(parallelism(n, 0).clauses(), " private(j, k)");
  EXPECT_EQ(parallelism(n, 0).forClauses(), " private(j, k)");
  std::string why;
  auto band = n.band();
  for (std::vector<int> order : {std::vector<int>{0, 1, 2}, {0, 2, 1}, {2, 1, 0}, {1, 2, 0}})
    EXPECT_TRUE(permutationLegal(n, band, order, &why)) << why;
  EXPECT_TRUE(tilingLegal(n, band, &why)) << why;
  EXPECT_TRUE(rectangular(n, band, &why)) << why;
}

TEST(Dependence, AnElementTheLoopOnlyAccumulatesIntoIsAReductionForSimd) {
  Scratch s;
  const Program p = parseSource(s, R"(double A[50][50], q[50], r[50], x[50];
void f(int n) {
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++)
      q[i] = q[i] + A[i][j] * r[j];
    for (int j = 0; j < n; j++)
      A[i][i] += A[i][j];
    for (int j = 0; j < i; j++)
      x[i] -= A[i][j] * x[j];
    for (int j = 0; j < n; j++)
      if (r[j] > 0)
        q[i] += r[j];
    for (int j = 0; j < n; j++)
      q[i] = q[i] * 2 + r[j];
  }
}
)");
  const Nest &n = onlyNest(p);
  ASSERT_EQ(n.loops[0].children.size(), 5u);
  auto loop = [&](size_t i) { return n.loops[0].children[i]; };
  // x = x op e, the element's subscripts fixed in the loop: a reduction in a local, for simd only.
  EXPECT_FALSE(parallelism(n, loop(0)).legal);
  Parallelism q = parallelism(n, loop(0), nullptr, true);
  ASSERT_TRUE(q.legal) << q.why;
  ASSERT_EQ(q.elements.size(), 1u);
  EXPECT_EQ(q.elements[0].refs.size(), 2u); // the write and the read of q[i]
  EXPECT_EQ(q.clauses(), " reduction(+:hone_acc0)");
  // A[i][j] is A[i][i] when j == i: the element is not only accumulated into.
  EXPECT_FALSE(parallelism(n, loop(1), nullptr, true).legal);
  // x[j] with j < i is never x[i]: the bounds prove it.
  Parallelism xs = parallelism(n, loop(2), nullptr, true);
  EXPECT_TRUE(xs.legal) << xs.why;
  EXPECT_EQ(xs.elements.size(), 1u);
  // A conditional update, and an update that is not `x op e`, stay dependences.
  EXPECT_FALSE(parallelism(n, loop(3), nullptr, true).legal);
  EXPECT_FALSE(parallelism(n, loop(4), nullptr, true).legal);
  // An element written through a macro has no text of the file's own to replace: not kept.
  const Program macro = parseSource(s, R"(#define AT(i, j) A[i][j]
double A[50][50];
void g(int n) {
  for (int i = 0; i < n; i++)
    for (int k = 0; k < i; k++)
      AT(i, i) += A[i][k];
}
)");
  const Nest &mn = onlyNest(macro);
  EXPECT_FALSE(parallelism(mn, 1, nullptr, true).legal);
  // A loop of thousands of references (each candidate would be paired with each) keeps them in
  // memory: no elements, and no minutes of bounds tests.
  std::string big = "double q[4000], r[100];\nvoid h(int n) {\n  for (int j = 0; j < n; j++) {\n";
  for (int e = 0; e < 2000; ++e)
    big += fmt::format("    q[{}] += r[j];\n", e);
  big += "  }\n}\n";
  const Program many = parseSource(s, big);
  EXPECT_TRUE(parallelism(onlyNest(many), 0, nullptr, true).elements.empty());
  // The matmul's sum over k is one too.
  const Program mm = parseSource(s, kMatmulNest);
  const Nest &m = onlyNest(mm);
  Parallelism k = parallelism(m, loopWithVar(m, "k"), nullptr, true);
  EXPECT_TRUE(k.legal) << k.why;
  EXPECT_EQ(k.clauses(), " reduction(+:hone_acc0)");
}

TEST(Dependence, ASkewedStencilForbidsInterchangeAndTiling) {
  Scratch s;
  const Program p = parseSource(s, R"(double A[100][100];
void f(void) {
  for (int i = 1; i < 99; i++)
    for (int j = 1; j < 99; j++)
      A[i][j] = A[i - 1][j + 1] * 0.5;
}
)");
  const Nest &n = onlyNest(p);
  std::string why;
  auto band = n.band();
  EXPECT_FALSE(permutationLegal(n, band, {1, 0}, &why));
  EXPECT_NE(why.find("backwards"), std::string::npos) << why;
  EXPECT_FALSE(tilingLegal(n, band, &why));
  EXPECT_FALSE(parallelism(n, 0).legal);
  EXPECT_TRUE(parallelism(n, 1).legal) << parallelism(n, 1).why; // a row at a time: no dependence within it
}

TEST(Dependence, GaussSeidelIsFullyPermutableButNotParallel) {
  Scratch s;
  const Program p = parseSource(s, R"(double A[100][100];
void f(void) {
  for (int i = 1; i < 99; i++)
    for (int j = 1; j < 99; j++)
      A[i][j] = (A[i - 1][j] + A[i][j - 1] + A[i + 1][j] + A[i][j + 1]) / 4;
}
)");
  const Nest &n = onlyNest(p);
  std::string why;
  EXPECT_TRUE(tilingLegal(n, n.band(), &why)) << why;
  EXPECT_TRUE(permutationLegal(n, n.band(), {1, 0}, &why)) << why;
  EXPECT_FALSE(parallelism(n, 0).legal);
  EXPECT_FALSE(parallelism(n, 1).legal);
}

TEST(Dependence, ScalarsAreReductionsPrivatesOrCarriedValues) {
  Scratch s;
  Program p = parseSource(s, R"(double a[100], b[100];
double sum(void) {
  double t = 0, s = 0;
  for (int i = 0; i < 100; i++)
    s += a[i];
  for (int i = 0; i < 100; i++) {
    t = a[i] * 2;
    b[i] = t + 1;
  }
  for (int i = 0; i < 100; i++) {
    b[i] = t;
    t = a[i];
  }
  return s + t;
}
)");
  Parallelism r = parallelism(onlyNest(p, 0), 0);
  EXPECT_TRUE(r.legal);
  EXPECT_EQ(r.clauses(), " reduction(+:s)");
  Parallelism t = parallelism(onlyNest(p, 1), 0);
  EXPECT_TRUE(t.legal);
  EXPECT_EQ(t.clauses(), " lastprivate(t)");
  Parallelism c = parallelism(onlyNest(p, 2), 0);
  EXPECT_FALSE(c.legal);
  EXPECT_NE(c.why.find("scalar t"), std::string::npos) << c.why;
}

TEST(Dependence, IndirectSubscriptsAndUnknownCallsAreNotProvablyParallel) {
  Scratch s;
  Program p = parseSource(s, R"(#include <math.h>
int h[16], idx[100];
double x[100];
void g(double *);
void f(void) {
  for (int i = 0; i < 100; i++)
    h[idx[i]] += 1;
  for (int i = 0; i < 100; i++)
    x[i] = sqrt(x[i]);
  for (int i = 0; i < 100; i++)
    g(&x[i]);
}
)");
  EXPECT_FALSE(parallelism(onlyNest(p, 0), 0).legal);
  EXPECT_TRUE(parallelism(onlyNest(p, 1), 0).legal) << parallelism(onlyNest(p, 1), 0).why;
  Parallelism g = parallelism(onlyNest(p, 2), 0);
  EXPECT_FALSE(g.legal);
  EXPECT_NE(g.why.find("calls g"), std::string::npos) << g.why;
}

TEST(Dependence, ACallThatKeepsStateInsideACommaOrAnOperatorStillBlocks) {
  // A random generator's state, advanced by a static inline function of the program, in the operands
  // of a comma expression (the examples' initialisation loops): reordering changes every value.
  Scratch s;
  Program p = parseSource(s, R"(static unsigned long long st;
static inline double next(void) {
  st = st * 6364136223846793005ull + 1;
  return (double)(st >> 11);
}
void init(double *a, double *b, long n) {
  for (long i = 0; i < n; ++i)
    a[i] = next() - 0.5, b[i] = next() - 0.5;
  for (long i = 0; i < n; ++i)
    a[i] = -next();
  for (long i = 0; i < n; ++i)
    a[i] = (next());
}
)");
  for (size_t k = 0; k < 3; ++k) {
    Parallelism par = parallelism(onlyNest(p, k), 0);
    EXPECT_FALSE(par.legal) << "nest " << k;
    EXPECT_NE(par.why.find("calls next"), std::string::npos) << "nest " << k << ": " << par.why;
  }
}

TEST(Dependence, LinearisedSubscriptsAreReadBackAsDimensionsWhereTheBoundsProveIt) {
  Scratch s;
  Program p = parseSource(s, R"(void mm(int n, const double *a, const double *b, double *c) {
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0.0;
      for (int k = 0; k < n; ++k)
        s += a[i * n + k] * b[k * n + j];
      c[i * n + j] = s;
    }
}
void sweep(int n, double *u) {
  for (int i = 1; i < n - 1; ++i)
    for (int j = 1; j < n - 1; ++j)
      u[i * n + j] = 0.25 * (u[(i - 1) * n + j] + u[(i + 1) * n + j] + u[i * n + j - 1] + u[i * n + j + 1]);
}
void past(int n, double *u) {
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= n; ++j)
      u[i * n + j] = u[i * n + j] + 1;
}
void shapes(int n, int m, double *u) {
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < m && j < n; ++j)
      u[i * n + j] = u[i * m + j];
}
void jumps(int n, double *u) {
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      u[i * n + j] = 1;
      if (u[i * n + j] > 5)
        j += n; // past the row: u[i * n + j] is then row i + 1's
    }
}
void cube(int n, int m, double *u, const double *v) {
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < m; ++j)
      for (int k = 0; k < n; ++k)
        u[(i * m + j) * n + k] = v[(i * m + j) * n + k] * 2;
}
)");
  const Nest &mm = onlyNest(p, 0);
  bool split = false;
  for (const auto &a : mm.accesses)
    if (a.base == "c") {
      split = a.subscripts.size() == 2 && a.subscripts[0] && a.subscripts[1] && a.layout.size() == 1;
      EXPECT_EQ(a.layout, (std::vector<std::string>{"0:n"}));
    }
  EXPECT_TRUE(split);
  EXPECT_TRUE(parallelism(mm, loopWithVar(mm, "i")).legal) << parallelism(mm, 0).why;
  EXPECT_TRUE(parallelism(mm, loopWithVar(mm, "j")).legal);
  EXPECT_FALSE(parallelism(mm, loopWithVar(mm, "k")).reductions.empty());
  std::vector<int> band = mm.band();
  ASSERT_EQ(band.size(), 2u);
  std::string why;
  EXPECT_TRUE(permutationLegal(mm, band, {1, 0}, &why)) << why;
  // In place: row i reads rows i-1 and i+1 (a Gauss-Seidel sweep): not parallel, but the band
  // keeps its dependences lexicographically positive when tiled.
  const Nest &sweep = onlyNest(p, 1);
  EXPECT_FALSE(parallelism(sweep, 0).legal);
  EXPECT_TRUE(tilingLegal(sweep, sweep.band(), &why)) << why;
  // j reaches n: u[i * n + n] is row i + 1's first element, so nothing is known and nothing proven.
  auto target = [](const Nest &n) {
    for (const auto &a : n.accesses)
      if (a.base == "u" && a.write)
        return a;
    ADD_FAILURE() << "no write of u";
    return Access{};
  };
  const Nest &past = onlyNest(p, 2);
  EXPECT_EQ(target(past).subscripts.size(), 1u);
  EXPECT_TRUE(target(past).layout.empty());
  EXPECT_FALSE(parallelism(past, 0).legal);
  // Rows of n written, rows of m read: two shapes of one array are not compared dimension-wise.
  EXPECT_FALSE(parallelism(onlyNest(p, 3), 0).legal);
  // A loop variable the body changes: its bounds prove nothing, so neither do the dimensions.
  const Nest &jumps = onlyNest(p, 4);
  EXPECT_FALSE(target(jumps).subscripts.at(0).has_value());
  EXPECT_FALSE(parallelism(jumps, 0).legal);
  // Three dimensions, recursively: u[(i * m + j) * n + k] is [i][j][k].
  const Nest &cube = onlyNest(p, 5);
  EXPECT_EQ(target(cube).subscripts.size(), 3u);
  EXPECT_EQ(target(cube).layout, (std::vector<std::string>{"0:m", "0:n"}));
  EXPECT_TRUE(parallelism(cube, 0).legal) << parallelism(cube, 0).why;
}

TEST(Dependence, StandardContainersAreArraysAndEffectsCountOnlyInsideTheirLoop) {
  Scratch s;
  Program p = parseSource(s, R"(#include <cstdio>
#include <utility>
#include <vector>
void heat(std::vector<double> &u, std::vector<double> &v, int n, int steps) {
  for (int t = 0; t < steps; ++t) {
    for (int i = 1; i < n - 1; ++i)
      for (int j = 1; j < n - 1; ++j)
        v[i * n + j] = u[i * n + j] + 0.1 * (u[(i + 1) * n + j] - u[i * n + j]);
    std::swap(u, v);
    if (t % 10 == 0)
      std::printf("%d\n", t);
  }
}
void rows(std::vector<std::vector<double>> &m) {
  for (size_t i = 0; i < m.size(); ++i)
    for (size_t j = 1; j < m[i].size(); ++j)
      m[i][j] += m[i][j - 1];
}
void bits(std::vector<bool> &b, int n) {
  for (int i = 0; i < n; ++i)
    b[i] = i % 3 == 0;
}
)",
                          {"-std=c++17"}, "k.cpp");
  const Nest &heat = onlyNest(p, 0);
  Parallelism t = parallelism(heat, loopWithVar(heat, "t"));
  EXPECT_FALSE(t.legal);
  EXPECT_NE(t.why.find("swap"), std::string::npos) << t.why;
  EXPECT_TRUE(parallelism(heat, loopWithVar(heat, "i")).legal) << parallelism(heat, loopWithVar(heat, "i")).why;
  const Nest &rows = onlyNest(p, 1);
  EXPECT_TRUE(parallelism(rows, loopWithVar(rows, "i")).legal) << parallelism(rows, 0).why;
  EXPECT_FALSE(parallelism(rows, loopWithVar(rows, "j")).legal);
  // vector<bool>'s elements share words: writing two of them from two threads is a race.
  EXPECT_FALSE(parallelism(onlyNest(p, 2), 0).legal);
}

TEST(Dependence, TheBoundsSeparateATriangleFromItsMirror) {
  Scratch s;
  Program p = parseSource(s, R"(#define M 100
double c[M][M], d[M][M];
void strict(int m, int n) {
  for (int i = 0; i < m - 1; i++) {
    c[i][i] = 1.0;
    for (int j = i + 1; j < m; j++) {
      c[i][j] = 0.0;
      for (int k = 0; k < n; k++)
        c[i][j] += d[k][i] * d[k][j];
      c[j][i] = c[i][j];
    }
  }
}
void diagonal(void) {
  for (int i = 0; i < M; i++)
    for (int j = i; j < M; j++) {
      c[i][j] = d[i][j];
      c[j][i] = c[i][j];
    }
}
void square(void) {
  for (int i = 0; i < M; i++)
    for (int j = 0; j < M; j++)
      c[i][j] = c[j][i] + 1.0;
}
void shifted(void) {
  for (int i = 0; i < M - 1; i++)
    for (int j = i; j < M; j++)
      c[i][j] = c[i + 1][j] + 1.0;
}
)");
  ASSERT_EQ(p.files.size(), 1u);
  ASSERT_EQ(p.files[0].nests.size(), 4u);
  // Row i's upper triangle and column i's lower one belong to iteration i alone.
  Parallelism strict = parallelism(onlyNest(p, 0), 0);
  EXPECT_TRUE(strict.legal) << strict.why;
  // Its rows shrink: dealt out one at a time, not in blocks.
  EXPECT_EQ(strict.schedule, "static, 1");
  EXPECT_NE(strict.forClauses().find(" schedule(static, 1)"), std::string::npos) << strict.forClauses();
  EXPECT_EQ(strict.clauses().find("schedule"), std::string::npos);
  Parallelism diagonal = parallelism(onlyNest(p, 1), 0);
  EXPECT_TRUE(diagonal.legal) << diagonal.why;
  // Over the whole square, iteration i reads what iteration j writes: no bound separates them.
  Parallelism square = parallelism(onlyNest(p, 2), 0);
  EXPECT_FALSE(square.legal);
  EXPECT_NE(square.why.find("touch the same element"), std::string::npos) << square.why;
  // Row i + 1 from column i + 1 on is the next iteration's: a dependence the bounds allow.
  EXPECT_FALSE(parallelism(onlyNest(p, 3), 0).legal);
}

TEST(Dependence, FieldsOfVariablesAreVariablesOfTheirOwn) {
  Scratch s;
  Program p = parseSource(s, R"(#include <vector>
struct Grid {
  int nx, ny;
  std::vector<double> u, f;
  double *raw;
  double acc;
  void relax(std::vector<double> &tmp) {
    for (int i = 1; i < nx - 1; ++i)
      for (int j = 1; j < ny - 1; ++j)
        tmp[i * ny + j] = 0.25 * (u[(i - 1) * ny + j] + u[(i + 1) * ny + j] + f[i * ny + j]);
  }
};
void sweep(Grid &g, std::vector<double> &tmp) {
  for (int i = 1; i < g.nx - 1; ++i)
    for (int j = 1; j < g.ny - 1; ++j)
      tmp[i * g.ny + j] = 0.25 * (g.u[(i - 1) * g.ny + j] + g.u[(i + 1) * g.ny + j] + g.f[i * g.ny + j]);
}
void shift(Grid *g) {
  for (int i = 1; i < g->nx; ++i)
    g->raw[i] = g->raw[i - 1] * 0.5;
}
void total(Grid &g) {
  for (int i = 0; i < g.nx; ++i)
    g.acc += g.u[i];
}
struct Body { double x, y, vx, vy; };
void forces(Body *b, int n) {
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      b[i].vx += b[j].x - b[i].x;
      b[i].vy += b[j].y - b[i].y;
    }
}
void copies(Body *b, int n) {
  for (int i = 1; i < n; ++i)
    b[i] = b[i - 1];
}
union Pun { double d[64]; long bits[64]; };
void pun(Pun &u, int n) {
  for (int i = 1; i < n; ++i)
    u.d[i] = u.bits[i - 1] * 0.5;
}
)",
                          {"-std=c++17"}, "k.cpp");
  ASSERT_EQ(p.files.size(), 1u);
  ASSERT_EQ(p.files[0].nests.size(), 7u);
  // In a method (implicit this) and from a reference: rows are independent, the sweep is parallel.
  for (size_t i : {0u, 1u}) {
    const Nest &n = onlyNest(p, i);
    Parallelism par = parallelism(n, loopWithVar(n, "i"));
    EXPECT_TRUE(par.legal) << i << ": " << par.why;
  }
  // A pointer field through `->`: the recurrence on it is found.
  EXPECT_FALSE(parallelism(onlyNest(p, 2), 0).legal);
  // A field accumulated in the loop: no clause can name it, so no proof.
  Parallelism acc = parallelism(onlyNest(p, 3), 0);
  EXPECT_FALSE(acc.legal);
  EXPECT_NE(acc.why.find("g.acc"), std::string::npos) << acc.why;
  // Fields of an array's elements (structures of arrays written as arrays of structures): the
  // velocities written, the positions read, by field: the bodies are independent over i, not over j.
  const Nest &forces = onlyNest(p, 4);
  Parallelism fi = parallelism(forces, loopWithVar(forces, "i"));
  EXPECT_TRUE(fi.legal) << fi.why;
  EXPECT_FALSE(parallelism(forces, loopWithVar(forces, "j")).legal);
  // A whole element copied: memory hone cannot follow, no proof.
  EXPECT_FALSE(parallelism(onlyNest(p, 5), 0).legal);
  // A union's members share storage: u.d[i] and u.bits[i - 1] are the same memory, a recurrence.
  EXPECT_FALSE(parallelism(onlyNest(p, 6), 0).legal);
}

namespace {

/// Builds and runs a program; its stdout, or "" when it does not build.
std::string buildAndRun(const Scratch &s, const std::string &name, const std::string &text, const std::string &flags) {
  s.write(name + ".c", text);
  std::string exe = (s.dir / name).string();
  std::string cmd = fmt::format("cc -O1 {} -o {} {} -lm 2>{}.log", flags, exe, (s.dir / (name + ".c")).string(), exe);
  if (std::system(cmd.c_str()) != 0)
    return "";
  std::string out;
  FILE *f = popen(exe.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    out.append(buf, n);
  pclose(f);
  return out;
}

const char *kNestProgram = R"(#include <stdio.h>
#define N 37
static double A[N][N], B[N][N], C[N][N];
static double v[N], w[N];

static void kernel(int n) {
  int i, j, k;
  double s = 0;
  for (i = 0; i < n; i++)
    for (k = 0; k < n; k++)
      for (j = 0; j < n; j++)
        C[i][j] += A[i][k] * B[k][j];
  for (i = 0; i < n; i++) {
    w[i] = 0;
    for (j = 0; j < n; j++)
      w[i] += A[i][j] * v[j];
  }
  for (i = 1; i < n; i++)
    v[i] = v[i - 1] * 0.5 + w[i];
}

int main(void) {
  for (int i = 0; i < N; i++) {
    v[i] = i % 7;
    for (int j = 0; j < N; j++) {
      A[i][j] = (i * 3 + j) % 11;
      B[i][j] = (i + 2 * j) % 13;
    }
  }
  kernel(N);
  for (int i = 0; i < N; i++)
    printf("%.17g %.17g %.17g\n", C[i][i], w[i], v[i]);
  return 0;
}
)";

} // namespace

/// Builds every proven value of every knob the plan gives `program` (one at a time) and compares
/// what it prints with the original; the number of variants built.
int everyProvenValuePrintsTheSame(const std::string &program) {
  Scratch s;
  std::string expected = buildAndRun(s, "orig", program, "");
  EXPECT_FALSE(expected.empty());
  s.write("k.c", program);
  auto parsed = analyze({{"k.c", (s.dir / "k.c").string()}}, {});
  EXPECT_TRUE(parsed);
  if (!parsed)
    return 0;
  Plan plan(*parsed, {});
  EXPECT_FALSE(plan.knobs().empty());
  int tried = 0;
  for (const auto &k : plan.knobs())
    for (size_t i = 1; i < k.values.size(); ++i) {
      if (k.unproven.count(k.values[i]))
        continue;
      std::map<std::string, std::string> values{{k.name, k.values[i]}};
      auto files = plan.render(values);
      EXPECT_TRUE(files && files->count("k.c")) << k.name << "=" << k.values[i];
      if (!files || !files->count("k.c"))
        continue;
      EXPECT_NE(files->at("k.c"), program) << k.name << "=" << k.values[i];
      std::string flags = fmt::format("{}", fmt::join(plan.flags(values), " "));
      std::string got = buildAndRun(s, fmt::format("v{}", tried++), files->at("k.c"), flags);
      EXPECT_EQ(got, expected) << k.name << "=" << k.values[i] << "\n" << files->at("k.c");
    }
  return tried;
}

TEST(Transform, EveryProvenValueRewritesToAProgramThatPrintsTheSame) {
  EXPECT_GE(everyProvenValuePrintsTheSame(kNestProgram), 8);
}

TEST(Transform, LinearisedHeapArraysAreTransformedToo) {
  // A user's style: malloc'd arrays, a[i * n + j], pointer parameters.
  const char *program = R"(#include <stdio.h>
#include <stdlib.h>
static void mm(int n, const double *a, const double *b, double *c) {
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double s = 0.0;
      for (int k = 0; k < n; ++k)
        s += a[i * n + k] * b[k * n + j];
      c[i * n + j] = s;
    }
}
static void smooth(int n, const double *in, double *out) {
  for (int i = 1; i < n - 1; ++i)
    for (int j = 1; j < n - 1; ++j)
      out[i * n + j] = 0.2 * (in[i * n + j] + in[(i - 1) * n + j] + in[(i + 1) * n + j] + in[i * n + j - 1] +
                              in[i * n + j + 1]);
}
int main(void) {
  int n = 45;
  double *a = malloc(sizeof(double) * n * n), *b = malloc(sizeof(double) * n * n);
  double *c = malloc(sizeof(double) * n * n), *d = calloc((size_t)(n * n), sizeof(double));
  for (int i = 0; i < n * n; ++i) {
    a[i] = (i * 7 % 13) * 0.25;
    b[i] = (i * 5 % 11) * 0.5;
  }
  mm(n, a, b, c);
  smooth(n, c, d);
  for (int i = 0; i < n * n; i += 7)
    printf("%.17g %.17g\n", c[i], d[i]);
  free(a), free(b), free(c), free(d);
  return 0;
}
)";
  EXPECT_GE(everyProvenValuePrintsTheSame(program), 10);
}

/// LU without pivoting as PolyBench writes it: under `for i`, the band `for j: for k` (line 13) is
/// perfect and rectangular once i is fixed, and k,j makes A[k][j] unit-stride; each `for k`
/// accumulates into A[i][j], which `omp simd` keeps in a local.
const char *kLuProgram = R"(#include <stdio.h>
#define N 41
static double A[N][N];

static void lu(int n) {
  int i, j, k;
  for (i = 0; i < n; i++) {
    for (j = 0; j < i; j++) {
      for (k = 0; k < j; k++)
        A[i][j] -= A[i][k] * A[k][j];
      A[i][j] /= A[j][j];
    }
    for (j = i; j < n; j++)
      for (k = 0; k < i; k++)
        A[i][j] -= A[i][k] * A[k][j];
  }
}

int main(void) {
  /* A = L U with small integer factors and 2 on U's diagonal: every value the factorisation computes
     is an integer, exact in any order of the sums (a variant that reassociates prints the same). */
  static double L[N][N], U[N][N];
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      L[i][j] = i > j ? (i * 7 + j * 3) % 5 - 2 : i == j;
      U[i][j] = i < j ? (i * 3 + j * 5) % 7 - 3 : i == j ? 2 : 0;
    }
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      for (int k = 0; k < N; k++)
        A[i][j] += L[i][k] * U[k][j];
  lu(N);
  for (int i = 0; i < N; i++)
    printf("%.17g %.17g\n", A[i][i], A[i][N - 1 - i]);
  return 0;
}
)";

TEST(Transform, PerfectBandsInsideANestAreReorderedAndTiled) {
  Scratch s;
  s.write("k.c", kLuProgram);
  auto program = analyze({{"k.c", (s.dir / "k.c").string()}}, {});
  ASSERT_TRUE(program);
  const Nest &n = program->files[0].nests[0];
  ASSERT_EQ(n.innerBands().size(), 1u);
  EXPECT_EQ(n.loops[static_cast<size_t>(n.innerBands()[0])].line, 13);
  EXPECT_EQ(n.band().size(), 1u); // `for i` holds two statements
  Plan plan(*program, {});
  const SourceKnob *order = nullptr, *tile = nullptr;
  for (const auto &k : plan.knobs()) {
    if (k.name == "k.c:13.order")
      order = &k;
    if (k.name == "k.c:13.tile")
      tile = &k;
  }
  ASSERT_TRUE(order && tile) << plan.describe();
  EXPECT_EQ(order->values, (std::vector<std::string>{"j,k", "k,j"}));
  // A[i][j] written and A[i][k] read are never one element (j >= i > k): the bounds prove it.
  EXPECT_FALSE(order->unproven.count("k,j")) << plan.describe();
  EXPECT_TRUE(tile->unproven.empty()) << plan.describe();
  EXPECT_EQ(order->line, 7); // the nest's line: findings on any line of the nest reach the knob
  EXPECT_NE(plan.describe().find("(the band at line 13)"), std::string::npos) << plan.describe();
  auto files = plan.render({{"k.c:13.order", "k,j"}});
  ASSERT_TRUE(files) << files.error().message;
  const std::string &text = files->at("k.c");
  auto kAt = text.find("for (k = 0; k < i; k++)"), jAt = text.find("for (j = i; j < n; j++)");
  ASSERT_NE(kAt, std::string::npos);
  ASSERT_NE(jAt, std::string::npos);
  EXPECT_LT(kAt, jAt) << text;
  // simd keeps each `for k`'s A[i][j] in a local and reduces it.
  auto simd = plan.render({{"k.c:7.simd", "on"}});
  ASSERT_TRUE(simd) << simd.error().message;
  const std::string &vec = simd->at("k.c");
  EXPECT_NE(vec.find("__typeof__(A[i][j]) hone_acc0 = A[i][j];"), std::string::npos) << vec;
  EXPECT_NE(vec.find("#pragma omp simd reduction(+:hone_acc0)"), std::string::npos) << vec;
  EXPECT_NE(vec.find("hone_acc0 -= A[i][k] * A[k][j];"), std::string::npos) << vec;
  EXPECT_NE(vec.find("A[i][j] = hone_acc0;"), std::string::npos) << vec;
  EXPECT_GE(everyProvenValuePrintsTheSame(kLuProgram), 8);
}

TEST(Transform, AnInnerBandTakesTheParallelPragmaOnlyWhereItsNewOuterLoopIsParallel) {
  Scratch s;
  std::string expected = buildAndRun(s, "orig", kLuProgram, "");
  s.write("k.c", kLuProgram);
  auto program = analyze({{"k.c", (s.dir / "k.c").string()}}, {});
  ASSERT_TRUE(program);
  Plan plan(*program, {});
  // As written, `for j` of the band is parallel (each j its own A[i][j]); after k,j, k carries the
  // update of A[i][j]: no pragma on it, and none on j inside it (a team per k).
  auto asWritten = plan.render({{"k.c:7.parallel", "on"}});
  ASSERT_TRUE(asWritten) << asWritten.error().message;
  EXPECT_NE(asWritten->at("k.c").find("#pragma omp parallel for"), std::string::npos) << asWritten->at("k.c");
  auto swapped = plan.render({{"k.c:7.parallel", "on"}, {"k.c:13.order", "k,j"}});
  ASSERT_TRUE(swapped) << swapped.error().message;
  const std::string &text = swapped->at("k.c");
  EXPECT_NE(text.find("for (k = 0; k < i; k++)"), std::string::npos) << text;
  EXPECT_EQ(text.find("parallel for"), std::string::npos) << text;
  EXPECT_EQ(buildAndRun(s, "swapped", text, "-fopenmp"), expected) << text;
  // Tiled under the pragmas of the loops around it, the band still prints the same.
  auto tiled = plan.render({{"k.c:7.parallel", "on"}, {"k.c:13.tile", "16"}, {"k.c:7.unroll", "4"}});
  ASSERT_TRUE(tiled) << tiled.error().message;
  EXPECT_NE(tiled->at("k.c").find("hone_j_t += 16"), std::string::npos) << tiled->at("k.c");
  EXPECT_EQ(buildAndRun(s, "tiled", tiled->at("k.c"), "-fopenmp"), expected) << tiled->at("k.c");
  // A choice for a loop that begins no band is refused with its place.
  NestChoice bogus;
  bogus.bands[1].order = {1, 0}; // `for j` at line 8 holds two statements
  auto refused = rewrite(program->files[0], {{0, bogus}});
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("k.c:8"), std::string::npos) << refused.error().message;
}

TEST(Transform, ExactParallelLeavesOutTheLoopsThatReduce) {
  // Modified Gram-Schmidt's shape: under `for k`, a norm (a reduction) and a loop over columns.
  const char *program = R"(#include <stdio.h>
#define N 24
static double A[N][N], B[N][N], R[N];
static void f(int n) {
  int i, j, k;
  double nrm;
  for (k = 0; k < n; k++) {
    nrm = 0;
    for (i = 0; i < n; i++)
      nrm += A[i][k] * A[i][k];
    R[k] = nrm;
    for (j = 0; j < n; j++)
      for (i = 0; i < n; i++)
        B[i][j] = A[i][j] * R[k];
  }
}
int main(void) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      A[i][j] = (i * 5 + j) % 7;
  f(N);
  for (int i = 0; i < N; i++)
    printf("%.17g %.17g\n", R[i], B[i][N - 1 - i]);
  return 0;
}
)";
  Scratch s;
  std::string expected = buildAndRun(s, "orig", program, "");
  s.write("k.c", program);
  auto parsed = analyze({{"k.c", (s.dir / "k.c").string()}}, {});
  ASSERT_TRUE(parsed);
  Plan plan(*parsed, {});
  const SourceKnob *par = nullptr;
  for (const auto &k : plan.knobs())
    if (k.name == "k.c:7.parallel")
      par = &k;
  ASSERT_TRUE(par) << plan.describe();
  EXPECT_EQ(par->values, (std::vector<std::string>{"off", "on", "exact"}));
  EXPECT_NE(par->doc.find("exact: only line 12"), std::string::npos) << par->doc;
  auto count = [](const std::string &text, const std::string &what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
      ++n;
    return n;
  };
  auto on = plan.render({{"k.c:7.parallel", "on"}});
  ASSERT_TRUE(on) << on.error().message;
  EXPECT_EQ(count(on->at("k.c"), "#pragma omp parallel for"), 2u) << on->at("k.c");
  EXPECT_EQ(count(on->at("k.c"), "reduction(+:nrm)"), 1u) << on->at("k.c");
  std::map<std::string, std::string> exact{{"k.c:7.parallel", "exact"}};
  auto ex = plan.render(exact);
  ASSERT_TRUE(ex) << ex.error().message;
  EXPECT_EQ(count(ex->at("k.c"), "#pragma omp parallel for"), 1u) << ex->at("k.c");
  EXPECT_EQ(count(ex->at("k.c"), "reduction"), 0u) << ex->at("k.c");
  EXPECT_TRUE(plan.parallel(exact));
  EXPECT_EQ(plan.flags(exact), std::vector<std::string>{"-fopenmp"});
  EXPECT_EQ(buildAndRun(s, "exact", ex->at("k.c"), "-fopenmp"), expected) << ex->at("k.c");
}

TEST(Transform, CombinedChoicesCompose) {
  Scratch s;
  std::string expected = buildAndRun(s, "orig", kNestProgram, "");
  s.write("k.c", kNestProgram);
  auto program = analyze({{"k.c", (s.dir / "k.c").string()}}, {});
  ASSERT_TRUE(program);
  const FileModel &f = program->files[0];
  ASSERT_GE(f.nests.size(), 3u);
  NestChoice c;
  c.parallel = true;
  c.bands[0].order = {0, 2, 1}; // i, j, k
  c.bands[0].tile = 8;
  c.unroll = 4;
  auto text = rewrite(f, {{0, c}, {1, NestChoice{true, false, 2, {}}}});
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_NE(text->find("#pragma omp parallel for"), std::string::npos);
  EXPECT_NE(text->find("hone_i_t += 8"), std::string::npos) << *text;
  // The tiled nest's parallel loop is the first tile loop: every element loop's variable, declared
  // outside the nest, is private (i too: shared, the threads raced on it; found by the race check).
  EXPECT_NE(text->find("#pragma omp parallel for private(k, j, i)"), std::string::npos) << *text;
  EXPECT_EQ(buildAndRun(s, "combined", *text, "-fopenmp"), expected) << *text;
}

TEST(Transform, AStatementEndingInAMacroArgumentIsRewrittenWhole) {
  Scratch s;
  // PolyBench's seidel-2d: the statement ends in SCALAR_VAL(9.0), and clang's extent ends at 9.0.
  const char *program = R"(#include <stdio.h>
#define SCALAR_VAL(x) x
#define N 20
double A[N][N];
int main(void) {
  int t, i, j;
  for (i = 0; i < N; i++)
    for (j = 0; j < N; j++)
      A[i][j] = (i * 3 + j) % 7;
  for (t = 0; t < 3; t++)
    for (i = 1; i < N - 1; i++)
      for (j = 1; j < N - 1; j++)
        A[i][j] = (A[i-1][j] + A[i][j-1] + A[i][j] + A[i][j+1]
                   + A[i+1][j])/SCALAR_VAL(5.0);
  double sum = 0;
  for (i = 0; i < N; i++)
    sum += A[i][i];
  printf("%.17g\n", sum);
  return 0;
}
)";
  std::string expected = buildAndRun(s, "orig", program, "");
  s.write("k.c", program);
  auto parsed = analyze({{"k.c", (s.dir / "k.c").string()}}, {});
  ASSERT_TRUE(parsed);
  const FileModel &f = parsed->files[0];
  ASSERT_GE(f.nests.size(), 2u);
  const Nest &n = f.nests[1];
  EXPECT_EQ(f.text.substr(n.loops[0].end - 16, 16), "SCALAR_VAL(5.0);");
  NestChoice c;
  c.unroll = 2;
  auto text = rewrite(f, {{1, c}});
  ASSERT_TRUE(text) << text.error().message;
  EXPECT_EQ(buildAndRun(s, "unrolled", *text, ""), expected) << *text;
}

TEST(Transform, ThePlanMarksWhatTheTestCannotProve) {
  Scratch s;
  s.write("k.c", kNestProgram);
  auto program = analyze({{"k.c", (s.dir / "k.c").string()}}, {});
  ASSERT_TRUE(program);
  Plan plan(*program, {});
  bool recurrenceSeen = false;
  for (const auto &k : plan.knobs())
    if (k.action == Action::Parallel && k.line == 18) { // v[i] = v[i-1] ...: a recurrence
      recurrenceSeen = true;
      ASSERT_TRUE(k.unproven.count("on"));
      EXPECT_NE(k.unproven.at("on").find("v["), std::string::npos) << k.unproven.at("on");
    }
  EXPECT_TRUE(recurrenceSeen) << plan.describe();
  EXPECT_NE(plan.describe().find("kernel()"), std::string::npos) << plan.describe();
  // The nest holding a line, for findings that name one.
  EXPECT_EQ(plan.nestAt("k.c", 12), "k.c:9");
  EXPECT_EQ(plan.nestAt("k.c", 30), "");
}

TEST(Transform, ThePlanIgnoresNestsThatPrint) {
  Scratch s;
  s.write("k.c", kNestProgram);
  auto program = analyze({{"k.c", (s.dir / "k.c").string()}}, {});
  ASSERT_TRUE(program);
  Plan plan(*program, {});
  for (const auto &k : plan.knobs())
    EXPECT_LT(k.line, 30) << k.name; // main's printing loop is not a candidate
}

TEST(Transform, NestsThatTheProgramsOwnOpenMpCoversAreLeftToIt) {
  // A directive on the loop, directives inside it, a loop in a parallel region, and a plain nest; read
  // with -fopenmp (clang sees the directives) and without (only the text shows them: the loop in the
  // region looks like any other, and parallelising it would only add a team per thread).
  const char *text = R"(#include <stdio.h>
#define N 512
double a[N][N], b[N][N], s[8];
void kernel(void) {
  #pragma omp parallel for
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      a[i][j] = b[j][i] * 2.0;
  for (int r = 0; r < 8; r++) {
    double total = 0;
#pragma omp parallel for reduction(+ : total)
    for (int i = 0; i < N; i++)
      total += a[r][i];
    s[r] = total;
  }
#pragma omp parallel
  {
    for (int i = 0; i < N; i++)
      b[i][0] = a[i][1];
  }
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      b[i][j] += a[i][j];
}
)";
  for (bool withOpenMp : {true, false}) {
    Scratch s;
    s.write("k.c", text);
    auto program = analyze({{"k.c", (s.dir / "k.c").string()}}, withOpenMp ? std::vector<std::string>{"-fopenmp"}
                                                                            : std::vector<std::string>{});
    ASSERT_TRUE(program) << program.error().message;
    // With -fopenmp, libclang shows no statement under a directive (its captured body): those loops
    // are no nests at all, and the one holding a directive is marked.
    std::map<int, bool> openmp;
    for (const auto &n : program->files[0].nests)
      openmp[n.line] = n.openmp;
    std::map<int, bool> want = withOpenMp ? std::map<int, bool>{{9, true}, {21, false}}
                                          : std::map<int, bool>{{6, true}, {9, true}, {18, false}, {21, false}};
    EXPECT_EQ(openmp, want) << withOpenMp;
    Plan plan(*program, {});
    std::set<int> lines;
    for (const auto &k : plan.knobs())
      lines.insert(k.line);
    EXPECT_EQ(lines.count(6), 0u) << plan.describe();
    EXPECT_EQ(lines.count(9), 0u) << plan.describe();
    EXPECT_EQ(lines.count(21), 1u) << plan.describe();
    EXPECT_NE(plan.describe().find("nest k.c:9: the program's own OpenMP directives cover it"), std::string::npos)
        << plan.describe();
  }
}

namespace {

/// A project whose first nest is parallel and whose second has every iteration update one element
/// by zero: parallel, that is a race the outputs cannot show.
const char *kRacyProgram = R"(#include <stdio.h>
#define N 4000
double a[N], b[N], hist[4];
int main(void) {
  for (int i = 0; i < N; i++)
    a[i] = i * 0.5;
  for (int i = 0; i < N; i++) {
    hist[0] += 0.0;
    b[i] = a[i] * 2.0;
  }
  double s = 0;
  for (int i = 0; i < N; i++)
    s += b[i];
  printf("%.17g %.17g\n", s, hist[0]);
  return 0;
}
)";

hone::kernel::Manifest racyProject(const Scratch &s) {
  s.write("k.c", kRacyProgram);
  s.write("hone.toml", "[project]\nname = \"racy\"\nsources = [\"k.c\"]\n[build]\ncommand = \"cc {cflags} {defines} "
                       "{sources} -o {out}\"\nflags = \"-O1\"\n[run]\ncommand = \"{exe}\"\nseeds = [1]\n");
  auto m = hone::kernel::loadManifest(s.dir.string());
  EXPECT_TRUE(m) << m.error().message;
  if (!m)
    return {};
  auto plan = hone::kernel::addSourceKnobs(*m);
  EXPECT_TRUE(plan) << plan.error().message;
  return *m;
}

} // namespace

TEST(RaceCheck, ARaceTheOutputsHideIsFoundAndAProvenLoopPasses) {
  Scratch s;
  hone::kernel::Manifest m = racyProject(s);
  ASSERT_TRUE(m.plan);
  const hone::kernel::Knob *racy = m.knob("k.c:7.parallel");
  const hone::kernel::Knob *proven = m.knob("k.c:5.parallel");
  ASSERT_TRUE(racy && proven) << m.plan->describe();
  ASSERT_TRUE(racy->unproven.count("on")) << "the test must not prove the racy loop parallel";
  EXPECT_FALSE(proven->unproven.count("on")) << proven->unproven.at("on");

  hone::kernel::Variant ref = hone::kernel::referenceVariant(m);
  EXPECT_FALSE(hone::kernel::addsParallelism(m, ref));
  hone::kernel::Variant bad = ref;
  bad.knobs["k.c:7.parallel"] = "on";
  ASSERT_TRUE(hone::kernel::realise(m, bad));
  EXPECT_TRUE(hone::kernel::addsParallelism(m, bad));
  auto race = hone::kernel::checkRaces(m, bad, (s.dir / "race-bad").string(), 1);
  if (!race.ran && race.race.empty())
    GTEST_SKIP() << "race check unavailable: " << race.skipped << " (scripts/install-deps.sh installs clang and libomp-dev)";
  EXPECT_NE(race.race.find("data race"), std::string::npos) << race.race;
  EXPECT_NE(race.race.find("k.c"), std::string::npos) << race.race;
  EXPECT_NE(race.command.find("-fsanitize=thread"), std::string::npos) << race.command;

  hone::kernel::Variant good = ref;
  good.knobs["k.c:5.parallel"] = "on";
  ASSERT_TRUE(hone::kernel::realise(m, good));
  auto clean = hone::kernel::checkRaces(m, good, (s.dir / "race-good").string(), 1);
  EXPECT_TRUE(clean.ran) << clean.skipped;
  EXPECT_EQ(clean.race, "");
}

TEST(RaceCheck, ABuildCommandThatIsNotACompilerIsSkippedWithTheReason) {
  Scratch s;
  hone::kernel::Manifest m = racyProject(s);
  ASSERT_TRUE(m.plan);
  m.buildCommand = "make CFLAGS='{cflags}' OUT={out}";
  hone::kernel::Variant v = hone::kernel::referenceVariant(m);
  v.knobs["k.c:5.parallel"] = "on";
  ASSERT_TRUE(hone::kernel::realise(m, v));
  auto race = hone::kernel::checkRaces(m, v, (s.dir / "race").string(), 1);
  EXPECT_FALSE(race.ran);
  EXPECT_TRUE(race.race.empty());
  EXPECT_FALSE(race.skipped.empty());
}

TEST(SourceKnobs, NestHeatSumsEachNestsLinesHottestFirst) {
  Scratch s;
  hone::kernel::Manifest m = racyProject(s);
  ASSERT_TRUE(m.plan);
  hone::kernel::CachegrindData cg;
  cg.totals["Ir"] = 1000;
  auto line = [](int l, double ir) {
    hone::kernel::CostLine c;
    c.file = "k.c";
    c.line = l;
    c.events["Ir"] = ir;
    return c;
  };
  cg.lines = {line(6, 100), line(8, 300), line(9, 400), line(14, 50)};
  json heat = hone::kernel::nestHeat(m, cg);
  ASSERT_TRUE(heat.is_array());
  ASSERT_GE(heat.size(), 2u);
  EXPECT_EQ(heat[0]["nest"], "k.c:7");
  EXPECT_DOUBLE_EQ(heat[0]["share"].get<double>(), 0.7);
  EXPECT_EQ(heat[1]["nest"], "k.c:5");
  EXPECT_DOUBLE_EQ(heat[1]["share"].get<double>(), 0.1);
  // A harness file (not editable) runs most of the instructions, outside the timed region: with the
  // whole process timed it counts, with a region timed the shares are of the editable file's.
  cg.totals["Ir"] = 10000;
  hone::kernel::CostLine flush = line(3, 9150);
  flush.file = "harness.c";
  cg.lines.push_back(flush);
  heat = hone::kernel::nestHeat(m, cg);
  EXPECT_DOUBLE_EQ(heat[0]["share"].get<double>(), 0.07);
  m.timing.mode = "region";
  heat = hone::kernel::nestHeat(m, cg);
  EXPECT_EQ(heat[0]["nest"], "k.c:7");
  EXPECT_DOUBLE_EQ(heat[0]["share"].get<double>(), 700.0 / 850.0);
  EXPECT_DOUBLE_EQ(heat[1]["share"].get<double>(), 100.0 / 850.0);
}

// A variant whose source knobs rewrote the file (pragmas inserted, a nest tiled) has its nests on other
// lines than the plan's: its own nests, as the profile's breakdown parsed them, give each plan nest its
// share, matched nest for nest; where a file's nests do not match, the plan's line ranges count.
TEST(SourceKnobs, NestHeatOfARewrittenVariantFollowsTheVariantsOwnNests) {
  Scratch s;
  hone::kernel::Manifest m = racyProject(s);
  ASSERT_TRUE(m.plan);
  const auto *file = m.plan->program().file("k.c");
  ASSERT_TRUE(file);
  ASSERT_GE(file->nests.size(), 2u);
  hone::kernel::CachegrindData cg;
  cg.totals["Ir"] = 1000;
  hone::kernel::CostLine hot;
  hot.file = "k.c";
  hot.line = 6; // in the plan's first nest; in the variant, a line of the pragma above its second
  hot.events["Ir"] = 500;
  cg.lines = {hot};
  hone::kernel::TimeBreakdown built;
  int shift = 0;
  for (size_t i = 0; i < file->nests.size(); ++i) {
    const auto &n = file->nests[i];
    shift += 2; // each nest two lines further down than the one before
    built.nests.push_back(
        {"k.c", n.function, n.line + shift, n.endLine + shift, i == 1 ? 0.8 : 0.01, false, std::nullopt});
  }
  std::reverse(built.nests.begin(), built.nests.end()); // as a breakdown ranks them, not in source order
  auto shareOf = [](const json &heat, const std::string &nest) {
    for (const auto &h : heat)
      if (h["nest"] == nest)
        return h["share"].get<double>();
    return -1.0;
  };
  std::string first = fmt::format("k.c:{}", file->nests[0].line), second = fmt::format("k.c:{}", file->nests[1].line);
  json heat = hone::kernel::nestHeat(m, cg, &built);
  EXPECT_DOUBLE_EQ(shareOf(heat, second), 0.8) << heat.dump();
  EXPECT_DOUBLE_EQ(shareOf(heat, first), 0.01) << heat.dump();
  EXPECT_EQ(heat[0]["nest"], second) << heat.dump();
  // Nests that do not match the plan's (one missing): the plan's lines count, as without a breakdown.
  built.nests.pop_back();
  heat = hone::kernel::nestHeat(m, cg, &built);
  EXPECT_DOUBLE_EQ(shareOf(heat, first), 0.5) << heat.dump();
  EXPECT_EQ(heat, hone::kernel::nestHeat(m, cg));
}

TEST(SourceKnobs, AProfileThatSeesNoNestLeavesTheGuidedAgentItsHeat) {
  // A best whose profile attributes nothing to any nest (valgrind stopped at an instruction it cannot
  // decode) must not make every nest look cold: the agent keeps transforming the hot one.
  Scratch s;
  s.write("k.c", "#include <stdio.h>\n#define N 4000\ndouble a[N], b[N];\nint main(void) {\n"
                 "  for (int i = 0; i < N; i++) a[i] = i * 0.5;\n"
                 "  for (int i = 0; i < N; i++) b[i] = a[i] * 2.0;\n"
                 "  printf(\"%.17g\\n\", b[7]);\n}\n");
  s.write("hone.toml", "[project]\nname = \"heat\"\nsources = [\"k.c\"]\n[build]\ncommand = \"cc {cflags} {defines} "
                       "{sources} -o {out}\"\nflags = \"-O1\"\n[run]\ncommand = \"{exe}\"\nseeds = [1]\n"
                       "[[knob]]\nname = \"flags\"\nkind = \"flags\"\nvalues = [\"\", \"-O2\", \"-O3\"]\n");
  auto m = hone::kernel::loadManifest(s.dir.string());
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_TRUE(hone::kernel::addSourceKnobs(*m));
  ASSERT_TRUE(m->knobs.size() > 1 && std::any_of(m->knobs.begin(), m->knobs.end(), [](const auto &k) {
                return k.name == "k.c:6.parallel";
              }));
  auto catalogue = hone::kernel::loadCatalogue();
  ASSERT_TRUE(catalogue);
  auto agent = hone::kernel::makeGuidedKernelAgent(
      *m, *catalogue, hone::kernel::renderVariant({hone::kernel::defaultValues(*m), {}}), "the start");
  auto step = [](const hone::engine::Candidate &c, double score, double hot, double cold) {
    hone::engine::Step st;
    st.candidate = c;
    st.result.score = score;
    st.result.metrics = {{"time_s", 1.0 / score}, {"ci95_s", 0.0}};
    st.result.evidence.tool = "kernel profilers";
    st.result.profile = {{"nests", json::array({json{{"nest", "k.c:6"}, {"share", hot}},
                                                json{{"nest", "k.c:5"}, {"share", cold}}})}};
    st.feedback = hone::test::feedbackOf({{"findings", json::array()}});
    return st;
  };
  auto first = agent->propose(1);
  ASSERT_EQ(first.size(), 1u);
  agent->notify({step(first[0], 1.0, 0.9, 0.01)});
  // Every edit from the start: the flags edits win twice over, and their profile sees no nest.
  auto edits = agent->propose(64);
  std::vector<hone::engine::Step> steps;
  for (const auto &c : edits) {
    auto v = hone::kernel::parseVariant(*m, c.artifact);
    ASSERT_TRUE(v);
    bool flags = v->knobs.at("flags") != "";
    steps.push_back(step(c, flags ? 2.0 : 0.5, flags ? 0.0 : 0.9, 0.0));
  }
  agent->notify(steps);
  bool hotNest = false;
  for (const auto &c : agent->propose(64)) {
    auto v = hone::kernel::parseVariant(*m, c.artifact);
    ASSERT_TRUE(v);
    hotNest = hotNest || (v->knobs.at("flags") != "" && v->knobs.at("k.c:6.parallel") == "on");
  }
  EXPECT_TRUE(hotNest) << "the hot nest is transformed on top of the new best";
}

namespace {
/// Three independent nests of the same shape, each a third of the time (like 3mm's three products),
/// with hone's source knobs, and the guided agent from the source as written.
struct ThreeNests {
  Scratch s;
  hone::kernel::Manifest m;
  std::unique_ptr<hone::engine::Strategy> agent;
  ThreeNests() {
    s.write("k.c", "#include <stdio.h>\n#define N 64\ndouble a[N][N], b[N][N], c[N][N];\nint main(void) {\n"
                   "  for (int i = 0; i < N; i++) for (int j = 0; j < N; j++) a[i][j] = i + j;\n"
                   "  for (int i = 0; i < N; i++) for (int j = 0; j < N; j++) b[i][j] = a[i][j] * 2.0;\n"
                   "  for (int i = 0; i < N; i++) for (int j = 0; j < N; j++) c[i][j] = b[i][j] + 1.0;\n"
                   "  printf(\"%.17g\\n\", c[7][7]);\n}\n");
    s.write("hone.toml", "[project]\nname = \"three\"\nsources = [\"k.c\"]\n[build]\ncommand = \"cc {cflags} "
                         "{defines} {sources} -o {out}\"\n[run]\ncommand = \"{exe}\"\nseeds = [1]\n");
    auto loaded = hone::kernel::loadManifest(s.dir.string());
    EXPECT_TRUE(loaded) << loaded.error().message;
    if (!loaded)
      return;
    m = *loaded;
    EXPECT_TRUE(hone::kernel::addSourceKnobs(m));
    auto catalogue = hone::kernel::loadCatalogue();
    EXPECT_TRUE(catalogue);
    if (catalogue)
      agent = hone::kernel::makeGuidedKernelAgent(
          m, *catalogue, hone::kernel::renderVariant({hone::kernel::defaultValues(m), {}}), "the start");
  }
  bool has(const std::string &knob) const {
    return std::any_of(m.knobs.begin(), m.knobs.end(), [&](const auto &k) { return k.name == knob; });
  }
  /// Drives the agent for `steps` evaluations against a synthetic time of the knob values; every
  /// step is profiled (each nest a third of the instructions) and carries `findings`.
  std::vector<std::pair<hone::kernel::KnobValues, std::string>>
  drive(int steps, const std::function<double(const hone::kernel::KnobValues &)> &time, const json &findings) {
    std::vector<std::pair<hone::kernel::KnobValues, std::string>> out;
    for (int i = 0; i < steps && agent; ++i) {
      auto p = agent->propose(1);
      if (p.empty())
        break;
      auto v = hone::kernel::parseVariant(m, p[0].artifact);
      EXPECT_TRUE(v) << p[0].artifact;
      if (!v)
        break;
      hone::engine::Step st;
      st.candidate = p[0];
      double t = time(v->knobs);
      st.result.score = 1.0 / t;
      st.result.metrics = {{"time_s", t}, {"ci95_s", 0.0}};
      st.result.evidence.tool = "kernel profilers";
      st.result.profile = {
          {"nests", json::array({json{{"nest", "k.c:5"}, {"share", 0.33}}, json{{"nest", "k.c:6"}, {"share", 0.33}},
                                 json{{"nest", "k.c:7"}, {"share", 0.33}}})}};
      st.feedback = hone::test::feedbackOf({{"findings", findings}});
      out.push_back({v->knobs, p[0].rationale});
      agent->notify({st});
    }
    return out;
  }
};
} // namespace

// A transformation that paid off on one nest is tried next on the other nests it applies to, with
// the same value, before anything else (3mm: `simd` on one product, then on the other two).
TEST(SourceKnobs, ATransformationThatPaidOffOnOneNestIsTriedNextOnTheOthers) {
  ThreeNests t;
  ASSERT_TRUE(t.agent);
  for (int line : {5, 6, 7})
    ASSERT_TRUE(t.has(fmt::format("k.c:{}.simd", line))) << line;
  // Each nest takes 1; simd halves a nest's time; nothing else changes anything.
  auto time = [](const hone::kernel::KnobValues &v) {
    double total = 0;
    for (int line : {5, 6, 7})
      total += v.at(fmt::format("k.c:{}.simd", line)) == "on" ? 0.5 : 1.0;
    return total;
  };
  auto steps = t.drive(60, time, json::array());
  auto simdOn = [](const hone::kernel::KnobValues &v) {
    int n = 0;
    for (int line : {5, 6, 7})
      n += v.at(fmt::format("k.c:{}.simd", line)) == "on";
    return n;
  };
  auto first = std::find_if(steps.begin(), steps.end(), [&](const auto &s) { return simdOn(s.first) == 1; });
  ASSERT_NE(first, steps.end()) << "simd is explored";
  ASSERT_GE(steps.end() - first, 3);
  // The two proposals right after it add simd on another nest, each citing the win before it.
  for (int k = 1; k <= 2; ++k) {
    const auto &[values, why] = *(first + k);
    EXPECT_EQ(simdOn(values), 1 + k) << why;
    EXPECT_NE(why.find("the same simd paid off on k.c:"), std::string::npos) << why;
  }
  double best = 0;
  for (const auto &s : steps)
    best = std::max(best, 1.0 / time(s.first));
  EXPECT_DOUBLE_EQ(best, 1.0 / 1.5);
}

// A clear loss gets companions only from its own nest (another nest's time is its own), and at most
// three per epoch: the rest of the budget goes to exploration.
TEST(SourceKnobs, CompanionsOfALossStayInItsNestAndAreFew) {
  ThreeNests t;
  ASSERT_TRUE(t.agent);
  ASSERT_TRUE(t.has("k.c:5.tile") && t.has("k.c:5.order") && t.has("k.c:6.order")) << t.m.knobs.size();
  // Tiling the first nest triples its time; nothing else changes anything.
  auto time = [](const hone::kernel::KnobValues &v) { return v.at("k.c:5.tile") != "0" ? 5.0 : 3.0; };
  json findings = json::array({json{{"rule", "kernel-cache-misses"},
                                    {"evidence", "the program misses L1 on 30% of its references"},
                                    {"transformations", json::array({"loop-tiling", "loop-interchange"})},
                                    {"subject", {{"share", 0.9}}}}});
  auto steps = t.drive(60, time, findings);
  auto nestOf = [](const std::string &knob) { return knob.substr(0, knob.find('.', knob.find(':'))); };
  auto start = hone::kernel::defaultValues(t.m);
  size_t companions = 0;
  for (const auto &[values, why] : steps) {
    if (why.find("shows the knob matters") == std::string::npos)
      continue;
    ++companions;
    std::set<std::string> nests;
    for (const auto &[name, value] : values)
      if (start.at(name) != value && name != "flags")
        nests.insert(nestOf(name));
    EXPECT_EQ(nests.size(), 1u) << why;
  }
  EXPECT_GE(companions, 1u);
  EXPECT_LE(companions, 3u);
}

TEST(SourceKnobs, FlagsAndHonesOwnRewritesLeaveTheTimerAlone) {
  Scratch s;
  hone::kernel::Manifest m = racyProject(s);
  ASSERT_TRUE(m.plan);
  hone::kernel::Knob flags;
  flags.name = "flags";
  flags.kind = hone::kernel::KnobKind::Flags;
  flags.values = {"", "-O3"};
  m.knobs.push_back(flags);
  hone::kernel::Knob define;
  define.name = "MODE";
  define.values = {"0", "1"};
  m.knobs.push_back(define);
  hone::kernel::Variant v = hone::kernel::referenceVariant(m);
  v.knobs["flags"] = "-O3";
  v.knobs["k.c:5.parallel"] = "on";
  ASSERT_TRUE(hone::kernel::realise(m, v));
  EXPECT_TRUE(hone::kernel::timerUntouched(m, v));
  hone::kernel::Variant edited = v;
  edited.files["k.c"] += "/* an edit of the agent's */\n";
  EXPECT_FALSE(hone::kernel::timerUntouched(m, edited));
  hone::kernel::Variant defined = v;
  defined.knobs["MODE"] = "1"; // a define may change what the program times
  EXPECT_FALSE(hone::kernel::timerUntouched(m, defined));
}
