// The guided agent: an expert's loop without an LLM. It keeps the best mapper
// so far and its evidence (the model's profile, the runtime's error, AutoGuide's
// findings) and proposes one edit at a time, each addressing a problem the
// evidence cites; edits that did not help are not tried again. When the cited
// problems are exhausted it explores single changes on the busiest tasks.
// This file is the search (what was proposed, tried, settled; the best so far);
// the edits and their context are in GuidedEdits.h, the rendering of a version
// above the start in GuidedRender.h, and the edit generators and repairs in
// GuidedGenerators.h.
#include "mapping/Agents.h"

#include "mapping/GuidedEdits.h"
#include "mapping/GuidedGenerators.h"
#include "mapping/GuidedRender.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>

namespace hone::mapping {

using engine::Candidate;
using engine::Step;

namespace {

using guided::Best;
using guided::Context;
using guided::Edit;
using guided::Version;

/// The first line of a message.
std::string firstLineOf(const std::string &s) { return s.substr(0, s.find('\n')); }

/// The search: proposes the start, then one edit at a time above the best version so far, and
/// learns from each result what is settled, what was tried and which families make things worse.
class GuidedAgent final : public engine::Strategy {
public:
  GuidedAgent(const Space &space, const model::AppModel &app, std::string start, std::string startLabel)
      : space_(space), app_(app), start_(std::move(start)), startLabel_(std::move(startLabel)) {}

  std::vector<Candidate> propose(size_t count) override {
    std::vector<Candidate> out;
    pending_.clear();
    if (!started_) {
      started_ = true;
      Candidate c = Candidate::make(start_.render(Version{}), {}, "the starting point: " + startLabel_);
      proposed_.insert(c.hash);
      pending_.push_back({Version{}, std::nullopt});
      out.push_back(std::move(c));
    }
    while (out.size() < count) {
      if (queue_.empty() && !refilled_) {
        refill();
        refilled_ = true;
      }
      if (queue_.empty())
        break;
      auto [version, edit] = std::move(queue_.front());
      queue_.pop_front();
      if (struckOut(edit))
        continue;
      Candidate c = Candidate::make(start_.render(version), best_.hash, edit.rationale);
      if (!proposed_.insert(c.hash).second)
        continue;
      pending_.push_back({version, edit});
      out.push_back(std::move(c));
    }
    return out;
  }

  void notify(const std::vector<Step> &steps) override {
    for (size_t i = 0; i < steps.size() && i < pending_.size(); ++i) {
      const Step &s = steps[i];
      auto &[version, edit] = pending_[i];
      if (s.result.ok() && s.result.score > best_.score) {
        best_.score = s.result.score;
        best_.version = version;
        best_.hash = s.candidate.hash;
        best_.profile = s.result.profile;
        best_.evidence = s.result.evidence;
        best_.found = true;
        if (edit && edit->settles) { // what improved is settled: later edits do not undo it
          settled_.insert(edit->key);
          for (const auto &c : edit->with)
            settled_.insert(c.key);
        }
        queue_.clear();
        refilled_ = false;
        continue;
      }
      if (edit) {
        tried_.insert(edit->id());
        if (best_.found && (!s.result.ok() || s.result.score < best_.score))
          for (const auto &f : edit->families())
            ++worse_[f];
      }
      if (!s.result.ok()) {
        // Read the failure: a fix applied to the failed version goes first.
        std::string evidence = s.result.error + "\n" + s.result.rawOutput;
        for (Edit &fix : guided::fixesFor(context(), evidence, s.result.profile, s.feedback)) {
          if (tried_.count(fix.id()))
            continue;
          fix.rationale = fmt::format("{} (repairing: {})", fix.rationale, firstLineOf(s.result.error));
          queue_.push_front({version.with(fix), fix});
          tried_.insert(fix.id());
          break;
        }
        if (!best_.found && !edit) { // the start itself failed: every fix is worth a try
          for (Edit &fix : guided::fixesFor(context(), evidence, s.result.profile, s.feedback))
            if (!tried_.count(fix.id()))
              queue_.push_back({version.with(fix), fix});
          refilled_ = false; // then explore from the start
        }
      }
    }
    pending_.clear();
  }

private:
  /// What the edit generators and repairs read: the space, the app, the start and the best so far.
  Context context() const { return {space_, app_, start_, best_}; }

  /// Whether the same change made the best worse twice elsewhere (pennant: one region moved to the
  /// framebuffer for task after task, each a loss): then it is not tried for yet another task.
  bool struckOut(const Edit &e) const {
    for (const auto &f : e.families())
      if (auto it = worse_.find(f); it != worse_.end() && it->second >= 2)
        return true;
    return false;
  }

  /// Queues the edits the best mapper's evidence calls for, best first, then exploration: those not
  /// tried, not settled and not struck out that change the best version.
  void refill() {
    std::vector<Edit> edits = guided::rankedEdits(context());
    std::set<std::string> queued;
    for (auto &e : edits) {
      if (tried_.count(e.id()) || settled_.count(e.key) || !queued.insert(e.id()).second)
        continue;
      if (struckOut(e))
        continue;

      Version v = best_.version.with(e);
      bool changes = !best_.version.find(e.key) || best_.version.find(e.key)->statement != e.statement;
      for (const auto &c : e.with) {
        if (settled_.count(c.key))
          continue;
        changes = changes || !best_.version.find(c.key) || best_.version.find(c.key)->statement != c.statement;
        v = v.with(c);
      }
      if (changes)
        queue_.push_back({std::move(v), e});
    }
  }

  const Space &space_;
  const model::AppModel &app_;
  guided::StartMapper start_; // the start and what it decides; renders versions above it
  std::string startLabel_;
  bool started_ = false, refilled_ = true;
  Best best_; // the best version so far, its hash, score, profile and evidence
  std::deque<std::pair<Version, Edit>> queue_;
  std::vector<std::pair<Version, std::optional<Edit>>> pending_;
  std::set<std::string> proposed_, tried_, settled_;
  std::map<std::string, int> worse_; // family -> how many of its edits made the best worse
};

} // namespace

std::unique_ptr<engine::Strategy> makeGuidedAgent(const Space &space, const model::AppModel &app, std::string start,
                                                  std::string startLabel, uint64_t /*seed*/) {
  return std::make_unique<GuidedAgent>(space, app, std::move(start), std::move(startLabel));
}

} // namespace hone::mapping
