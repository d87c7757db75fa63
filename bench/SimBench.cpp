// Simulator speed: one simulation of each app's expert mapper at its default
// size on the paper's node (target: at least 200 per second per app, so a
// 1000-evaluation baseline run takes seconds), and how the time grows with
// problem size and node count. The context (models, instantiation) is built
// once, as a tuner does; each iteration is one whole simulation.
// Run through bench/run.sh, which prints a table.
#include "BenchUtil.h"
#include "dsl/Frontend.h"
#include "model/App.h"
#include "model/Catalog.h"
#include "sim/Simulator.h"
#include "support/FileUtil.h"
#include "support/SourceFile.h"

#include <benchmark/benchmark.h>

#include <memory>
#include <optional>

namespace {

using namespace hone;

struct Fixture {
  model::MachineModel machine;
  model::AppModel app;
  model::Program program;
  std::unique_ptr<sim::Context> context;
  dsl::CheckedSource policy;
};

std::unique_ptr<Fixture> load(const std::string &app, const std::string &machine, std::optional<double> size) {
  auto f = std::make_unique<Fixture>();
  auto m = model::loadMachine(*model::findModel("machines", machine));
  auto a = model::loadApp(*model::findModel("apps", app));
  if (!m || !a)
    return nullptr;
  f->machine = std::move(*m);
  f->app = std::move(*a);
  auto p = model::instantiate(f->app, f->machine, size);
  if (!p)
    return nullptr;
  f->program = std::move(*p);
  f->context = std::make_unique<sim::Context>(f->machine, f->program);
  std::string path = std::string(HONE_SOURCE_DIR) + "/examples/mappers/" + app + ".map";
  f->policy = dsl::checkSource(support::SourceFile(path, *support::readFile(path)));
  return f;
}

void run(benchmark::State &state, const std::string &app, const std::string &machine, std::optional<double> size) {
  auto f = load(app, machine, size);
  if (!f) {
    state.SkipWithError("cannot load the models");
    return;
  }
  for (auto _ : state) {
    sim::Result r = sim::simulate(*f->context, f->policy.program, {});
    if (!r.ok) {
      state.SkipWithError(r.error.c_str());
      return;
    }
    benchmark::DoNotOptimize(r.timeS);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetLabel(std::to_string(f->program.tasks.size()) + " tasks");
}

void registerAll() {
  for (const std::string &app : hone::bench::exampleApps())
    benchmark::RegisterBenchmark((std::string("simulate/") + app).c_str(),
                                 [app](benchmark::State &s) { run(s, app, "p100x4", std::nullopt); })
        ->Unit(benchmark::kMicrosecond);
  // Growth with problem size (circuit: wires per piece; cannon: n) and node count.
  for (double wires : {50000.0, 200000.0, 800000.0})
    benchmark::RegisterBenchmark(("simulate-size/circuit/wires=" + std::to_string(static_cast<int>(wires))).c_str(),
                                 [wires](benchmark::State &s) { run(s, "circuit", "p100x4", wires); })
        ->Unit(benchmark::kMicrosecond);
  for (double n : {10000.0, 20000.0, 40000.0})
    benchmark::RegisterBenchmark(("simulate-size/cannon/n=" + std::to_string(static_cast<int>(n))).c_str(),
                                 [n](benchmark::State &s) { run(s, "cannon", "p100x4", n); })
        ->Unit(benchmark::kMicrosecond);
  for (const char *app : {"circuit", "pennant", "cannon"})
    for (const char *machine : {"p100x4", "p100x4-2nodes", "p100x4-4nodes"})
      benchmark::RegisterBenchmark((std::string("simulate-nodes/") + app + "/" + machine).c_str(),
                                   [app, machine](benchmark::State &s) { run(s, app, machine, std::nullopt); })
          ->Unit(benchmark::kMicrosecond);
}

} // namespace

int main(int argc, char **argv) {
  registerAll();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
