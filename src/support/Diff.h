// Line diffs of texts: unified diffs for people and models, the lines a change
// touches (for checking that an edit is where the evidence points), and the
// strict application of a unified diff a model wrote. Applying never guesses:
// every context and removed line must match the text exactly (a hunk may sit
// at another line than its header says, as with `patch`, but no fuzz), and a
// failure names the hunk and the first line that differs.
#pragma once

#include "support/Expected.h"

#include <string>
#include <vector>

namespace hone::support {

/// The lines of `text` (without their newlines); a final newline ends the last line.
std::vector<std::string> splitLines(const std::string &text);

/// A unified diff from `from` to `to`, by lines, with the given file labels.
std::string unifiedDiff(const std::string &from, const std::string &to, const std::string &fromLabel = "parent",
                        const std::string &toLabel = "candidate");

/// The 1-based lines of `from` that the change to `to` removes or replaces; an insertion touches the
/// lines on both sides of it. Sorted, without repeats.
std::vector<int> changedLines(const std::string &from, const std::string &to);

/// One file's part of a unified diff.
struct FilePatch {
  std::string path;  // from the "+++" header ("b/" stripped); empty when the diff has no headers
  std::string hunks; // the "@@" hunks
};

/// Splits a (possibly multi-file) unified diff into its files; an error when it has no hunk or a
/// header without hunks.
Expected<std::vector<FilePatch>> splitPatch(const std::string &diff);

/// Applies one file's hunks to `text`; the error names the hunk ("hunk 2 (@@ -10,4 +10,5 @@)") and
/// what did not match.
Expected<std::string> applyPatch(const std::string &text, const std::string &hunks);

} // namespace hone::support
