# Run by ctest as lint.settings_docs: docs/settings.md holds, between its two marker lines, exactly
# the table that `kiln settings --markdown` prints from src/base/settings_table.cc, so the docs
# and the table never disagree. Input (-D): KILN (the kiln program), DOC (docs/settings.md).
# To update the docs after changing the table: kiln settings --markdown, pasted between them.

cmake_minimum_required(VERSION 3.25)

set(begin "<!-- kiln settings --markdown: begin -->\n")
set(end "<!-- kiln settings --markdown: end -->")
execute_process(COMMAND ${KILN} settings --markdown OUTPUT_VARIABLE table RESULT_VARIABLE status
                ERROR_VARIABLE errors)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "kiln settings --markdown failed (${status}): ${errors}")
endif()
file(READ ${DOC} text)
string(FIND "${text}" "${begin}" first)
string(FIND "${text}" "${end}" last)
if(first EQUAL -1 OR last EQUAL -1)
  message(FATAL_ERROR "${DOC}: no marker lines '${begin}' and '${end}' around the table")
endif()
string(LENGTH "${begin}" skip)
math(EXPR start "${first} + ${skip}")
math(EXPR length "${last} - ${start}")
string(SUBSTRING "${text}" ${start} ${length} documented)
if(NOT documented STREQUAL table)
  file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/settings-table.md "${table}")
  message(FATAL_ERROR "${DOC} does not hold the settings table kiln has: put the output of "
                      "`kiln settings --markdown` (written to "
                      "${CMAKE_CURRENT_BINARY_DIR}/settings-table.md) between its markers")
endif()
message(STATUS "${DOC} holds kiln's settings table")
