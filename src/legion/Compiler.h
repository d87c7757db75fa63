// The compiler from mapper policies to C++ Legion mappers. The output is
// one self-contained source file: the policy's decisions as tables, its
// functions compiled to C++ over the values of hone_mapper_support.h, and a
// register_mappers() entry point. All checking happens before: the input
// must be a program that checked without errors.
#pragma once

#include "dsl/Ast.h"

#include <string>
#include <string_view>

namespace hone::legion {

struct CompileOptions {
  std::string className;           // names the mapper; a C++ identifier
  std::string registerFunction = "register_mappers";
  std::string sourceName;          // the policy's file name, cited in comments and messages
  bool loggingWrapper = false;     // default for HONE_USE_LOGGING_WRAPPER
  int shardingIdBase = 7000;       // default for HONE_SHARDING_ID_BASE
};

/// C++ source of a mapper for `program` (which must have checked cleanly).
std::string compileToCpp(const dsl::Program &program, const CompileOptions &options);

/// The text of hone_mapper_support.h, which the generated source includes.
std::string_view supportHeaderText();

/// "circuit" -> "CircuitMapper": a class name from a file stem.
std::string defaultClassName(std::string_view stem);
/// True if `name` is a usable C++ identifier (not a keyword, no leading '__').
bool isValidIdentifier(std::string_view name);

} // namespace hone::legion
