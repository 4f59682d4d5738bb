# Included by ctest after the file gtest_discover_tests generates, so the unit tests exist here:
# tests that load the whole machine run alone.
set_tests_properties("PoolStress.EveryResultAccountedForAndResourcesFlat" PROPERTIES RUN_SERIAL TRUE)
