// Reading JSON that hone did not just write (a model's reply, a server's answer, a row of a store
// written by another or a damaged hone): a field of the wrong type counts as absent, never as an
// exception. (nlohmann's value(key, default) throws when the key is there with another type.) Text
// nested deeper than kMaxJsonDepth is refused before it is parsed.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>

namespace hone::support {

/// j[key] when j is an object and the field is a string; `fallback` otherwise.
inline std::string textOf(const nlohmann::json &j, const char *key, std::string fallback = {}) {
  if (!j.is_object())
    return fallback;
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

/// j[key] when j is an object and the field is a finite number; `fallback` otherwise.
inline double numberOf(const nlohmann::json &j, const char *key, double fallback = 0) {
  if (!j.is_object())
    return fallback;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number())
    return fallback;
  double v = it->get<double>();
  return v == v && v - v == 0 ? v : fallback; // NaN and infinities are not numbers here
}

/// The deepest nesting JSON read from outside may have: nlohmann's parser is iterative, but copying,
/// comparing and dumping a value recurse once per level, so a reply nested 200,000 deep would end hone
/// on the first copy. Text nested deeper is refused before it is parsed.
inline constexpr size_t kMaxJsonDepth = 256;

/// The deepest nesting of arrays and objects in `text` read as JSON (brackets inside strings do not
/// count; the text need not be valid JSON). Linear, no recursion.
inline size_t jsonDepth(std::string_view text) {
  size_t depth = 0, deepest = 0;
  bool inString = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (c == '\\')
        ++i; // the escaped character, a quote included
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

/// json::parse(text) when `text` is nested at most kMaxJsonDepth deep; a discarded value otherwise
/// and when it does not parse. Never throws.
inline nlohmann::json parseJsonBounded(std::string_view text) {
  if (jsonDepth(text) > kMaxJsonDepth)
    return nlohmann::json(nlohmann::json::value_t::discarded);
  return nlohmann::json::parse(text, nullptr, false);
}

} // namespace hone::support
