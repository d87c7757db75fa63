// The guided mapping agent's vocabulary, internal to src/mapping (Guided.cpp is the agent): the edits
// it proposes and the versions they make, the best mapper so far, and the context its edit generators
// (GuidedGenerators.h) and its repairs read -- the decision space, the app, the starting mapper
// (GuidedRender.h) and the best mapper's profile and evidence -- with the questions they ask of it.
#pragma once

#include "mapping/Space.h"
#include "model/App.h"
#include "support/Evidence.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace hone::mapping::guided {

/// One statement the agent adds (or replaces: the key names what it decides). An edit
/// without a statement removes the start's statement for the key instead (the start's
/// `CollectMemory T *;`, which no later statement can undo).
struct Edit {
  std::string key;       // "Region task region GPU"
  std::string statement; // "Region task region GPU ZCMEM;"; empty: remove the start's
  std::string rationale;
  std::vector<LibraryFunction> defs;
  double gain = 0;             // estimated seconds saved: the order edits are tried in
  std::vector<Edit> with = {}; // edits made together with this one (a change that needs others to pay off)
  bool settles = true;         // once it improved, no later edit changes its keys (false: its alternatives may)
  /// What identifies the edit: its key and statement, and those of the edits made with it.
  std::string id() const {
    std::string out = key + "|" + statement;
    for (const auto &c : with)
      out += " + " + c.id();
    return out;
  }
  /// Whether it removes the start's statement for its key rather than adding one.
  bool removes() const { return statement.empty(); }
  /// The families a single edit belongs to: the same change for any task ("Region * R GPU FBMEM;",
  /// "IndexTaskMap * f;") and, for a region, the same memory for any region of the task. A family
  /// whose members made the best worse twice is not tried again.
  std::vector<std::string> families() const;
};

/// A mapper as the edits above the start that make it, one per key, in the order they were made.
struct Version {
  std::vector<Edit> edits;
  /// This version with `e` added, or in place of the edit with its key.
  Version with(const Edit &e) const;
  /// The edit for `key`, if the version has one.
  const Edit *find(const std::string &key) const;
};

/// Whether `text` has `word` as a whole word.
bool mentions(const std::string &text, const std::string &word);
/// `text` with every whole-word `word` replaced by `by`.
std::string replaceWord(const std::string &text, const std::string &word, const std::string &by);
/// A duration for a rationale: "39.5 ms", "4.26 s".
std::string ms(double s);

/// The best mapper so far and what its evaluation said.
struct Best {
  Version version = {};                              // its edits above the start
  std::string hash = {};                             // its candidate's hash: the parent of the next
  double score = -1;                                 // its score; -1 before any
  nlohmann::json profile = nlohmann::json::object(); // the evaluation's profile
  support::Evidence evidence = {};                   // the evaluation's typed evidence
  bool found = false;                                // whether a candidate has succeeded yet
};

class StartMapper;

/// What the edit generators and the repairs read: the decision space, the app, the starting mapper
/// and the best mapper so far, with what its profile says the mapper does now.
struct Context {
  const Space &space;         // the decision space: the parameters and the values each may take
  const model::AppModel &app; // the tasks, their arguments and the partitions
  const StartMapper &start;   // what the starting mapper decides
  const Best &best;           // the best mapper so far: its edits, profile and evidence

  /// The best mapper's statistics of a timed task; nullptr for a task its profile does not time.
  const nlohmann::json *statOf(const std::string &task) const;
  /// A number of the task's statistics (0 where the profile does not say).
  double stat(const std::string &task, const char *what) const;
  /// The processor kind the task runs on in the best mapper (the space's default where the profile
  /// does not say).
  model::ProcKind kindOf(const std::string &task) const;
  /// The memory the task's region argument is in, in the best mapper; empty where the profile does not
  /// say.
  std::string memoryOf(const std::string &task, const std::string &region) const;
  /// Timed tasks of the best mapper, busiest first, then the tasks its profile does not time.
  std::vector<std::string> busiestTasks() const;
  /// How busy the busiest processor kind is on average (the "processor" bottleneck's share).
  double busiestKindShare() const;
  /// Memory kinds one per node that the task's processor reaches (zero-copy for GPUs).
  std::vector<std::string> sharedKinds(const std::string &task) const;
  /// Whether an edit of the best mapper places the parameter's launches with `pattern`.
  bool placedWith(const Param &p, const std::string &pattern) const;
  /// The space's parameter of that name, or nullptr.
  const Param *param(const std::string &name) const;
  /// The memory lists the space offers for (task, region), its first choice first.
  std::vector<std::string> memoryLists(const std::string &task, const std::string &region) const;
};

/// An edit that puts the task's region, on processors of `kind`, in the memories of `list`.
Edit regionEdit(const std::string &task, const std::string &region, model::ProcKind kind, const std::string &list,
                std::string why);
/// An edit that places the parameter's launches with the library's `pattern` ("default": an explicit
/// function reproducing Legion's default block).
Edit placementEdit(const Param &p, const std::string &pattern, model::ProcKind kind, std::string why);
/// An edit that gives the task's instances `layout`.
Edit layoutEdit(const std::string &task, const std::string &layout, std::string why);

/// The regions a task's arguments name, each once, in the order of its arguments.
std::vector<std::string> regionsOf(const model::Task &t);
/// Whether neighbouring pieces share the region: an aliased (ghost) partition or what one covers.
bool shared(const model::AppModel &app, const std::string &region);
/// Whether each point has the argument to itself: a piece of a disjoint partition indexed by the
/// launch point (no copies between points to avoid).
bool privateTo(const model::AppModel &app, const model::Task &t, const model::Arg &arg);
/// The region a region argument's data belongs to (a partition's parent region).
std::string rootOf(const model::AppModel &app, const std::string &name);
/// Whether two region arguments name the same data: the same partition, a partition and the one an
/// aliased partition covers (a ghost view of shared pieces), or a whole region and a partition of it.
/// Two disjoint partitions of one region do not.
bool sameData(const model::AppModel &app, const std::string &a, const std::string &b);

} // namespace hone::mapping::guided
