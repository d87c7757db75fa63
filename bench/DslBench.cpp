// Front-end speed: `hone check` work (lex + parse + semantic checks) per
// example mapper and for a synthetic 100-line mapper (target: under 1 ms),
// formatting, and placing every point of a launch with the interpreter.
// Run through bench/run.sh, which prints a table.
#include "BenchUtil.h"
#include "dsl/Formatter.h"
#include "dsl/Frontend.h"
#include "dsl/Interpreter.h"

#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>

namespace {


std::string readExample(const std::string &app) {
  std::ifstream in(std::string(HONE_SOURCE_DIR) + "/examples/mappers/" + app + ".map");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// A 100-line mapper in the shape of real ones: defaults, per-task
// overrides, machine spaces, helper and placement functions, task maps.
std::string synthetic100() {
  std::string out = "Task * GPU,CPU;\nRegion * * GPU FBMEM;\nRegion * * CPU SYSMEM;\nLayout * * * SOA C_order;\n"
                    "m2 = Machine(GPU);\nm1 = m2.merge(0, 1);\n"
                    "def block(IPoint p, ISpace s, MSpace m, int pd, int md) {\n    return p[pd] * m.size[md] / s[pd];\n}\n"
                    "def cyclic(IPoint p, ISpace s, MSpace m, int pd, int md) {\n    return p[pd] % m.size[md];\n}\n";
  int lines = 13;
  for (int i = 0; lines < 100; ++i) {
    out += "def tile" + std::to_string(i) + "(Task task) {\n"
           "    m3 = m2.auto_split(0, task.ispace);\n"
           "    m4 = m3.auto_split(2, task.ispace / m3[:-1]);\n"
           "    up = tuple(block(task.ipoint, task.ispace, m4, d, d) for d in (0, 1));\n"
           "    lo = tuple(cyclic(task.ipoint, task.ispace, m4, d, d + 2) for d in (0, 1));\n"
           "    return m4[*up, *lo];\n}\n";
    out += "Region task_" + std::to_string(i) + " rp_ghost GPU ZCMEM,FBMEM;\n";
    out += "IndexTaskMap task_" + std::to_string(i) + " tile" + std::to_string(i) + ";\n";
    lines += 9;
  }
  return out;
}

void BM_Check(benchmark::State &state, const std::string &text) {
  for (auto _ : state) {
    auto checked = hone::dsl::checkSource(hone::support::SourceFile("bench.map", text));
    benchmark::DoNotOptimize(checked.program.stmts.size());
    if (!checked.ok())
      state.SkipWithError("mapper does not check");
  }
}

void BM_Format(benchmark::State &state, const std::string &text) {
  auto checked = hone::dsl::checkSource(hone::support::SourceFile("bench.map", text));
  for (auto _ : state)
    benchmark::DoNotOptimize(hone::dsl::format(checked.program));
}

// Places all 64 points of an 8x8 launch of the cannon mapper's tile2d on 4 nodes x 4 GPUs.
void BM_PlaceLaunch(benchmark::State &state) {
  auto checked = hone::dsl::checkSource(hone::support::SourceFile("cannon.map", readExample("cannon")));
  hone::dsl::Interpreter in(checked.program, *hone::dsl::MachineShape::parse("nodes=4,gpus=4"));
  (void)in.initialize();
  const auto *f = in.placementFunctionFor("task_7", hone::dsl::ProcKind::GPU, false);
  hone::dsl::TaskInfo t;
  t.name = "task_7";
  t.ispace = {8, 8};
  for (auto _ : state)
    for (int64_t i = 0; i < 8; ++i)
      for (int64_t j = 0; j < 8; ++j) {
        t.ipoint = {i, j};
        benchmark::DoNotOptimize(in.place(*f, t));
      }
}

int registerAll() {
  for (const std::string &app : hone::bench::exampleApps()) {
    std::string text = readExample(app);
    benchmark::RegisterBenchmark((std::string("check/") + app).c_str(), BM_Check, text)
        ->Unit(benchmark::kMicrosecond);
  }
  benchmark::RegisterBenchmark("check/synthetic-100-lines", BM_Check, synthetic100())->Unit(benchmark::kMicrosecond);
  for (const char *app : {"circuit", "cosma"})
    benchmark::RegisterBenchmark((std::string("fmt/") + app).c_str(), BM_Format, readExample(app))
        ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("eval/cannon-8x8-launch", BM_PlaceLaunch)->Unit(benchmark::kMicrosecond);
  return 0;
}
const int registered = registerAll();

} // namespace

BENCHMARK_MAIN();
