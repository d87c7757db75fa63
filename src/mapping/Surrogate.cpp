#include "mapping/Surrogate.h"

#include "support/Diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace hone::mapping {

using engine::Candidate;
using engine::EvalResult;
using engine::Step;

namespace {

class SurrogateAgent final : public engine::Strategy {
public:
  SurrogateAgent(std::vector<std::unique_ptr<engine::Strategy>> searchers,
                 std::function<EvalResult(const Candidate &)> predict, std::string start, SurrogateOptions options)
      : searchers_(std::move(searchers)), predict_(std::move(predict)), options_(options) {
    for (auto &line : support::splitLines(start))
      startLines_.insert(std::move(line));
  }

  std::vector<Candidate> propose(size_t count) override {
    search(options_.simulationsPerEvaluation * std::max<size_t>(1, count));
    std::vector<Entry *> open;
    for (auto &[hash, e] : pool_)
      if (!e.real && e.predicted > 0)
        open.push_back(&e);
    // The best prediction discounted by how the model erred on the same changes; ties by discovery order.
    std::stable_sort(open.begin(), open.end(), [&](const Entry *a, const Entry *b) {
      double ta = a->predicted * trust(*a), tb = b->predicted * trust(*b);
      return ta != tb ? ta > tb : a->order < b->order;
    });
    std::vector<Candidate> out;
    proposed_.clear();
    for (Entry *e : open) {
      if (out.size() == count)
        break;
      e->real = true;
      Candidate c = e->candidate;
      double t = trust(*e);
      c.rationale = fmt::format("{} (the model predicts {:.3f}x{}; the best of {} simulated candidates)", c.rationale,
                                e->predicted,
                                t < 1 ? fmt::format(", trusted {:.0f}% from the real results so far", t * 100) : "",
                                simulations_);
      c.notes = {{"surrogate", {{"predicted", e->predicted}, {"trust", t}, {"simulations", simulations_}}}};
      proposed_.push_back(e);
      out.push_back(std::move(c));
    }
    return out;
  }

  void notify(const std::vector<Step> &steps) override {
    for (size_t i = 0; i < steps.size() && i < proposed_.size(); ++i) {
      Entry &e = *proposed_[i];
      double realScore = steps[i].result.ok() ? steps[i].result.score : 0;
      double ratio = e.predicted > 0 ? realScore / e.predicted : 1;
      // An overestimate lowers the trust in each change the candidate made; an accurate or low
      // prediction leaves it (the model is the prior, the real results only correct it).
      for (const auto &line : e.changes)
        if (ratio < 1) {
          auto [it, fresh] = lineTrust_.try_emplace(line, ratio);
          if (!fresh)
            it->second = std::min(it->second, ratio);
        }
    }
  }

  std::string stopReason() const override { return stopReason_; }

private:
  struct Entry {
    Candidate candidate;
    double predicted = 0;
    std::vector<std::string> changes; // lines the start does not have
    size_t order = 0;
    bool real = false;
  };

  double trust(const Entry &e) const {
    double t = 1;
    for (const auto &line : e.changes)
      if (auto it = lineTrust_.find(line); it != lineTrust_.end())
        t = std::min(t, std::max(it->second, 0.0));
    return t;
  }

  /// Drives the searchers on the model for up to `budget` simulations (fewer when all run dry).
  void search(size_t budget) {
    for (size_t done = 0; done < budget && current_ < searchers_.size();) {
      engine::Strategy &searcher = *searchers_[current_];
      auto batch = searcher.propose(1);
      if (batch.empty()) {
        ++current_;
        continue;
      }
      std::vector<Step> steps;
      for (auto &c : batch) {
        Step s;
        s.candidate = c;
        s.result = predict_(c);
        ++simulations_;
        ++done;
        auto [it, fresh] = pool_.try_emplace(c.hash);
        if (fresh) {
          it->second.candidate = c;
          it->second.predicted = s.result.ok() ? s.result.score : 0;
          it->second.order = pool_.size();
          for (auto &line : support::splitLines(c.artifact))
            if (!line.empty() && line[0] != '#' && !startLines_.count(line))
              it->second.changes.push_back(line);
        }
        steps.push_back(std::move(s));
      }
      searcher.notify(steps);
    }
    if (current_ == searchers_.size() && stopReason_.empty())
      stopReason_ = fmt::format("the surrogate's searchers have no more candidates after {} simulations", simulations_);
  }

  std::vector<std::unique_ptr<engine::Strategy>> searchers_;
  size_t current_ = 0; // the searcher driven now
  std::function<EvalResult(const Candidate &)> predict_;
  SurrogateOptions options_;
  std::set<std::string> startLines_;
  std::map<std::string, Entry> pool_; // by hash
  std::map<std::string, double> lineTrust_;
  std::vector<Entry *> proposed_;
  size_t simulations_ = 0;
  std::string stopReason_;
};

} // namespace

std::unique_ptr<engine::Strategy> makeSurrogateAgent(std::vector<std::unique_ptr<engine::Strategy>> searchers,
                                                     std::function<EvalResult(const Candidate &)> predict,
                                                     std::string start, SurrogateOptions options) {
  return std::make_unique<SurrogateAgent>(std::move(searchers), std::move(predict), std::move(start), options);
}

} // namespace hone::mapping
