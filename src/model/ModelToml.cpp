#include "model/ModelToml.h"

#include <fmt/format.h>

namespace hone::model::detail {

Expr exprOf(const TableReader &r, const toml::node &n, const char *key) {
  int line = static_cast<int>(n.source().begin.line);
  if (auto i = n.as_integer())
    return Expr::constant(static_cast<double>(i->get())).at(line);
  if (auto f = n.as_floating_point())
    return Expr::constant(f->get()).at(line);
  if (!n.is_string())
    r.failNode(n, key, "expected a number or an expression in a string");
  std::string text(*n.as_string());
  auto e = Expr::parse(text);
  if (!e) // point into the string: the opening quote is at the node's column
    r.failNode(n, key, fmt::format("in expression \"{}\": {}", text, e.error().message), e.error().column);
  return e->at(line);
}

Expr expr(TableReader &r, const char *key, const std::string &fallback) {
  if (r.has(key))
    return expr(r, key);
  r.known(key);
  auto e = Expr::parse(fallback);
  HONE_CHECK(e.ok(), "bad built-in default expression");
  return *e;
}

} // namespace hone::model::detail
