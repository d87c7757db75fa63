// Processor and memory kinds of a Legion machine: the vocabulary the mapper
// DSL, the machine models and the simulator share. The machine model owns it
// (a machine is made of them); the DSL names them (`dsl` depends on `model`
// for this alone).
#pragma once

#include <array>
#include <optional>
#include <string_view>

namespace hone::model {

enum class ProcKind { CPU, GPU, IO, PY, PROC, OMP };
enum class MemKind { SYSMEM, FBMEM, RDMEM, ZCMEM, SOCKMEM, VIRTUAL };
inline constexpr std::array<std::string_view, 6> kProcKindNames = {"CPU", "GPU", "IO", "PY", "PROC", "OMP"};
inline constexpr std::array<std::string_view, 6> kMemKindNames = {"SYSMEM", "FBMEM",   "RDMEM",
                                                                   "ZCMEM",  "SOCKMEM", "VIRTUAL"};

std::string_view toString(ProcKind kind);
std::string_view toString(MemKind kind);
std::optional<ProcKind> parseProcKind(std::string_view text);
std::optional<MemKind> parseMemKind(std::string_view text);

} // namespace hone::model
