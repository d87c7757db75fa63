// The kernel domain's guided agent (KernelDomain.h). A reader's map:
//   propose() - the start first; then the best untried edit: first a source
//               transformation that just paid off on one nest, on the other hot
//               nests it applies to (analogy); then those the
//               latest diagnosis calls for (finding -> catalogue transformation
//               -> knobs of the roles that realise it), breadth first over the
//               knobs (each one's first edit, largest share first, then seconds);
//               then those that clearly lost on a knob still at the start's
//               value, each with a companion the diagnosis calls for on
//               another knob (of the same nest, for two source knobs); then every knob's other
//               values, nearest first (exploration); then pairs.
//   notify()  - keeps an improvement as the new base, remembers the latest
//               findings (they come with the new best's profile), and counts
//               transformations that made things worse and knob values that did
//               not improve (two strikes, or one in this epoch: not proposed
//               alone again; an epoch ends when the best moves by 5% or more);
//               a clear loss, and the value a large move left behind, wait
//               until the best has moved by as much as they lost by.
#include "kernel/KernelDomain.h"

#include "kernel/Evaluator.h"
#include "kernel/Runner.h"
#include "support/JsonText.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <thread>

namespace hone::kernel {

namespace {

using engine::Candidate;
using engine::Step;
using nlohmann::json;

/// Which roles to explore first when no finding says (cheap, large effects first).
int explorationRank(KnobRole r) {
  switch (r) {
  case KnobRole::Threads: return 0;
  case KnobRole::Parallel: return 0;
  case KnobRole::LoopOrder: return 1;
  case KnobRole::Simd: return 4;
  case KnobRole::Flags: return 2;
  case KnobRole::Tile: return 3;
  case KnobRole::Unroll: return 4;
  case KnobRole::Schedule: return 5;
  case KnobRole::Binding: return 6;
  case KnobRole::Other: return 7;
  }
  return 8;
}

double numberOf(const std::string &s) {
  char *end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  return end == s.c_str() ? NAN : v;
}

/// A move of the best by less than this factor is to a program that times like the old one.
constexpr double kSettle = 1.05;
/// A value that scored under kClearLoss of the best lost clearly: it is not tried alone again until
/// the best has moved by as much as it lost by (at least kRevive). Only an interaction can turn such
/// a loss into a gain, and only a change elsewhere of that size suggests one (tiling that lost 0.7x
/// before the loop interchange that made the program 3x quicker); a value the best left with a gain
/// of kRevive or more lost to its replacement by that gain.
constexpr double kClearLoss = 0.8;
constexpr double kRevive = 1.25;
/// A nest with less of the program's instructions than this is not transformed for a program-wide
/// finding, nor explored: at best it saves its own share (Amdahl), under a typical timing CI.
constexpr double kHotNest = 0.05;
/// Companions of clear losses measured per epoch, at most: each loss has as many as the other knobs
/// have values the diagnosis calls for, and a loss that only shows a bad knob value (-march=native on
/// a program it slows, 3mm's) would otherwise spend the budget pairing it with every nest's knobs.
constexpr size_t kCompanions = 3;

struct Edit {
  KnobValues values;
  std::string rationale;
  std::string family; // the transformation it realises ("" for exploration)
  bool companion = false; // a clear loss again with a companion (companionEdits)
  int epoch = 0;          // companions: the epoch it was proposed in (its cap's)
};

class GuidedKernelAgent final : public engine::Strategy {
public:
  GuidedKernelAgent(const Manifest &m, std::vector<Transformation> catalogue, std::string start, std::string label)
      : manifest_(m), catalogue_(std::move(catalogue)), startText_(std::move(start)), startLabel_(std::move(label)) {
    auto v = parseVariant(manifest_, startText_);
    best_ = v ? v->knobs : defaultValues(manifest_);
    start_ = best_;
    files_ = v ? v->files : std::map<std::string, std::string>{};
  }

  std::vector<Candidate> propose(size_t count) override {
    std::vector<Candidate> out;
    pending_.clear();
    if (!startedOut_) {
      startedOut_ = true;
      Candidate c = Candidate::make(startText_, {}, "the start: " + startLabel_ + " (measured and profiled first)");
      tried_.insert(c.hash);
      pending_.push_back({best_, "", ""});
      out.push_back(std::move(c));
      if (out.size() == count)
        return out;
    }
    for (const Edit &e : edits()) {
      if (out.size() >= count)
        break;
      Candidate c = Candidate::make(renderKnobs(manifest_, e.values, files_), bestHash_, e.rationale);
      if (!tried_.insert(c.hash).second)
        continue;
      pending_.push_back(e);
      out.push_back(std::move(c));
    }
    return out;
  }

  void notify(const std::vector<Step> &steps) override {
    for (size_t i = 0; i < steps.size() && i < pending_.size(); ++i) {
      const Step &s = steps[i];
      const Edit &e = pending_[i];
      tried_.insert(s.candidate.hash);
      scores_[s.candidate.hash] = s.result.ok() ? s.result.score : 0.0;
      if (e.companion)
        ++companionsIn_[e.epoch]; // a batch's earlier step may have started a new epoch already
      std::vector<std::string> changed; // the knobs the edit moved from the best (before it moves)
      for (const auto &[name, value] : e.values)
        if (best_.count(name) && best_.at(name) != value)
          changed.push_back(name);
      // One knob's value that made the program compute wrongly alone (wrong results, a race): the
      // fault is that value's (an FMA contraction, a reordered reduction), and no other knob puts it
      // right. (Not a timer the trust check rejected: that can be the machine's load.)
      if (s.result.status == engine::EvalStatus::Invalid && variantComputesWrongly(s.result.error) &&
          changed.size() == 1)
        invalidAlone_.insert(changed[0] + "=" + e.values.at(changed[0]));
      // Remember what each knob value scored as a change of the best (the prior of pairs).
      for (const auto &[name, value] : e.values)
        if (best_.count(name) && best_.at(name) != value) {
          double &slot = singles_[name + "=" + value];
          slot = std::max(slot, s.result.ok() ? s.result.score : 0.0);
        }
      // An improvement must clear the measurement's own noise (its 95% CI relative to its median,
      // at least 1%): a tie measured on a noisy machine is not a reason to move.
      double noise = 0.01;
      if (s.result.metrics.count("ci95_s") && s.result.metrics.count("time_s") && s.result.metrics.at("time_s") > 0 &&
          s.result.metrics.at("ci95_s") > 0)
        noise = std::clamp(s.result.metrics.at("ci95_s") / s.result.metrics.at("time_s"), 0.01, 0.10);
      bool improved = s.result.ok() && s.result.score > bestScore_ * (1 + noise);
      if (!improved && bestScore_ > 0)
        for (const auto &[name, value] : e.values)
          if (best_.count(name) && best_.at(name) != value) {
            ++fruitless_[name + "=" + value];
            triedIn_[name + "=" + value] = epoch_;
            if (s.result.ok() && s.result.score > 0 && s.result.score < kClearLoss * bestScore_)
              reviveAt_[name + "=" + value] = bestScore_ * std::max(kRevive, bestScore_ / s.result.score);
          }
      // A single knob's move that gains kRevive or more: the value it left lost clearly to its
      // replacement (the loop order that made a matmul 3x quicker is not undone after the tiles and
      // flags have added 1.4x more).
      if (s.result.ok() && bestScore_ > 0 && s.result.score >= kRevive * bestScore_ && changed.size() == 1)
        reviveAt_[changed[0] + "=" + best_.at(changed[0])] = s.result.score * (s.result.score / bestScore_);
      // A source knob's single move that improved the best from the best it was proposed from (in a
      // batch, an earlier step may have moved the best: what this one changed is then unclear).
      if (s.result.ok() && improved && bestScore_ > 0 && !e.companion && s.candidate.parent == bestHash_)
        if (const Knob *k = changed.size() == 1 ? knob(changed[0]) : nullptr; k && k->kind == KnobKind::Source)
          wins_.insert(wins_.begin(), {changed[0], e.values.at(changed[0]), s.result.score / bestScore_});
      if (s.result.ok() && (improved || bestScore_ == 0)) {
        // A move smaller than kSettle is to a program that times like the old one: what the old base
        // told stays true (its losing edits are not tried again, its set-aside transformations stay
        // aside). A larger one starts a new epoch: what failed from the old base may pay off from
        // the new one (tiling after interchange).
        if (bestScore_ == 0 || s.result.score >= bestScore_ * kSettle) {
          ++epoch_;
          worse_.clear();
        }
        bestScore_ = s.result.score;
        best_ = e.values;
        bestHash_ = s.candidate.hash;
      } else if (!e.family.empty()) {
        ++worse_[e.family];
      }
      // Only a profiled evaluation carries a diagnosis (the evaluator profiles its new bests, which
      // need not be this agent's: a move within the noise of the evaluator's best is not profiled, and
      // its empty findings say nothing). The old base's diagnosis stands until a new one comes.
      bool profiled = s.result.evidence.profiled();
      bool diagnosed = profiled && s.feedback.given;
      if (diagnosed && s.result.ok() && (improved || !findings_)) {
        findings_ = s.feedback.findings;
        const json &nests = s.result.profile.contains("nests") ? s.result.profile["nests"] : json();
        std::map<std::string, double> heat;
        double attributed = 0;
        if (nests.is_array())
          for (const auto &n : nests)
            if (n.is_object() && n.contains("share") && n["share"].is_number()) {
              heat[support::textOf(n, "nest")] = n["share"].get<double>();
              attributed += n["share"].get<double>();
            }
        // A profile that puts none of the time in any nest (a profiler that could not run this build
        // stops at once) says nothing about where the time goes: the old heat stands.
        if (attributed > 0)
          heat_ = std::move(heat);
      }
    }
    pending_.clear();
  }

private:
  const Transformation *transformation(const std::string &id) const {
    for (const auto &t : catalogue_)
      if (t.id == id)
        return &t;
    return nullptr;
  }

  /// The score a measured variant got (0: failed); nullopt when it was never measured.
  std::optional<double> measured(const KnobValues &v) const {
    auto it = scores_.find(engine::contentHash(renderKnobs(manifest_, v, files_)));
    return it == scores_.end() ? std::nullopt : std::optional<double>(it->second);
  }

  /// Whether the best with `name` = `value` was measured and came out worse than the best, beyond
  /// a tie (kSettle): a value that timed like the best says nothing about the values beyond it.
  bool worseThanBest(const std::string &name, const std::string &value) const {
    KnobValues v = best_;
    v[name] = value;
    auto s = measured(v);
    return s && *s * kSettle < bestScore_;
  }

  /// Other values of a knob in the order worth trying from `current`. A numeric knob is searched
  /// like a line search (compass search): once a value in one direction from the best measured
  /// worse than the best (by more than a tie), the values beyond it in that direction are not proposed (a tile that
  /// is too small already is not made smaller; a larger unroll that failed is not made larger).
  std::vector<std::string> order(const Knob &k, const std::string &current) const {
    std::vector<std::string> out;
    size_t cur = std::find(k.values.begin(), k.values.end(), current) - k.values.begin();
    std::vector<size_t> idx;
    std::set<size_t> beyondWorse;
    if (k.numeric() && cur < k.values.size()) {
      double here = numberOf(current);
      for (int dir : {-1, 1}) {
        std::vector<size_t> side; // this direction's values, nearest first
        for (size_t i = 0; i < k.values.size(); ++i)
          if ((numberOf(k.values[i]) - here) * dir > 0)
            side.push_back(i);
        std::sort(side.begin(), side.end(), [&](size_t a, size_t b) {
          return std::abs(numberOf(k.values[a]) - here) < std::abs(numberOf(k.values[b]) - here);
        });
        bool blocked = false;
        for (size_t i : side) {
          if (blocked)
            beyondWorse.insert(i);
          else if (worseThanBest(k.name, k.values[i]))
            blocked = true;
        }
      }
    }
    // Unset means the runtime's default, a thread per core: "" and the core count are one program.
    auto threads = [&](const std::string &v) { return v.empty() ? cores_ : numberOf(v); };
    bool sameThreads = k.role == KnobRole::Threads && k.numeric() && cur < k.values.size();
    for (size_t i = 0; i < k.values.size(); ++i)
      if (i != cur && !beyondWorse.count(i) && !(sameThreads && threads(k.values[i]) == threads(current)) &&
          !k.unproven.count(k.values[i]))
        idx.push_back(i);
    if (k.role == KnobRole::Threads && k.numeric()) {
      // A thread per core first ("" = the runtime's default, which is that), then fewer, most first;
      // more threads than cores (oversubscription) last.
      auto key = [&](size_t i) {
        double n = k.values[i].empty() ? cores_ : numberOf(k.values[i]);
        return n > cores_ ? -n : n + (k.values[i].empty() ? 0.5 : 0.0);
      };
      std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return key(a) > key(b); });
    } else {
      auto dist = [&](size_t i) { return cur < k.values.size() ? (i > cur ? i - cur : cur - i) : i; };
      std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return dist(a) < dist(b); });
    }
    for (size_t i : idx)
      out.push_back(k.values[i]);
    return out;
  }

  /// What the agent proposes from the best, in order: the edits the diagnosis calls for, a clear loss
  /// among them with a companion, the exploration of every knob, then pairs of knobs.
  std::vector<Edit> edits() const {
    std::vector<Edit> out, called; // called: every edit the diagnosis calls for, set aside or not
    analogyEdits(out);
    diagnosedEdits(out, called);
    companionEdits(called, out);
    std::vector<const Knob *> knobs = explorable();
    explorationEdits(knobs, out);
    pairEdits(knobs, out);
    return out;
  }

  /// 0. A source transformation that paid off on one nest, on the other nests it applies to: the
  /// same action with the same value (a `simd` that made one of 3mm's three products 10% quicker, on
  /// the other two), the latest gain first. A nest of another shape has other values (a loop order
  /// names its own loops): those are the diagnosis's and exploration's to find.
  void analogyEdits(std::vector<Edit> &out) const {
    std::vector<const Knob *> knobs = explorable();
    for (const Win &w : wins_) {
      const Knob *winner = knob(w.knob);
      if (!winner || best_.count(w.knob) == 0 || best_.at(w.knob) != w.value)
        continue; // a win the agent has moved away from since
      for (const Knob *k : knobs) {
        if (k == winner || k->kind != KnobKind::Source || k->role != winner->role || best_.at(k->name) == w.value ||
            fruitless(k->name, w.value))
          continue;
        std::vector<std::string> values = order(*k, best_.at(k->name)); // proven, not beyond a worse one
        if (std::find(values.begin(), values.end(), w.value) == values.end())
          continue;
        KnobValues v = best_;
        v[k->name] = w.value;
        if (!checkValues(manifest_, v))
          continue;
        out.push_back({v,
                       fmt::format("{} {} -> {}: the same {} paid off on {} ({:.2f}x the best before it)", k->name,
                                   best_.at(k->name), w.value, toString(k->role), w.knob, w.gain),
                       ""});
      }
    }
  }

  /// 1. What the diagnosis calls for, largest share first, breadth first over the knobs it names; every
  /// edit it calls for also goes to `called`, set aside or not.
  void diagnosedEdits(std::vector<Edit> &out, std::vector<Edit> &called) const {
    // knob -> the edits of it the diagnosis calls for, in order (nullopt: one not proposed alone again)
    std::vector<std::pair<std::string, std::vector<std::optional<Edit>>>> queues;
    // AutoGuide lists findings in its rules' order; each kernel finding carries the share of the time
    // it could save in its subject.
    std::vector<const support::Finding *> ranked;
    if (findings_)
      for (const support::Finding &f : *findings_)
        if (!f.transformations.empty())
          ranked.push_back(&f);
    auto shareOf = [](const support::Finding *f) { return f->subject ? f->subject->share : 0.0; };
    std::stable_sort(ranked.begin(), ranked.end(),
                     [&](const support::Finding *a, const support::Finding *b) { return shareOf(a) > shareOf(b); });
    for (const support::Finding *finding : ranked) {
      const support::Finding &f = *finding;
      const std::string &evidence = f.evidence;
      for (const std::string &tid : f.transformations) {
        const Transformation *t = transformation(tid);
        if (!t)
          continue;
        bool setAside = worse_.count(t->id) && worse_.at(t->id) >= 2; // still a companion (1b)
        for (const Knob *kp : byHeat()) {
          const Knob &k = *kp;
          if (std::find(t->knobRoles.begin(), t->knobRoles.end(), k.role) == t->knobRoles.end() ||
              !transformable(k, f))
            continue;
          std::vector<std::string> values = order(k, best_.at(k.name));
          // Values the diagnosis predicts to help (a block size or register cap the static occupancy
          // says would lift the binding limit) first, in its order.
          if (const std::vector<std::string> *prefer = preferred(f, k.name)) {
            std::vector<std::string> first;
            for (const std::string &p : *prefer)
              if (std::find(values.begin(), values.end(), p) != values.end())
                first.push_back(p);
            values.erase(std::remove_if(values.begin(), values.end(),
                                        [&](const std::string &x) {
                                          return std::find(first.begin(), first.end(), x) != first.end();
                                        }),
                         values.end());
            values.insert(values.begin(), first.begin(), first.end());
          }
          // Values that carry the transformation's hint (a flag set with -ffast-math) first.
          auto hinted = [&](const std::string &v) {
            return std::any_of(t->valueHints.begin(), t->valueHints.end(),
                               [&](const std::string &h) { return v.find(h) != std::string::npos; });
          };
          if (!t->valueHints.empty()) {
            std::stable_partition(values.begin(), values.end(), hinted);
            if (std::any_of(values.begin(), values.end(), hinted))
              values.erase(std::stable_partition(values.begin(), values.end(), hinted), values.end());
          }
          for (const auto &value : values) {
            KnobValues v = best_;
            v[k.name] = value;
            if (!checkValues(manifest_, v))
              continue;
            Edit e{v,
                   fmt::format("{} {} -> {} ({}), for: {} [{}]", k.name, best_.at(k.name), value, t->name, evidence,
                               t->reference),
                   t->id};
            called.push_back(e);
            if (setAside)
              continue;
            auto q = std::find_if(queues.begin(), queues.end(), [&](const auto &p) { return p.first == k.name; });
            if (q == queues.end())
              q = queues.insert(queues.end(), {k.name, {}});
            // A value not proposed alone again keeps its place: the rounds stay where they were.
            q->second.push_back(fruitless(k.name, value) ? std::nullopt : std::optional<Edit>(std::move(e)));
          }
        }
      }
    }
    // Breadth first over the knobs the diagnosis names: each knob's first edit (in the order of the
    // findings' shares), then each one's second, ... A share says how much time a finding's subject
    // takes, not which of the knobs that answer it will pay off; trying every one named once before
    // a second value of any finds the large effects early (the loop order of a naive matmul, named by
    // its cache misses, before the thread counts its idle core names).
    size_t rounds = 0;
    for (const auto &q : queues)
      rounds = std::max(rounds, q.second.size());
    for (size_t round = 0; round < rounds; ++round)
      for (const auto &q : queues)
        if (round < q.second.size() && q.second[round])
          out.push_back(*q.second[round]);
  }

  /// 1b. An edit the diagnosis called for that clearly lost, again with a companion.
  void companionEdits(const std::vector<Edit> &called, std::vector<Edit> &out) const {
    // Clearly lost: under 0.8 of the best. Tried again with the first three edits the diagnosis calls
    // for on each other knob: a change with a large effect, even a loss, shows that its knob matters
    // here and may need a companion to pay off (privatizing a histogram whose loop deals iterations
    // out one at a time loses until the schedule is static). The two largest losses; an edit that
    // changed little says its knob does not matter, and failures (score 0) are not combined.
    auto changedKnob = [&](const Edit &e) -> std::string {
      for (const auto &[name, value] : e.values)
        if (best_.count(name) && best_.at(name) != value)
          return name;
      return "";
    };
    std::vector<std::pair<double, Edit>> losers;
    std::vector<std::pair<std::string, Edit>> partners; // (knob, an edit of it): its first three, in diagnosis order
    std::set<KnobValues> seen; // an edit two findings call for counts once
    for (const Edit &e : called) {
      std::string knob = changedKnob(e);
      if (knob.empty() || !seen.insert(e.values).second)
        continue;
      // A knob the agent has moved from the start's value has shown that it matters: its loss is the
      // gain of the value it has now, undone, not a change to complete.
      bool undoes = start_.count(knob) && start_.at(knob) != best_.at(knob);
      if (auto score = measured(e.values); !undoes && score && *score > 0 && *score < kClearLoss * bestScore_)
        losers.push_back({*score, e});
      if (std::count_if(partners.begin(), partners.end(), [&](const auto &p) { return p.first == knob; }) < 3)
        partners.push_back({knob, e});
    }
    std::stable_sort(losers.begin(), losers.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
    if (losers.size() > 2) // the two largest losses: the rest waits for exploration and pairs
      losers.resize(2);
    auto spent = companionsIn_.find(epoch_);
    size_t left = kCompanions - std::min(kCompanions, spent == companionsIn_.end() ? size_t{0} : spent->second);
    for (const auto &[score, loser] : losers) {
      std::string knob = changedKnob(loser);
      const Knob *lk = this->knob(knob);
      for (const auto &[other, partner] : partners) {
        if (other == knob || invalid(other, partner.values.at(other)))
          continue;
        // Two nests' transformations do not interact: each nest's time is its own (a companion on
        // another nest only adds that nest's own gain or loss to the loser's).
        if (const Knob *pk = this->knob(other); lk && pk && lk->kind == KnobKind::Source &&
                                                pk->kind == KnobKind::Source &&
                                                (lk->nestFile != pk->nestFile || lk->nestLine != pk->nestLine))
          continue;
        KnobValues v = loser.values;
        v[other] = partner.values.at(other);
        if (!checkValues(manifest_, v) || measured(v))
          continue;
        if (left == 0)
          return;
        --left;
        out.push_back({v,
                       fmt::format("{} -> {} lost ({:.2f}x the best) but shows the knob matters: again with {} -> {}, "
                                   "which the diagnosis also calls for",
                                   knob, loser.values.at(knob), score / bestScore_, other, v.at(other)),
                       "", true, epoch_});
      }
    }
  }

  /// The knobs exploration and pairs move: cheap roles first; a source knob only on the project's own
  /// files and a nest that is not cold.
  std::vector<const Knob *> explorable() const {
    std::vector<const Knob *> knobs;
    for (const Knob *k : byHeat())
      if (k->kind != KnobKind::Source || (files_.empty() && !cold(*k)))
        knobs.push_back(k);
    std::stable_sort(knobs.begin(), knobs.end(),
                     [](const Knob *a, const Knob *b) { return explorationRank(a->role) < explorationRank(b->role); });
    return knobs;
  }

  /// 2. Exploration: every knob's other values, nearest values first.
  void explorationEdits(const std::vector<const Knob *> &knobs, std::vector<Edit> &out) const {
    // A knob the agent has already moved from the start's value has had its say; moving it back is
    // explored after every knob not yet moved (the flags after a parallel loop that paid off).
    std::vector<const Knob *> explore = knobs;
    std::stable_partition(explore.begin(), explore.end(), [&](const Knob *k) {
      return !start_.count(k->name) || start_.at(k->name) == best_.at(k->name);
    });
    for (const Knob *k : explore)
      for (const auto &value : order(*k, best_.at(k->name))) {
        if (fruitless(k->name, value))
          continue;
        KnobValues v = best_;
        v[k->name] = value;
        if (!checkValues(manifest_, v))
          continue;
        out.push_back({v,
                       fmt::format("exploring {} ({}): {} -> {} (no finding left that a knob answers)", k->name,
                                   toString(k->role), best_.at(k->name), value),
                       ""});
      }
  }

  /// 3. Two knobs at once.
  void pairEdits(const std::vector<const Knob *> &knobs, std::vector<Edit> &out) const {
    // When every single edit of the best has been tried: changes that do not pay off alone may together
    // (reassociation with the loop order that exposes a reduction). Pairs whose single edits scored
    // best come first.
    std::vector<std::pair<double, Edit>> pairs;
    for (size_t a = 0; a < knobs.size(); ++a)
      for (size_t b = a + 1; b < knobs.size(); ++b)
        for (const auto &va : order(*knobs[a], best_.at(knobs[a]->name)))
          for (const auto &vb : order(*knobs[b], best_.at(knobs[b]->name))) {
            if (invalid(knobs[a]->name, va) || invalid(knobs[b]->name, vb))
              continue;
            KnobValues v = best_;
            v[knobs[a]->name] = va;
            v[knobs[b]->name] = vb;
            if (!checkValues(manifest_, v))
              continue;
            double prior = singleScore(knobs[a]->name, va) + singleScore(knobs[b]->name, vb);
            pairs.push_back({prior, {v,
                                     fmt::format("combining {} -> {} with {} -> {} (each tried alone from the best)",
                                                 knobs[a]->name, va, knobs[b]->name, vb),
                                     ""}});
            if (pairs.size() > 4096)
              break;
          }
    std::stable_sort(pairs.begin(), pairs.end(), [](const auto &x, const auto &y) { return x.first > y.first; });
    for (auto &p : pairs)
      out.push_back(std::move(p.second));
  }

  /// The manifest's knob called `name`; null when none.
  const Knob *knob(const std::string &name) const {
    for (const auto &k : manifest_.knobs)
      if (k.name == name)
        return &k;
    return nullptr;
  }

  /// The share of the instructions in the nest a source knob transforms; nullopt when no profile
  /// said (no cachegrind), or for other knobs.
  std::optional<double> heat(const Knob &k) const {
    if (k.kind != KnobKind::Source || heat_.empty())
      return std::nullopt;
    auto it = heat_.find(fmt::format("{}:{}", k.nestFile, k.nestLine));
    return it == heat_.end() ? 0.0 : it->second;
  }
  /// A nest too cold to be worth a measurement: under kHotNest of the instructions.
  bool cold(const Knob &k) const {
    auto h = heat(k);
    return h && *h < kHotNest;
  }
  /// The manifest's knobs, source knobs of hotter nests first (others keep the manifest's order).
  std::vector<const Knob *> byHeat() const {
    std::vector<const Knob *> out;
    for (const auto &k : manifest_.knobs)
      out.push_back(&k);
    std::stable_sort(out.begin(), out.end(),
                     [&](const Knob *a, const Knob *b) { return heat(*a).value_or(2.0) > heat(*b).value_or(2.0); });
    return out;
  }

  /// The values of knob `name` a finding predicts to help, best first (its subject's "prefer"); null: none.
  static const std::vector<std::string> *preferred(const support::Finding &finding, const std::string &name) {
    if (!finding.subject)
      return nullptr;
    auto it = finding.subject->prefer.find(name);
    return it == finding.subject->prefer.end() ? nullptr : &it->second;
  }

  /// Whether a finding may be answered with knob `k`: a source knob only when the variant keeps the
  /// project's files (an edited file is not what the source model describes), and, for a finding
  /// that names a line, only on the nest holding that line.
  bool transformable(const Knob &k, const support::Finding &finding) const {
    if (k.kind != KnobKind::Source)
      return true;
    if (!files_.empty() || cold(k)) // a cold nest pays back at most its own small share
      return false;
    if (!finding.subject || finding.subject->line == 0)
      return true; // a program-wide finding (idle cores): any nest where the time goes
    const std::string &file = finding.subject->file;
    int line = finding.subject->line;
    return std::filesystem::path(file).filename() == std::filesystem::path(k.nestFile).filename() &&
           line >= k.nestLine && line <= k.nestEndLine;
  }

  /// Whether setting `name` = `value` was tried from two different bests and improved neither, or
  /// was tried in this epoch already: it is not proposed alone again (a finding that persists, such
  /// as idle cores that more threads do not fill, would otherwise send the agent to the same values
  /// after every improvement). Pairs still combine it.
  bool fruitless(const std::string &name, const std::string &value) const {
    if (invalid(name, value))
      return true;
    auto it = fruitless_.find(name + "=" + value);
    if (it != fruitless_.end() && it->second >= 2)
      return true;
    // Lost clearly, and the best has not moved since by as much as it lost by.
    auto lost = reviveAt_.find(name + "=" + value);
    if (lost != reviveAt_.end() && bestScore_ < lost->second)
      return true;
    // Tried in this epoch (from this best, or from one it replaced by less than kSettle) and lost.
    auto at = triedIn_.find(name + "=" + value);
    return at != triedIn_.end() && at->second == epoch_;
  }

  /// Whether `name` = `value` alone made the program invalid, and no edit with it has scored since.
  bool invalid(const std::string &name, const std::string &value) const {
    return invalidAlone_.count(name + "=" + value) && singleScore(name, value) == 0;
  }

  /// What a single edit to `name` = `value` scored when it was tried (0: never, or failed).
  double singleScore(const std::string &name, const std::string &value) const {
    auto it = singles_.find(name + "=" + value);
    return it == singles_.end() ? 0.0 : it->second;
  }

  const Manifest &manifest_;
  std::vector<Transformation> catalogue_;
  std::string startText_, startLabel_;
  KnobValues best_, start_;
  std::map<std::string, std::string> files_;
  std::string bestHash_;
  double bestScore_ = 0;
  std::optional<std::vector<support::Finding>> findings_; // the base's diagnosis; nullopt: none yet
  std::map<std::string, double> heat_; // "file:line" of a nest -> its share of the instructions
  std::set<std::string> tried_;
  std::map<std::string, int> worse_;
  std::map<std::string, double> singles_; // "KNOB=value" -> best score of an edit that set it
  std::map<std::string, double> scores_;  // candidate hash -> its score (0: failed)
  std::map<std::string, int> fruitless_;  // "KNOB=value" -> edits setting it that did not improve the best
  std::map<std::string, int> triedIn_;    // "KNOB=value" -> the epoch of the latest such edit
  std::map<std::string, double> reviveAt_; // "KNOB=value" that lost clearly -> the best that may retry it
  int epoch_ = 0;                         // moves of the best by kSettle or more
  struct Win {
    std::string knob, value;
    double gain = 0; // the best's score after the move over before it
  };
  std::vector<Win> wins_;              // source knob values that improved the best, the latest first
  std::map<int, size_t> companionsIn_; // epoch -> companion edits measured in it
  std::set<std::string> invalidAlone_; // "KNOB=value" whose single edit made the program invalid
  double cores_ = std::max(1u, std::thread::hardware_concurrency());
  std::vector<Edit> pending_;
  bool startedOut_ = false;
};

} // namespace

std::unique_ptr<engine::Strategy> makeGuidedKernelAgent(const Manifest &m, std::vector<Transformation> catalogue,
                                                        const std::string &start, const std::string &startLabel) {
  return std::make_unique<GuidedKernelAgent>(m, std::move(catalogue), start, startLabel);
}

} // namespace hone::kernel
