// SourceFile: offset -> line/column mapping by binary search over line starts.
#include "support/SourceFile.h"

#include "support/FileUtil.h"

#include <algorithm>

namespace hone::support {

SourceFile::SourceFile(std::string name, std::string text) : name_(std::move(name)), text_(std::move(text)) {
  lineStarts_.push_back(0);
  for (uint32_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n')
      lineStarts_.push_back(i + 1);
}

std::optional<SourceFile> SourceFile::load(const std::string &path, std::string *error) {
  auto text = readFile(path);
  if (!text) {
    if (error)
      *error = text.error().message;
    return std::nullopt;
  }
  return SourceFile(path, std::move(*text));
}

SourceLoc SourceFile::locate(uint32_t offset) const {
  offset = std::min<uint32_t>(offset, static_cast<uint32_t>(text_.size()));
  auto it = std::upper_bound(lineStarts_.begin(), lineStarts_.end(), offset);
  auto line = static_cast<uint32_t>(it - lineStarts_.begin());
  return SourceLoc{offset, line, offset - lineStarts_[line - 1] + 1};
}

std::string_view SourceFile::lineText(uint32_t line) const {
  if (line == 0 || line > lineStarts_.size())
    return {};
  uint32_t begin = lineStarts_[line - 1];
  uint32_t end = line < lineStarts_.size() ? lineStarts_[line] - 1 : static_cast<uint32_t>(text_.size());
  std::string_view view(text_);
  view = view.substr(begin, end - begin);
  if (!view.empty() && view.back() == '\r')
    view.remove_suffix(1);
  return view;
}

} // namespace hone::support
