// Model files on top of support/TomlReader: values that may be numbers or
// expressions in strings, with parse errors pointing into the string.
#pragma once

#include "support/Expr.h"
#include "support/TomlReader.h"

#include <string>
#include <utility>
#include <vector>

namespace hone::model::detail {

using support::TableReader;
using support::TomlError;
using support::Expr;

/// A number, or a string holding an expression.
Expr exprOf(const TableReader &r, const toml::node &n, const char *key);

inline Expr expr(TableReader &r, const char *key) {
  return r.value<Expr>(key, [&](const toml::node &n) { return exprOf(r, n, key); });
}
/// `fallback` (an expression) when the key is absent.
Expr expr(TableReader &r, const char *key, const std::string &fallback);
inline std::vector<Expr> exprs(TableReader &r, const char *key, bool required = true) {
  return r.values<Expr>(key, required, [&](const toml::node &n) { return exprOf(r, n, key); });
}
/// A table of name -> expression, in file order.
inline std::vector<std::pair<std::string, Expr>> exprTable(TableReader &r, const char *key) {
  return r.namedValues<Expr>(key, "expression", [&](const toml::node &n) { return exprOf(r, n, key); });
}

} // namespace hone::model::detail
