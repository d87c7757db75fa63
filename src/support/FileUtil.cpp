// Atomic file writes.
#include "support/FileUtil.h"

#include <filesystem>
#include <fstream>

namespace hone::support {

bool writeFileAtomically(const std::string &path, std::string_view text, std::string *error) {
  std::string tmp = path + ".hone-tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      if (error)
        *error = "cannot write " + tmp;
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      return false;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    if (error)
      *error = "cannot replace " + path + ": " + ec.message();
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    return false;
  }
  return true;
}

} // namespace hone::support
