# clang-tidy over the translation units of src/, tools/, tests/ and bench/ in this build, on both
# cores, in two passes that together take each file once:
# - sized: the library and CLI sources (lint_scope.cmake says which), with
#   readability-function-size, whose LineThreshold (60) is in .clang-tidy (the check is not enabled
#   there because tests and benchmarks may run long). ctest runs this pass as lint.clang_tidy.
# - unsized: tests, test support (src/testing/) and benchmarks: the target clang_tidy_tests. It
#   takes longer than every other test of the suite together on this 2-core machine (about 9 CPU
#   seconds a file, GoogleTest and nlohmann/json parsed again each time), so it is kept out of the
#   suite as the benchmarks and fuzzers are; run it before committing test code.
#
# Inputs (-D): CLANG_TIDY, RUN_CLANG_TIDY (may be empty: then clang-tidy runs file by file),
# BUILD_DIR, SOURCE_DIR, PASSES (a list of sized and unsized; default both).

cmake_minimum_required(VERSION 3.25)

include(${CMAKE_CURRENT_LIST_DIR}/lint_scope.cmake)

file(GLOB_RECURSE files RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/src/*.cc ${SOURCE_DIR}/tools/*.cc
     ${SOURCE_DIR}/tests/*.cc ${SOURCE_DIR}/bench/*.cc)
set(sized "")
set(unsized "")
foreach(file IN LISTS files)
  if(file MATCHES "^tests/layers/")
    continue()  # must fail to compile: layers.upward_include_is_refused
  endif()
  kiln_size_checked(${file} checked)
  if(checked)
    list(APPEND sized ${file})
  else()
    list(APPEND unsized ${file})
  endif()
endforeach()

# A regex for run-clang-tidy (Python's re) that matches exactly `paths` under SOURCE_DIR.
function(exactly paths out)
  set(escaped "")
  foreach(path IN LISTS SOURCE_DIR paths)
    string(REGEX REPLACE "([][.+*?^$(){}|\\\\])" "\\\\\\1" path "${path}")
    list(APPEND escaped "${path}")
  endforeach()
  list(POP_FRONT escaped root)
  list(JOIN escaped "|" alternatives)
  set(${out} "^${root}/(${alternatives})$" PARENT_SCOPE)
endfunction()

if(NOT DEFINED PASSES)
  set(PASSES sized unsized)
endif()
set(failed "")
foreach(pass IN LISTS PASSES)
  set(extra "")
  if(pass STREQUAL "sized")
    set(extra "-checks=readability-function-size")
  endif()
  if(RUN_CLANG_TIDY)
    exactly("${${pass}}" regex)
    set(command ${RUN_CLANG_TIDY} -clang-tidy-binary ${CLANG_TIDY} -p ${BUILD_DIR} -j 2 -quiet
                ${extra} ${regex})
  else()
    set(command ${CLANG_TIDY} -p ${BUILD_DIR} --quiet ${extra} ${${pass}})
  endif()
  execute_process(COMMAND ${command} WORKING_DIRECTORY ${SOURCE_DIR} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    list(APPEND failed ${pass})
  endif()
endforeach()
if(failed)
  message(FATAL_ERROR "clang-tidy found problems (passes: ${failed})")
endif()
