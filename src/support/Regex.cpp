#include "support/Regex.h"

#include <re2/re2.h>

namespace hone::support {

Expected<Regex> Regex::compile(std::string_view pattern) {
  RE2::Options options;
  options.set_log_errors(false);
  auto re = std::make_shared<const RE2>(re2::StringPiece(pattern.data(), pattern.size()), options);
  if (!re->ok())
    return Error{re->error()};
  Regex r;
  r.re_ = std::move(re);
  return r;
}

Regex::~Regex() = default;
Regex::Regex(const Regex &) = default;
Regex &Regex::operator=(const Regex &) = default;
Regex::Regex(Regex &&) noexcept = default;
Regex &Regex::operator=(Regex &&) noexcept = default;

int Regex::groups() const { return re_->NumberOfCapturingGroups(); }

const std::string &Regex::pattern() const { return re_->pattern(); }

std::vector<RegexMatch> Regex::findAll(std::string_view text, size_t limit) const {
  std::vector<RegexMatch> out;
  const int n = 1 + re_->NumberOfCapturingGroups();
  std::vector<re2::StringPiece> m(static_cast<size_t>(n));
  re2::StringPiece input(text.data(), text.size());
  size_t pos = 0;
  while (pos <= text.size() && out.size() < limit) {
    if (!re_->Match(input, pos, text.size(), RE2::UNANCHORED, m.data(), n))
      break;
    RegexMatch match;
    match.begin = static_cast<size_t>(m[0].data() - text.data());
    match.end = match.begin + m[0].size();
    match.groups.reserve(m.size());
    for (const auto &g : m)
      match.groups.emplace_back(g.data() ? std::string(g.data(), g.size()) : std::string());
    pos = m[0].empty() ? match.end + 1 : match.end; // an empty match moves on by one
    out.push_back(std::move(match));
  }
  return out;
}

} // namespace hone::support
