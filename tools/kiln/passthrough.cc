// Arguments after "--": kiln's own parser never sees them; compiler commands pass them on.
#include <cstring>

#include <fmt/format.h>

#include "commands.h"
#include "kiln/error.h"

namespace kiln::cli {
namespace {

std::vector<std::string>& passthrough_storage() {
  static std::vector<std::string> arguments;
  return arguments;
}

}  // namespace

const std::vector<std::string>& passthrough() { return passthrough_storage(); }

void split_passthrough(int& argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") != 0) continue;
    passthrough_storage().assign(argv + i + 1, argv + argc);
    argc = i;
    return;
  }
}

void require_no_passthrough(std::string_view command) {
  if (passthrough().empty()) return;
  throw InvalidArgument(fmt::format("'kiln {}' takes no arguments after '--' (got '{}')", command,
                                    passthrough().front()));
}

}  // namespace kiln::cli
