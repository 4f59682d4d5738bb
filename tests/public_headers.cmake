# Run by ctest as lint.public_headers: include/kiln/ holds the installed API and nothing else
# (docs: DESIGN.md, Layout). Every header there is read line by line, and the test fails naming
# the file and line of each
#   - `namespace internal` or `namespace detail` (also `namespace kiln::internal`), or a mention of
#     `internal::` or `detail::`, comments included: what is not API lives in src/;
#   - `#include` of anything but another header of include/kiln, spelled "kiln/<name>.h", or a
#     system or third-party header in <...> (never one of src/'s, nor a generated one);
# and of any file below include/kiln/ that is not a header directly in it (a folder of private
# headers would be installed with the rest). Input (-D): SOURCE_DIR.

cmake_minimum_required(VERSION 3.25)

set(public_dir ${SOURCE_DIR}/include/kiln)
file(GLOB_RECURSE files RELATIVE ${public_dir} ${public_dir}/*)
set(problems "")
set(headers 0)

# Appends "<file>:<line>: <what>" to `problems`.
macro(report header at what)
  list(APPEND problems "include/kiln/${header}:${at}: ${what}")
endmacro()

foreach(file IN LISTS files)
  if(NOT file MATCHES "^[A-Za-z0-9_]+\\.h$")
    report(${file} 1 "not a header directly in include/kiln/: private headers live in src/")
    continue()
  endif()
  math(EXPR headers "${headers} + 1")
  file(READ ${public_dir}/${file} text)
  # One list element per line: the characters CMake's lists treat specially go first.
  string(REPLACE ";" "," text "${text}")
  string(REPLACE "[" "(" text "${text}")
  string(REPLACE "]" ")" text "${text}")
  string(REPLACE "\\" "/" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(number 0)
  foreach(line IN LISTS lines)
    math(EXPR number "${number} + 1")
    if(line MATCHES "namespace[ \t]+([A-Za-z0-9_]+::)*(internal|detail)([^A-Za-z0-9_]|$)")
      report(${file} ${number} "namespace ${CMAKE_MATCH_2}: internal code belongs in src/")
    elseif(line MATCHES "(^|[^A-Za-z0-9_])(internal|detail)::")
      report(${file} ${number} "names ${CMAKE_MATCH_2}::, which is not public API")
    endif()
    if(line MATCHES "^[ \t]*#[ \t]*include[ \t]*([\"<][^\">]*[\">])")
      set(included "${CMAKE_MATCH_1}")
      set(public FALSE)
      if(included MATCHES "^\"kiln/([A-Za-z0-9_]+\\.h)\"$")
        if(EXISTS ${public_dir}/${CMAKE_MATCH_1})
          set(public TRUE)
        endif()
      endif()
      # A system or third-party header: <...>, never one of kiln's own.
      if(NOT public AND NOT included MATCHES "^<" OR included MATCHES "^<kiln")
        report(${file} ${number} "includes ${included}: neither a public header (\"kiln/<name>.h\") nor a system one")
      endif()
    endif()
  endforeach()
endforeach()

if(problems)
  list(JOIN problems "\n  " listed)
  message(FATAL_ERROR "include/kiln/ must hold the public API only:\n  ${listed}")
endif()
message(STATUS "all ${headers} headers of include/kiln/ are public API only")
