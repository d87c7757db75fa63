// libclang, loaded when the source model first needs it (dlopen), not when hone starts: linked,
// libclang and LLVM cost every hone command ~0.2 s of relocations and static constructors here
// (docs/DEVELOPING.md), and a machine without the library can still run everything else.
//
// The model's calls keep their names: each `clang_x` below is a function object in this namespace
// that forwards to the loaded library's `clang_x`. Being objects, not functions, they also stop
// argument-dependent lookup from reaching the header's declarations (which would need the link).
#pragma once

#include <clang-c/Index.h>

#include <string>

namespace hone::kernel::source {

#define HONE_LIBCLANG_FUNCTIONS(X)                                                                                     \
  X(clang_Cursor_Evaluate) X(clang_Cursor_isNull) X(clang_EvalResult_dispose) X(clang_EvalResult_getAsLongLong)        \
  X(clang_EvalResult_getKind) X(clang_Location_isFromMainFile) X(clang_createIndex) X(clang_disposeDiagnostic)         \
  X(clang_disposeIndex) X(clang_disposeString) X(clang_disposeTokens) X(clang_disposeTranslationUnit)                  \
  X(clang_formatDiagnostic) X(clang_getCString) X(clang_getCanonicalType) X(clang_getCursorExtent)                     \
  X(clang_getCursorKind) X(clang_getCursorLocation) X(clang_getCursorReferenced) X(clang_getCursorSemanticParent)      \
  X(clang_getCursorSpelling) X(clang_getCursorType) X(clang_getDiagnostic) X(clang_getDiagnosticSeverity)              \
  X(clang_getExpansionLocation) X(clang_getFile) X(clang_getFileLocation) X(clang_getLocationForOffset)                \
  X(clang_getNullCursor) X(clang_getNumDiagnostics) X(clang_getPointeeType) X(clang_getRange) X(clang_getRangeEnd)     \
  X(clang_getRangeStart) X(clang_getSpellingLocation) X(clang_getTokenExtent) X(clang_getTokenKind)                    \
  X(clang_getTokenSpelling) X(clang_getTranslationUnitCursor) X(clang_getTypeSpelling) X(clang_isCursorDefinition)     \
  X(clang_isExpression) X(clang_isStatement) X(clang_parseTranslationUnit2) X(clang_tokenize)                          \
  X(clang_visitChildren)

/// The loaded library's entry points.
struct LibClang {
#define HONE_LIBCLANG_POINTER(f) decltype(&::f) f = nullptr;
  HONE_LIBCLANG_FUNCTIONS(HONE_LIBCLANG_POINTER)
#undef HONE_LIBCLANG_POINTER
};

/// The library, loaded on the first call (thread-safe); null when it cannot be, with the reason in
/// `why` (the dynamic loader's message, or the entry point missing).
const LibClang *loadLibClang(std::string *why);

/// The loaded library; only after loadLibClang succeeded.
const LibClang &libClang();

#define HONE_LIBCLANG_FORWARD(f)                                                                                       \
  struct f##_forward {                                                                                                 \
    template <typename... A> auto operator()(A... a) const { return libClang().f(a...); }                             \
  };                                                                                                                   \
  inline constexpr f##_forward f{};
HONE_LIBCLANG_FUNCTIONS(HONE_LIBCLANG_FORWARD)
#undef HONE_LIBCLANG_FORWARD

} // namespace hone::kernel::source
