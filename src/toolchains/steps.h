// Steps the toolchain modules' recipes share (kiln/recipe.h).
#pragma once

#include <filesystem>
#include <string>

#include "internal/files.h"
#include "kiln/recipe.h"

namespace kiln::internal {

// Moves a finished temporary output into place, whole or not at all.
inline CallStep move_into_place_step(const std::filesystem::path& from,
                                     const std::filesystem::path& to) {
  return {.name = "move into place", .call = [from, to] { move_into_place(from, to); }};
}

// Writes `bytes` to `path` (inline source a tool then reads).
inline CallStep write_file_step(const std::filesystem::path& path, std::string bytes) {
  return {.name = "write " + path.filename().string(),
          .call = [path, bytes = std::move(bytes)] { write_file(path, bytes); }};
}

}  // namespace kiln::internal
