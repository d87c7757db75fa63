#include "support/Expr.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>

namespace hone::support {

struct Expr::Node {
  enum class Kind { Number, Name, Neg, Binary, Call } kind = Kind::Number;
  double number = 0;
  std::string name; // Name, Call (function)
  std::vector<std::shared_ptr<const Node>> operands;
  // Binary: a chain of operators of one precedence, ops[i - 1] (at column opColumns[i - 1]) joining
  // operands[i] to what precedes it, folded left to right: `1+1+...+1` is one node.
  std::vector<std::string> ops;
  std::vector<int> opColumns;
  int column = 1;
  int height = 1; // of the tree below and including this node
};

namespace {

using NodePtr = std::shared_ptr<const Expr::Node>;
using Node = Expr::Node;

// Model expressions are short formulas; a tree deeper than this (or parentheses nested deeper) is
// refused with its column instead of exhausting the stack when evaluated or parsed. A chain of one
// precedence's operators is one node, however long.
constexpr int kMaxDepth = 100;

class Parser {
public:
  explicit Parser(const std::string &text) : text_(text) {}

  Expected<NodePtr> parseAll() {
    auto e = parseSum();
    if (!e)
      return e;
    skipSpace();
    if (pos_ < text_.size())
      return fail(fmt::format("unexpected '{}'", text_[pos_]));
    return e;
  }

private:
  Error fail(std::string message) const { return Error{std::move(message), 0, static_cast<int>(pos_) + 1}; }
  void skipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }
  bool eat(std::string_view op) {
    skipSpace();
    if (text_.compare(pos_, op.size(), op) != 0)
      return false;
    // '/' must not take the first half of '//'.
    if (op == "/" && text_.compare(pos_, 2, "//") == 0)
      return false;
    pos_ += op.size();
    return true;
  }
  static NodePtr binary(std::string op, NodePtr a, NodePtr b, int column) {
    auto n = std::make_shared<Node>();
    n->kind = Node::Kind::Binary;
    n->ops = {std::move(op)};
    n->opColumns = {column};
    n->operands = {std::move(a), std::move(b)};
    n->column = column;
    return sealed(n);
  }
  // `a op b op c ...` at one precedence: one chain node, each further operand appended.
  template <typename Operand> Expected<NodePtr> chain(Operand parseOperand, const std::vector<std::string_view> &ops) {
    auto first = parseOperand();
    if (!first)
      return first;
    std::shared_ptr<Node> n;
    for (;;) {
      skipSpace();
      int column = static_cast<int>(pos_) + 1; // the operator's
      std::string_view op;
      for (std::string_view o : ops)
        if (eat(o)) {
          op = o;
          break;
        }
      if (op.empty())
        return n ? checked(NodePtr(n)) : first;
      auto rhs = parseOperand();
      if (!rhs)
        return rhs;
      if (!n) {
        n = std::make_shared<Node>();
        n->kind = Node::Kind::Binary;
        n->operands = {*first};
        n->column = column;
        n->height = (*first)->height + 1;
      }
      n->ops.emplace_back(op);
      n->opColumns.push_back(column);
      n->height = std::max(n->height, (*rhs)->height + 1);
      n->operands.push_back(*rhs);
      if (n->height > kMaxDepth)
        return Error{fmt::format("expression nested deeper than {} levels", kMaxDepth), 0, n->column};
    }
  }
  static std::shared_ptr<Node> sealed(std::shared_ptr<Node> n) {
    for (const auto &o : n->operands)
      n->height = std::max(n->height, o->height + 1);
    return n;
  }
  Expected<NodePtr> checked(Expected<NodePtr> e) const {
    if (e && (*e)->height > kMaxDepth)
      return Error{fmt::format("expression nested deeper than {} levels", kMaxDepth), 0, (*e)->column};
    return e;
  }
  // The recursion of parseSum (parentheses, call arguments) and parseUnary (signs), bounded.
  struct Nesting {
    int &depth;
    explicit Nesting(int &d) : depth(++d) {}
    ~Nesting() { --depth; }
    Nesting(const Nesting &) = delete;
    Nesting &operator=(const Nesting &) = delete;
  };

  Expected<NodePtr> parseSum() {
    Nesting nesting(depth_);
    if (depth_ > 2 * kMaxDepth) // one level of parentheses is two here: parseSum and parseUnary
      return fail(fmt::format("expression nested deeper than {} levels", kMaxDepth));
    return chain([this] { return parseProduct(); }, {"+", "-"});
  }
  Expected<NodePtr> parseProduct() {
    // '//' before '/': eat("/") never takes the first half of '//'
    return chain([this] { return parseUnary(); }, {"*", "//", "/", "%"});
  }
  Expected<NodePtr> parseUnary() {
    Nesting nesting(depth_);
    if (depth_ > 2 * kMaxDepth) // one level of parentheses is two here: parseSum and parseUnary
      return fail(fmt::format("expression nested deeper than {} levels", kMaxDepth));
    int column = static_cast<int>(pos_) + 1;
    if (eat("-")) {
      auto operand = parseUnary();
      if (!operand)
        return operand;
      auto n = std::make_shared<Node>();
      n->kind = Node::Kind::Neg;
      n->operands = {*operand};
      n->column = column;
      return checked(NodePtr(sealed(n)));
    }
    return parsePower();
  }
  Expected<NodePtr> parsePower() {
    auto base = parsePrimary();
    if (!base)
      return base;
    int column = static_cast<int>(pos_) + 1;
    if (!eat("^"))
      return base;
    auto exponent = parseUnary(); // right-associative
    if (!exponent)
      return exponent;
    return checked(binary("^", *base, *exponent, column));
  }
  Expected<NodePtr> parsePrimary() {
    skipSpace();
    int column = static_cast<int>(pos_) + 1;
    if (pos_ >= text_.size())
      return fail("expected a number, a name or '('");
    char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      auto inner = parseSum();
      if (!inner)
        return inner;
      if (!eat(")"))
        return fail("expected ')'");
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') {
      size_t used = 0;
      double value = 0;
      try {
        value = std::stod(text_.substr(pos_), &used);
      } catch (const std::exception &) {
        return fail("malformed number");
      }
      pos_ += used;
      auto n = std::make_shared<Node>();
      n->number = value;
      n->column = column;
      return NodePtr(n);
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = pos_;
      while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
        ++pos_;
      auto n = std::make_shared<Node>();
      n->name = text_.substr(start, pos_ - start);
      n->column = column;
      if (!eat("(")) {
        n->kind = Node::Kind::Name;
        return NodePtr(n);
      }
      static const std::vector<std::pair<std::string, size_t>> functions = {
          {"min", 2}, {"max", 2}, {"sqrt", 1}, {"cbrt", 1}, {"log2", 1}, {"floor", 1}, {"ceil", 1}, {"round", 1}};
      size_t arity = 0;
      for (const auto &[name, count] : functions)
        if (name == n->name)
          arity = count;
      if (arity == 0)
        return Error{
            fmt::format("unknown function '{}' (known: min, max, sqrt, cbrt, log2, floor, ceil, round)", n->name), 0,
            column};
      n->kind = Node::Kind::Call;
      for (size_t i = 0; i < arity; ++i) {
        if (i > 0 && !eat(","))
          return fail(fmt::format("'{}' takes {} arguments; expected ','", n->name, arity));
        auto arg = parseSum();
        if (!arg)
          return arg;
        n->operands.push_back(*arg);
      }
      if (!eat(")"))
        return fail("expected ')'");
      return checked(NodePtr(sealed(n)));
    }
    return fail(fmt::format("unexpected '{}'", c));
  }

  const std::string &text_;
  size_t pos_ = 0;
  int depth_ = 0;
};

Expected<double> applyBinary(const std::string &op, double a, double b, int column) {
  if (op == "+") return a + b;
  if (op == "-") return a - b;
  if (op == "*") return a * b;
  if (op == "^") return std::pow(a, b);
  if (b == 0)
    return Error{fmt::format("division by zero in '{}'", op), 0, column};
  if (op == "/")
    return a / b;
  double q = std::floor(a / b);
  return op == "//" ? q : a - q * b; // '//' or '%'
}

Expected<double> evalNode(const Node &n, const std::function<std::optional<double>(const std::string &)> &lookup) {
  switch (n.kind) {
  case Node::Kind::Number: return n.number;
  case Node::Kind::Name: {
    auto v = lookup(n.name);
    if (!v)
      return Error{fmt::format("unknown name '{}'", n.name), 0, n.column};
    return *v;
  }
  case Node::Kind::Neg: {
    auto v = evalNode(*n.operands[0], lookup);
    if (!v)
      return v;
    return -*v;
  }
  case Node::Kind::Binary: {
    auto acc = evalNode(*n.operands[0], lookup);
    for (size_t i = 1; acc && i < n.operands.size(); ++i) {
      auto v = evalNode(*n.operands[i], lookup);
      if (!v)
        return v;
      acc = applyBinary(n.ops[i - 1], *acc, *v, n.opColumns[i - 1]);
    }
    return acc;
  }
  case Node::Kind::Call: {
    std::vector<double> args;
    for (const auto &op : n.operands) {
      auto v = evalNode(*op, lookup);
      if (!v)
        return v;
      args.push_back(*v);
    }
    const std::string &f = n.name;
    if (f == "min") return std::min(args[0], args[1]);
    if (f == "max") return std::max(args[0], args[1]);
    if (f == "floor") return std::floor(args[0]);
    if (f == "ceil") return std::ceil(args[0]);
    if (f == "round") return std::round(args[0]);
    if (f == "cbrt") return std::cbrt(args[0]);
    if (f == "log2") {
      if (args[0] <= 0)
        return Error{"log2 of a number that is not positive", 0, n.column};
      return std::log2(args[0]);
    }
    if (f == "sqrt") {
      if (args[0] < 0)
        return Error{"sqrt of a negative number", 0, n.column};
      return std::sqrt(args[0]);
    }
    break;
  }
  }
  return Error{"malformed expression", 0, n.column};
}

void collectNames(const Node &n, std::vector<std::string> &out) {
  if (n.kind == Node::Kind::Name)
    out.push_back(n.name);
  for (const auto &op : n.operands)
    collectNames(*op, out);
}

} // namespace

Expected<Expr> Expr::parse(const std::string &text) {
  Parser parser(text);
  auto root = parser.parseAll();
  if (!root)
    return root.error();
  Expr e;
  e.text_ = text;
  e.root_ = *root;
  return e;
}

Expr Expr::constant(double value) {
  Expr e;
  auto n = std::make_shared<Node>();
  n->number = value;
  e.root_ = n;
  e.text_ = fmt::format("{}", value);
  return e;
}

Expected<double> Expr::eval(const std::function<std::optional<double>(const std::string &)> &lookup) const {
  HONE_CHECK(root_ != nullptr, "eval of an empty expression");
  auto v = evalNode(*root_, lookup);
  if (v && !std::isfinite(*v))
    return Error{fmt::format("'{}' is not a finite number", text_), 0, 1};
  return v;
}

std::vector<std::string> Expr::names() const {
  std::vector<std::string> out;
  if (root_)
    collectNames(*root_, out);
  return out;
}

} // namespace hone::support
