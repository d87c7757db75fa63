#include "tune/SearchAgents.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>
#include <random>
#include <set>
#include <unordered_map>

namespace hone::tune {

using engine::Candidate;
using engine::Step;
using nlohmann::json;

namespace {

// The raw generator's output is fixed by the standard; the distributions are
// not (they differ between standard libraries), so hone derives its own.
using Rng = std::mt19937_64;
double unit(Rng &rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
size_t below(Rng &rng, size_t n) { return n == 0 ? 0 : static_cast<size_t>(rng() % n); }

std::vector<size_t> sizesOf(const CategoricalSpace &space) { return space.sizes(); }
using Assignment = std::vector<int>;

} // namespace

// ---- random ----------------------------------------------------------------------

namespace {

class RandomAgent final : public engine::Strategy {
public:
  RandomAgent(const CategoricalSpace &space, uint64_t seed) : space_(space), sizes_(space.sizes()), rng_(seed) {}
  std::vector<Candidate> propose(size_t count) override {
    std::vector<Candidate> out;
    for (size_t i = 0; i < count; ++i) {
      Assignment a;
      for (size_t n : sizes_)
        a.push_back(static_cast<int>(below(rng_, n)));
      out.push_back(Candidate::make(space_.render(a), {}, "random: a uniform sample of the decision space"));
    }
    return out;
  }
  void notify(const std::vector<Step> &) override {}

private:
  const CategoricalSpace &space_;
  std::vector<size_t> sizes_;
  Rng rng_;
};

} // namespace

std::unique_ptr<engine::Strategy> makeRandomAgent(const CategoricalSpace &space, uint64_t seed) {
  return std::make_unique<RandomAgent>(space, seed);
}

// ---- ensemble ----------------------------------------------------------------------

double aucCredit(const std::vector<bool> &improvedInOrder) {
  size_t n = improvedInOrder.size();
  if (n == 0)
    return 0;
  double sum = 0;
  for (size_t i = 0; i < n; ++i)
    if (improvedInOrder[i])
      sum += static_cast<double>(i + 1);
  return sum * 2.0 / (static_cast<double>(n) * static_cast<double>(n + 1));
}

namespace {

using Vec = std::vector<double>;

/// Every point evaluated so far, in the encoded space [0, 1)^d.
struct Archive {
  std::vector<std::pair<Vec, double>> points;
  Vec best;
  double bestScore = -1;
};

double clampUnit(double v) {
  if (!(v >= 0))
    v = -v; // reflect at 0 (and NaN becomes 0 below)
  if (v >= 1)
    v = 2 - v; // reflect at 1
  return std::clamp(std::isfinite(v) ? v : 0.0, 0.0, std::nextafter(1.0, 0.0));
}

Vec randomVec(Rng &rng, size_t d) {
  Vec x(d);
  for (auto &v : x)
    v = unit(rng);
  return x;
}

/// Moves one or two coordinates of `x` to another category, chosen uniformly.
Vec neighbour(Rng &rng, Vec x, const std::vector<size_t> &sizes) {
  if (x.empty())
    return x;
  size_t moves = unit(rng) < 0.7 ? 1 : 2;
  for (size_t m = 0; m < moves; ++m) {
    size_t d = below(rng, x.size());
    size_t n = sizes[d];
    if (n < 2)
      continue;
    size_t cur = std::min(n - 1, static_cast<size_t>(x[d] * static_cast<double>(n)));
    size_t next = (cur + 1 + below(rng, n - 1)) % n;
    x[d] = (static_cast<double>(next) + 0.5) / static_cast<double>(n);
  }
  return x;
}

class Technique {
public:
  virtual ~Technique() = default;
  virtual std::string_view name() const = 0;
  virtual Vec propose(Rng &rng, const Archive &archive) = 0;
  virtual void told(const Vec &x, double score) = 0;
};

/// Differential evolution (rand/1/bin): a population, each member challenged
/// by a trial built from three others.
class DifferentialEvolution final : public Technique {
public:
  explicit DifferentialEvolution(size_t dims) : dims_(dims) {}
  std::string_view name() const override { return "differential evolution"; }
  Vec propose(Rng &rng, const Archive &) override {
    if (pop_.size() + pendingInit_ < kPop) {
      ++pendingInit_;
      Vec x = randomVec(rng, dims_);
      trials_.push_back({SIZE_MAX, x});
      return x;
    }
    size_t n = pop_.size();
    size_t i = next_++ % n, a, b, c;
    do a = below(rng, n); while (n > 1 && a == i);
    do b = below(rng, n); while (n > 2 && (b == i || b == a));
    do c = below(rng, n); while (n > 3 && (c == i || c == a || c == b));
    Vec trial = pop_[i].first;
    size_t forced = below(rng, dims_);
    for (size_t d = 0; d < dims_; ++d)
      if (d == forced || unit(rng) < kCR)
        trial[d] = clampUnit(pop_[a].first[d] + kF * (pop_[b].first[d] - pop_[c].first[d]));
    trials_.push_back({i, trial});
    return trial;
  }
  void told(const Vec &x, double score) override {
    auto it = std::find_if(trials_.begin(), trials_.end(), [&](const auto &t) { return t.second == x; });
    if (it == trials_.end())
      return;
    size_t member = it->first;
    trials_.erase(it);
    if (member == SIZE_MAX) {
      --pendingInit_;
      pop_.push_back({x, score});
    } else if (score >= pop_[member].second) {
      pop_[member] = {x, score};
    }
  }

private:
  static constexpr size_t kPop = 20;
  static constexpr double kCR = 0.5, kF = 0.7;
  size_t dims_;
  std::vector<std::pair<Vec, double>> pop_;
  std::vector<std::pair<size_t, Vec>> trials_; // SIZE_MAX: an initial member
  size_t pendingInit_ = 0;
  size_t next_ = 0;
};

/// A genetic algorithm: tournament selection among the best points so far,
/// uniform crossover, per-coordinate mutation.
class Genetic final : public Technique {
public:
  explicit Genetic(std::vector<size_t> sizes) : sizes_(std::move(sizes)) {}
  std::string_view name() const override { return "genetic algorithm"; }
  Vec propose(Rng &rng, const Archive &archive) override {
    if (archive.points.size() < 2)
      return randomVec(rng, sizes_.size());
    std::vector<size_t> order(archive.points.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return archive.points[a].second > archive.points[b].second; });
    order.resize(std::min<size_t>(order.size(), 20));
    auto tournament = [&] {
      size_t best = order[below(rng, order.size())];
      for (int k = 0; k < 2; ++k) {
        size_t o = order[below(rng, order.size())];
        if (archive.points[o].second > archive.points[best].second)
          best = o;
      }
      return archive.points[best].first;
    };
    Vec p1 = tournament(), p2 = tournament();
    Vec child(p1.size());
    for (size_t d = 0; d < child.size(); ++d)
      child[d] = unit(rng) < 0.5 ? p1[d] : p2[d];
    double rate = 1.0 / static_cast<double>(std::max<size_t>(1, child.size()));
    for (size_t d = 0; d < child.size(); ++d)
      if (unit(rng) < rate)
        child[d] = unit(rng);
    return neighbour(rng, child, sizes_);
  }
  void told(const Vec &, double) override {}

private:
  std::vector<size_t> sizes_;
};

/// Hill climbing / pattern search: one or two coordinates of the best point moved.
class HillClimb final : public Technique {
public:
  explicit HillClimb(std::vector<size_t> sizes) : sizes_(std::move(sizes)) {}
  std::string_view name() const override { return "hill climbing"; }
  Vec propose(Rng &rng, const Archive &archive) override {
    if (archive.best.empty())
      return randomVec(rng, sizes_.size());
    return neighbour(rng, archive.best, sizes_);
  }
  void told(const Vec &, double) override {}

private:
  std::vector<size_t> sizes_;
};

/// Nelder-Mead on the encoded space (maximising): reflect, expand, contract, shrink.
class NelderMead final : public Technique {
public:
  explicit NelderMead(std::vector<size_t> sizes) : sizes_(std::move(sizes)) {}
  std::string_view name() const override { return "Nelder-Mead"; }
  Vec propose(Rng &rng, const Archive &archive) override {
    if (waiting_) // one point at a time; meanwhile, a neighbour of the best
      return archive.best.empty() ? randomVec(rng, sizes_.size()) : neighbour(rng, archive.best, sizes_);
    if (phase_ == Phase::Start) {
      Vec origin = archive.best.empty() ? randomVec(rng, sizes_.size()) : archive.best;
      simplex_.clear();
      todo_.clear();
      todo_.push_back(origin);
      for (size_t d = 0; d < sizes_.size(); ++d) {
        Vec v = origin;
        v[d] = std::fmod(v[d] + 0.35, 1.0);
        todo_.push_back(v);
      }
      phase_ = Phase::Fill;
    }
    if (phase_ == Phase::Fill || phase_ == Phase::Shrink) {
      point_ = todo_.front();
    } else {
      point_ = step();
    }
    waiting_ = true;
    return point_;
  }
  void told(const Vec &x, double score) override {
    if (!waiting_ || x != point_)
      return;
    waiting_ = false;
    switch (phase_) {
    case Phase::Start: break;
    case Phase::Fill:
    case Phase::Shrink:
      todo_.pop_front();
      simplex_.push_back({x, score});
      if (todo_.empty())
        phase_ = Phase::Reflect;
      break;
    case Phase::Reflect:
      reflected_ = {x, score};
      sortSimplex();
      if (score > simplex_.front().second)
        phase_ = Phase::Expand;
      else if (score > simplex_[simplex_.size() - 2].second) {
        simplex_.back() = reflected_;
        phase_ = Phase::Reflect;
      } else
        phase_ = Phase::Contract;
      break;
    case Phase::Expand:
      simplex_.back() = score > reflected_.second ? std::pair<Vec, double>{x, score} : reflected_;
      phase_ = Phase::Reflect;
      break;
    case Phase::Contract:
      if (score > simplex_.back().second) {
        simplex_.back() = {x, score};
        phase_ = Phase::Reflect;
      } else { // shrink towards the best vertex
        const Vec best = simplex_.front().first;
        todo_.clear();
        for (size_t i = 1; i < simplex_.size(); ++i) {
          Vec v = simplex_[i].first;
          for (size_t d = 0; d < v.size(); ++d)
            v[d] = clampUnit(best[d] + 0.5 * (v[d] - best[d]));
          todo_.push_back(v);
        }
        simplex_.resize(1);
        phase_ = Phase::Shrink;
      }
      break;
    }
    if (++steps_ > 20 * (sizes_.size() + 1)) { // restart around the best after a long run
      steps_ = 0;
      phase_ = Phase::Start;
    }
  }

private:
  enum class Phase { Start, Fill, Reflect, Expand, Contract, Shrink };
  void sortSimplex() {
    std::stable_sort(simplex_.begin(), simplex_.end(), [](const auto &a, const auto &b) { return a.second > b.second; });
  }
  Vec centroid() const {
    Vec c(sizes_.size(), 0.0);
    for (size_t i = 0; i + 1 < simplex_.size(); ++i)
      for (size_t d = 0; d < c.size(); ++d)
        c[d] += simplex_[i].first[d] / static_cast<double>(simplex_.size() - 1);
    return c;
  }
  Vec along(double t) const { // centroid + t * (centroid - worst)
    Vec c = centroid();
    const Vec &w = simplex_.back().first;
    for (size_t d = 0; d < c.size(); ++d)
      c[d] = clampUnit(c[d] + t * (c[d] - w[d]));
    return c;
  }
  Vec step() {
    sortSimplex();
    switch (phase_) {
    case Phase::Expand: return along(2.0);
    case Phase::Contract: return along(-0.5);
    default: return along(1.0);
    }
  }
  std::vector<size_t> sizes_;
  Phase phase_ = Phase::Start;
  std::vector<std::pair<Vec, double>> simplex_;
  std::deque<Vec> todo_;
  std::pair<Vec, double> reflected_;
  Vec point_;
  bool waiting_ = false;
  size_t steps_ = 0;
};

/// OpenTuner's AUC bandit over the techniques, on the encoded space.
class EnsembleAgent final : public engine::Strategy {
public:
  EnsembleAgent(const CategoricalSpace &space, uint64_t seed) : space_(space), sizes_(sizesOf(space)), rng_(seed) {
    techniques_.push_back(std::make_unique<DifferentialEvolution>(sizes_.size()));
    techniques_.push_back(std::make_unique<Genetic>(sizes_));
    techniques_.push_back(std::make_unique<HillClimb>(sizes_));
    techniques_.push_back(std::make_unique<NelderMead>(sizes_));
  }

  std::vector<Candidate> propose(size_t count) override {
    std::vector<Candidate> out;
    pending_.clear();
    for (size_t k = 0; k < count; ++k) {
      if (!seeded_) { // OpenTuner's seed configuration: every parameter at its default
        seeded_ = true;
        Vec x;
        for (size_t n : sizes_)
          x.push_back(0.5 / static_cast<double>(n));
        push(out, SIZE_MAX, x, "ensemble: the seed configuration (every parameter at its default)");
        continue;
      }
      // A point whose assignment was measured before is answered from memory
      // (as OpenTuner answers from its results database) and the technique asked again.
      size_t t = 0;
      Vec x;
      bool fresh = false;
      for (int attempt = 0; attempt < 32 && !fresh; ++attempt) {
        t = select();
        x = techniques_[t]->propose(rng_, archive_);
        std::string key = keyOf(x);
        auto known = scores_.find(key);
        if (known == scores_.end() && !inFlight_.count(key)) {
          fresh = true;
        } else if (known != scores_.end()) {
          techniques_[t]->told(x, known->second);
          use(t, false);
        }
      }
      if (!fresh)
        x = randomVec(rng_, sizes_.size());
      push(out, t, x, fmt::format("ensemble: {}", fresh ? techniques_[t]->name() : "random restart"));
    }
    return out;
  }

  void notify(const std::vector<Step> &steps) override {
    for (size_t i = 0; i < steps.size() && i < pending_.size(); ++i) {
      const auto &[t, x] = pending_[i];
      double score = steps[i].result.ok() ? steps[i].result.score : 0.0; // failures penalised
      bool improved = score > archive_.bestScore;
      archive_.points.push_back({x, score});
      if (improved) {
        archive_.bestScore = score;
        archive_.best = x;
      }
      std::string key = keyOf(x);
      scores_[key] = score;
      inFlight_.erase(key);
      if (t != SIZE_MAX) {
        techniques_[t]->told(x, score);
        use(t, improved);
      }
    }
    pending_.clear();
  }

private:
  Assignment decode(const Vec &x) const {
    Assignment a(x.size());
    for (size_t d = 0; d < x.size(); ++d)
      a[d] = static_cast<int>(std::min(sizes_[d] - 1, static_cast<size_t>(x[d] * static_cast<double>(sizes_[d]))));
    return a;
  }
  std::string keyOf(const Vec &x) const {
    std::string key;
    for (int v : decode(x))
      key += std::to_string(v) + ",";
    return key;
  }
  void push(std::vector<Candidate> &out, size_t t, const Vec &x, std::string rationale) {
    inFlight_.insert(keyOf(x));
    pending_.push_back({t, x});
    out.push_back(Candidate::make(space_.render(decode(x)), {}, std::move(rationale)));
  }
  size_t select() const {
    size_t best = 0;
    double bestValue = -1;
    for (size_t t = 0; t < techniques_.size(); ++t) {
      std::vector<bool> uses;
      for (const auto &[tech, improved] : window_)
        if (tech == t)
          uses.push_back(improved);
      if (uses.empty())
        return t;
      double value = aucCredit(uses) + kExplore * std::sqrt(2.0 * std::log(static_cast<double>(window_.size())) /
                                                            static_cast<double>(uses.size()));
      if (value > bestValue) {
        bestValue = value;
        best = t;
      }
    }
    return best;
  }
  void use(size_t t, bool improved) {
    window_.push_back({t, improved});
    if (window_.size() > kWindow)
      window_.pop_front();
  }

  static constexpr double kExplore = 0.05;
  static constexpr size_t kWindow = 500;
  const CategoricalSpace &space_;
  std::vector<size_t> sizes_;
  Rng rng_;
  std::vector<std::unique_ptr<Technique>> techniques_;
  Archive archive_;
  std::deque<std::pair<size_t, bool>> window_;
  std::vector<std::pair<size_t, Vec>> pending_;
  std::unordered_map<std::string, double> scores_;
  std::set<std::string> inFlight_;
  bool seeded_ = false;
};

} // namespace

std::unique_ptr<engine::Strategy> makeEnsembleAgent(const CategoricalSpace &space, uint64_t seed) {
  return std::make_unique<EnsembleAgent>(space, seed);
}

} // namespace hone::tune
