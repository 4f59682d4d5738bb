# Run by ctest as lint.clang_tidy: clang-tidy over every translation unit of src/, tools/, tests/
# and bench/ in this build, in two passes that together take each file once, each on both cores.
# The pass over the library and CLI sources (lint_scope.cmake says which) adds
# readability-function-size, whose LineThreshold (60) is in .clang-tidy; the check is not enabled
# there because tests and benchmarks may run long.
#
# Inputs (-D): CLANG_TIDY, RUN_CLANG_TIDY (may be empty: then clang-tidy runs file by file),
# BUILD_DIR, SOURCE_DIR.

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

set(failed "")
foreach(pass sized unsized)
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
