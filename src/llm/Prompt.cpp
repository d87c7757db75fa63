#include "llm/Prompt.h"

#include "support/DataPaths.h"

#include "support/FileUtil.h"
#include "support/Template.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include <cctype>
#include <cstdlib>
#include <filesystem>

namespace hone::llm {

namespace {

struct Where {
  int line = 1, column = 1;
};

Where locate(const std::string &text, size_t offset) {
  Where w;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++w.line;
      w.column = 1;
    } else {
      ++w.column;
    }
  }
  return w;
}

bool validName(const std::string &name) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
    return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      return false;
  return true;
}

support::Error located(const std::string &path, const std::string &text, size_t offset, const std::string &message) {
  Where w = locate(text, offset);
  return support::Error{fmt::format("{}:{}:{}: {}", path, w.line, w.column, message), w.line, w.column};
}

} // namespace

support::Expected<Template> parseTemplate(const std::string &path, std::string text) {
  Template t;
  t.path = path;
  for (size_t open = text.find("{{"); open != std::string::npos; open = text.find("{{", open + 2)) {
    size_t close = text.find("}}", open + 2);
    if (close == std::string::npos)
      return located(path, text, open, "'{{' without a closing '}}'");
    std::string name = text.substr(open + 2, close - open - 2);
    auto b = name.find_first_not_of(' '), e = name.find_last_not_of(' ');
    name = b == std::string::npos ? "" : name.substr(b, e - b + 1);
    if (!validName(name))
      return located(path, text, open, fmt::format("'{{{{{}}}}}' is not a placeholder name", name));
    if (std::find(t.placeholders.begin(), t.placeholders.end(), name) == t.placeholders.end())
      t.placeholders.push_back(name);
  }
  t.text = std::move(text);
  return t;
}

support::Expected<std::string> render(const Template &t, const std::map<std::string, std::string> &values) {
  std::optional<size_t> missing;
  std::string out = support::fillTemplate(t.text, values, {"{{", "}}", true}, &missing);
  if (missing) {
    size_t nameAt = *missing + 2, close = t.text.find("}}", nameAt);
    std::string name = t.text.substr(nameAt, close - nameAt);
    auto b = name.find_first_not_of(' '), e = name.find_last_not_of(' ');
    name = b == std::string::npos ? "" : name.substr(b, e - b + 1);
    return located(t.path, t.text, *missing, fmt::format("no value for the placeholder '{}'", name));
  }
  return out;
}

std::vector<std::string> promptFolders(const std::vector<std::string> &extra) {
  std::vector<std::string> out = extra;
  if (const char *env = std::getenv("HONE_PROMPTS"); env && *env)
    out.emplace_back(env);
  out.emplace_back(support::dataDir("prompts"));
  return out;
}

support::Expected<Template> loadTemplate(const std::string &domain, const std::string &name,
                                         const std::vector<std::string> &extra) {
  std::vector<std::string> folders = promptFolders(extra);
  for (const auto &f : folders) {
    std::filesystem::path p = std::filesystem::path(f) / domain / (name + ".md");
    std::error_code ec;
    if (!std::filesystem::is_regular_file(p, ec))
      continue;
    auto text = support::readFile(p.string());
    if (!text)
      return support::Error{text.error().message};
    return parseTemplate(p.string(), std::move(*text));
  }
  return support::Error{fmt::format("no prompt template {}/{}.md in {}", domain, name, fmt::join(folders, ", "))};
}

} // namespace hone::llm
