// The engine's own cost per evaluation, without the evaluator: a run of 1000
// evaluations with an evaluator that returns at once, alone and with every
// step recorded in the SQLite store (one transaction per step, WAL).
#include "engine/Engine.h"
#include "store/Store.h"

#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>
#include <unistd.h>

namespace {

using namespace hone;

constexpr size_t kEvaluations = 1000;

/// Proposes distinct mapper-sized texts.
class Counter : public engine::Strategy {
public:
  std::vector<engine::Candidate> propose(size_t count) override {
    std::vector<engine::Candidate> out;
    for (size_t i = 0; i < count; ++i)
      out.push_back(engine::Candidate::make(body_ + std::to_string(next_++), "parent", "rationale"));
    return out;
  }
  void notify(const std::vector<engine::Step> &) override {}

private:
  std::string body_ = std::string(2000, 'x');
  size_t next_ = 0;
};

engine::EvalResult instant(const engine::Candidate &) {
  engine::EvalResult r;
  r.score = 1;
  r.metrics = {{"time_s", 0.01}, {"throughput", 100}};
  r.rawOutput = "time 0.01 s";
  r.evidence.tool = "simulator"; // profiled, nothing found: what the store writes for a step
  return r;
}

class StoreRecorder : public engine::Recorder {
public:
  StoreRecorder(store::Store &st, int64_t run) : st_(st), run_(run) {}
  void record(const engine::Step &s) override {
    store::StepRecord r;
    r.sequence = next_++;
    r.artifact = s.candidate.artifact;
    r.hash = s.candidate.hash;
    r.status = "ok";
    r.score = s.result.score;
    r.rawOutput = s.result.rawOutput;
    r.profile = s.result.profile;
    r.evidence = s.result.evidence;
    r.feedback = s.feedback;
    (void)st_.recordStep(run_, r);
  }

private:
  store::Store &st_;
  int64_t run_;
  int64_t next_ = 0;
};

void run(benchmark::State &state, bool withStore) {
  for (auto _ : state) {
    state.PauseTiming();
    std::string path = "/tmp/hone-bench-" + std::to_string(::getpid()) + ".db";
    std::filesystem::remove(path);
    auto st = store::Store::open(path);
    int64_t id = *(*st)->createRun({});
    StoreRecorder recorder(**st, id);
    Counter strategy;
    engine::PoolEvaluator pool(instant, 1);
    engine::LoopOptions o;
    o.budget = kEvaluations;
    state.ResumeTiming();
    auto outcome = engine::runLoop(strategy, pool, nullptr, withStore ? &recorder : nullptr, o);
    benchmark::DoNotOptimize(outcome);
    state.PauseTiming();
    st->reset();
    std::filesystem::remove(path);
    std::filesystem::remove(path + "-wal");
    std::filesystem::remove(path + "-shm");
    state.ResumeTiming();
  }
}

void BM_Loop1000Evaluations(benchmark::State &state) { run(state, false); }
void BM_LoopAndStore1000Evaluations(benchmark::State &state) { run(state, true); }
BENCHMARK(BM_Loop1000Evaluations)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(BM_LoopAndStore1000Evaluations)->Unit(benchmark::kMicrosecond)->UseRealTime()->Iterations(3);

} // namespace

BENCHMARK_MAIN();
