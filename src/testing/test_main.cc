// main() of kiln_unit_tests: a child mode when asked to be one, else GoogleTest.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <optional>

#include "kiln/pool.h"
#include "testing/test_support.h"

int main(int argc, char** argv) {
  kiln::pool::serve_if_worker(argc, argv);  // a re-executed pool worker stops here
  // A worker started from a command (pool::WorkerOptions::command) with arguments of its own.
  if (std::optional<int> status = kiln::pool::serve_worker({argv, argv + argc})) return *status;
  if (argc >= 3 && std::strcmp(argv[1], kiln::testing::kChildFlag) == 0) {
    return kiln::testing::run_child_mode(argc, argv);
  }
  // Unit tests never touch the user's own kernel cache: the cache tests name their directories.
  if (std::getenv("KILN_CACHE_DIR") == nullptr) ::setenv("KILN_NO_CACHE", "1", 1);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
