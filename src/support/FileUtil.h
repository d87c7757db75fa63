// Writing files without ever leaving half of one: through a temporary file
// beside the target and a rename.
#pragma once

#include "support/Expected.h"

#include <string>
#include <string_view>

namespace hone::support {

/// Writes `text` to `path` atomically. On failure returns false and sets
/// *error (the target is untouched).
/// Reads a whole file; the error message is the reason ("No such file or directory").
Expected<std::string> readFile(const std::string &path);

bool writeFileAtomically(const std::string &path, std::string_view text, std::string *error);

} // namespace hone::support
