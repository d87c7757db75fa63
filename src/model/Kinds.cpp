#include "model/Kinds.h"

namespace hone::model {

std::string_view toString(ProcKind kind) { return kProcKindNames[static_cast<size_t>(kind)]; }
std::string_view toString(MemKind kind) { return kMemKindNames[static_cast<size_t>(kind)]; }

std::optional<ProcKind> parseProcKind(std::string_view text) {
  for (size_t i = 0; i < kProcKindNames.size(); ++i)
    if (kProcKindNames[i] == text)
      return static_cast<ProcKind>(i);
  return std::nullopt;
}

std::optional<MemKind> parseMemKind(std::string_view text) {
  for (size_t i = 0; i < kMemKindNames.size(); ++i)
    if (kMemKindNames[i] == text)
      return static_cast<MemKind>(i);
  return std::nullopt;
}

} // namespace hone::model
