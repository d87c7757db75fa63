// Lexer: token kinds, locations, comments, errors.
#include "dsl/Lexer.h"

#include <gtest/gtest.h>

using namespace hone;
using dsl::TokenKind;

namespace {
std::vector<dsl::Token> lexText(const std::string &text, support::SourceFile &file, support::DiagnosticEngine &d,
                                std::vector<dsl::Comment> *comments = nullptr) {
  (void)text;
  return dsl::lex(file, d, comments);
}
} // namespace

TEST(Lexer, ClassifiesWordsOperatorsAndLiterals) {
  support::SourceFile f("l.map", "Task * GPU,CPU; x = m.size[0] <= 3 && !True; \"s {}\" Align==128 foo_1");
  support::DiagnosticEngine d(f);
  auto toks = lexText(f.text(), f, d);
  std::vector<TokenKind> kinds;
  for (const auto &t : toks)
    kinds.push_back(t.kind);
  std::vector<TokenKind> want = {
      TokenKind::KwTask,   TokenKind::Star,       TokenKind::ProcKind,  TokenKind::Comma,    TokenKind::ProcKind,
      TokenKind::Semicolon, TokenKind::Identifier, TokenKind::Assign,   TokenKind::Identifier, TokenKind::Dot,
      TokenKind::Property, TokenKind::LBracket,   TokenKind::Integer,   TokenKind::RBracket, TokenKind::LessEq,
      TokenKind::Integer,  TokenKind::AndAnd,     TokenKind::Bang,      TokenKind::KwTrue,   TokenKind::Semicolon,
      TokenKind::String,   TokenKind::Constraint, TokenKind::EqEq,      TokenKind::Integer,  TokenKind::Identifier,
      TokenKind::Eof};
  EXPECT_EQ(kinds, want);
  EXPECT_FALSE(d.hasErrors());
  EXPECT_EQ(toks[20].stringValue(), "s {}");
  EXPECT_EQ(toks[23].intValue, 128);
}

TEST(Lexer, TracksLinesAndColumnsAndKeepsBothCommentStyles) {
  support::SourceFile f("l.map", "# head\nx = 1; // tail\n  y = 2;\n");
  support::DiagnosticEngine d(f);
  std::vector<dsl::Comment> comments;
  auto toks = lexText(f.text(), f, d, &comments);
  ASSERT_EQ(comments.size(), 2u);
  EXPECT_EQ(comments[0].text, "# head");
  EXPECT_TRUE(comments[0].ownLine);
  EXPECT_EQ(comments[1].text, "// tail");
  EXPECT_FALSE(comments[1].ownLine);
  EXPECT_EQ(toks[4].text, "y");
  EXPECT_EQ(toks[4].range.begin.line, 3u);
  EXPECT_EQ(toks[4].range.begin.column, 3u);
}

TEST(Lexer, ReportsBadCharactersAndKeepsGoing) {
  support::SourceFile f("l.map", "x = 1 @ 2;\ny = \"open\nz = 3;");
  support::DiagnosticEngine d(f);
  auto toks = lexText(f.text(), f, d);
  ASSERT_EQ(d.errorCount(), 2u);
  EXPECT_NE(d.diagnostics()[0].message.find("unexpected character '@'"), std::string::npos);
  EXPECT_NE(d.diagnostics()[1].message.find("unterminated string"), std::string::npos);
  EXPECT_EQ(d.diagnostics()[1].range.begin.line, 2u);
  EXPECT_EQ(toks[toks.size() - 2].kind, TokenKind::Semicolon) << "lexing continues after errors";
}

TEST(Lexer, NonAsciiBytesGiveOneErrorPerCharacter) {
  support::SourceFile f("l.map", "x = 1; \xc3\xa9\n");
  support::DiagnosticEngine d(f);
  lexText(f.text(), f, d);
  ASSERT_EQ(d.errorCount(), 1u);
  EXPECT_NE(d.diagnostics()[0].message.find("plain ASCII"), std::string::npos);
}

TEST(Lexer, ReservedWords) {
  EXPECT_TRUE(dsl::isReservedWord("Task"));
  EXPECT_TRUE(dsl::isReservedWord("auto_split"));
  EXPECT_TRUE(dsl::isReservedWord("VIRTUAL"));
  EXPECT_TRUE(dsl::isReservedWord("No_Align"));
  EXPECT_FALSE(dsl::isReservedWord("Machine"));
  EXPECT_FALSE(dsl::isReservedWord("mgpu"));
}
