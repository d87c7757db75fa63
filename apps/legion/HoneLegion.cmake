# hone_add_legion_app: builds a Legion application with a hone-compiled mapper.
#
#   include(<hone>/apps/legion/HoneLegion.cmake)
#   hone_add_legion_app(my_app
#     SOURCES main.cc other.cc          # the application; main() calls register_mappers()
#     MAPPER  my_policy.map             # the mapping policy (hone's DSL)
#     [HONE   /path/to/hone]            # default: HONE_EXECUTABLE, else `hone` on PATH
#     [CLASS  MyMapper])                # the generated class (default: from the policy's file name)
#
# At build time `hone compile` turns the policy into <build>/<name>-mapper/mapper.cc (and
# hone_mapper_support.h beside it); the target compiles it with the application and links
# Legion::Legion (find_package(Legion) first). Editing the policy rebuilds only the mapper.
include_guard(GLOBAL)

function(hone_add_legion_app name)
  cmake_parse_arguments(ARG "" "MAPPER;HONE;CLASS" "SOURCES" ${ARGN})
  if(NOT ARG_SOURCES OR NOT ARG_MAPPER)
    message(FATAL_ERROR "hone_add_legion_app(${name}): SOURCES and MAPPER are required")
  endif()
  if(NOT TARGET Legion::Legion)
    message(FATAL_ERROR "hone_add_legion_app(${name}): call find_package(Legion) first")
  endif()
  set(hone "${ARG_HONE}")
  if(NOT hone)
    if(NOT HONE_EXECUTABLE)
      find_program(HONE_EXECUTABLE hone)
    endif()
    if(NOT HONE_EXECUTABLE)
      message(FATAL_ERROR "hone_add_legion_app(${name}): no hone found; set HONE_EXECUTABLE or pass HONE")
    endif()
    set(hone "${HONE_EXECUTABLE}")
  endif()
  get_filename_component(policy "${ARG_MAPPER}" ABSOLUTE)
  if(NOT EXISTS "${policy}")
    message(FATAL_ERROR "hone_add_legion_app(${name}): mapper ${policy} does not exist")
  endif()
  set(dir "${CMAKE_CURRENT_BINARY_DIR}/${name}-mapper")
  set(extra)
  if(ARG_CLASS)
    list(APPEND extra --class "${ARG_CLASS}")
  endif()
  set(deps "${policy}")
  if(IS_ABSOLUTE "${hone}" AND EXISTS "${hone}")
    list(APPEND deps "${hone}")
  endif()
  add_custom_command(
    OUTPUT "${dir}/mapper.cc" "${dir}/hone_mapper_support.h"
    COMMAND "${CMAKE_COMMAND}" -E make_directory "${dir}"
    COMMAND "${hone}" compile "${policy}" -o "${dir}/mapper.cc" ${extra}
    DEPENDS ${deps}
    COMMENT "hone compile ${policy}"
    VERBATIM)
  add_executable(${name} ${ARG_SOURCES} "${dir}/mapper.cc")
  target_include_directories(${name} PRIVATE "${dir}")
  target_compile_features(${name} PRIVATE cxx_std_17)
  target_link_libraries(${name} PRIVATE Legion::Legion)
endfunction()
