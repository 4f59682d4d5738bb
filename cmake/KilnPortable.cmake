# KILN_PORTABLE: the kiln program and the Python extension need nothing from the system but glibc
# (2.34 or later) and libgcc_s, so that a wheel holding them is a manylinux_2_34 wheel
# (docs/packaging.md). It is on by default where scripts/install-deps.sh --wheels has built the
# static libraries (.deps/static), the compiler is GCC and no sanitizer is asked for.
#   - libarchive and the compression libraries it reads with, static, from .deps/static
#     (scripts/build-static-deps.sh: Debian's sources, built position-independent, without the
#     formats that would pull libxml2 and ICU);
#   - fmt's compiled half built into kiln (src/base/internal/fmt_compiled.cc): Debian ships
#     libfmt.so only;
#   - libstdc++ linked statically into the program and the extension (the extension keeps its
#     copy's symbols to itself, --exclude-libs), and glibc 2.36's arc4random, which libstdc++.a
#     and libarchive reference, answered by getrandom (src/base/internal/portable_random.c).
# Without it the same targets link the system's shared libfmt, libarchive and libstdc++.

set(KILN_STATIC_DEPS_DIR ${PROJECT_SOURCE_DIR}/.deps/static CACHE PATH
    "Static libraries of a portable build (scripts/build-static-deps.sh)")
set(_kiln_portable_default OFF)
if(EXISTS ${KILN_STATIC_DEPS_DIR}/lib/libarchive.a AND NOT KILN_SANITIZE
   AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_SYSTEM_NAME STREQUAL "Linux")
  set(_kiln_portable_default ON)
endif()
option(KILN_PORTABLE "Link libarchive, fmt and libstdc++ statically into the kiln program and the Python extension (wheels)"
       ${_kiln_portable_default})

# kiln_fmt: what every target that formats links.
add_library(kiln_fmt INTERFACE)

if(NOT KILN_PORTABLE)
  if(TARGET fmt::fmt)
    target_link_libraries(kiln_fmt INTERFACE fmt::fmt)
  endif()
  message(STATUS "KILN_PORTABLE: OFF (the system's libfmt, libarchive and libstdc++ are linked shared)")
  function(kiln_portable_runtime target)
  endfunction()
  return()
endif()

foreach(library archive zstd lzma bz2 z)
  if(NOT EXISTS ${KILN_STATIC_DEPS_DIR}/lib/lib${library}.a)
    message(FATAL_ERROR "KILN_PORTABLE: ${KILN_STATIC_DEPS_DIR}/lib/lib${library}.a is missing: "
                        "run scripts/install-deps.sh --wheels (or configure with -DKILN_PORTABLE=OFF)")
  endif()
endforeach()
if(KILN_SANITIZE)
  message(FATAL_ERROR "KILN_PORTABLE cannot be combined with sanitizers (KILN_SANITIZE=${KILN_SANITIZE})")
endif()
if(TARGET fmt::fmt AND NOT fmt_VERSION VERSION_GREATER_EQUAL 9 OR fmt_VERSION VERSION_GREATER_EQUAL 10)
  message(FATAL_ERROR "KILN_PORTABLE builds fmt 9's compiled half into kiln; this is fmt ${fmt_VERSION}")
endif()

if(TARGET fmt::fmt)
  target_include_directories(kiln_fmt SYSTEM INTERFACE
                             $<TARGET_PROPERTY:fmt::fmt,INTERFACE_INCLUDE_DIRECTORIES>)
endif()

add_library(LibArchive::LibArchive INTERFACE IMPORTED)
set_target_properties(LibArchive::LibArchive PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES ${KILN_STATIC_DEPS_DIR}/include
  INTERFACE_LINK_LIBRARIES "${KILN_STATIC_DEPS_DIR}/lib/libarchive.a;${KILN_STATIC_DEPS_DIR}/lib/libzstd.a;${KILN_STATIC_DEPS_DIR}/lib/liblzma.a;${KILN_STATIC_DEPS_DIR}/lib/libbz2.a;${KILN_STATIC_DEPS_DIR}/lib/libz.a")
set(LibArchive_FOUND TRUE)

add_library(kiln_portable_random OBJECT ${PROJECT_SOURCE_DIR}/src/base/internal/portable_random.c)

# kiln_portable_runtime(TARGET): a program or module that must run wherever glibc 2.34 does.
function(kiln_portable_runtime target)
  target_link_libraries(${target} PRIVATE kiln_portable_random)
  target_link_options(${target} PRIVATE -static-libstdc++ -Wl,--wrap=arc4random -Wl,--wrap=arc4random_buf)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "MODULE_LIBRARY" OR type STREQUAL "SHARED_LIBRARY")
    target_link_options(${target} PRIVATE -Wl,--exclude-libs,ALL)
  endif()
endfunction()
message(STATUS "KILN_PORTABLE: ON (static libarchive from ${KILN_STATIC_DEPS_DIR}, fmt built in, static libstdc++)")
