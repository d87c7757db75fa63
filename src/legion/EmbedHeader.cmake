# Writes a C++ source defining hone::legion::supportHeaderText() as the
# contents of INPUT (a raw string literal; the header never contains the
# delimiter).
file(READ ${INPUT} text)
string(FIND "${text}" ")hone_rt\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} contains the raw-string delimiter")
endif()
file(WRITE ${OUTPUT} "// Generated from hone_mapper_support.h by EmbedHeader.cmake. Do not edit.\n#include \"legion/Compiler.h\"\nnamespace hone::legion {\nstd::string_view supportHeaderText() {\n  static const char text[] = R\"hone_rt(${text})hone_rt\";\n  return {text, sizeof(text) - 1};\n}\n} // namespace hone::legion\n")
