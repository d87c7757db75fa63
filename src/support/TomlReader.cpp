#include "support/TomlReader.h"

#include "support/FileUtil.h"
#include "support/StringUtil.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace hone::support {

void fail(const std::string &file, const toml::source_region &where, const std::string &message) {
  int line = static_cast<int>(where.begin.line);
  int column = static_cast<int>(where.begin.column);
  throw TomlError(fmt::format("{}:{}:{}: {}", file, line, column, message), line, column);
}

void TableReader::failAt(const char *key, const std::string &message) const {
  const toml::node *n = table_.get(key);
  std::string where = context_.empty() ? std::string(key) : fmt::format("{}.{}", context_, key);
  fail(file_, n ? n->source() : table_.source(), fmt::format("{}: {}", where, message));
}

void TableReader::failHere(const std::string &message) const {
  fail(file_, table_.source(), context_.empty() ? message : fmt::format("{}: {}", context_, message));
}

const toml::node &TableReader::node(const char *key) {
  used_.insert(key);
  const toml::node *n = table_.get(key);
  if (!n) {
    // A misspelt key is likelier than a forgotten one: point at it.
    for (auto &&[k, v] : table_) {
      std::string present(k.str());
      if (!used_.count(present) && editDistance(present, key) <= std::max<size_t>(1, present.size() / 3)) {
        std::string where = context_.empty() ? "" : context_ + ": ";
        fail(file_, k.source(), fmt::format("{}unknown key '{}'; did you mean '{}'?", where, present, key));
      }
    }
    failHere(fmt::format("missing '{}'", key));
  }
  return *n;
}

std::string TableReader::string(const char *key) {
  const toml::node &n = node(key);
  if (!n.is_string())
    failAt(key, "expected a string");
  return std::string(*n.as_string());
}

std::string TableReader::string(const char *key, const std::string &fallback) {
  return has(key) ? string(key) : (used_.insert(key), fallback);
}

double TableReader::number(const char *key) {
  const toml::node &n = node(key);
  if (auto i = n.as_integer())
    return static_cast<double>(i->get());
  if (auto f = n.as_floating_point()) {
    // No quantity hone reads is infinite or undefined: nan and inf would only poison the arithmetic.
    if (!std::isfinite(f->get()))
      failAt(key, "expected a finite number");
    return f->get();
  }
  failAt(key, "expected a number");
}

double TableReader::number(const char *key, double fallback) {
  return has(key) ? number(key) : (used_.insert(key), fallback);
}

bool TableReader::boolean(const char *key, bool fallback) {
  if (!has(key)) {
    used_.insert(key);
    return fallback;
  }
  const toml::node &n = node(key);
  if (!n.is_boolean())
    failAt(key, "expected true or false");
  return n.as_boolean()->get();
}

std::vector<std::string> TableReader::strings(const char *key, bool required) {
  if (!required && !has(key)) {
    used_.insert(key);
    return {};
  }
  const toml::node &n = node(key);
  if (n.is_string())
    return {std::string(*n.as_string())};
  const toml::array *a = n.as_array();
  if (!a)
    failAt(key, "expected an array of strings");
  std::vector<std::string> out;
  for (const toml::node &item : *a) {
    if (!item.is_string())
      fail(file_, item.source(), fmt::format("{}.{}: expected a string", context_, key));
    out.emplace_back(*item.as_string());
  }
  return out;
}

std::vector<std::vector<int64_t>> TableReader::intLists(const char *key) {
  const toml::node &n = node(key);
  const toml::array *a = n.as_array();
  if (!a)
    failAt(key, "expected an array of integer arrays, e.g. [[-1], [1]]");
  std::vector<std::vector<int64_t>> out;
  for (const toml::node &item : *a) {
    const toml::array *inner = item.as_array();
    if (!inner)
      fail(file_, item.source(), fmt::format("{}.{}: expected an array of integers", context_, key));
    std::vector<int64_t> values;
    for (const toml::node &v : *inner) {
      if (!v.is_integer())
        fail(file_, v.source(), fmt::format("{}.{}: expected an integer", context_, key));
      values.push_back(v.as_integer()->get());
    }
    out.push_back(std::move(values));
  }
  return out;
}

std::vector<std::pair<std::string, const toml::node *>> TableReader::entries(const char *key, const char *what) {
  if (!has(key)) {
    used_.insert(key);
    return {};
  }
  const toml::node &n = node(key);
  const toml::table *t = n.as_table();
  if (!t)
    failAt(key, fmt::format("expected a table of name = {}", what));
  // toml++ tables iterate in key order; model files want file order.
  std::vector<std::pair<std::string, const toml::node *>> items;
  for (auto &&[k, v] : *t)
    items.emplace_back(std::string(k.str()), &v);
  std::stable_sort(items.begin(), items.end(), [](const auto &a, const auto &b) {
    const auto &x = a.second->source().begin;
    const auto &y = b.second->source().begin;
    return x.line != y.line ? x.line < y.line : x.column < y.column;
  });
  return items;
}

std::vector<std::pair<std::string, double>> TableReader::numberTable(const char *key) {
  std::vector<std::pair<std::string, double>> out;
  for (const auto &[name, v] : entries(key, "number")) {
    if (auto i = v->as_integer())
      out.emplace_back(name, static_cast<double>(i->get()));
    else if (auto f = v->as_floating_point())
      out.emplace_back(name, f->get());
    else
      fail(file_, v->source(), fmt::format("{}{}.{}: expected a number", context_.empty() ? "" : context_ + ".", key, name));
  }
  return out;
}

std::vector<TableReader> TableReader::tables(const char *key) {
  if (!has(key)) {
    used_.insert(key);
    return {};
  }
  const toml::node &n = node(key);
  const toml::array *a = n.as_array();
  if (!a)
    failAt(key, fmt::format("expected an array of tables ([[{}]])", key));
  std::vector<TableReader> out;
  size_t index = 0;
  for (const toml::node &item : *a) {
    const toml::table *t = item.as_table();
    if (!t)
      fail(file_, item.source(), fmt::format("{}.{}: expected a table", context_, key));
    out.emplace_back(*t, file_, fmt::format("{}[{}]", key, index++));
  }
  return out;
}

TableReader TableReader::table(const char *key) {
  const toml::node &n = node(key);
  const toml::table *t = n.as_table();
  if (!t)
    failAt(key, "expected a table");
  return TableReader(*t, file_, context_.empty() ? key : context_ + "." + key);
}

void TableReader::failNode(const toml::node &n, const std::string &what, const std::string &message,
                           int column) const {
  toml::source_region where = n.source();
  where.begin.column += static_cast<toml::source_index>(column);
  fail(file_, where, fmt::format("{}{}: {}", context_.empty() ? "" : context_ + ".", what, message));
}

void TableReader::finish() const {
  std::vector<std::string> known(used_.begin(), used_.end());
  for (auto &&[k, v] : table_) {
    std::string key(k.str());
    if (used_.count(key))
      continue;
    std::string message = context_.empty() ? fmt::format("unknown key '{}'", key)
                                           : fmt::format("{}: unknown key '{}'", context_, key);
    if (auto near = closestMatch(key, known))
      message += fmt::format("; did you mean '{}'?", *near);
    fail(file_, k.source(), message);
  }
}

toml::table parseTomlFile(const std::string &path, const std::string &text) {
  try {
    return toml::parse(text, path);
  } catch (const toml::parse_error &e) {
    fail(path, e.source(), std::string(e.description()));
  }
}

} // namespace hone::support

namespace hone::support {

Expected<std::string> readTomlFile(const std::string &path) {
  auto text = readFile(path);
  if (!text)
    return Error{fmt::format("{}: cannot read: {}", path, text.error().message)};
  return text;
}

} // namespace hone::support
