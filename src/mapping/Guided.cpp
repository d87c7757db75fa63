// The guided agent: an expert's loop without an LLM. It keeps the best mapper
// so far and its evidence (the model's profile, the runtime's error, AutoGuide's
// findings) and proposes one edit at a time, each addressing a problem the
// evidence cites; edits that did not help are not tried again. When the cited
// problems are exhausted it explores single changes on the busiest tasks.
#include "mapping/Agents.h"

#include "dsl/Frontend.h"
#include "dsl/Policy.h"
#include "sim/Resources.h"
#include "sim/Simulator.h"
#include "support/Diff.h"
#include "support/JsonText.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <set>

namespace hone::mapping {

using engine::Candidate;
using engine::Step;
using model::MemKind;
using model::ProcKind;
using nlohmann::json;

namespace {

/// One statement the agent adds (or replaces: the key names what it decides). An edit
/// without a statement removes the start's statement for the key instead (the start's
/// `CollectMemory T *;`, which no later statement can undo).
struct Edit {
  std::string key;       // "Region task region GPU"
  std::string statement; // "Region task region GPU ZCMEM;"; empty: remove the start's
  std::string rationale;
  std::vector<LibraryFunction> defs;
  double gain = 0;        // estimated seconds saved: the order edits are tried in
  std::vector<Edit> with = {}; // edits made together with this one (a change that needs others to pay off)
  bool settles = true;          // once it improved, no later edit changes its keys (false: its alternatives may)
  std::string id() const {
    std::string out = key + "|" + statement;
    for (const auto &c : with)
      out += " + " + c.id();
    return out;
  }
  bool removes() const { return statement.empty(); }
  /// The families a single edit belongs to: the same change for any task ("Region * R GPU FBMEM;",
  /// "IndexTaskMap * f;") and, for a region, the same memory for any region of the task. A family
  /// whose members made the best worse twice is not tried again.
  std::vector<std::string> families() const {
    std::vector<std::string> words;
    for (size_t at = 0; at < key.size();) {
      size_t end = std::min(key.find(' ', at), key.size());
      words.push_back(key.substr(at, end - at));
      at = end + 1;
    }
    if (!with.empty() || removes() || words.size() < 2)
      return {};
    std::vector<std::string> out;
    size_t afterTask = statement.find(words[1]) + words[1].size();
    out.push_back(statement.substr(0, statement.find(words[1])) + "*" + statement.substr(afterTask));
    if (words[0] == "Region" && words.size() >= 3) {
      size_t region = statement.find(" " + words[2] + " ", afterTask);
      if (region != std::string::npos)
        out.push_back(statement.substr(0, region) + " * " + statement.substr(region + words[2].size() + 2));
    }
    return out;
  }
};

struct Version {
  std::vector<Edit> edits;
  Version with(const Edit &e) const {
    Version v = *this;
    auto it = std::find_if(v.edits.begin(), v.edits.end(), [&](const Edit &o) { return o.key == e.key; });
    if (it != v.edits.end())
      *it = e;
    else
      v.edits.push_back(e);
    return v;
  }
  const Edit *find(const std::string &key) const {
    for (const auto &e : edits)
      if (e.key == key)
        return &e;
    return nullptr;
  }
};

bool mentions(const std::string &text, const std::string &word) {
  auto isWord = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t pos = text.find(word); pos != std::string::npos; pos = text.find(word, pos + 1)) {
    bool before = pos == 0 || !isWord(text[pos - 1]);
    bool after = pos + word.size() >= text.size() || !isWord(text[pos + word.size()]);
    if (before && after)
      return true;
  }
  return false;
}

/// `text` with every whole-word `word` replaced by `by`.
std::string replaceWord(const std::string &text, const std::string &word, const std::string &by) {
  if (word == by)
    return text;
  auto isWord = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  std::string out;
  size_t from = 0;
  for (size_t pos = text.find(word); pos != std::string::npos; pos = text.find(word, pos + 1)) {
    bool before = pos == 0 || !isWord(text[pos - 1]);
    bool after = pos + word.size() >= text.size() || !isWord(text[pos + word.size()]);
    if (!before || !after)
      continue;
    out += text.substr(from, pos - from) + by;
    from = pos + word.size();
  }
  return out + text.substr(from);
}

/// A duration for a rationale: "39.5 ms", "4.26 s".
std::string ms(double s) { return s >= 1 ? fmt::format("{:.3g} s", s) : fmt::format("{:.3g} ms", s * 1e3); }

class GuidedAgent final : public engine::Strategy {
public:
  GuidedAgent(const Space &space, const model::AppModel &app, std::string start, std::string startLabel)
      : space_(space), app_(app), start_(std::move(start)), startLabel_(std::move(startLabel)),
        startPolicy_(dsl::checkSource(support::SourceFile("start.map", start_))) {}

  std::vector<Candidate> propose(size_t count) override {
    std::vector<Candidate> out;
    pending_.clear();
    if (!started_) {
      started_ = true;
      Candidate c = Candidate::make(render(Version{}), {}, "the starting point: " + startLabel_);
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
      Candidate c = Candidate::make(render(version), bestHash_, edit.rationale);
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
      if (s.result.ok() && s.result.score > bestScore_) {
        bestScore_ = s.result.score;
        best_ = version;
        bestHash_ = s.candidate.hash;
        bestProfile_ = s.result.profile;
        bestEvidence_ = s.result.evidence;
        haveBest_ = true;
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
        if (haveBest_ && (!s.result.ok() || s.result.score < bestScore_))
          for (const auto &f : edit->families())
            ++worse_[f];
      }
      if (!s.result.ok()) {
        // Read the failure: a fix applied to the failed version goes first.
        std::string evidence = s.result.error + "\n" + s.result.rawOutput;
        for (Edit &fix : fixesFor(evidence, s.result.profile, s.feedback)) {
          if (tried_.count(fix.id()))
            continue;
          fix.rationale = fmt::format("{} (repairing: {})", fix.rationale, firstLine(s.result.error));
          queue_.push_front({version.with(fix), fix});
          tried_.insert(fix.id());
          break;
        }
        if (!haveBest_ && !edit) { // the start itself failed: every fix is worth a try
          for (Edit &fix : fixesFor(evidence, s.result.profile, s.feedback))
            if (!tried_.count(fix.id()))
              queue_.push_back({version.with(fix), fix});
          refilled_ = false; // then explore from the start
        }
      }
    }
    pending_.clear();
  }

private:
  static std::string firstLine(const std::string &s) { return s.substr(0, s.find('\n')); }

  /// Whether the same change made the best worse twice elsewhere (pennant: one region moved to the
  /// framebuffer for task after task, each a loss): then it is not tried for yet another task.
  bool struckOut(const Edit &e) const {
    for (const auto &f : e.families())
      if (auto it = worse_.find(f); it != worse_.end() && it->second >= 2)
        return true;
    return false;
  }

  // The edits go above the starting mapper: the first statement for a task or
  // region wins (as in the reference implementation), so they take precedence
  // over the start's own. A library function whose name the start already uses
  // (a start that is an earlier hone result) is defined again under a fresh name.
  std::string render(const Version &v) const {
    if (v.edits.empty())
      return start_;
    std::string out = "# ---- hone guided edits: each addresses a problem the evidence cites; the first statement\n"
                      "# ---- for a task or region wins, so these take precedence over the starting mapper below\n";
    std::set<std::string> spaces;
    std::map<std::string, std::string> renamed;
    std::string defs, statements;
    for (const auto &e : v.edits) {
      std::string statement = e.statement;
      for (const auto &f : e.defs) {
        if (!mentions(start_, f.space) && spaces.insert(f.space).second)
          out += fmt::format("{} = Machine({});\n", f.space, f.space.substr(5));
        auto [it, fresh] = renamed.try_emplace(f.name, f.name);
        if (fresh) {
          for (int i = 2; mentions(start_, it->second); ++i)
            it->second = fmt::format("{}_{}", f.name, i);
          defs += replaceWord(f.text, f.name, it->second);
        }
        statement = replaceWord(statement, f.name, it->second);
      }
      statements += e.removes() ? fmt::format("# {}\n# (the starting mapper's {} statement is removed below)\n",
                                              e.rationale, e.key)
                                : fmt::format("# {}\n{}\n", e.rationale, statement);
    }
    out += defs + statements + "# ---- the starting mapper ----\n";
    size_t startAt = out.size();
    out += start_;
    if (!out.empty() && out.back() != '\n')
      out += "\n";
    std::set<std::string> uncollected;
    for (const auto &e : v.edits)
      if (e.removes() && e.key.rfind("CollectMemory ", 0) == 0)
        uncollected.insert(e.key.substr(std::string("CollectMemory ").size()));
    return withoutOverridden(out, startAt, uncollected);
  }

  /// The one task a `CollectMemory` statement names (a statement for several tasks or for `*`
  /// cannot be removed for one of them); nullopt for any other statement.
  static std::optional<std::string> collectedTask(const dsl::Stmt &stmt) {
    auto c = stmt.as<dsl::CollectMemoryStmt>();
    if (!c || c->task.kind != dsl::Selector::Kind::Names || c->task.names.size() != 1)
      return std::nullopt;
    return c->task.names[0].text;
  }

  /// The start's `CollectMemory` statement that names exactly `task`, if there is one.
  const dsl::Stmt *startCollects(const std::string &task) const {
    if (!startPolicy_.ok())
      return nullptr;
    for (const auto &stmt : startPolicy_.program.stmts)
      if (collectedTask(stmt) == task)
        return &stmt;
    return nullptr;
  }

  /// `text` with the start's statements that the edits above override entirely (every task or
  /// region key of theirs is set by an earlier statement) turned into comments: they would have no
  /// effect, and a mapper without conflicting duplicates means the same to every implementation.
  static std::string withoutOverridden(const std::string &text, size_t startAt,
                                       const std::set<std::string> &uncollected = {}) {
    dsl::CheckedSource checked = dsl::checkSource(support::SourceFile("candidate.map", text));
    if (!checked.ok())
      return text;
    std::map<uint32_t, size_t> overriddenKeys; // by a statement's offset: its keys set earlier
    for (const auto &d : checked.diags->diagnostics())
      if (d.severity == support::Severity::Warning && d.range.begin.offset >= startAt &&
          (d.message.find("this later one has no effect") != std::string::npos ||
           d.message.rfind("duplicate ", 0) == 0))
        ++overriddenKeys[d.range.begin.offset];
    std::vector<std::pair<size_t, size_t>> lines; // [begin, end) offsets of statements to comment out
    std::set<size_t> removed;                     // of which an edit removes (not overrides)
    for (const auto &stmt : checked.program.stmts) {
      auto collected = collectedTask(stmt);
      bool remove = collected && stmt.range.begin.offset >= startAt && uncollected.count(*collected);
      auto it = overriddenKeys.find(stmt.range.begin.offset);
      if (!remove && (it == overriddenKeys.end() || it->second < keyCount(stmt)))
        continue;
      size_t begin = text.rfind('\n', stmt.range.begin.offset);
      begin = begin == std::string::npos ? 0 : begin + 1;
      size_t end = text.find('\n', stmt.range.end.offset > 0 ? stmt.range.end.offset - 1 : 0);
      // Only a statement alone on its lines (before it nothing, after it at most a comment).
      size_t after = text.find_first_not_of(" \t;", stmt.range.end.offset);
      if (text.find_first_not_of(" \t", begin) != stmt.range.begin.offset ||
          (after != std::string::npos && text[after] != '\n' && text[after] != '#'))
        continue;
      lines.emplace_back(begin, end == std::string::npos ? text.size() : end);
      if (remove)
        removed.insert(begin);
    }
    std::string out;
    size_t at = 0;
    for (const auto &[begin, end] : lines) {
      out += text.substr(at, begin - at);
      const char *why = removed.count(begin) ? "# removed by an edit above: " : "# overridden by an edit above: ";
      for (const auto &line : support::splitLines(text.substr(begin, end - begin)))
        out += why + line + "\n";
      at = end + 1;
    }
    if (at < text.size())
      out += text.substr(at);
    return out;
  }

  /// How many keys a statement sets (a selector naming two tasks sets two).
  static size_t keyCount(const dsl::Stmt &stmt) {
    auto names = [](const dsl::Selector &s) { return s.kind == dsl::Selector::Kind::Names ? s.names.size() : 1; };
    if (auto t = stmt.as<dsl::TaskStmt>())
      return names(t->tasks);
    if (auto m = stmt.as<dsl::TaskMapStmt>())
      return names(m->tasks);
    if (auto l = stmt.as<dsl::InstanceLimitStmt>())
      return names(l->task);
    if (stmt.as<dsl::RegionStmt>() || stmt.as<dsl::LayoutStmt>())
      return 1;
    return SIZE_MAX; // others are never overridden
  }

  // ---- what the best mapper does now, from its profile ------------------------------

  const json *statOf(const std::string &task) const {
    if (!bestProfile_.contains("task_stats"))
      return nullptr;
    for (const auto &t : bestProfile_["task_stats"])
      if (support::textOf(t, "name") == task)
        return &t;
    return nullptr;
  }
  ProcKind kindOf(const std::string &task) const {
    if (const json *s = statOf(task))
      if (auto k = support::parseProcKind(s->value("kind", "")))
        return *k;
    return space_.kindOf(task, space_.defaults());
  }
  std::string memoryOf(const std::string &task, const std::string &region) const {
    // A profile may not say (a real run's Legion Prof profile has no per-argument memories).
    if (const json *s = statOf(task); s && s->contains("regions") && s->contains("memories")) {
      const json &regions = s->at("regions"), &memories = s->at("memories");
      if (!regions.is_array() || !memories.is_array())
        return {};
      for (size_t i = 0; i < regions.size() && i < memories.size(); ++i)
        if (regions[i] == region && memories[i].is_string())
          return memories[i].get<std::string>();
    }
    return {};
  }

  // ---- edits --------------------------------------------------------------------------

  const Param *param(const std::string &name) const {
    int i = space_.find(name);
    return i < 0 ? nullptr : &space_.params()[static_cast<size_t>(i)];
  }
  /// The memory lists the space offers for (task, region), starting with `first`.
  std::vector<std::string> memoryLists(const std::string &task, const std::string &region) const {
    const Param *p = param(task + ".memory." + region);
    return p ? p->values : std::vector<std::string>{};
  }
  Edit regionEdit(const std::string &task, const std::string &region, ProcKind kind, const std::string &list,
                  std::string why) const {
    std::string k(support::toString(kind));
    return {fmt::format("Region {} {} {}", task, region, k), fmt::format("Region {} {} {} {};", task, region, k, list),
            std::move(why), {}};
  }
  Edit placementEdit(const Param &p, const std::string &pattern, ProcKind kind, std::string why) const {
    bool single = p.kind == ParamKind::SinglePlacement;
    std::string stmt = single ? "SingleTaskMap" : "IndexTaskMap";
    if (pattern == "default") // an explicit function reproducing Legion's default block
      return placementEdit(p, "block", kind, std::move(why));
    LibraryFunction f = libraryFunction(pattern, p.dims, kind);
    return {fmt::format("{} {}", stmt, p.task), fmt::format("{} {} {};", stmt, p.task, f.name), std::move(why), {f}};
  }
  Edit layoutEdit(const std::string &task, const std::string &layout, std::string why) const {
    return {"Layout " + task, fmt::format("Layout {} * * {};", task, layout), std::move(why), {}};
  }

  /// Memory kinds one per node that the task's processor reaches (zero-copy for GPUs).
  std::vector<std::string> sharedKinds(const std::string &task) const {
    return space_.memoryKinds(kindOf(task), true);
  }

  /// Edits that address a failure, read from the error, its detail and AutoGuide's findings.
  std::vector<Edit> fixesFor(const std::string &evidence, const json &profile, const json &feedback) const {
    std::vector<Edit> fixes;
    std::string kind = profile.is_object() ? support::textOf(profile, "error_kind") : "";
    std::string text = evidence + "\n" + (profile.is_object() ? support::textOf(profile, "error_detail") : "");
    if (feedback.is_object() && feedback.contains("findings"))
      for (const auto &f : feedback["findings"])
        text += "\n" + support::textOf(f, "evidence");
    std::vector<std::string> named;
    for (const auto &t : app_.tasks)
      if (mentions(text, t.name))
        named.push_back(t.name);
    // A layout the variant needs: the app model says which.
    for (const auto &t : app_.tasks)
      for (const auto &need : t.layoutNeeds)
        if (!need.message.empty() && text.find(need.message) != std::string::npos && param(t.name + ".layout")) {
          std::string layout = fmt::format("SOA {}", need.order.value_or("C_order"));
          fixes.push_back(layoutEdit(t.name, layout,
                                     fmt::format("{} needs {} instances: \"{}\"", t.name, layout, need.message)));
        }
    for (const auto &task : named) {
      ProcKind k = kindOf(task);
      if (kind == "layout" && param(task + ".layout"))
        for (const char *layout : {"SOA C_order", "SOA F_order"})
          fixes.push_back(layoutEdit(task, layout, fmt::format("the runtime rejected {}'s layout; try {}", task, layout)));
      if (kind == "memory") {
        // The region that did not fit keeps its memory first and falls back to another.
        for (const auto &t : app_.tasks)
          if (t.name == task)
            for (const auto &region : regionsOf(t)) {
              if (!mentions(text, region))
                continue;
              for (const auto &full : space_.memoryKinds(k))
                if (mentions(text, full))
                  for (const auto &other : space_.memoryKinds(k))
                    if (other != full)
                      fixes.push_back(regionEdit(task, region, k, full + "," + other,
                                                 fmt::format("let {} of {} fall back to {} when {} is full", region,
                                                             task, other, full)));
            }
        if (const Param *p = param(task + ".collect"))
          fixes.push_back({"CollectMemory " + task, fmt::format("CollectMemory {} *;", p->task),
                           fmt::format("out of memory: free {}'s read-only instances after it runs", task), {}});
        if (param(task + ".instance_limit"))
          fixes.push_back({"InstanceLimit " + task, fmt::format("InstanceLimit {} 1;", task),
                           fmt::format("out of memory: bound {}'s instances in flight to 1 per processor", task), {}});
        for (const auto &t : app_.tasks)
          if (t.name == task)
            for (const auto &region : regionsOf(t)) {
              auto lists = memoryLists(task, region);
              auto fallback = std::find_if(lists.begin(), lists.end(),
                                           [](const std::string &l) { return l.find(',') != std::string::npos; });
              if (fallback != lists.end())
                fixes.push_back(regionEdit(task, region, k, *fallback,
                                           fmt::format("out of memory: let {} of {} fall back to {}", region, task,
                                                       fallback->substr(fallback->find(',') + 1))));
            }
      }
      if (kind == "variant")
        if (const Param *p = param(task + ".processor"))
          for (const auto &v : p->values)
            fixes.push_back({"Task " + task, fmt::format("Task {} {};", task, v),
                             fmt::format("no valid variant: list {}'s own kinds ({})", task, v), {}});
      if (kind == "placement" || kind == "variant")
        for (const char *suffix : {".placement", ".single_placement"})
          if (const Param *p = param(task + suffix))
            fixes.push_back(placementEdit(*p, p->kind == ParamKind::SinglePlacement ? "parent" : "hblock", k,
                                          fmt::format("the placement of {} failed; use a library function", task)));
      if (kind == "memory" || kind == "policy")
        for (const auto &t : app_.tasks)
          if (t.name == task)
            for (const auto &region : regionsOf(t))
              for (const auto &list : memoryLists(task, region))
                fixes.push_back(regionEdit(task, region, k, list,
                                           fmt::format("{} failed for {}'s {}; try {}", kind, task, region, list)));
    }
    return fixes;
  }

  static std::vector<std::string> regionsOf(const model::Task &t) {
    std::vector<std::string> out;
    for (const auto &a : t.args)
      if (std::find(out.begin(), out.end(), a.region) == out.end())
        out.push_back(a.region);
    return out;
  }

  /// Regions that neighbouring pieces share: aliased (ghost) partitions and what they cover.
  bool shared(const std::string &region) const {
    for (const auto &p : app_.partitions)
      if (p.aliased() && (p.name == region || p.covers == region))
        return true;
    return false;
  }

  /// An argument each point has to itself: a piece of a disjoint partition
  /// indexed by the launch point (no copies between points to avoid).
  bool privateTo(const model::Task &t, const model::Arg &arg) const {
    const model::Partition *part = app_.partition(arg.region);
    if (!part || part->aliased() || !arg.over.empty())
      return false;
    std::set<std::string> pointNames;
    auto collect = [&](const std::vector<model::Launch> &launches) {
      for (const auto &l : launches)
        if (l.task == t.name)
          pointNames.insert(l.point.begin(), l.point.end());
    };
    collect(app_.setup);
    collect(app_.body);
    collect(app_.teardown);
    for (const auto &other : app_.tasks)
      collect(other.launches);
    std::set<std::string> used;
    for (const auto &e : arg.piece)
      if (!pointNames.count(e.text()) || !used.insert(e.text()).second)
        return false;
    return !arg.piece.empty();
  }

  /// Timed tasks of the best mapper, busiest first.
  std::vector<std::string> busiestTasks() const {
    std::vector<std::pair<double, std::string>> tasks;
    if (bestProfile_.contains("task_stats"))
      for (const auto &t : bestProfile_["task_stats"])
        tasks.push_back({support::numberOf(t, "busy_s"), support::textOf(t, "name")});
    std::stable_sort(tasks.begin(), tasks.end(), [](const auto &a, const auto &b) { return a.first > b.first; });
    std::vector<std::string> out;
    for (auto &[busy, name] : tasks)
      out.push_back(name);
    // Tasks the profile does not time (launched by inner tasks' parents, setup) follow.
    for (const auto &t : app_.tasks)
      if (std::find(out.begin(), out.end(), t.name) == out.end())
        out.push_back(t.name);
    return out;
  }

  /// Edits the best mapper's profile calls for, ranked by the time each could
  /// save (the evidence's numbers), then exploration.
  void refill() {
    std::vector<Edit> edits;
    if (haveBest_) {
      slowArguments(edits);
      recopies(edits);
      for (const auto &b : bestEvidence_.bottlenecks)
        addressBottleneck(b, edits);
    }
    std::stable_sort(edits.begin(), edits.end(), [](const Edit &a, const Edit &b) { return a.gain > b.gain; });
    explore(edits);
    std::set<std::string> queued;
    for (auto &e : edits) {
      if (tried_.count(e.id()) || settled_.count(e.key) || !queued.insert(e.id()).second)
        continue;
      if (struckOut(e))
        continue;

      Version v = best_.with(e);
      bool changes = !best_.find(e.key) || best_.find(e.key)->statement != e.statement;
      for (const auto &c : e.with) {
        if (settled_.count(c.key))
          continue;
        changes = changes || !best_.find(c.key) || best_.find(c.key)->statement != c.statement;
        v = v.with(c);
      }
      if (changes)
        queue_.push_back({std::move(v), e});
    }
  }

  double stat(const std::string &task, const char *what) const {
    const json *s = statOf(task);
    return s ? s->value(what, 0.0) : 0.0;
  }

  /// Tasks that spend more than their fastest memories would take: move each
  /// argument that is not in the fastest memory of the task's processor.
  void slowArguments(std::vector<Edit> &edits) const {
    for (const auto &task : busiestTasks()) {
      const model::Task *t = app_.task(task);
      const json *have = statOf(task);
      if (!have || !have->contains("best_variant_s"))
        continue; // the profile does not know (a real run's): no evidence to act on
      double excess = stat(task, "busy_s") - stat(task, "best_variant_s");
      if (!t || t->inner() || excess <= 0)
        continue;
      ProcKind k = kindOf(task);
      std::vector<std::string> slow;
      for (const auto &region : regionsOf(*t)) {
        auto lists = memoryLists(task, region);
        if (!lists.empty() && memoryOf(task, region) != lists.front().substr(0, lists.front().find(',')))
          slow.push_back(region);
      }
      for (const auto &region : slow) {
        std::string fast = memoryLists(task, region).front();
        Edit e = regionEdit(task, region, k, fast,
                            fmt::format("place {} of {} in {} -- {} is busy {}, about {} more than at its fastest "
                                        "memories; {} is in {}",
                                        region, task, fast, task, ms(stat(task, "busy_s")), ms(excess), region,
                                        memoryOf(task, region)));
        e.gain = excess / static_cast<double>(slow.size());
        edits.push_back(std::move(e));
      }
    }
  }

  /// Tasks whose read-only inputs are copied again because CollectMemory released them after an
  /// earlier use on the same processor: stop collecting them, unless memory is what is short.
  void recopies(std::vector<Edit> &edits) const {
    if (!bestProfile_.contains("task_stats"))
      return;
    for (const auto &b : bestEvidence_.bottlenecks)
      if (sim::parseBottleneckKind(b.kind) == sim::BottleneckKind::Memory)
        return; // collection is what keeps the memory from filling
    double copied = support::numberOf(bestProfile_, "bytes_copied");
    double elapsed = support::numberOf(bestProfile_, "time_s");
    for (const auto &t : bestProfile_["task_stats"]) {
      std::string task = support::textOf(t, "name");
      double again = t.value("recopied_bytes", 0.0);
      if (again <= 0 || copied <= 0 || !startCollects(task))
        continue;
      Edit e{"CollectMemory " + task, "",
             fmt::format("stop collecting {}'s read-only instances after use -- {} of the {} copied are copied again "
                         "into memories that held them until CollectMemory released them",
                         task, sim::bytesText(again), sim::bytesText(copied)),
             {}};
      // The share of the copies that need not happen, of the time the processors wait.
      e.gain = (again / copied) * (1 - busiestKindShare()) * elapsed;
      edits.push_back(std::move(e));
    }
  }

  /// How busy the busiest processor kind is on average (the "processor" bottleneck's share).
  double busiestKindShare() const {
    for (const auto &b : bestEvidence_.bottlenecks)
      if (sim::parseBottleneckKind(b.kind) == sim::BottleneckKind::Processor)
        return b.share;
    return 0;
  }

  /// Whether the start mapper has its own placement statement for the task.
  bool startMaps(const std::string &task, ProcKind kind, bool single) const {
    return startPolicy_.ok() && dsl::taskMapStatementFor(startPolicy_.program, task, kind, single) != nullptr;
  }

  /// The region a region argument's data belongs to (a partition's parent region).
  std::string rootOf(const std::string &name) const {
    if (const model::Partition *p = app_.partition(name))
      return p->region;
    return name;
  }

  /// Whether two region arguments name the same data: the same partition, a partition and the
  /// one an aliased partition covers (a ghost view of shared pieces), or a whole region and a
  /// partition of it. Two disjoint partitions of one region do not.
  bool sameData(const std::string &a, const std::string &b) const {
    auto covers = [&](const std::string &x, const std::string &y) {
      const model::Partition *p = app_.partition(x);
      return p && p->covers == y;
    };
    return a == b || covers(a, b) || covers(b, a) || a == rootOf(b) || b == rootOf(a);
  }

  /// The current placement pattern of a task's launches, if an edit set one.
  bool placedWith(const Param &p, const std::string &pattern) const {
    const Edit *have = best_.find((p.kind == ParamKind::SinglePlacement ? "SingleTaskMap " : "IndexTaskMap ") + p.task);
    return have && mentions(have->statement, libraryFunction(pattern, p.dims, kindOf(p.task)).name);
  }

  /// A bottleneck as the edit generators read it: what it is about, its sentence, its share and the
  /// best mapper's elapsed time.
  struct Hit {
    std::string resource, detail;
    double share = 0, elapsed = 0;
  };
  using Generator = void (GuidedAgent::*)(const Hit &, std::vector<Edit> &) const;

  /// The edit generators of each kind of bottleneck the simulator (or legion_prof) names, in the order
  /// they run: one per idea, as schedule rules are in TVM's MetaSchedule. A kind with none (access:
  /// slowArguments reads the task statistics instead) proposes nothing here.
  static const std::map<sim::BottleneckKind, std::vector<Generator>> &generators() {
    using K = sim::BottleneckKind;
    static const std::map<K, std::vector<Generator>> table = {
        {K::Variant, {&GuidedAgent::fasterVariant}},
        {K::Channel, {&GuidedAgent::keepDataLocal, &GuidedAgent::writeWhereReadFor}},
        {K::Idle, {&GuidedAgent::spreadWork}},
        {K::Processor,
         {&GuidedAgent::spreadWork, &GuidedAgent::stageThroughHostFor, &GuidedAgent::moreInstancesInFlight}},
        {K::Runtime, {&GuidedAgent::writeWhereReadFor}},
        {K::Memory, {&GuidedAgent::releaseMemory}}};
    return table;
  }

  void addressBottleneck(const support::Bottleneck &b, std::vector<Edit> &edits) const {
    auto kind = sim::parseBottleneckKind(b.kind);
    if (!kind)
      return; // not the simulator's: nothing this agent knows how to address
    auto it = generators().find(*kind);
    if (it == generators().end())
      return;
    Hit h{b.subject, b.detail, b.share, support::numberOf(bestProfile_, "time_s")};
    for (Generator g : it->second)
      (this->*g)(h, edits);
  }

  /// variant: run the task on a kind whose variant would be faster first.
  void fasterVariant(const Hit &h, std::vector<Edit> &edits) const {
    if (!app_.task(h.resource))
      return;
    const std::string &resource = h.resource;
    const std::string &detail = h.detail;
    if (const Param *p = param(resource + ".processor"))
      for (const auto &v : p->values)
        if (v.rfind(std::string(support::toString(kindOf(resource))), 0) != 0) {
          Edit e{"Task " + resource, fmt::format("Task {} {};", resource, v),
                 fmt::format("run {} on {} first -- {}", resource, v.substr(0, v.find(',')), detail), {}};
          e.gain = std::max(0.0, stat(resource, "busy_s") - stat(resource, "best_variant_s"));
          edits.push_back(std::move(e));
        }
  }

  /// channel: copies between memories. Keep data where the work is: shared regions go to memory every
  /// piece reaches (zero-copy), children run where their parent runs, the setup tasks that write a
  /// task's inputs are placed like it, and read-only inputs of the busiest leaves may be read in place.
  void keepDataLocal(const Hit &h, std::vector<Edit> &edits) const {
    const std::string &detail = h.detail;
    double share = h.share, elapsed = h.elapsed;
    double gain = share * elapsed;
    for (const auto &task : busiestTasks()) {
      const model::Task *t = app_.task(task);
      if (!t || (!statOf(task) && !t->inner()))
        continue; // untimed (setup) work does not copy in the measured part
      ProcKind k = kindOf(task);
      for (const char *suffix : {".single_placement", ".placement"})
        if (const Param *p = param(task + suffix);
            p && std::find(p->values.begin(), p->values.end(), "parent") != p->values.end() &&
            !placedWith(*p, "parent")) {
          if (startMaps(task, k, p->kind == ParamKind::SinglePlacement))
            continue; // the start places it already, deliberately
          Edit e = placementEdit(*p, "parent", k,
                                 fmt::format("run {} on its parent's processor, so the data it shares with its "
                                             "parent and siblings stays local -- {}",
                                             task, detail));
          e.gain = 0.9 * gain;
          edits.push_back(std::move(e));
        }
      if (t->inner())
        continue;
      // Where the data comes from decides what moves: place the setup tasks that write
      // this task's inputs with Legion's default block (then the other patterns).
      for (const auto &arg : t->args)
        for (const auto &producer : app_.tasks) {
          // Setup work (untimed) on the consumer's kind: where it runs decides which
          // processor's memory the data starts in.
          if (producer.name == task || producer.inner() || statOf(producer.name) ||
              kindOf(producer.name) != k)
            continue;
          bool writes = false;
          for (const auto &parg : producer.args)
            writes = writes || (rootOf(parg.region) == rootOf(arg.region) && parg.privilege != model::Privilege::Read);
          const Param *p = param(producer.name + ".placement");
          if (!writes || !p || producedSeen_.count(producer.name + "|" + task))
            continue;
          producedSeen_.insert(producer.name + "|" + task);
          for (const auto &pattern : p->values) {
            if (placedWith(*p, pattern == "default" ? "block" : pattern))
              continue;
            Edit e = placementEdit(*p, pattern, kindOf(producer.name),
                                   fmt::format("place {} (which writes {}, read by {}) with the {} placement, so "
                                               "the data starts where it is used -- {}",
                                               producer.name, rootOf(arg.region), task, pattern, detail));
            // Legion's default block first; the other patterns only after every other idea.
            e.gain = (pattern == "default" ? 0.3 : 1e-3) * gain;
            edits.push_back(std::move(e));
          }
        }
      producedSeen_.clear();
      for (const auto &arg : t->args) {
        std::string now = memoryOf(task, arg.region);
        bool readOnly = arg.privilege == model::Privilege::Read;
        if (!shared(arg.region) && (!readOnly || privateTo(*t, arg)))
          continue;
        for (const auto &m : sharedKinds(task))
          if (m != now && m != memoryLists(task, arg.region).front()) {
            Edit e = regionEdit(task, arg.region, k, m,
                                fmt::format("keep the {} region {} of {} in {}, which every processor of the node "
                                            "reads, instead of copying it -- {}",
                                            shared(arg.region) ? "shared" : "read-only", arg.region, task, m,
                                            detail));
            e.gain = (shared(arg.region) ? 1.0 : 0.5) * gain;
            edits.push_back(std::move(e));
          }
      }
    }
  }

  /// idle, processor: processors wait for work: place the producers and consumers together, and spread
  /// the launches differently (pointless when all are busy).
  void spreadWork(const Hit &h, std::vector<Edit> &edits) const {
    if (busiestKindShare() >= 0.95)
      return;
    const std::string &detail = h.detail;
    colocate(detail, edits);
    for (const auto &task : busiestTasks())
      for (const char *suffix : {".placement", ".single_placement"})
        if (const Param *p = param(task + suffix))
          for (const auto &pattern : p->values)
            if (pattern != "default" && !placedWith(*p, pattern)) {
              Edit e = placementEdit(*p, pattern, kindOf(task),
                                     fmt::format("spread {} with the {} placement -- {}", task, pattern, detail));
              e.gain = 1e-9 * stat(task, "busy_s");
              edits.push_back(std::move(e));
            }
  }

  /// processor: stage a GPU task's data through host memory (stageThroughHost), unless all are busy.
  void stageThroughHostFor(const Hit &h, std::vector<Edit> &edits) const {
    if (h.share < 0.95)
      stageThroughHost(h.detail, edits);
  }

  /// channel, runtime: a task writes where its readers read (writeWhereRead).
  void writeWhereReadFor(const Hit &h, std::vector<Edit> &edits) const {
    writeWhereRead(h.share * h.elapsed, h.detail, edits);
  }

  /// processor: processors wait; more instances in flight per processor overlap copies with work.
  void moreInstancesInFlight(const Hit &h, std::vector<Edit> &edits) const {
    if (h.share >= 0.95)
      return;
    const std::string &detail = h.detail;
    double share = h.share, elapsed = h.elapsed;
    for (const auto &t : app_.tasks) {
      if (!param(t.name + ".instance_limit") || !startPolicy_.ok())
        continue;
      auto limit = dsl::instanceLimitFor(startPolicy_.program, t.name, kindOf(t.name));
      const Edit *have = best_.find("InstanceLimit " + t.name);
      if (!limit || have)
        continue;
      for (int64_t factor : {2, 4}) {
        Edit e{"InstanceLimit " + t.name, fmt::format("InstanceLimit {} {};", t.name, *limit * factor),
               fmt::format("allow {} instances of {} in flight per processor (was {}) to overlap copies with "
                           "work -- {}",
                           *limit * factor, t.name, *limit, detail),
               {}};
        e.gain = (1 - share) * elapsed * 0.5 / static_cast<double>(factor);
        edits.push_back(std::move(e));
      }
    }
  }

  /// memory: collect read-only instances after use, and bound instances in flight.
  void releaseMemory(const Hit &h, std::vector<Edit> &edits) const {
    const std::string &detail = h.detail;
    double share = h.share;
    for (const auto &t : app_.tasks) {
      if (const Param *p = param(t.name + ".collect")) {
        Edit e{"CollectMemory " + t.name, fmt::format("CollectMemory {} *;", p->task),
               fmt::format("collect {}'s read-only instances after use -- {}", t.name, detail), {}};
        e.gain = 1e-6 * share;
        edits.push_back(std::move(e));
      }
      if (param(t.name + ".instance_limit")) {
        Edit e{"InstanceLimit " + t.name, fmt::format("InstanceLimit {} 1;", t.name),
               fmt::format("bound {}'s instances in flight -- {}", t.name, detail), {}};
        e.gain = 1e-6 * share;
        edits.push_back(std::move(e));
      }
    }
  }


  /// Processors wait while data moves to them: place the busiest leaf launch and the (untimed)
  /// launches that write the data it reads with one placement pattern, so that each block starts
  /// where it is used. One such change alone moves the data elsewhere and loses; they pay off
  /// together, so they are one candidate.
  void colocate(const std::string &detail, std::vector<Edit> &edits) const {
    for (const auto &task : busiestTasks()) {
      const model::Task *t = app_.task(task);
      const Param *p = param(task + ".placement");
      if (!t || t->inner() || !p || !statOf(task))
        continue;
      ProcKind k = kindOf(task);
      std::vector<const Param *> producers;
      std::vector<std::string> names;
      for (const auto &producer : app_.tasks) {
        const Param *pp = param(producer.name + ".placement");
        if (producer.name == task || producer.inner() || statOf(producer.name) || !pp || kindOf(producer.name) != k)
          continue;
        bool feeds = false;
        for (const auto &parg : producer.args)
          for (const auto &arg : t->args)
            feeds = feeds || (rootOf(parg.region) == rootOf(arg.region) && parg.privilege != model::Privilege::Read);
        if (feeds) {
          producers.push_back(pp);
          names.push_back(producer.name);
        }
      }
      if (producers.empty())
        continue;
      for (const auto &pattern : p->values) {
        if (pattern == "default" || placedWith(*p, pattern))
          continue; // the library's block stands in for Legion's default below
        Edit e = placementEdit(*p, pattern, k,
                               fmt::format("place {} and the launches that write its inputs ({}) with the {} "
                                           "placement, so each block starts where it is read -- {}",
                                           task, fmt::join(names, ", "), pattern, detail));
        for (const Param *pp : producers)
          if (std::find(pp->values.begin(), pp->values.end(), pattern) != pp->values.end())
            e.with.push_back(placementEdit(*pp, pattern, k, "(placed together with " + task + ")"));
        if (e.with.empty())
          continue;
        e.gain = 2e-9 * stat(task, "busy_s"); // before the single spreads, after what the evidence prices
        e.settles = false;                    // the other patterns stay worth a try
        edits.push_back(std::move(e));
      }
      return; // the busiest such launch only
    }
  }

  /// Processors wait while the busiest leaf's inputs move between them: let the (untimed) launch
  /// that writes one of those inputs run on another processor kind, in a memory of that kind the
  /// leaf's kind cannot reach, so that its copies to the leaf take that memory's links instead of
  /// the links between the leaf's processors, which carry the other inputs. One change alone fails
  /// or does nothing -- the processor kind, a memory that kind reaches for each region the launch
  /// writes, and a placement in that kind's machine space (where the start places the launch with a
  /// function of its own) -- so they are one candidate, derived from the space's constraints: which
  /// kinds the launch has variants for and which memories each kind reaches.
  void stageThroughHost(const std::string &detail, std::vector<Edit> &edits) const {
    if (support::numberOf(bestProfile_, "bytes_copied") <= 0)
      return; // nothing moves: the wait is not for data
    for (const auto &task : busiestTasks()) {
      const model::Task *t = app_.task(task);
      if (!t || t->inner() || !statOf(task))
        continue;
      ProcKind k = kindOf(task);
      std::vector<std::string> own = space_.memoryKinds(k);
      std::vector<Edit> staged;
      for (const auto &producer : app_.tasks) {
        const Param *proc = param(producer.name + ".processor");
        if (producer.name == task || producer.inner() || statOf(producer.name) || !proc || kindOf(producer.name) != k)
          continue;
        std::set<std::string> fed; // roots of the leaf's inputs this launch writes
        for (const auto &parg : producer.args)
          for (const auto &arg : t->args)
            if (sameData(parg.region, arg.region) && parg.privilege != model::Privilege::Read)
              fed.insert(rootOf(arg.region));
        if (fed.empty())
          continue;
        for (const auto &order : proc->values) {
          auto other = support::parseProcKind(order.substr(0, order.find(',')));
          if (!other || *other == k)
            continue;
          std::vector<std::string> reach = space_.memoryKinds(*other);
          auto reachable = [&](const std::string &list) { // every kind of a "FBMEM,ZCMEM" priority list
            for (size_t at = 0; at <= list.size();) {
              size_t end = std::min(list.find(',', at), list.size());
              if (std::find(reach.begin(), reach.end(), list.substr(at, end - at)) == reach.end())
                return false;
              at = end + 1;
            }
            return true;
          };
          Edit e{"Task " + producer.name, fmt::format("Task {} {};", producer.name, order), "", {}};
          bool complete = true;
          std::vector<std::string> where;
          for (const auto &region : regionsOf(producer)) {
            // A memory the leaf's kind cannot reach first (its data must travel the host's links).
            std::string pick;
            for (const auto &list : memoryLists(producer.name, region))
              if (reachable(list) && pick.empty() &&
                  std::find(own.begin(), own.end(), list.substr(0, list.find(','))) == own.end())
                pick = list;
            if (pick.empty()) {
              complete = false;
              break;
            }
            e.with.push_back(regionEdit(producer.name, region, *other, pick, "(with the processor change above)"));
            where.push_back(fmt::format("{} in {}", region, pick));
          }
          if (!complete)
            continue;
          if (const Param *p = param(producer.name + ".placement"); p && startMaps(producer.name, *other, false))
            e.with.push_back(placementEdit(*p, "default", *other, "(the start places it on another kind)"));
          e.rationale = fmt::format("run {} (which writes {}, read by {}) on {} with {}, so that {}'s copies of it "
                                    "take the links of {} instead of those between the {}s, which carry its other "
                                    "inputs -- {}",
                                    producer.name, fmt::join(fed, ", "), task, support::toString(*other),
                                    fmt::join(where, ", "), task, where.size() == 1 ? "that memory" : "those memories",
                                    support::toString(k), detail);
          staged.push_back(std::move(e));
          break; // the first other kind in the space's order
        }
      }
      // What it saves is not priced by the profile (which copies wait on which link): after what the
      // evidence prices and after placing the leaf with its producers (which removes copies rather
      // than moving them), before spreading launches at random.
      for (auto &e : staged) {
        e.gain = 1.5e-9 * stat(task, "busy_s");
        edits.push_back(std::move(e));
      }
      return; // the busiest leaf only
    }
  }

  /// A timed task reads an argument in place from a memory every processor of the node reaches
  /// (zero-copy) while the (untimed) launch that writes the data leaves it in another memory its
  /// processor reaches: every instance the task reads is copied over first. Writing the data where
  /// it is read saves those copies (and the runtime's work to issue them).
  void writeWhereRead(double cost, const std::string &detail, std::vector<Edit> &edits) const {
    std::set<std::string> seen;
    for (const auto &task : busiestTasks()) {
      const model::Task *t = app_.task(task);
      if (!t || t->inner() || !statOf(task))
        continue;
      std::vector<std::string> sharedMems = sharedKinds(task);
      for (const auto &arg : t->args) {
        std::string now = memoryOf(task, arg.region);
        if (arg.privilege != model::Privilege::Read && arg.privilege != model::Privilege::ReadWrite)
          continue;
        if (now.empty() || std::find(sharedMems.begin(), sharedMems.end(), now) == sharedMems.end())
          continue;
        for (const auto &producer : app_.tasks) {
          if (producer.name == task || producer.inner() || statOf(producer.name))
            continue;
          ProcKind pk = kindOf(producer.name);
          for (const auto &parg : producer.args) {
            if (!sameData(parg.region, arg.region) || parg.privilege == model::Privilege::Read ||
                !seen.insert(producer.name + "|" + parg.region).second)
              continue;
            for (const auto &list : memoryLists(producer.name, parg.region)) {
              if (list.substr(0, list.find(',')) != now)
                continue;
              std::string as = arg.region == parg.region ? "" : fmt::format(" (as {})", arg.region);
              Edit e = regionEdit(producer.name, parg.region, pk, list,
                                  fmt::format("write {} of {} in {}, where {} reads it{} in place, instead of "
                                              "copying it there first -- {}",
                                              parg.region, producer.name, list, task, as, detail));
              e.gain = 1e-3 * cost;
              edits.push_back(std::move(e));
              break; // the first list that starts with it (its fallback: the space's order)
            }
          }
        }
      }
    }
  }

  /// Single changes on the busiest tasks: other memories, placements, processor orders.
  void explore(std::vector<Edit> &edits) const {
    for (const auto &task : busiestTasks()) {
      const model::Task *t = app_.task(task);
      if (!t)
        continue;
      double busy = 0;
      if (const json *s = statOf(task))
        busy = s->value("busy_s", 0.0);
      std::string why = busy > 0 ? fmt::format("explore: {} is busy {} in total", task, ms(busy))
                                 : fmt::format("explore: {}", task);
      ProcKind k = kindOf(task);
      // Arguments shared between points first: a private piece is best where the task runs.
      std::vector<std::string> regions, privates;
      for (const auto &region : regionsOf(*t)) {
        bool priv = std::all_of(t->args.begin(), t->args.end(),
                                [&](const model::Arg &a) { return a.region != region || privateTo(*t, a); });
        (priv ? privates : regions).push_back(region);
      }
      regions.insert(regions.end(), privates.begin(), privates.end());
      for (const auto &region : regions) {
        std::string now = memoryOf(task, region);
        std::vector<std::string> reach = space_.memoryKinds(k);
        const std::vector<std::string> lists = memoryLists(task, region);
        if (lists.size() < 2)
          continue; // one memory to choose from (a machine with one memory): nothing to try
        for (const auto &list : lists) {
          std::string first = list.substr(0, list.find(','));
          std::string second = list.find(',') == std::string::npos ? first : list.substr(list.find(',') + 1);
          bool reachable = std::find(reach.begin(), reach.end(), first) != reach.end() &&
                           std::find(reach.begin(), reach.end(), second) != reach.end();
          if (first != now && reachable) // a kind the processor cannot reach would only fail
            edits.push_back(regionEdit(task, region, k, list, fmt::format("{}; try {} in {}", why, region, list)));
        }
      }
      for (const char *suffix : {".placement", ".single_placement"})
        if (const Param *p = param(task + suffix))
          for (const auto &pattern : p->values)
            edits.push_back(placementEdit(*p, pattern, k, fmt::format("{}; try the {} placement", why, pattern)));
      if (const Param *p = param(task + ".layout"))
        for (const auto &layout : p->values)
          edits.push_back(layoutEdit(task, layout, fmt::format("{}; try the {} layout", why, layout)));
    }
  }

  const Space &space_;
  const model::AppModel &app_;
  std::string start_, startLabel_;
  dsl::CheckedSource startPolicy_; // what the start decides (instance limits)
  bool started_ = false;
  bool haveBest_ = false, refilled_ = true;
  Version best_;
  std::string bestHash_;
  double bestScore_ = -1;
  json bestProfile_ = json::object();
  support::Evidence bestEvidence_;
  std::deque<std::pair<Version, Edit>> queue_;
  std::vector<std::pair<Version, std::optional<Edit>>> pending_;
  std::set<std::string> proposed_, tried_, settled_;
  std::map<std::string, int> worse_; // family -> how many of its edits made the best worse
  mutable std::set<std::string> producedSeen_; // (producer, consumer) pairs handled in one refill
};

} // namespace

std::unique_ptr<engine::Strategy> makeGuidedAgent(const Space &space, const model::AppModel &app, std::string start,
                                                  std::string startLabel, uint64_t /*seed*/) {
  return std::make_unique<GuidedAgent>(space, app, std::move(start), std::move(startLabel));
}

} // namespace hone::mapping
