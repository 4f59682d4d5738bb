# Which files kiln's size limits (functions up to 60 lines, files up to 600) apply to: the library
# and CLI sources of src/ and tools/, and the Python package (its extension's python/src/ and its
# modules python/kiln/), not tests (*_test.cc, python/tests/), test support (src/testing/) or
# benchmarks (bench/). Included by clang_tidy.cmake and file_size.cmake (clang-tidy, and so the
# function limit, sees C++ files only).

# Files held to no limit (none today; say why beside any added here).
set(kiln_size_exempt)

# Sets `out` to TRUE when `file` (relative to the source root) is held to the size limits.
function(kiln_size_checked file out)
  set(checked FALSE)
  if(file MATCHES "^(src|tools|python/src|python/kiln)/" AND NOT file MATCHES "_test\\.cc$"
     AND NOT file MATCHES "^src/testing/")
    set(checked TRUE)
    foreach(pattern IN LISTS kiln_size_exempt)
      if(file MATCHES "${pattern}")
        set(checked FALSE)
      endif()
    endforeach()
  endif()
  set(${out} ${checked} PARENT_SCOPE)
endfunction()
