// Reading JSON that hone did not just write (a model's reply, a server's answer, a row of a store
// written by another or a damaged hone): a field of the wrong type counts as absent, never as an
// exception. (nlohmann's value(key, default) throws when the key is there with another type.)
#pragma once

#include <nlohmann/json.hpp>

#include <string>

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

} // namespace hone::support
