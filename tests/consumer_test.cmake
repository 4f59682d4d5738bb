# Run by ctest: stage an install of kiln, then build and run examples/consumer against it twice,
# once through find_package(kiln) and once through `pkg-config kiln`; and compile every installed
# header with only the staged prefix's include directory, so that a public header that needs one
# of src/'s (never installed) fails here.

function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " cmd)
    message(FATAL_ERROR "failed (${rc}): ${cmd}\n${out}\n${err}")
  endif()
  set(STEP_OUTPUT "${out}" PARENT_SCOPE)
endfunction()

set(stage ${WORK_DIR}/stage)
file(REMOVE_RECURSE ${WORK_DIR})
step(${CMAKE_COMMAND} --install ${KILN_BUILD_DIR} --prefix ${stage})

set(flags "")
if(SANITIZE)
  set(flags "-fsanitize=${SANITIZE}")
endif()

# 1. CMake package.
step(${CMAKE_COMMAND} -S ${KILN_SOURCE_DIR}/examples/consumer -B ${WORK_DIR}/build -G ${GENERATOR}
     -DCMAKE_PREFIX_PATH=${stage} -DCMAKE_CXX_COMPILER=${CXX} "-DCMAKE_CXX_FLAGS=${flags}")
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
step(${WORK_DIR}/build/consumer)
if(NOT STEP_OUTPUT MATCHES "^consumer ok\nkiln [0-9]+\\.[0-9]+\\.[0-9]+ from out.txt\n$")
  message(FATAL_ERROR "unexpected output from the CMake-built consumer:\n${STEP_OUTPUT}")
endif()
message(STATUS "find_package(kiln): ok")

# 2. pkg-config.
find_program(PKG_CONFIG pkg-config REQUIRED)
foreach(libdir lib lib64 lib/x86_64-linux-gnu lib/aarch64-linux-gnu)
  if(EXISTS ${stage}/${libdir}/pkgconfig/kiln.pc)
    set(pc_dir ${stage}/${libdir}/pkgconfig)
  endif()
endforeach()
if(NOT pc_dir)
  message(FATAL_ERROR "kiln.pc was not installed under ${stage}")
endif()
step(${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pc_dir} ${PKG_CONFIG} --cflags --libs kiln)
string(STRIP "${STEP_OUTPUT}" pc_flags)
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
separate_arguments(san_flags UNIX_COMMAND "${flags}")
step(${CXX} -std=c++20 ${san_flags} ${KILN_SOURCE_DIR}/examples/consumer/main.cc ${pc_flags}
     -o ${WORK_DIR}/consumer-pc)
step(${WORK_DIR}/consumer-pc)
if(NOT STEP_OUTPUT MATCHES "^consumer ok\n")
  message(FATAL_ERROR "unexpected output from the pkg-config consumer:\n${STEP_OUTPUT}")
endif()
message(STATUS "pkg-config kiln: ok")

# 3. Every installed header, with nothing of the source tree on the include path.
file(GLOB installed_headers RELATIVE ${stage}/include ${stage}/include/kiln/*.h)
if(NOT installed_headers)
  message(FATAL_ERROR "no headers were installed under ${stage}/include/kiln")
endif()
set(all_headers "")
foreach(header IN LISTS installed_headers)
  string(APPEND all_headers "#include <${header}>\n")
endforeach()
file(WRITE ${WORK_DIR}/all_headers.cc "${all_headers}")
step(${CXX} -std=c++20 -fsyntax-only ${san_flags} -I${stage}/include ${WORK_DIR}/all_headers.cc)
list(LENGTH installed_headers count)
message(STATUS "the ${count} installed headers compile with the staged prefix alone: ok")
