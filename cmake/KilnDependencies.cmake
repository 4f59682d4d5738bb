# The libraries kiln builds against. Every one is looked for before any fails, so that a machine
# without them (a build of the sdist, say) hears the whole list at once, by Debian's package names.
#
# KILN_PORTABLE (cmake/KilnPortable.cmake) links libarchive and fmt's compiled half into kiln itself
# and the C++ runtime statically: the kiln program and the Python extension then need nothing
# from the system but glibc and libgcc_s, as a manylinux wheel must.

find_package(Threads REQUIRED)

set(_kiln_missing)
# kiln_require(PACKAGE DEBIAN_PACKAGE [find_package arguments...])
macro(kiln_require package debian)
  find_package(${package} ${ARGN} QUIET)
  if(NOT ${package}_FOUND)
    list(APPEND _kiln_missing "${package} (Debian: ${debian})")
    list(APPEND _kiln_missing_debian ${debian})
  endif()
endmacro()

kiln_require(fmt libfmt-dev)
kiln_require(nlohmann_json nlohmann-json3-dev 3.10)
kiln_require(CLI11 libcli11-dev)
include(CheckIncludeFileCXX)
check_include_file_cxx(xxhash.h KILN_HAVE_XXHASH_H)
if(NOT KILN_HAVE_XXHASH_H)
  list(APPEND _kiln_missing "xxHash's header xxhash.h (Debian: libxxhash-dev)")
  list(APPEND _kiln_missing_debian libxxhash-dev)
endif()

# The remote cache's clients: Redis is spoken by kiln itself (src/remote/redis_store.cc);
# libcurl is loaded at run time, so only its header is needed here.
find_path(KILN_CURL_INCLUDE_DIR curl/curl.h)
if(NOT KILN_CURL_INCLUDE_DIR)
  list(APPEND _kiln_missing "libcurl's header curl/curl.h (Debian: libcurl4-openssl-dev)")
  list(APPEND _kiln_missing_debian libcurl4-openssl-dev)
endif()

include(cmake/KilnPortable.cmake)
if(NOT KILN_PORTABLE)
  kiln_require(LibArchive libarchive-dev)
endif()

if(_kiln_missing)
  list(JOIN _kiln_missing "\n  " _kiln_missing_text)
  list(JOIN _kiln_missing_debian " " _kiln_missing_packages)
  message(FATAL_ERROR "kiln cannot be built here: these libraries are missing\n  ${_kiln_missing_text}\n"
                      "On Debian or Ubuntu: apt-get install ${_kiln_missing_packages}\n"
                      "(scripts/install-deps.sh in kiln's repository installs every tool kiln's build and tests use.)")
endif()
