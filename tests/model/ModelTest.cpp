// Model files: expressions, machine and app loading with located errors,
// and instantiation.
#include "model/App.h"
#include "model/Catalog.h"
#include "support/Expr.h"
#include "model/Machine.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace hone::model {
namespace {

double evalText(const std::string &text, std::map<std::string, double> vars = {}) {
  auto e = Expr::parse(text);
  EXPECT_TRUE(e.ok()) << text;
  auto v = e->eval([&](const std::string &n) -> std::optional<double> {
    auto it = vars.find(n);
    return it == vars.end() ? std::nullopt : std::optional<double>(it->second);
  });
  EXPECT_TRUE(v.ok()) << text << ": " << (v.ok() ? "" : v.error().message);
  return v.ok() ? *v : NAN;
}

TEST(Expr, ArithmeticPrecedenceAndFunctions) {
  EXPECT_DOUBLE_EQ(evalText("1 + 2 * 3"), 7);
  EXPECT_DOUBLE_EQ(evalText("(1 + 2) * 3"), 9);
  EXPECT_DOUBLE_EQ(evalText("2 ^ 3 ^ 2"), 512); // right-associative
  EXPECT_DOUBLE_EQ(evalText("-2 ^ 2"), -4);
  EXPECT_DOUBLE_EQ(evalText("7 / 2"), 3.5);
  EXPECT_DOUBLE_EQ(evalText("7 // 2"), 3);
  EXPECT_DOUBLE_EQ(evalText("-1 % 4"), 3); // floored: neighbour offsets wrap
  EXPECT_DOUBLE_EQ(evalText("min(3, 4) + max(3, 4)"), 7);
  EXPECT_DOUBLE_EQ(evalText("sqrt(16) + cbrt(27) + floor(2.7) + ceil(2.1) + round(2.5)"), 4 + 3 + 2 + 3 + 3);
  EXPECT_DOUBLE_EQ(evalText("log2(8) + log2(1)"), 3);
  EXPECT_DOUBLE_EQ(evalText("(i + j + k) % gx", {{"i", 1}, {"j", 1}, {"k", 1}, {"gx", 2}}), 1);
}

TEST(Expr, ErrorsCarryColumns) {
  auto e = Expr::parse("1 + * 2");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().column, 5);
  EXPECT_FALSE(Expr::parse("foo(1)").ok());
  EXPECT_FALSE(Expr::parse("min(1)").ok());
  EXPECT_FALSE(Expr::parse("(1 + 2").ok());
  auto unknown = Expr::parse("a + b")->eval([](const std::string &) { return std::nullopt; });
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.error().message.find("unknown name 'a'"), std::string::npos);
  auto zero = Expr::parse("1 // 0")->eval([](const std::string &) { return std::nullopt; });
  EXPECT_FALSE(zero.ok());
  auto log = Expr::parse("2 + log2(0)")->eval([](const std::string &) { return std::nullopt; });
  ASSERT_FALSE(log.ok());
  EXPECT_NE(log.error().message.find("log2"), std::string::npos);
  EXPECT_EQ(log.error().column, 5);
  EXPECT_EQ(Expr::parse("x * 2")->names(), std::vector<std::string>{"x"});
}

const char *kMachine = R"(name = "tiny"
nodes = 1
[runtime]
task_analysis_us = 1
[[processor]]
kind = "GPU"
per_node = 2
gflops = 1
[[memory]]
kind = "FBMEM"
per = "GPU"
capacity_gb = 1
  [[memory.access]]
  proc = "GPU"
  scope = "own"
  bandwidth_gbs = 1
  affinity = 200
[[channel]]
name = "link"
between = ["FBMEM", "FBMEM"]
scope = "node"
bandwidth_gbs = 1
)";

TEST(Machine, LoadsAndAnswersQueries) {
  auto m = parseMachine("tiny.toml", kMachine);
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->nodes, 1);
  EXPECT_EQ(m->count(ProcKind::GPU), 2);
  EXPECT_EQ(m->count(ProcKind::CPU), 0);
  EXPECT_DOUBLE_EQ(m->memory(MemKind::FBMEM)->capacity, 1e9);
  EXPECT_NE(m->channel(MemKind::FBMEM, MemKind::FBMEM, false), nullptr);
  EXPECT_EQ(m->describe(), "1 node x (2 GPU)");
}

void expectMachineError(const std::string &text, const std::string &fragment, int line) {
  auto m = parseMachine("m.toml", text);
  ASSERT_FALSE(m.ok()) << "accepted:\n" << text;
  SCOPED_TRACE(m.error().message);
  EXPECT_NE(m.error().message.find(fragment), std::string::npos) << m.error().message;
  EXPECT_NE(m.error().message.find("m.toml:" + std::to_string(line) + ":"), std::string::npos) << m.error().message;
}

TEST(Machine, ErrorsAreLocated) {
  std::string base = kMachine;
  auto replace = [&](const std::string &from, const std::string &to) {
    std::string s = base;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  expectMachineError(replace("gflops = 1", "gflop = 1"), "unknown key 'gflop'; did you mean 'gflops'?", 8);
  expectMachineError(replace("kind = \"GPU\"", "kind = \"TPU\""), "unknown processor kind 'TPU'", 6);
  expectMachineError(replace("capacity_gb = 1", "capacity_gb = -1"), "must be greater than 0", 12);
  expectMachineError(replace("scope = \"node\"\nbandwidth_gbs = 1\n", "scope = \"nod\"\nbandwidth_gbs = 1\n"),
                     "must be \"node\"", 21);
  expectMachineError(replace("nodes = 1", "nodes = [1"), "expected comma or closing ']'", 3);
  expectMachineError(base + "ports = [\"links\"]\n",
                     "unknown port 'links': a port is a memory kind (SYSMEM, FBMEM, RDMEM, ZCMEM, SOCKMEM), \"node\" or "
                     "\"link\"; did you mean 'link'?",
                     23);
  expectMachineError(base + "ports = [\"FBMEN\"]\n",
                     "did you mean 'FBMEM'?", 23);
  // Two GPUs need a path between their framebuffers.
  auto noChannel = parseMachine("m.toml", base.substr(0, base.find("[[channel]]")));
  ASSERT_FALSE(noChannel.ok());
  EXPECT_NE(noChannel.error().message.find("no [[channel]]"), std::string::npos);
}

TEST(Machine, NumbersOutOfRangeAreLocatedErrors) {
  std::string base = kMachine;
  auto replace = [&](std::string s, const std::string &from, const std::string &to) {
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  expectMachineError(replace(base, "task_analysis_us = 1", "task_analysis_us = nan"), "expected a finite number", 4);
  expectMachineError(replace(base, "gflops = 1", "gflops = inf"), "expected a finite number", 8);
  expectMachineError(replace(base, "bandwidth_gbs = 1", "bandwidth_gbs = -inf"), "expected a finite number", 16);
  expectMachineError(replace(base, "nodes = 1", "nodes = 1e12"), "must be a whole number from 1 to 4096", 2);
  expectMachineError(replace(base, "per_node = 2", "per_node = 100000"), "from 0 to 1024", 7);
  expectMachineError(replace(replace(base, "nodes = 1", "nodes = 4096"), "per_node = 2", "per_node = 1024"),
                     "processors of a kind", 7);
}

const char *kApp = R"(name = "toy"
top_task = "main"
iterations = "steps"
[metric]
kind = "time"
[size]
name = "n"
default = 8
[params]
steps = 2
pieces = "gpus * nodes"
[[region]]
name = "r"
fields = { x = 8, y = 4 }
[[partition]]
name = "p"
region = "r"
pieces = ["pieces"]
elements = "n"
[[partition]]
name = "ghost"
region = "r"
covers = "p"
neighbors = [[-1], [1]]
fraction = 0.5
[[task]]
name = "work"
variants = ["GPU"]
flops = "n * 2"
  [[task.arg]]
  region = "p"
  piece = ["i"]
  privilege = "read-write"
  fields = ["x"]
  [[task.arg]]
  region = "ghost"
  piece = ["i"]
  privilege = "read"
[[body]]
task = "work"
domain = ["pieces"]
point = ["i"]
)";

TEST(App, InstantiatesPiecesGhostsAndIterations) {
  auto m = parseMachine("tiny.toml", kMachine);
  auto app = parseApp("toy.toml", kApp);
  ASSERT_TRUE(app.ok()) << app.error().message;
  auto prog = instantiate(*app, *m, std::nullopt);
  ASSERT_TRUE(prog.ok()) << prog.error().message;
  ASSERT_EQ(prog->tasks.size(), 4u); // 2 pieces x 2 steps
  EXPECT_EQ(prog->data.size(), 4u);  // 2 pieces x 2 fields
  const PointTask &t = prog->tasks[1];
  EXPECT_EQ(t.point, std::vector<int64_t>{1});
  EXPECT_DOUBLE_EQ(t.flops, 16);
  ASSERT_EQ(t.accesses.size(), 2u);
  EXPECT_DOUBLE_EQ(t.accesses[0].instanceBytes, 8 * 8); // field x of piece 1
  // The ghost of piece 1 covers half of piece 0 (offsets -1 and +1 both wrap
  // to piece 0 on a grid of 2), both fields.
  EXPECT_EQ(t.accesses[1].data.size(), 4u);
  EXPECT_DOUBLE_EQ(t.accesses[1].instanceBytes, 2 * 0.5 * 8 * (8 + 4));
  auto bigger = instantiate(*app, *m, 100.0);
  EXPECT_DOUBLE_EQ(bigger->tasks[0].flops, 200);
}

void expectAppError(const std::string &text, const std::string &fragment) {
  auto app = parseApp("a.toml", text);
  std::string message;
  if (app.ok()) {
    auto m = parseMachine("tiny.toml", kMachine);
    auto prog = instantiate(*app, *m, std::nullopt);
    ASSERT_FALSE(prog.ok()) << "accepted:\n" << text;
    message = prog.error().message;
  } else {
    message = app.error().message;
  }
  EXPECT_NE(message.find(fragment), std::string::npos) << message;
  EXPECT_EQ(message.rfind("a.toml:", 0), 0u) << message;
}

TEST(App, ErrorsAreLocated) {
  std::string base = kApp;
  auto replace = [&](const std::string &from, const std::string &to) {
    std::string s = base;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  expectAppError(replace("region = \"ghost\"", "region = \"gost\""), "did you mean 'ghost'?");
  expectAppError(replace("fields = [\"x\"]", "fields = [\"z\"]"), "region 'r' has no field 'z'");
  expectAppError(replace("privilege = \"read-write\"", "privilege = \"rw\""), "unknown privilege 'rw'");
  expectAppError(replace("task = \"work\"", "task = \"wrok\""), "did you mean 'work'?");
  expectAppError(replace("flops = \"n * 2\"", "flops = \"m * 2\""), "unknown name 'm'");
  expectAppError(replace("piece = [\"i\"]\n  privilege = \"read-write\"", "piece = [\"i + 5\"]\n  privilege = \"read-write\""),
                 "outside the 2 grid of 'p'");
  expectAppError(replace("flops = \"n * 2\"", "flops = \"n * (2\""), "expected ')'");
  expectAppError(replace("[[body]]\ntask = \"work\"\ndomain = [\"pieces\"]\npoint = [\"i\"]\n", ""),
                 "at least one [[body]]");
  expectAppError(replace("covers = \"p\"", "covers = \"ghost\""), "not a disjoint partition");
}

TEST(App, NumbersOutOfRangeAreLocatedErrors) {
  std::string base = kApp;
  auto replace = [&](const std::string &from, const std::string &to) {
    std::string s = base;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  expectAppError(replace("flops = \"n * 2\"", "flops = \"0 - 5\""), "must not be negative");
  expectAppError(replace("flops = \"n * 2\"", "flops = \"10 ^ 400\""), "not a finite number");
  expectAppError(replace("piece = [\"i\"]\n  privilege = \"read\"", "piece = [\"i + 1e300\"]\n  privilege = \"read\""),
                 "piece coordinate");
  expectAppError(replace("neighbors = [[-1], [1]]", "neighbors = [[-1], [4611686018427387904]]"), "out of range");
  expectAppError(replace("iterations = \"steps\"", "iterations = 1e300"), "from 1 to 1000000");
}

TEST(App, ParamsIterationsAndFlopsErrorsNameTheirLine) {
  // Errors found when the [params], iterations or metric.flops expressions are checked or evaluated
  // point at the expression's own line.
  std::string base = kApp;
  auto lineOf = [&](const std::string &text, const std::string &what) {
    return 1 + std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(text.find(what)), '\n');
  };
  auto expectAt = [&](const std::string &from, const std::string &to, const std::string &fragment) {
    std::string s = base;
    s.replace(s.find(from), from.size(), to);
    expectAppError(s, fragment);
    auto app = parseApp("a.toml", s);
    std::string message = app.ok() ? instantiate(*app, *parseMachine("tiny.toml", kMachine), std::nullopt).error().message
                                   : app.error().message;
    EXPECT_EQ(message.rfind(fmt::format("a.toml:{}:", lineOf(s, to)), 0), 0u) << message;
  };
  expectAt("pieces = \"gpus * nodes\"", "pieces = \"gpuz * nodes\"", "unknown name 'gpuz'");
  expectAt("pieces = \"gpus * nodes\"", "pieces = \"log2(gpus - gpus)\"", "params.pieces");
  expectAt("iterations = \"steps\"", "iterations = \"steps * 1e9\"", "from 1 to 1000000");
  expectAt("iterations = \"steps\"", "iterations = \"stepz\"", "did you mean 'steps'?");
}

TEST(Catalog, FindsShippedModelsAndSuggests) {
  auto p = findModel("machines", "p100x4");
  ASSERT_TRUE(p.ok()) << p.error().message;
  auto bad = findModel("apps", "circut");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("did you mean 'circuit'?"), std::string::npos);
}

TEST(Catalog, EveryShippedModelLoads) {
  std::vector<MachineModel> machines;
  for (const auto &name : modelNames("machines")) {
    auto m = loadMachine(*findModel("machines", name));
    ASSERT_TRUE(m.ok()) << m.error().message;
    machines.push_back(std::move(*m));
  }
  EXPECT_GE(machines.size(), 4u);
  auto apps = modelNames("apps");
  EXPECT_EQ(apps.size(), 9u);
  for (const auto &name : apps) {
    auto a = loadApp(*findModel("apps", name));
    ASSERT_TRUE(a.ok()) << a.error().message;
    for (const auto &m : machines) {
      auto prog = instantiate(*a, m, std::nullopt);
      ASSERT_TRUE(prog.ok()) << name << " on " << m.name << ": " << prog.error().message;
      EXPECT_FALSE(prog->tasks.empty());
    }
  }
}

} // namespace
} // namespace hone::model
