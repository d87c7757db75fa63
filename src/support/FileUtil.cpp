// Reading whole files and atomic file writes.
#include "support/FileUtil.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace hone::support {

Expected<std::string> readFile(const std::string &path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    return Error{"not a regular file"};
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error{std::strerror(errno)};
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    return Error{"read error"};
  return text.str();
}

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
