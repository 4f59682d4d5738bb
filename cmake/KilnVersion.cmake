# The version and the git commit of this checkout, for `kiln --version` and `kiln describe`.
set(KILN_GIT_COMMIT "unknown")
find_package(Git QUIET)
if(GIT_FOUND)
  execute_process(
    COMMAND ${GIT_EXECUTABLE} rev-parse --short=12 HEAD
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    OUTPUT_VARIABLE _kiln_commit OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE _kiln_git_rc ERROR_QUIET)
  if(_kiln_git_rc EQUAL 0 AND _kiln_commit)
    set(KILN_GIT_COMMIT "${_kiln_commit}")
  endif()
  # Re-run configure when HEAD moves, so the recorded commit stays true.
  if(EXISTS "${PROJECT_SOURCE_DIR}/.git/HEAD")
    set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${PROJECT_SOURCE_DIR}/.git/HEAD")
    file(READ "${PROJECT_SOURCE_DIR}/.git/HEAD" _kiln_head)
    if(_kiln_head MATCHES "^ref: ([^\n]+)" AND EXISTS "${PROJECT_SOURCE_DIR}/.git/${CMAKE_MATCH_1}")
      set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
                   "${PROJECT_SOURCE_DIR}/.git/${CMAKE_MATCH_1}")
    endif()
  endif()
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/build_info.h.in
               ${PROJECT_BINARY_DIR}/generated/kiln_build_info.h @ONLY)
