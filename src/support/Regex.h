// Regular expressions over text hone does not control (program output, a
// model's replies, tool reports): RE2, which matches in time linear in the
// text and never recurses, so a 30,000-digit line or a pathological pattern
// cannot blow the stack or hang a run. The syntax is RE2's (Perl-like: \d \s
// \S, (?:...), character classes; no backreferences or lookaround).
#pragma once

#include "support/Expected.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace re2 {
class RE2;
}

namespace hone::support {

struct RegexMatch {
  size_t begin = 0, end = 0;       // of the whole match in the text
  std::vector<std::string> groups; // [0] the whole match, then each group (empty when it took no part)
};

class Regex {
public:
  /// A located-free error ("missing ): ...") when the pattern does not compile.
  static Expected<Regex> compile(std::string_view pattern);
  ~Regex();
  Regex(const Regex &);
  Regex &operator=(const Regex &);
  Regex(Regex &&) noexcept;
  Regex &operator=(Regex &&) noexcept;

  /// The number of capturing groups.
  int groups() const;
  /// Every non-overlapping match in order, at most `limit`.
  std::vector<RegexMatch> findAll(std::string_view text, size_t limit = 100000) const;
  const std::string &pattern() const;

private:
  Regex() = default;
  std::shared_ptr<const re2::RE2> re_; // immutable and thread-safe once compiled: copies share it
};

} // namespace hone::support
