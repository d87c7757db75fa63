#include "support/DataPaths.h"

#include <cstdlib>
#include <filesystem>

namespace hone::support {

namespace fs = std::filesystem;

std::string executableDir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

std::vector<DataDirCandidate> dataDirCandidates(const std::string &kind) {
  std::vector<DataDirCandidate> out;
  std::error_code ec;
  if (const char *env = std::getenv("HONE_DATA_DIR"); env && *env)
    out.push_back({"HONE_DATA_DIR", (fs::path(env) / kind).string(), false});
  if (std::string dir = executableDir(); !dir.empty())
    out.push_back({"installed", (fs::path(dir) / ".." / "share" / "hone" / kind).lexically_normal().string(), false});
#ifdef HONE_SOURCE_DIR
  out.push_back({"source tree", (fs::path(HONE_SOURCE_DIR) / kind).string(), false});
#endif
  for (auto &c : out)
    c.exists = fs::is_directory(c.path, ec);
  return out;
}

std::string dataDir(const std::string &kind) {
  auto candidates = dataDirCandidates(kind);
  for (const auto &c : candidates)
    if (c.exists)
      return c.path;
  return candidates.empty() ? kind : candidates.back().path;
}

} // namespace hone::support
