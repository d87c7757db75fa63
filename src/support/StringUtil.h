// Small string helpers: edit distance and "did you mean" suggestions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hone::support {

/// Edit distance (insertions, deletions, substitutions, adjacent transpositions);
/// substitutions that only change case cost 0.5 (rounded up in the result), so
/// "gpu" is close to "GPU".
size_t editDistance(std::string_view a, std::string_view b);

/// The candidate closest to `word`, if it is close enough to be a plausible typo
/// (distance at most max(1, |word|/3)). Ties go to the earliest candidate.
std::optional<std::string> closestMatch(std::string_view word, const std::vector<std::string> &candidates);

/// The 64-bit FNV-1a hash of `text`, from `basis` (the standard offset basis by default).
uint64_t fnv1a64(std::string_view text, uint64_t basis = 1469598103934665603ull);

/// "a, b or c" for messages.
std::string joinOr(const std::vector<std::string> &items);

/// `text` with every occurrence of `from` (non-empty) replaced by `to`.
std::string replaceAll(std::string text, std::string_view from, std::string_view to);

/// `s` as one word of a POSIX shell command: unchanged when it is only safe characters, else in
/// single quotes (a quote inside written '\'').
std::string shellQuote(const std::string &s);

/// `text` safe to print on a terminal or to put into a one-line comment: every control character
/// (C0, DEL and the C1 range U+0080..U+009F) is written as an escape (`\n`, `\t`, `\r`, `\e`, `\xHH`,
/// `\u0085`), so that a value hone did not write can neither move the cursor, retitle the window, clear
/// the screen nor end a comment line. `multiLine` leaves '\n' and '\t' as they are (a program's
/// text, a model's reply).
std::string printable(std::string_view text, bool multiLine = false);

/// `text` whole when it has at most `maxChars` characters, else its first `maxChars` and a note of how
/// many there are in all: a command line or a value that would fill screens is shown by its start.
std::string abbreviated(std::string_view text, size_t maxChars = 2000);

/// The line of a failed command's output that says why: the last line with a message ("error:" or
/// "fatal:", any case), else the last that reads as an error (error, fatal, abort, assert,
/// exception, segmentation fault, terminate, killed), else the last non-blank line; trimmed, at
/// most `maxChars` characters (an ellipsis marks a cut).
/// Empty when the output has no non-blank line.
std::string telltaleLine(std::string_view output, size_t maxChars = 300);

} // namespace hone::support
