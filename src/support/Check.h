// Checked assertions that stay on in every build type: a failed check is a bug
// in hone, reported with its location before aborting.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace hone::support {
[[noreturn]] inline void checkFailed(const char *cond, const char *msg, const char *file, int line) {
  std::fprintf(stderr, "hone: internal error: %s:%d: check '%s' failed: %s\n", file, line, cond, msg);
  std::abort();
}
} // namespace hone::support

#define HONE_CHECK(cond, msg)                                                                      \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      ::hone::support::checkFailed(#cond, (msg), __FILE__, __LINE__);                              \
  } while (0)

#define HONE_UNREACHABLE(msg) ::hone::support::checkFailed("unreachable", (msg), __FILE__, __LINE__)
