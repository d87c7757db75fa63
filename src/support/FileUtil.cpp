// Reading whole files and atomic file writes.
#include "support/FileUtil.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace hone::support {

namespace {

/// A file opened for reading; a folder or a device is refused.
Expected<std::ifstream> openToRead(const std::string &path) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    return Error{"not a regular file"};
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error{std::strerror(errno)};
  return Expected<std::ifstream>(std::move(in));
}

} // namespace

Expected<std::string> readFile(const std::string &path) {
  auto opened = openToRead(path);
  if (!opened)
    return opened.error();
  std::ifstream &in = *opened;
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    return Error{"read error"};
  return text.str();
}

Expected<std::string> readFileTail(const std::string &path, size_t maxBytes, bool *truncated) {
  auto opened = openToRead(path);
  if (!opened)
    return opened.error();
  std::ifstream &in = *opened;
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  bool cut = size > 0 && static_cast<uint64_t>(size) > maxBytes;
  in.seekg(cut ? size - static_cast<std::streamoff>(maxBytes) : 0, std::ios::beg);
  std::string text(cut ? maxBytes : static_cast<size_t>(std::max<std::streamoff>(size, 0)), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (in.bad())
    return Error{"read error"};
  text.resize(static_cast<size_t>(in.gcount()));
  if (truncated)
    *truncated = cut;
  return text;
}

bool writeFileAtomically(const std::string &path, std::string_view text, std::string *error) {
  namespace fs = std::filesystem;
  auto fail = [&](std::string why) {
    if (error)
      *error = std::move(why);
    return false;
  };
  std::error_code ec;
  fs::path target = path;
  // A link is followed to the file it names (fmt -i on a link formats that file); the link stays.
  if (fs::is_symlink(fs::symlink_status(target, ec))) {
    fs::path resolved = fs::canonical(target, ec);
    if (ec)
      return fail(fmt::format("cannot write {}: it is a link to a file that does not exist", path));
    target = resolved;
  }
  fs::file_status st = fs::status(target, ec);
  bool exists = fs::exists(st);
  if (exists && !fs::is_regular_file(st)) // a device, a folder, a pipe: never replaced
    return fail(fmt::format("cannot write {}: it is not a regular file", path));
  fs::path dir = target.parent_path().empty() ? fs::path(".") : target.parent_path();
  if (!fs::is_directory(dir, ec)) {
    fs::create_directories(dir, ec);
    if (ec)
      return fail(fmt::format("cannot write {}: cannot create the folder {}: {}", path, dir.string(), ec.message()));
  }
  // A fresh temporary beside the target, created exclusively (O_EXCL, mode 0600): never a name
  // someone else could have planted a link at.
  std::string tmpl = (dir / ("." + target.filename().string() + ".hone-XXXXXX")).string();
  int fd = ::mkstemp(tmpl.data());
  if (fd < 0)
    return fail(fmt::format("cannot write {}: cannot create a temporary file in {}: {}", path, dir.string(),
                            std::strerror(errno)));
  auto discard = [&](std::string why) {
    ::close(fd);
    ::unlink(tmpl.c_str());
    return fail(std::move(why));
  };
  for (size_t done = 0; done < text.size();) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return discard(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
    done += static_cast<size_t>(n);
  }
  // The new file keeps the old one's permissions; a new one gets the usual 0666 less the umask.
  mode_t mode = 0;
  if (exists) {
    mode = static_cast<mode_t>(fs::status(target, ec).permissions() & fs::perms::mask);
  } else {
    mode_t mask = ::umask(0);
    ::umask(mask);
    mode = 0666 & ~mask;
  }
  if (::fchmod(fd, mode) != 0)
    return discard(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  if (::close(fd) != 0) {
    ::unlink(tmpl.c_str());
    return fail(fmt::format("cannot write {}: {}", path, std::strerror(errno)));
  }
  if (::rename(tmpl.c_str(), target.c_str()) != 0) {
    std::string why = std::strerror(errno);
    ::unlink(tmpl.c_str());
    return fail(fmt::format("cannot replace {}: {}", path, why));
  }
  return true;
}

std::string pathComponent(std::string_view name) {
  std::string out(name);
  for (char &c : out)
    if (c == '/' || c == '\\' || static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      c = '_';
  if (out.empty() || out == "." || out == "..")
    out = "_" + out;
  return out;
}

} // namespace hone::support
