// The engine on a toy domain: artifacts are integers as text, the score
// peaks at 7. Budgets, deduplication, stop conditions, feedback, the pool,
// and resuming an interrupted run.
#include "engine/Engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace hone::engine {
namespace {

// Walks 0, 1, 2, ... but repeats every third proposal; remembers feedback.
class Walker : public Strategy {
public:
  std::vector<Candidate> propose(size_t count) override {
    std::vector<Candidate> out;
    for (size_t i = 0; i < count; ++i) {
      int value = (step_ % 3 == 2) ? next_ - 1 : next_++;
      ++step_;
      out.push_back(Candidate::make(std::to_string(value), "", "walk"));
    }
    return out;
  }
  void notify(const std::vector<Step> &steps) override {
    for (const auto &s : steps)
      feedback.push_back(s.feedback);
  }
  std::vector<hone::support::Feedback> feedback;

private:
  int next_ = 0;
  size_t step_ = 0;
};

class Counting : public Evaluator {
public:
  std::vector<EvalResult> evaluate(const std::vector<Candidate> &batch) override {
    std::vector<EvalResult> out;
    for (const auto &c : batch) {
      ++calls;
      evaluated.push_back(c.artifact);
      int v = std::stoi(c.artifact);
      EvalResult r;
      if (v == 4) {
        r.status = EvalStatus::RunFailed;
        r.error = "four fails";
      } else {
        r.score = 10 - std::abs(v - 7);
      }
      out.push_back(r);
    }
    return out;
  }
  int calls = 0;
  std::vector<std::string> evaluated;
};

class Recording : public Recorder {
public:
  void record(const Step &s) override { steps.push_back(s); }
  std::vector<Step> steps;
};

FeedbackFn explain = [](const Candidate &c, const EvalResult &r) {
  hone::support::Feedback f;
  f.given = true;
  f.execution = c.artifact + " " + std::string(toString(r.status));
  return f;
};

TEST(Engine, HashesAndStatusNames) {
  EXPECT_EQ(contentHash("abc"), contentHash("abc"));
  EXPECT_NE(contentHash("abc"), contentHash("abd"));
  EXPECT_EQ(contentHash("").size(), 16u);
  for (auto s : {EvalStatus::Ok, EvalStatus::Rejected, EvalStatus::BuildFailed, EvalStatus::RunFailed,
                 EvalStatus::TimedOut, EvalStatus::Invalid})
    EXPECT_EQ(parseEvalStatus(toString(s)), s);
  EXPECT_FALSE(parseEvalStatus("nope"));
}

TEST(Engine, EndsExactlyAtItsBudgetAndEvaluatesEachTextOnce) {
  Walker w;
  Counting e;
  Recording rec;
  LoopOptions o;
  o.budget = 10;
  o.batch = 4;
  auto out = runLoop(w, e, explain, &rec, o);
  EXPECT_EQ(out.progress.evaluations, 10u);
  EXPECT_EQ(e.calls, 10);
  EXPECT_EQ(rec.steps.size(), 10u);
  std::set<std::string> distinct(e.evaluated.begin(), e.evaluated.end());
  EXPECT_EQ(distinct.size(), e.evaluated.size()) << "a repeated text was evaluated again";
  EXPECT_GT(out.steps.size(), 10u) << "repeats are steps too";
  EXPECT_EQ(out.progress.failures, 1u); // "4"
  ASSERT_TRUE(out.best);
  EXPECT_EQ(out.steps[*out.best].candidate.artifact, "7");
  EXPECT_EQ(out.progress.bestScore, 10);
  EXPECT_NE(out.stopReason.find("budget"), std::string::npos);
  // The strategy saw every step, with its feedback.
  ASSERT_EQ(w.feedback.size(), out.steps.size());
  EXPECT_EQ(w.feedback[0].execution, "0 ok");
}

TEST(Engine, AnInterruptionDropsTheBatchInFlightAndSaysSo) {
  Walker w;
  Counting e;
  Recording rec;
  LoopOptions o;
  o.budget = 20;
  o.batch = 2;
  // Interrupted while the third batch is evaluated: its results are not results.
  o.interrupted = [&] { return e.calls >= 6; };
  auto out = runLoop(w, e, explain, &rec, o);
  EXPECT_TRUE(out.interrupted);
  EXPECT_EQ(out.stopReason, "interrupted");
  EXPECT_EQ(e.calls, 6);
  EXPECT_EQ(rec.steps.size(), 4u); // two batches recorded, the third dropped
  EXPECT_EQ(out.progress.evaluations, 4u);
  EXPECT_EQ(w.feedback.size(), out.steps.size()); // the strategy never saw the dropped batch
  LoopOptions quiet = o;
  quiet.interrupted = [] { return false; };
  Walker w2;
  Counting e2;
  EXPECT_FALSE(runLoop(w2, e2, explain, nullptr, quiet).interrupted);
}

TEST(Engine, StopConditionsCompose) {
  {
    Walker w;
    Counting e;
    LoopOptions o;
    o.budget = 100;
    o.stop = StopCondition::target(10) | StopCondition::wallTime(60);
    auto out = runLoop(w, e, explain, nullptr, o);
    EXPECT_NE(out.stopReason.find("target"), std::string::npos);
    EXPECT_EQ(out.steps[*out.best].candidate.artifact, "7");
  }
  {
    // Scores rise to 7 then fall: 3 evaluations after the best, it stops.
    Walker w;
    Counting e;
    LoopOptions o;
    o.budget = 100;
    o.stop = StopCondition::noImprovement(3);
    auto out = runLoop(w, e, explain, nullptr, o);
    EXPECT_NE(out.stopReason.find("no improvement"), std::string::npos);
    EXPECT_EQ(out.progress.sinceImprovement, 3u);
  }
  {
    Walker w;
    Counting e;
    LoopOptions o;
    o.budget = 100000;
    o.stop = StopCondition::wallTime(0);
    auto out = runLoop(w, e, explain, nullptr, o);
    EXPECT_NE(out.stopReason.find("wall time"), std::string::npos);
  }
}

TEST(Engine, ResumeLosesAndRepeatsNothing) {
  LoopOptions o;
  o.batch = 2;
  o.budget = 12;
  Walker fullW;
  Counting fullE;
  auto full = runLoop(fullW, fullE, explain, nullptr, o);

  // A run killed after 5 recorded evaluations...
  Walker w1;
  Counting e1;
  Recording rec;
  LoopOptions first = o;
  first.budget = 5;
  runLoop(w1, e1, explain, &rec, first);
  ASSERT_EQ(rec.steps.size(), 5u);
  // ...resumed with a fresh strategy and the recorded steps.
  Walker w2;
  Counting e2;
  Recording rec2;
  auto resumed = runLoop(w2, e2, explain, &rec2, o, rec.steps);
  EXPECT_EQ(e2.calls, 7) << "only the evaluations the first run did not do";
  EXPECT_EQ(rec2.steps.size(), 7u) << "recorded steps are not recorded again";
  EXPECT_EQ(resumed.progress.evaluations, 12u);
  ASSERT_EQ(resumed.steps.size(), full.steps.size());
  for (size_t i = 0; i < full.steps.size(); ++i) {
    EXPECT_EQ(resumed.steps[i].candidate.hash, full.steps[i].candidate.hash);
    EXPECT_EQ(resumed.steps[i].result.score, full.steps[i].result.score);
  }
}

TEST(Engine, PoolKeepsOrderAndRunsInParallel) {
  std::atomic<int> running{0}, peak{0};
  PoolEvaluator pool(
      [&](const Candidate &c) {
        int now = ++running;
        int seen = peak.load();
        while (now > seen && !peak.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        --running;
        EvalResult r;
        r.score = std::stod(c.artifact);
        return r;
      },
      4);
  std::vector<Candidate> batch;
  for (int i = 0; i < 8; ++i)
    batch.push_back(Candidate::make(std::to_string(i)));
  auto results = pool.evaluate(batch);
  ASSERT_EQ(results.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(results[static_cast<size_t>(i)].score, i);
    EXPECT_GT(results[static_cast<size_t>(i)].seconds, 0);
  }
  EXPECT_GT(peak.load(), 1);
  EXPECT_LE(peak.load(), 4);
}

TEST(Engine, AStrategyThatRunsDryEndsTheRun) {
  class Empty : public Strategy {
    std::vector<Candidate> propose(size_t) override { return {}; }
    void notify(const std::vector<Step> &) override {}
  } empty;
  Counting e;
  auto out = runLoop(empty, e, explain, nullptr, {});
  EXPECT_EQ(out.progress.evaluations, 0u);
  EXPECT_NE(out.stopReason.find("nothing more"), std::string::npos);
}

} // namespace
} // namespace hone::engine
