#include "model/Catalog.h"

#include "support/DataPaths.h"
#include "support/StringUtil.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

namespace hone::model {

namespace fs = std::filesystem;

std::vector<std::string> modelFolders(const std::string &kind) {
  std::vector<std::string> out;
  if (const char *env = std::getenv("HONE_MODELS"); env && *env)
    out.push_back((fs::path(env) / kind).string());
  out.push_back((fs::path(support::dataDir("models")) / kind).string());
  return out;
}

std::vector<std::string> modelNames(const std::string &kind) {
  std::vector<std::string> names;
  for (const auto &folder : modelFolders(kind)) {
    std::error_code ec;
    for (const auto &entry : fs::directory_iterator(folder, ec))
      if (entry.path().extension() == ".toml")
        names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

support::Expected<std::string> findModel(const std::string &kind, const std::string &nameOrPath) {
  if (nameOrPath.find('/') != std::string::npos || fs::path(nameOrPath).extension() == ".toml") {
    if (!fs::exists(nameOrPath))
      return support::Error{fmt::format("{}: no such file", nameOrPath)};
    return nameOrPath;
  }
  for (const auto &folder : modelFolders(kind)) {
    fs::path p = fs::path(folder) / (nameOrPath + ".toml");
    if (fs::exists(p))
      return p.string();
  }
  std::vector<std::string> names = modelNames(kind);
  std::string message = fmt::format("unknown {} '{}'", kind == "apps" ? "app" : "machine", nameOrPath);
  if (auto near = support::closestMatch(nameOrPath, names))
    message += fmt::format("; did you mean '{}'?", *near);
  message += names.empty() ? " (no models found; set HONE_MODELS to the models/ folder)"
                           : fmt::format(" (known: {})", fmt::join(names, ", "));
  return support::Error{message};
}

} // namespace hone::model
