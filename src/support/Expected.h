// Expected<T>: a value or an error message. Used at module boundaries for
// failures that are expected (bad input, runtime faults of a policy), so that
// exceptions never cross modules.
#pragma once

#include "support/Check.h"

#include <string>
#include <utility>
#include <variant>

namespace hone::support {

/// An error carried as a value: a message and, when it has one, a location
/// in the input (1-based line and column; 0 means "no location").
struct Error {
  std::string message;
  int line = 0;
  int column = 0;
};

template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : state_(std::move(value)) {}
  Expected(Error error) : state_(std::move(error)) {}

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T &value() & {
    HONE_CHECK(ok(), "value() of a failed Expected");
    return std::get<0>(state_);
  }
  const T &value() const & {
    HONE_CHECK(ok(), "value() of a failed Expected");
    return std::get<0>(state_);
  }
  T &&value() && {
    HONE_CHECK(ok(), "value() of a failed Expected");
    return std::get<0>(std::move(state_));
  }
  const Error &error() const {
    HONE_CHECK(!ok(), "error() of a successful Expected");
    return std::get<1>(state_);
  }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }

private:
  std::variant<T, Error> state_;
};

} // namespace hone::support
