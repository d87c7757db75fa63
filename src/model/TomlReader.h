// Reading model files: typed access to TOML tables with every error located
// at its file, line and column, and unknown keys reported with a
// did-you-mean. Internal to the model module: errors travel as LoadError
// exceptions inside a loader and leave it as support::Error values.
#pragma once

#include "model/Expr.h"

#include <toml++/toml.h>

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace hone::model::detail {

/// An error in a model file, already formatted "file:line:col: message".
struct LoadError : std::runtime_error {
  LoadError(std::string text, int l, int c) : std::runtime_error(std::move(text)), line(l), column(c) {}
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
  [[noreturn]] void failAt(const char *key, const std::string &message) const;
  [[noreturn]] void failHere(const std::string &message) const;

  std::string string(const char *key);
  std::string string(const char *key, const std::string &fallback);
  double number(const char *key);
  double number(const char *key, double fallback);
  bool boolean(const char *key, bool fallback);
  /// A number or a string holding an expression.
  Expr expr(const char *key);
  Expr expr(const char *key, const std::string &fallback);
  /// An array of strings (a single string counts as a one-element array).
  std::vector<std::string> strings(const char *key, bool required = true);
  /// An array of expressions (numbers or strings).
  std::vector<Expr> exprs(const char *key, bool required = true);
  /// An array of arrays of integers.
  std::vector<std::vector<int64_t>> intLists(const char *key);
  /// A table of name -> expression, in file order of the source.
  std::vector<std::pair<std::string, Expr>> exprTable(const char *key);
  /// A table of name -> number, in file order.
  std::vector<std::pair<std::string, double>> numberTable(const char *key);
  /// Sub-tables of an array of tables ([[key]]); empty when absent.
  std::vector<TableReader> tables(const char *key);
  TableReader table(const char *key);

  /// Reports the first key that was never read, with a did-you-mean note.
  void finish() const;

private:
  const toml::node &node(const char *key);
  /// The entries of an optional sub-table, in file order.
  std::vector<std::pair<std::string, const toml::node *>> entries(const char *key, const char *what);
  Expr exprOf(const toml::node &n, const char *key) const;

  const toml::table &table_;
  std::string file_;
  std::string context_;
  std::set<std::string> used_;
};

/// Parses a whole file; syntax errors become LoadError.
toml::table parseFile(const std::string &path, const std::string &text);

/// Parses `text` and reads a model from its top-level table with `read`;
/// every LoadError becomes the returned error.
template <typename Model, typename Read>
support::Expected<Model> parseModel(const std::string &path, const std::string &text, Read read) {
  try {
    toml::table table = parseFile(path, text);
    TableReader top(table, path, "");
    Model model = read(top);
    model.path = path;
    return model;
  } catch (const LoadError &e) {
    return support::Error{e.what(), e.line, e.column};
  }
}

/// The text of a model file; the error names the file.
support::Expected<std::string> readModelFile(const std::string &path);

} // namespace hone::model::detail
