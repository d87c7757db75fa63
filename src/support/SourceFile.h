// SourceFile: the text of one input with its name, and the mapping from byte
// offsets to 1-based lines and columns that every diagnostic uses.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hone::support {

/// A position in a source file. Lines and columns are 1-based; the column
/// counts bytes (the DSL is ASCII; other bytes are rejected by the lexer).
struct SourceLoc {
  uint32_t offset = 0;
  uint32_t line = 0;
  uint32_t column = 0;
  bool valid() const { return line != 0; }
};

/// A half-open byte range [begin, end) in one file.
struct SourceRange {
  SourceLoc begin;
  SourceLoc end;
  bool valid() const { return begin.valid(); }
};

class SourceFile {
public:
  SourceFile(std::string name, std::string text);

  /// Reads a file from disk; nullopt (with errno-style message in *error) when unreadable.
  static std::optional<SourceFile> load(const std::string &path, std::string *error);

  const std::string &name() const { return name_; }
  const std::string &text() const { return text_; }

  /// Line and column of a byte offset (offset may equal text().size()).
  SourceLoc locate(uint32_t offset) const;
  /// The text of a 1-based line, without its newline.
  std::string_view lineText(uint32_t line) const;
  uint32_t lineCount() const { return static_cast<uint32_t>(lineStarts_.size()); }

private:
  std::string name_;
  std::string text_;
  std::vector<uint32_t> lineStarts_;
};

} // namespace hone::support
