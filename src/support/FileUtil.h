// Writing files without ever leaving half of one: through a fresh temporary
// file beside the target (created exclusively, so no planted link is
// followed) and a rename.
#pragma once

#include "support/Expected.h"

#include <string>
#include <string_view>

namespace hone::support {

/// Reads a whole file; the error message is the reason ("No such file or directory").
Expected<std::string> readFile(const std::string &path);
/// Reads at most the last `maxBytes` of a file (a program's output may be larger than memory should
/// hold); `*truncated` (when given) says whether anything before them was left out.
Expected<std::string> readFileTail(const std::string &path, size_t maxBytes, bool *truncated = nullptr);

/// Writes `text` to `path` atomically; a missing folder is created. A link is followed to the file it
/// names; a target that is not a regular file (a device, a folder) is refused. The file keeps its
/// permissions. On failure returns false and sets *error to a sentence naming `path` and the reason
/// (the target is untouched).
bool writeFileAtomically(const std::string &path, std::string_view text, std::string *error);

/// `name` made one path component, for a name hone puts into a path (a project's, an app's): every
/// '/', '\\' and control character becomes '_'; a name that is empty, "." or ".." gets a '_' in front.
/// A safe name comes back unchanged (a name too long for the file system stays too long: the write
/// that uses it says so).
std::string pathComponent(std::string_view name);

} // namespace hone::support
