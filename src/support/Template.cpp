// One-pass placeholder filling (see Template.h).
#include "support/Template.h"

namespace hone::support {

namespace {

std::string_view trimmed(std::string_view s) {
  size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos)
    return {};
  size_t e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

} // namespace

std::string fillTemplate(std::string_view tmpl, const std::map<std::string, std::string> &values,
                         const TemplateSyntax &syntax, std::optional<size_t> *firstMissing) {
  std::string out;
  out.reserve(tmpl.size());
  size_t at = 0; // everything before `at` is in `out`
  for (size_t open = tmpl.find(syntax.open); open != std::string_view::npos;) {
    size_t nameAt = open + syntax.open.size();
    size_t close = tmpl.find(syntax.close, nameAt);
    if (close == std::string_view::npos)
      break;
    std::string_view name = tmpl.substr(nameAt, close - nameAt);
    // The nearest opening before the close is the placeholder's: "{a{b}" holds the placeholder {b}.
    size_t inner = name.rfind(syntax.open);
    if (inner != std::string_view::npos) {
      open = nameAt + inner;
      continue;
    }
    auto it = values.find(std::string(syntax.trim ? trimmed(name) : name));
    if (it == values.end()) {
      if (firstMissing && !*firstMissing)
        *firstMissing = open;
      open = tmpl.find(syntax.open, open + 1);
      continue;
    }
    out.append(tmpl.substr(at, open - at));
    out += it->second;
    at = close + syntax.close.size();
    open = tmpl.find(syntax.open, at);
  }
  out.append(tmpl.substr(at));
  return out;
}

} // namespace hone::support
