// The kernel domain's guided agent (KernelDomain.h). A reader's map:
//   propose() - the start first; then the best untried edit: first those the
//               latest diagnosis calls for (finding -> catalogue transformation
//               -> knobs of the roles that realise it), largest share first;
//               then every knob's other values, nearest first (exploration).
//   notify()  - keeps an improvement as the new base, remembers the latest
//               findings (they come with the new best's profile), and counts
//               transformations that made things worse.
#include "kernel/KernelDomain.h"

#include "kernel/Runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace hone::kernel {

namespace {

using engine::Candidate;
using engine::Step;
using nlohmann::json;

/// Which roles to explore first when no finding says (cheap, large effects first).
int explorationRank(KnobRole r) {
  switch (r) {
  case KnobRole::Threads: return 0;
  case KnobRole::LoopOrder: return 1;
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

struct Edit {
  KnobValues values;
  std::string rationale;
  std::string family; // the transformation it realises ("" for exploration)
};

class GuidedKernelAgent final : public engine::Strategy {
public:
  GuidedKernelAgent(const Manifest &m, std::vector<Transformation> catalogue, std::string start, std::string label)
      : manifest_(m), catalogue_(std::move(catalogue)), startText_(std::move(start)), startLabel_(std::move(label)) {
    auto v = parseVariant(manifest_, startText_);
    best_ = v ? v->knobs : defaultValues(manifest_);
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
      Candidate c = Candidate::make(renderVariant({e.values, files_}), bestHash_, e.rationale);
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
      // An improvement must clear the measurement's own noise (its 95% CI relative to its median,
      // at least 1%): a tie measured on a noisy machine is not a reason to move.
      double noise = 0.01;
      if (s.result.metrics.count("ci95_s") && s.result.metrics.count("time_s") && s.result.metrics.at("time_s") > 0 &&
          s.result.metrics.at("ci95_s") > 0)
        noise = std::clamp(s.result.metrics.at("ci95_s") / s.result.metrics.at("time_s"), 0.01, 0.10);
      bool improved = s.result.ok() && s.result.score > bestScore_ * (1 + noise);
      if (s.result.ok() && (improved || bestScore_ == 0)) {
        bestScore_ = s.result.score;
        best_ = e.values;
        bestHash_ = s.candidate.hash;
      } else if (!e.family.empty()) {
        ++worse_[e.family];
      }
      if (s.feedback.is_object() && s.feedback.contains("findings") && s.result.ok() && improved)
        findings_ = s.feedback["findings"];
      else if (findings_.is_null() && s.feedback.is_object() && s.feedback.contains("findings"))
        findings_ = s.feedback["findings"];
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

  /// Other values of a knob in the order worth trying from `current`.
  std::vector<std::string> order(const Knob &k, const std::string &current) const {
    std::vector<std::string> out;
    size_t cur = std::find(k.values.begin(), k.values.end(), current) - k.values.begin();
    std::vector<size_t> idx;
    for (size_t i = 0; i < k.values.size(); ++i)
      if (i != cur)
        idx.push_back(i);
    if (k.role == KnobRole::Threads && k.numeric()) { // the most threads first ("" = the runtime's default: all)
      auto key = [&](size_t i) { return k.values[i].empty() ? INFINITY : numberOf(k.values[i]); };
      std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return key(a) > key(b); });
    } else {
      auto dist = [&](size_t i) { return cur < k.values.size() ? (i > cur ? i - cur : cur - i) : i; };
      std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return dist(a) < dist(b); });
    }
    for (size_t i : idx)
      out.push_back(k.values[i]);
    return out;
  }

  std::vector<Edit> edits() const {
    std::vector<Edit> out;
    // 1. What the diagnosis calls for, largest share first (the findings are ranked so).
    if (findings_.is_array())
      for (const auto &f : findings_) {
        if (!f.is_object() || !f.contains("transformations"))
          continue;
        std::string evidence = f.value("evidence", "");
        for (const auto &tid : f["transformations"]) {
          if (!tid.is_string())
            continue;
          const Transformation *t = transformation(tid.get<std::string>());
          if (!t || (worse_.count(t->id) && worse_.at(t->id) >= 2))
            continue;
          for (const Knob &k : manifest_.knobs) {
            if (std::find(t->knobRoles.begin(), t->knobRoles.end(), k.role) == t->knobRoles.end())
              continue;
            for (const auto &value : order(k, best_.at(k.name))) {
              KnobValues v = best_;
              v[k.name] = value;
              if (!checkValues(manifest_, v))
                continue;
              out.push_back({v,
                             fmt::format("{} {} -> {} ({}), for: {} [{}]", k.name, best_.at(k.name), value, t->name,
                                         evidence, t->reference),
                             t->id});
            }
          }
        }
      }
    // 2. Exploration: every knob's other values, cheap roles first, nearest values first.
    std::vector<const Knob *> knobs;
    for (const auto &k : manifest_.knobs)
      knobs.push_back(&k);
    std::stable_sort(knobs.begin(), knobs.end(),
                     [](const Knob *a, const Knob *b) { return explorationRank(a->role) < explorationRank(b->role); });
    for (const Knob *k : knobs)
      for (const auto &value : order(*k, best_.at(k->name))) {
        KnobValues v = best_;
        v[k->name] = value;
        if (!checkValues(manifest_, v))
          continue;
        out.push_back({v,
                       fmt::format("exploring {} ({}): {} -> {} (no finding left that a knob answers)", k->name,
                                   toString(k->role), best_.at(k->name), value),
                       ""});
      }
    return out;
  }

  const Manifest &manifest_;
  std::vector<Transformation> catalogue_;
  std::string startText_, startLabel_;
  KnobValues best_;
  std::map<std::string, std::string> files_;
  std::string bestHash_;
  double bestScore_ = 0;
  json findings_;
  std::set<std::string> tried_;
  std::map<std::string, int> worse_;
  std::vector<Edit> pending_;
  bool startedOut_ = false;
};

} // namespace

std::unique_ptr<engine::Strategy> makeGuidedKernelAgent(const Manifest &m, std::vector<Transformation> catalogue,
                                                        const std::string &start, const std::string &startLabel) {
  return std::make_unique<GuidedKernelAgent>(m, std::move(catalogue), start, startLabel);
}

} // namespace hone::kernel
