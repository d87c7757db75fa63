#include "kernel/source/LibClang.h"

#include <dlfcn.h>

namespace hone::kernel::source {

namespace {

struct Loaded {
  LibClang api;
  std::string why; // empty when loaded
};

const Loaded &loaded() {
  static const Loaded l = [] {
    Loaded out;
    void *handle = nullptr;
    // The library found when hone was configured, then the names the dynamic loader may know.
    for (const char *name : {HONE_LIBCLANG_PATH, "libclang.so", "libclang-16.so.1", "libclang-15.so.1",
                             "libclang-14.so.1", "libclang-14.so.13"}) {
      handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
      if (handle)
        break;
      if (out.why.empty())
        out.why = dlerror();
    }
    if (!handle)
      return out;
#define HONE_LIBCLANG_RESOLVE(f)                                                                                       \
  out.api.f = reinterpret_cast<decltype(&::f)>(dlsym(handle, #f));                                                     \
  if (!out.api.f) {                                                                                                    \
    out.why = "the library has no " #f;                                                                                \
    return out;                                                                                                        \
  }
    HONE_LIBCLANG_FUNCTIONS(HONE_LIBCLANG_RESOLVE)
#undef HONE_LIBCLANG_RESOLVE
    out.why.clear(); // never unloaded: the model's results hold none of its memory, but it is cheap to keep
    return out;
  }();
  return l;
}

} // namespace

const LibClang *loadLibClang(std::string *why) {
  const Loaded &l = loaded();
  if (!l.why.empty()) {
    if (why)
      *why = l.why;
    return nullptr;
  }
  return &l.api;
}

const LibClang &libClang() { return loaded().api; }

} // namespace hone::kernel::source
