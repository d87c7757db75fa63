// Edit distance (two-row dynamic programme) and closest-match suggestions.
#include "support/StringUtil.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace hone::support {

size_t editDistance(std::string_view a, std::string_view b) {
  // Optimal string alignment distance (adjacent transpositions cost one edit).
  // Costs are doubled so a case-only substitution can cost 1 (= 0.5).
  std::vector<size_t> prev2(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    prev[j] = 2 * j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = 2 * i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = 2;
      if (a[i - 1] == b[j - 1])
        sub = 0;
      else if (std::tolower(static_cast<unsigned char>(a[i - 1])) == std::tolower(static_cast<unsigned char>(b[j - 1])))
        sub = 1;
      cur[j] = std::min({prev[j] + 2, cur[j - 1] + 2, prev[j - 1] + sub});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        cur[j] = std::min(cur[j], prev2[j - 2] + 2);
    }
    prev2 = prev;
    std::swap(prev, cur);
  }
  return (prev[b.size()] + 1) / 2;
}

std::optional<std::string> closestMatch(std::string_view word, const std::vector<std::string> &candidates) {
  size_t limit = std::max<size_t>(1, word.size() / 3);
  std::optional<std::string> best;
  size_t bestDistance = limit + 1;
  for (const auto &c : candidates) {
    if (c == word)
      continue;
    // The distance is at least the difference in length: a word far longer than every candidate
    // (a 10 MB one) costs nothing here.
    if ((c.size() > word.size() ? c.size() - word.size() : word.size() - c.size()) > limit)
      continue;
    size_t d = editDistance(word, c);
    if (d < bestDistance) {
      bestDistance = d;
      best = c;
    }
  }
  return best;
}

std::string joinOr(const std::vector<std::string> &items) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0)
      out += (i + 1 == items.size()) ? " or " : ", ";
    out += items[i];
  }
  return out;
}

std::string replaceAll(std::string text, std::string_view from, std::string_view to) {
  if (from.empty())
    return text;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

std::string shellQuote(const std::string &s) {
  if (!s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) {
        return std::isalnum(c) || std::strchr("-_./=+,:@%", c);
      }))
    return s;
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string printable(std::string_view text, bool multiLine) {
  std::string out;
  out.reserve(text.size());
  static const char kHex[] = "0123456789abcdef";
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == 0xc2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(text[i + 1]) <= 0x9f) { // a C1 control (CSI is U+009B)
      unsigned char n = static_cast<unsigned char>(text[++i]);
      out += std::string("\\u00") + kHex[n >> 4] + kHex[n & 15];
    } else if ((c == '\n' || c == '\t') && multiLine) {
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f) {
      const char *named = c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : c == 0x1b ? "\\e" : nullptr;
      out += named ? std::string(named) : std::string("\\x") + kHex[c >> 4] + kHex[c & 15];
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

uint64_t fnv1a64(std::string_view text, uint64_t basis) {
  uint64_t h = basis;
  for (unsigned char c : text)
    h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string abbreviated(std::string_view text, size_t maxChars) {
  if (text.size() <= maxChars)
    return std::string(text);
  return fmt::format("{} ... ({} characters in all)", text.substr(0, maxChars), text.size());
}

std::string telltaleLine(std::string_view output, size_t maxChars) {
  static const char *const kWords[] = {"error", "fatal", "abort", "assert", "exception",
                                       "segmentation fault", "terminate", "killed"};
  auto lower = [](std::string_view s) {
    std::string out(s);
    for (char &c : out)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  auto trim = [](std::string_view s) {
    const char *ws = " \t\r\n";
    size_t b = s.find_first_not_of(ws);
    if (b == std::string_view::npos)
      return std::string_view();
    return s.substr(b, s.find_last_not_of(ws) - b + 1);
  };
  std::string_view lastNonBlank, best;
  int bestScore = 0;
  size_t start = 0;
  while (start < output.size()) {
    size_t end = output.find('\n', start);
    if (end == std::string_view::npos)
      end = output.size();
    std::string_view line = trim(output.substr(start, end - start));
    if (!line.empty()) {
      lastNonBlank = line;
      std::string l = lower(line);
      int score = 0;
      if (l.find("error:") != std::string::npos || l.find("fatal:") != std::string::npos)
        score = 2; // a message: "file:3: error: ...", "LEGION ERROR: ..."
      else
        for (const char *w : kWords)
          if (l.find(w) != std::string::npos)
            score = 1;
      if (score > 0 && score >= bestScore) {
        best = line;
        bestScore = score;
      }
    }
    start = end + 1;
  }
  std::string out(best.empty() ? lastNonBlank : best);
  if (out.size() > maxChars)
    out = out.substr(0, maxChars > 3 ? maxChars - 3 : 0) + "...";
  return out;
}

} // namespace hone::support
