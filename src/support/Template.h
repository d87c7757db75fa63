// Filling placeholders into a template (shell commands, job headers, prompts) in one left-to-right
// pass: inserted text is never scanned again, so a value that holds a placeholder's name (a folder
// called `w{policy}`) stays as written instead of being filled a second time, inside the first
// value's quotes.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace hone::support {

/// How placeholders are written: `open` name `close`; `trim` allows blanks around the name
/// (`{{ name }}`).
struct TemplateSyntax {
  std::string_view open = "{";
  std::string_view close = "}";
  bool trim = false;
};

/// `tmpl` with every placeholder that `values` names replaced by its value, scanning the template
/// once from left to right and never the inserted values. A placeholder `values` does not name is
/// kept as written; when `firstMissing` is given, the offset of the first such placeholder in `tmpl`
/// is stored there (left unchanged when there is none). The values are inserted verbatim: quoting
/// them for their destination (a shell, TOML) is the caller's job.
std::string fillTemplate(std::string_view tmpl, const std::map<std::string, std::string> &values,
                         const TemplateSyntax &syntax = {}, std::optional<size_t> *firstMissing = nullptr);

} // namespace hone::support
