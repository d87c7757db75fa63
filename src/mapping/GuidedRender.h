// The guided mapping agent's starting mapper, internal to src/mapping: its text and what it decides
// (checked once), and the rendering of a version of edits above it, where the first statement for a
// task or region wins, with the start's statements that the edits override commented out.
#pragma once

#include "dsl/Frontend.h"
#include "mapping/GuidedEdits.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>

namespace hone::mapping::guided {

/// The mapper the guided agent starts from, and the mappers its versions of edits make of it.
class StartMapper {
public:
  /// `text` is the starting mapper; it is checked once, for what it decides.
  explicit StartMapper(std::string text);

  /// The mapper that `v` makes: its edits above the start, which they take precedence over. A library
  /// function whose name the start already uses (a start that is an earlier hone result) is defined
  /// again under a fresh name. The start itself for a version without edits.
  std::string render(const Version &v) const;
  /// The start's `CollectMemory` statement that names exactly `task`, if there is one.
  const dsl::Stmt *collects(const std::string &task) const;
  /// Whether the start has its own placement statement for the task on processors of `kind`.
  bool maps(const std::string &task, model::ProcKind kind, bool single) const;
  /// The start's instance limit for the task on processors of `kind`, if it sets one (and checks).
  std::optional<int64_t> instanceLimit(const std::string &task, model::ProcKind kind) const;

private:
  /// The one task a `CollectMemory` statement names (a statement for several tasks or for `*`
  /// cannot be removed for one of them); nullopt for any other statement.
  static std::optional<std::string> collectedTask(const dsl::Stmt &stmt);
  /// `text` with the start's statements (from `startAt` on) that the edits above override entirely
  /// (every task or region key of theirs is set by an earlier statement), or remove (the
  /// `CollectMemory` of an `uncollected` task), turned into comments: they would have no effect, and a
  /// mapper without conflicting duplicates means the same to every implementation.
  static std::string withoutOverridden(const std::string &text, size_t startAt,
                                       const std::set<std::string> &uncollected = {});
  /// How many keys a statement sets (a selector naming two tasks sets two).
  static size_t keyCount(const dsl::Stmt &stmt);

  std::string text_;
  dsl::CheckedSource policy_; // what the start decides (instance limits, placements, collections)
};

} // namespace hone::mapping::guided
