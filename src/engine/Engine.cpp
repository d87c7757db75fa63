#include "engine/Engine.h"

#include "support/StringUtil.h"

#include <fmt/format.h>

#include <atomic>
#include <thread>
#include <unordered_map>

namespace hone::engine {

std::string contentHash(const std::string &text) { return fmt::format("{:016x}", support::fnv1a64(text)); }

Candidate Candidate::make(std::string artifact, std::string parent, std::string rationale) {
  Candidate c;
  c.hash = contentHash(artifact);
  c.artifact = std::move(artifact);
  c.parent = std::move(parent);
  c.rationale = std::move(rationale);
  return c;
}

namespace {
constexpr std::array<std::pair<EvalStatus, std::string_view>, 6> kStatusNames = {{
    {EvalStatus::Ok, "ok"},
    {EvalStatus::Rejected, "rejected"},
    {EvalStatus::BuildFailed, "build_failed"},
    {EvalStatus::RunFailed, "run_failed"},
    {EvalStatus::TimedOut, "timed_out"},
    {EvalStatus::Invalid, "invalid"},
}};
} // namespace

std::string_view toString(EvalStatus status) {
  for (const auto &[s, name] : kStatusNames)
    if (s == status)
      return name;
  return "?";
}

std::optional<EvalStatus> parseEvalStatus(std::string_view text) {
  for (const auto &[s, name] : kStatusNames)
    if (name == text)
      return s;
  return std::nullopt;
}

StopCondition StopCondition::wallTime(double seconds) {
  return StopCondition([seconds](const Progress &p) -> std::optional<std::string> {
    if (p.elapsedS >= seconds)
      return fmt::format("wall time {:.1f} s reached", p.elapsedS);
    return std::nullopt;
  });
}

StopCondition StopCondition::noImprovement(size_t n) {
  return StopCondition([n](const Progress &p) -> std::optional<std::string> {
    if (p.evaluations > 0 && p.sinceImprovement >= n)
      return fmt::format("no improvement in {} evaluations", p.sinceImprovement);
    return std::nullopt;
  });
}

StopCondition StopCondition::target(double score) {
  return StopCondition([score](const Progress &p) -> std::optional<std::string> {
    if (p.evaluations > 0 && p.bestScore >= score)
      return fmt::format("target score {} reached ({})", score, p.bestScore);
    return std::nullopt;
  });
}

StopCondition StopCondition::operator|(const StopCondition &other) const {
  StopCondition both = *this;
  both.tests_.insert(both.tests_.end(), other.tests_.begin(), other.tests_.end());
  return both;
}

std::optional<std::string> StopCondition::check(const Progress &p) const {
  for (const auto &t : tests_)
    if (auto reason = t(p))
      return reason;
  return std::nullopt;
}

std::vector<EvalResult> PoolEvaluator::evaluate(const std::vector<Candidate> &batch) {
  std::vector<EvalResult> out(batch.size());
  auto timed = [&](size_t i) {
    auto t0 = std::chrono::steady_clock::now();
    out[i] = one_(batch[i]);
    if (out[i].seconds == 0)
      out[i].seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  size_t workers = std::min(workers_, batch.size());
  if (workers <= 1) {
    for (size_t i = 0; i < batch.size(); ++i)
      timed(i);
    return out;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  for (size_t w = 0; w < workers; ++w)
    threads.emplace_back([&] {
      for (size_t i; (i = next++) < batch.size();)
        timed(i);
    });
  for (auto &t : threads)
    t.join();
  return out;
}

LoopOutcome runLoop(Strategy &strategy, Evaluator &evaluator, const FeedbackFn &feedback, Recorder *recorder,
                    const LoopOptions &options, const std::vector<Step> &history) {
  LoopOutcome outcome;
  std::unordered_map<std::string, const Step *> recorded; // from the interrupted run
  for (const Step &s : history)
    recorded.emplace(s.candidate.hash, &s);
  std::unordered_map<std::string, size_t> seen; // hash -> index of its first step in this run
  auto start = std::chrono::steady_clock::now();
  size_t idleRounds = 0;
  Progress &p = outcome.progress;
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };

  auto stopIfInterrupted = [&] {
    if (!options.interrupted || !options.interrupted())
      return false;
    outcome.interrupted = true;
    outcome.stopReason = "interrupted";
    return true;
  };
  for (;;) {
    p.elapsedS = elapsed();
    if (stopIfInterrupted())
      break;
    if (p.evaluations >= options.budget) {
      outcome.stopReason = fmt::format("budget of {} evaluations used", options.budget);
      break;
    }
    if (auto reason = options.stop.check(p)) {
      outcome.stopReason = *reason;
      break;
    }
    size_t want = std::min(std::max<size_t>(1, options.batch), options.budget - p.evaluations);
    std::vector<Candidate> proposed = strategy.propose(want);
    if (stopIfInterrupted()) // a proposal cut short (an LLM request abandoned) is not the strategy's end
      break;
    if (proposed.size() > want)
      proposed.resize(want);
    if (proposed.empty()) {
      std::string why = strategy.stopReason();
      outcome.stopReason = why.empty() ? "the strategy has nothing more to propose" : why;
      break;
    }
    // Where each proposal's result comes from: an earlier step of this run,
    // the interrupted run, an earlier proposal of this batch, or the evaluator.
    enum class Source { Seen, History, SameBatch, Fresh };
    constexpr size_t kRefused = static_cast<size_t>(-1); // a Fresh proposal the strategy refused itself
    std::vector<Step> steps(proposed.size());
    std::vector<Source> source(proposed.size());
    std::vector<size_t> from(proposed.size(), 0);
    std::vector<Candidate> fresh;
    for (size_t i = 0; i < proposed.size(); ++i) {
      Candidate &c = proposed[i];
      if (c.hash.empty())
        c.hash = contentHash(c.artifact);
      steps[i].candidate = c;
      auto earlier = std::find_if(proposed.begin(), proposed.begin() + static_cast<long>(i),
                                  [&](const Candidate &o) { return o.hash == c.hash; });
      if (auto it = seen.find(c.hash); it != seen.end()) {
        source[i] = Source::Seen;
        from[i] = it->second;
      } else if (earlier != proposed.begin() + static_cast<long>(i)) {
        source[i] = Source::SameBatch;
        from[i] = static_cast<size_t>(earlier - proposed.begin());
      } else if (auto r = recorded.find(c.hash); r != recorded.end()) {
        source[i] = Source::History;
        steps[i] = *r->second;
      } else {
        source[i] = Source::Fresh;
        from[i] = c.refusal.empty() ? fresh.size() : kRefused;
        if (c.refusal.empty())
          fresh.push_back(c);
      }
    }
    std::vector<EvalResult> results = fresh.empty() ? std::vector<EvalResult>{} : evaluator.evaluate(fresh);
    // Results of a batch cut short by the interruption are not results: nothing of it is kept.
    if (!fresh.empty() && stopIfInterrupted())
      break;
    for (size_t i = 0; i < steps.size(); ++i) {
      Step &s = steps[i];
      switch (source[i]) {
      case Source::Fresh:
        if (from[i] == kRefused) {
          s.result.status = EvalStatus::Rejected;
          s.result.error = s.result.rawOutput = s.candidate.refusal;
        } else if (from[i] < results.size()) {
          s.result = results[from[i]];
        } else {
          s.result.status = EvalStatus::Invalid;
          s.result.error = "the evaluator returned no result";
        }
        s.feedback = feedback ? feedback(s.candidate, s.result) : support::Feedback{};
        break;
      case Source::Seen:
        s.result = outcome.steps[from[i]].result;
        s.feedback = outcome.steps[from[i]].feedback;
        break;
      case Source::SameBatch:
        s.result = steps[from[i]].result;
        s.feedback = steps[from[i]].feedback;
        break;
      case Source::History: break;
      }
    }

    bool anyNew = false;
    for (size_t i = 0; i < steps.size(); ++i) {
      Step &s = steps[i];
      bool counts = source[i] == Source::Fresh || source[i] == Source::History;
      if (counts) {
        anyNew = true;
        seen.emplace(s.candidate.hash, outcome.steps.size());
        ++p.evaluations;
        if (!s.result.ok())
          ++p.failures;
        if (s.result.ok() && (!outcome.best || s.result.score > outcome.steps[*outcome.best].result.score)) {
          outcome.best = outcome.steps.size();
          p.bestScore = s.result.score;
          p.sinceImprovement = 0;
        } else {
          ++p.sinceImprovement;
        }
        if (recorder && source[i] == Source::Fresh)
          recorder->record(s);
      }
      outcome.steps.push_back(s);
      p.elapsedS = elapsed();
      if (options.onStep)
        options.onStep(s, p);
    }
    strategy.notify(steps);
    idleRounds = anyNew ? 0 : idleRounds + 1;
    if (idleRounds >= 100) {
      outcome.stopReason = "the strategy keeps proposing candidates it has already seen";
      break;
    }
  }
  return outcome;
}

} // namespace hone::engine
