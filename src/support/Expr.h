// Arithmetic expressions in data files -- model files ("pieces * 4", "(i + j + k) % gx"), kernel
// manifests' constraints, CUDA launch sizes --:
// numbers, names, + - * / // % ^, unary -, parentheses and the functions
// min max sqrt cbrt log2 floor ceil round. '/' divides exactly, '//' is floored
// division and '%' a floored modulo (never negative for a positive divisor),
// so neighbour offsets wrap around.
#pragma once

#include "support/Expected.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace hone::support {

class Expr {
public:
  /// Parses `text`; errors carry the 1-based column in `text`.
  static support::Expected<Expr> parse(const std::string &text);
  /// A constant expression.
  static Expr constant(double value);

  /// The value with names looked up by `lookup` (nullopt: unknown name -> error).
  support::Expected<double> eval(const std::function<std::optional<double>(const std::string &)> &lookup) const;
  /// The names the expression uses.
  std::vector<std::string> names() const;
  const std::string &text() const { return text_; }
  /// The line of the file it was read from (0: none), for errors found when it is evaluated.
  int line() const { return line_; }
  Expr &at(int line) {
    line_ = line;
    return *this;
  }

  struct Node;

private:
  std::string text_;
  int line_ = 0;
  std::shared_ptr<const Node> root_;
};

} // namespace hone::support
