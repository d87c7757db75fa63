// Lexer for the mapper DSL: a hand-written scanner over the whole buffer.
#include "dsl/Lexer.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <unordered_map>

namespace hone::dsl {

std::string_view describe(TokenKind kind) {
  switch (kind) {
  case TokenKind::Eof: return "end of file";
  case TokenKind::Invalid: return "invalid character";
  case TokenKind::Identifier: return "identifier";
  case TokenKind::Integer: return "integer";
  case TokenKind::String: return "string";
  case TokenKind::KwTask: return "'Task'";
  case TokenKind::KwRegion: return "'Region'";
  case TokenKind::KwLayout: return "'Layout'";
  case TokenKind::KwInstanceLimit: return "'InstanceLimit'";
  case TokenKind::KwCollectMemory: return "'CollectMemory'";
  case TokenKind::KwIndexTaskMap: return "'IndexTaskMap'";
  case TokenKind::KwSingleTaskMap: return "'SingleTaskMap'";
  case TokenKind::KwControlReplicate: return "'ControlReplicate'";
  case TokenKind::KwDef: return "'def'";
  case TokenKind::KwReturn: return "'return'";
  case TokenKind::KwPrint: return "'print'";
  case TokenKind::KwTuple: return "'tuple'";
  case TokenKind::KwFor: return "'for'";
  case TokenKind::KwIn: return "'in'";
  case TokenKind::KwTrue: return "'True'";
  case TokenKind::KwFalse: return "'False'";
  case TokenKind::KwInt: return "'int'";
  case TokenKind::KwBool: return "'bool'";
  case TokenKind::KwIPoint: return "'IPoint'";
  case TokenKind::KwISpace: return "'ISpace'";
  case TokenKind::KwMSpace: return "'MSpace'";
  case TokenKind::ProcKind: return "processor kind";
  case TokenKind::MemKind: return "memory kind";
  case TokenKind::Constraint: return "layout constraint";
  case TokenKind::Property: return "property name";
  case TokenKind::Plus: return "'+'";
  case TokenKind::Minus: return "'-'";
  case TokenKind::Star: return "'*'";
  case TokenKind::Slash: return "'/'";
  case TokenKind::Percent: return "'%'";
  case TokenKind::Assign: return "'='";
  case TokenKind::Comma: return "','";
  case TokenKind::Semicolon: return "';'";
  case TokenKind::Bang: return "'!'";
  case TokenKind::Question: return "'?'";
  case TokenKind::Colon: return "':'";
  case TokenKind::Less: return "'<'";
  case TokenKind::Greater: return "'>'";
  case TokenKind::LessEq: return "'<='";
  case TokenKind::GreaterEq: return "'>='";
  case TokenKind::EqEq: return "'=='";
  case TokenKind::NotEq: return "'!='";
  case TokenKind::AndAnd: return "'&&'";
  case TokenKind::OrOr: return "'||'";
  case TokenKind::LParen: return "'('";
  case TokenKind::RParen: return "')'";
  case TokenKind::LBrace: return "'{'";
  case TokenKind::RBrace: return "'}'";
  case TokenKind::LBracket: return "'['";
  case TokenKind::RBracket: return "']'";
  case TokenKind::Dot: return "'.'";
  }
  return "token";
}

namespace {

const std::unordered_map<std::string_view, TokenKind> &reservedWords() {
  static const std::unordered_map<std::string_view, TokenKind> words = [] {
    std::unordered_map<std::string_view, TokenKind> w = {
        {"Task", TokenKind::KwTask},
        {"Region", TokenKind::KwRegion},
        {"Layout", TokenKind::KwLayout},
        {"InstanceLimit", TokenKind::KwInstanceLimit},
        {"CollectMemory", TokenKind::KwCollectMemory},
        {"IndexTaskMap", TokenKind::KwIndexTaskMap},
        {"SingleTaskMap", TokenKind::KwSingleTaskMap},
        {"ControlReplicate", TokenKind::KwControlReplicate},
        {"def", TokenKind::KwDef},
        {"return", TokenKind::KwReturn},
        {"print", TokenKind::KwPrint},
        {"tuple", TokenKind::KwTuple},
        {"for", TokenKind::KwFor},
        {"in", TokenKind::KwIn},
        {"True", TokenKind::KwTrue},
        {"False", TokenKind::KwFalse},
        {"int", TokenKind::KwInt},
        {"bool", TokenKind::KwBool},
        {"IPoint", TokenKind::KwIPoint},
        {"ISpace", TokenKind::KwISpace},
        {"MSpace", TokenKind::KwMSpace},
    };
    for (auto p : kProcKindNames)
      w.emplace(p, TokenKind::ProcKind);
    for (auto m : kMemKindNames)
      w.emplace(m, TokenKind::MemKind);
    for (auto c : kConstraintNames)
      w.emplace(c, TokenKind::Constraint);
    for (auto p : kPropertyNames)
      w.emplace(p, TokenKind::Property);
    return w;
  }();
  return words;
}

bool isIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool isIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

class Lexer {
public:
  Lexer(const support::SourceFile &file, support::DiagnosticEngine &diags, std::vector<Comment> *comments)
      : file_(file), text_(file.text()), diags_(diags), comments_(comments) {}

  std::vector<Token> run() {
    std::vector<Token> tokens;
    uint32_t lastTokenLine = 0;
    while (true) {
      skipSpace();
      if (pos_ >= text_.size())
        break;
      uint32_t start = pos_;
      char c = text_[pos_];
      if (c == '#' || (c == '/' && peek(1) == '/')) {
        while (pos_ < text_.size() && text_[pos_] != '\n')
          ++pos_;
        if (comments_) {
          auto range = rangeOf(start, pos_);
          std::string body(text_.substr(start, pos_ - start));
          while (!body.empty() && (body.back() == '\r' || body.back() == ' ' || body.back() == '\t'))
            body.pop_back();
          comments_->push_back(Comment{range, std::move(body), range.begin.line != lastTokenLine});
        }
        continue;
      }
      Token tok;
      if (isIdentStart(c)) {
        while (pos_ < text_.size() && isIdentChar(text_[pos_]))
          ++pos_;
        tok.text = text_.substr(start, pos_ - start);
        auto it = reservedWords().find(tok.text);
        tok.kind = it == reservedWords().end() ? TokenKind::Identifier : it->second;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        lexInteger(tok, start);
      } else if (c == '"') {
        lexString(tok, start);
      } else if (!lexPunct(tok, start)) {
        reportUnknown(start);
        tok.kind = TokenKind::Invalid;
      }
      tok.range = rangeOf(start, pos_);
      if (tok.text.empty())
        tok.text = text_.substr(start, pos_ - start);
      lastTokenLine = tok.range.begin.line;
      tokens.push_back(tok);
    }
    Token eof;
    eof.kind = TokenKind::Eof;
    eof.range = rangeOf(static_cast<uint32_t>(text_.size()), static_cast<uint32_t>(text_.size()));
    tokens.push_back(eof);
    return tokens;
  }

private:
  char peek(uint32_t ahead) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

  support::SourceRange rangeOf(uint32_t begin, uint32_t end) const {
    return support::SourceRange{file_.locate(begin), file_.locate(end)};
  }

  void skipSpace() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\a' || c == '\f' || c == '\v')
        ++pos_;
      else
        break;
    }
  }

  void lexInteger(Token &tok, uint32_t start) {
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
    tok.kind = TokenKind::Integer;
    tok.text = text_.substr(start, pos_ - start);
    int64_t value = 0;
    bool overflow = false;
    for (char d : tok.text) {
      if (__builtin_mul_overflow(value, 10, &value) || __builtin_add_overflow(value, d - '0', &value)) {
        overflow = true;
        break;
      }
    }
    if (overflow)
      diags_.error(rangeOf(start, pos_), fmt::format("integer literal '{}' is too large", tok.text));
    if (pos_ < text_.size() && isIdentStart(text_[pos_])) {
      uint32_t suffixStart = pos_;
      while (pos_ < text_.size() && isIdentChar(text_[pos_]))
        ++pos_;
      diags_.error(rangeOf(start, pos_),
                   fmt::format("invalid number '{}': names cannot start with a digit",
                               text_.substr(start, pos_ - start)))
          .note(rangeOf(suffixStart, pos_), "the digits end here");
    }
    tok.intValue = overflow ? 0 : value;
  }

  // Strings: "..." with no escapes and no newline. An unterminated string is
  // reported and still becomes a String token running to the end of the line
  // (Token::unterminated), so the parser can skip it without further errors.
  void lexString(Token &tok, uint32_t start) {
    ++pos_;
    while (pos_ < text_.size() && text_[pos_] != '"' && text_[pos_] != '\n')
      ++pos_;
    tok.kind = TokenKind::String;
    if (pos_ >= text_.size() || text_[pos_] != '"') {
      diags_.error(rangeOf(start, pos_), "unterminated string")
          .note("strings end with '\"' on the same line; they have no escapes")
          .fixIt(rangeOf(pos_, pos_), "\"");
      tok.unterminated = true;
    } else {
      ++pos_;
    }
    tok.text = text_.substr(start, pos_ - start);
  }

  bool lexPunct(Token &tok, uint32_t start) {
    char c = text_[pos_];
    char n = peek(1);
    auto two = [&](TokenKind k) {
      tok.kind = k;
      pos_ += 2;
      return true;
    };
    auto one = [&](TokenKind k) {
      tok.kind = k;
      pos_ += 1;
      return true;
    };
    switch (c) {
    case '<': return n == '=' ? two(TokenKind::LessEq) : one(TokenKind::Less);
    case '>': return n == '=' ? two(TokenKind::GreaterEq) : one(TokenKind::Greater);
    case '=': return n == '=' ? two(TokenKind::EqEq) : one(TokenKind::Assign);
    case '!': return n == '=' ? two(TokenKind::NotEq) : one(TokenKind::Bang);
    case '&':
    case '|': {
      TokenKind k = c == '&' ? TokenKind::AndAnd : TokenKind::OrOr;
      if (n == c)
        return two(k);
      // A single '&' or '|': report, then read it as the logical operator so
      // the rest of the expression parses without follow-on errors.
      std::string doubled(2, c);
      diags_.error(rangeOf(start, start + 1),
                   fmt::format("unexpected character '{}'; the logical operator is '{}'", c, doubled))
          .fixIt(rangeOf(start, start + 1), doubled);
      return one(k);
    }
    case '+': return one(TokenKind::Plus);
    case '-': return one(TokenKind::Minus);
    case '*': return one(TokenKind::Star);
    case '/': return one(TokenKind::Slash);
    case '%': return one(TokenKind::Percent);
    case ',': return one(TokenKind::Comma);
    case ';': return one(TokenKind::Semicolon);
    case '?': return one(TokenKind::Question);
    case ':': return one(TokenKind::Colon);
    case '(': return one(TokenKind::LParen);
    case ')': return one(TokenKind::RParen);
    case '{': return one(TokenKind::LBrace);
    case '}': return one(TokenKind::RBrace);
    case '[': return one(TokenKind::LBracket);
    case ']': return one(TokenKind::RBracket);
    case '.': return one(TokenKind::Dot);
    default: return false;
    }
  }

  void reportUnknown(uint32_t start) {
    unsigned char c = static_cast<unsigned char>(text_[pos_]);
    ++pos_;
    auto range = rangeOf(start, pos_);
    if (c == '\'') {
      diags_.error(range, "unexpected character '''; strings use double quotes");
    } else if (std::isprint(c)) {
      diags_.error(range, fmt::format("unexpected character '{}'", char(c)));
    } else {
      // Skip the rest of a multi-byte UTF-8 sequence so it yields one error.
      while (pos_ < text_.size() && (static_cast<unsigned char>(text_[pos_]) & 0xC0) == 0x80)
        ++pos_;
      diags_.error(rangeOf(start, pos_), fmt::format("unexpected byte 0x{:02X}; the DSL is plain ASCII", c));
    }
  }

  const support::SourceFile &file_;
  std::string_view text_;
  support::DiagnosticEngine &diags_;
  std::vector<Comment> *comments_;
  uint32_t pos_ = 0;
};

} // namespace

std::vector<Token> lex(const support::SourceFile &file, support::DiagnosticEngine &diags,
                       std::vector<Comment> *comments) {
  return Lexer(file, diags, comments).run();
}

bool isReservedWord(std::string_view word) { return reservedWords().count(word) > 0; }

} // namespace hone::dsl

namespace hone::dsl {
std::string dumpTokens(const std::vector<Token> &tokens) {
  std::string out;
  for (const auto &t : tokens)
    out += fmt::format("{}:{} {} '{}'\n", t.range.begin.line, t.range.begin.column, describe(t.kind), t.text);
  return out;
}
} // namespace hone::dsl
