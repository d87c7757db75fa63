// Tokens of the mapper DSL (see docs/DSL.md). Reserved words have their own
// kinds; processor kinds, memory kinds, layout constraint words and property
// names share one kind each and are told apart by their text.
#pragma once

#include "support/SourceFile.h"

#include <cstdint>
#include <string_view>

namespace hone::dsl {

enum class TokenKind {
  Eof,
  Invalid, // an unknown character, already reported by the lexer
  Identifier,
  Integer,
  String,
  // statement keywords
  KwTask,
  KwRegion,
  KwLayout,
  KwInstanceLimit,
  KwCollectMemory,
  KwIndexTaskMap,
  KwSingleTaskMap,
  KwControlReplicate,
  KwDef,
  KwReturn,
  KwPrint,
  // other reserved words
  KwTuple,
  KwFor,
  KwIn,
  KwTrue,
  KwFalse,
  KwInt,
  KwBool,
  KwIPoint,
  KwISpace,
  KwMSpace,
  ProcKind,   // CPU GPU IO PY PROC OMP
  MemKind,    // SYSMEM FBMEM RDMEM ZCMEM SOCKMEM VIRTUAL
  Constraint, // SOA AOS C_order F_order Compact Align Exact No_Align
  Property,   // size len volume has ipoint ispace parent processor merge split ...
  // punctuation
  Plus,
  Minus,
  Star,
  Slash,
  Percent,
  Assign,
  Comma,
  Semicolon,
  Bang,
  Question,
  Colon,
  Less,
  Greater,
  LessEq,
  GreaterEq,
  EqEq,
  NotEq,
  AndAnd,
  OrOr,
  LParen,
  RParen,
  LBrace,
  RBrace,
  LBracket,
  RBracket,
  Dot,
};

/// A human name for diagnostics: "';'", "identifier", "end of file".
std::string_view describe(TokenKind kind);

struct Token {
  TokenKind kind = TokenKind::Eof;
  support::SourceRange range;
  std::string_view text; // the spelling; for strings, with the quotes
  int64_t intValue = 0;  // for Integer
  bool unterminated = false; // a String missing its closing quote (already reported)

  bool is(TokenKind k) const { return kind == k; }
  /// For String tokens: the text between the quotes.
  std::string_view stringValue() const {
    if (unterminated)
      return text.substr(1);
    return text.size() >= 2 ? text.substr(1, text.size() - 2) : text;
  }
};

} // namespace hone::dsl
