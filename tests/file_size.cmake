# Run by ctest as lint.file_size: no library, CLI or Python package file (lint_scope.cmake says
# which) may pass 600 lines; a longer one is a reason to split it by concept.
# Input (-D): SOURCE_DIR.

cmake_minimum_required(VERSION 3.25)

include(${CMAKE_CURRENT_LIST_DIR}/lint_scope.cmake)

set(limit 600)
file(GLOB_RECURSE files RELATIVE ${SOURCE_DIR} ${SOURCE_DIR}/src/*.cc ${SOURCE_DIR}/src/*.h
     ${SOURCE_DIR}/tools/*.cc ${SOURCE_DIR}/tools/*.h ${SOURCE_DIR}/python/src/*.cc
     ${SOURCE_DIR}/python/src/*.h ${SOURCE_DIR}/python/kiln/*.py ${SOURCE_DIR}/python/kiln/*.pyi)
set(too_long "")
set(count 0)
foreach(file IN LISTS files)
  kiln_size_checked(${file} checked)
  if(NOT checked)
    continue()
  endif()
  math(EXPR count "${count} + 1")
  file(READ ${SOURCE_DIR}/${file} text)
  string(REGEX MATCHALL "\n" newlines "${text}")
  list(LENGTH newlines lines)
  if(lines GREATER limit)
    list(APPEND too_long "${file}: ${lines} lines")
  endif()
endforeach()
if(too_long)
  list(JOIN too_long "\n  " listed)
  message(FATAL_ERROR "over ${limit} lines (split by concept):\n  ${listed}")
endif()
message(STATUS "all ${count} library, CLI and Python package files have at most ${limit} lines")
