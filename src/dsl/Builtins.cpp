// Built-in property table.
#include "dsl/Builtins.h"

#include <array>

namespace hone::dsl {

std::optional<BuiltinProperty> findProperty(std::string_view name) {
  static constexpr std::array<BuiltinProperty, 16> kTable = {{
      {"size", -1, "m.size (the extent tuple)"},
      {"len", -1, "t.len (number of dimensions)"},
      {"volume", -1, "t.volume (product of extents)"},
      {"ipoint", -1, "task.ipoint"},
      {"ispace", -1, "task.ispace"},
      {"parent", -1, "task.parent"},
      {"has", 1, "m[i].has(FBMEM) or t.has(x)"},
      {"processor", 1, "task.processor(m)"},
      {"merge", 2, "m.merge(dim1, dim2)"},
      {"split", 2, "m.split(dim, factor)"},
      {"swap", 2, "m.swap(dim1, dim2)"},
      {"slice", 3, "m.slice(dim, low, high)"},
      {"reverse", 1, "m.reverse(dim)"},
      {"balance_split", 2, "m.balance_split(dim, parts)"},
      {"auto_split", 2, "m.auto_split(dim, extents)"},
      {"greedy_split", 2, "m.greedy_split(dim, extents)"},
  }};
  for (const auto &p : kTable)
    if (p.name == name)
      return p;
  return std::nullopt;
}

} // namespace hone::dsl
