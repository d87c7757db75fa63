// Lexer: turns DSL source into tokens, records comments (the formatter keeps
// them) and reports lexical errors without stopping.
#pragma once

#include "dsl/Ast.h"
#include "dsl/Token.h"
#include "support/Diagnostics.h"

#include <vector>

namespace hone::dsl {

/// Lexes the whole file. The result always ends with an Eof token. Errors
/// (unterminated strings, unknown characters, oversized integers) are reported
/// to `diags` and the offending text is skipped. Comments go to `comments`
/// when it is not null.
std::vector<Token> lex(const support::SourceFile &file, support::DiagnosticEngine &diags,
                       std::vector<Comment> *comments = nullptr);

/// True if `word` is a reserved word of the DSL (keyword, kind name, constraint or property).
bool isReservedWord(std::string_view word);

} // namespace hone::dsl

namespace hone::dsl {
/// One token per line: "line:col kind 'text'", for golden tests and `hone dump --emit=tokens`.
std::string dumpTokens(const std::vector<Token> &tokens);
} // namespace hone::dsl
