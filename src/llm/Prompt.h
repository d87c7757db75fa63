// Prompt templates: Markdown files with {{name}} placeholders, shipped in
// prompts/<domain>/ and overridable by users (a folder given first in the
// search path, or $HONE_PROMPTS). Rendering fails, with the template's file,
// line and column, on a placeholder it has no value for, so a prompt never
// goes out with a hole in it.
#pragma once

#include "support/Expected.h"

#include <map>
#include <string>
#include <vector>

namespace hone::llm {

struct Template {
  std::string path;
  std::string text;
  std::vector<std::string> placeholders; // in order of first use
};

/// Checks the placeholder syntax: `{{` name `}}`, name = [A-Za-z_][A-Za-z0-9_]*.
support::Expected<Template> parseTemplate(const std::string &path, std::string text);
/// Fills every placeholder; a missing value is an error located in the template.
support::Expected<std::string> render(const Template &t, const std::map<std::string, std::string> &values);

/// The folders searched for `<domain>/<name>.md`: `extra` first, then $HONE_PROMPTS, then the
/// source tree's prompts/.
std::vector<std::string> promptFolders(const std::vector<std::string> &extra = {});
support::Expected<Template> loadTemplate(const std::string &domain, const std::string &name,
                                         const std::vector<std::string> &extra = {});

} // namespace hone::llm
