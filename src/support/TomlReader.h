// Reading TOML data files (models, rule files): typed access to tables with
// every error located at its file, line and column, and unknown keys
// reported with a did-you-mean. Inside a reader, errors travel as TomlError
// exceptions; parseTomlDocument turns them into support::Error values, so
// they never leave the module that reads.
#pragma once

#include "support/Expected.h"

#include <toml++/toml.h>

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace hone::support {

/// An error in a data file, already formatted "file:line:col: message".
struct TomlError : std::runtime_error {
  TomlError(std::string text, int l, int c) : std::runtime_error(std::move(text)), line(l), column(c) {}
  int line;
  int column;
};

[[noreturn]] void fail(const std::string &file, const toml::source_region &where, const std::string &message);

class TableReader {
public:
  TableReader(const toml::table &table, std::string file, std::string context)
      : table_(table), file_(std::move(file)), context_(std::move(context)) {}

  const std::string &file() const { return file_; }
  int line() const { return static_cast<int>(table_.source().begin.line); }
  bool has(const char *key) const { return table_.contains(key); }
  /// Marks an optional key as known (for finish()) without reading it.
  void known(const char *key) { used_.insert(key); }
  [[noreturn]] void failAt(const char *key, const std::string &message) const;
  [[noreturn]] void failHere(const std::string &message) const;

  std::string string(const char *key);
  std::string string(const char *key, const std::string &fallback);
  double number(const char *key);
  double number(const char *key, double fallback);
  bool boolean(const char *key, bool fallback);
  /// A value converted by `convert(node)` (which may call failNode).
  template <typename T, typename Convert> T value(const char *key, Convert convert) { return convert(node(key)); }
  /// An array of strings (a single string counts as a one-element array).
  std::vector<std::string> strings(const char *key, bool required = true);
  /// An array of values, each converted by `convert(node)`.
  template <typename T, typename Convert> std::vector<T> values(const char *key, bool required, Convert convert) {
    std::vector<T> out;
    if (!required && !has(key)) {
      used_.insert(key);
      return out;
    }
    const toml::array *a = node(key).as_array();
    if (!a)
      failAt(key, "expected an array");
    for (const toml::node &item : *a)
      out.push_back(convert(item));
    return out;
  }
  /// An array of arrays of integers.
  std::vector<std::vector<int64_t>> intLists(const char *key);
  /// An optional table of name -> value, in file order, each converted by `convert(node)`.
  template <typename T, typename Convert>
  std::vector<std::pair<std::string, T>> namedValues(const char *key, const char *what, Convert convert) {
    std::vector<std::pair<std::string, T>> out;
    for (const auto &[name, v] : entries(key, what))
      out.emplace_back(name, convert(*v));
    return out;
  }
  /// A table of name -> number, in file order.
  std::vector<std::pair<std::string, double>> numberTable(const char *key);
  /// Sub-tables of an array of tables ([[key]]); empty when absent.
  std::vector<TableReader> tables(const char *key);
  TableReader table(const char *key);

  /// Reports the first key that was never read, with a did-you-mean note.
  void finish() const;
  /// Fails at a value of this table; `column` counts from the value's first character.
  [[noreturn]] void failNode(const toml::node &n, const std::string &what, const std::string &message,
                             int column = 0) const;

private:
  const toml::node &node(const char *key);
  /// The entries of an optional sub-table, in file order.
  std::vector<std::pair<std::string, const toml::node *>> entries(const char *key, const char *what);

  const toml::table &table_;
  std::string file_;
  std::string context_;
  std::set<std::string> used_;
};

/// Parses a whole file; syntax errors become TomlError.
toml::table parseTomlFile(const std::string &path, const std::string &text);

/// Parses `text` and reads a document from its top-level table with `read`;
/// every TomlError becomes the returned error.
template <typename Doc, typename Read>
Expected<Doc> parseTomlDocument(const std::string &path, const std::string &text, Read read) {
  try {
    toml::table table = parseTomlFile(path, text);
    TableReader top(table, path, "");
    return read(top);
  } catch (const TomlError &e) {
    return Error{e.what(), e.line, e.column};
  }
}

/// The text of a data file; the error names the file.
Expected<std::string> readTomlFile(const std::string &path);

} // namespace hone::support
