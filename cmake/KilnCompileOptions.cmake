# Warnings and sanitizers, applied to every kiln target through one interface library.
add_library(kiln_compile_options INTERFACE)
target_compile_options(kiln_compile_options INTERFACE -Wall -Wextra -Wpedantic)
if(KILN_WERROR)
  target_compile_options(kiln_compile_options INTERFACE -Werror)
endif()

if(KILN_SANITIZE)
  list(JOIN KILN_SANITIZE "," _kiln_sanitizers)
  # Sanitizers apply to everything in the build (GoogleTest included when built from source),
  # so that instrumented and uninstrumented code never share state unobserved.
  add_compile_options(-fsanitize=${_kiln_sanitizers} -fno-omit-frame-pointer -g)
  add_link_options(-fsanitize=${_kiln_sanitizers})
  if("undefined" IN_LIST KILN_SANITIZE)
    add_compile_options(-fno-sanitize-recover=undefined)
  endif()
endif()
