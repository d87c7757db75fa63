// The DSL's built-in properties and methods: one table shared by the semantic
// checks (arity, method vs attribute) and the interpreter.
#pragma once

#include <optional>
#include <string_view>

namespace hone::dsl {

struct BuiltinProperty {
  std::string_view name;
  int arity;          // number of arguments when called; -1 for attributes
  std::string_view usage;
};

/// The property named `name`, or nullopt when the name is not a property.
std::optional<BuiltinProperty> findProperty(std::string_view name);

} // namespace hone::dsl
