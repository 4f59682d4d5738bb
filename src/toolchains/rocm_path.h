// find_rocm_path() with its last resort as a parameter, for tests (the real one is /opt/rocm).
#pragma once

#include <filesystem>

namespace kiln::rocm::detail {

// $ROCM_PATH; else two levels above the real path of hipcc on PATH; else `default_root` when it
// holds bin/hipcc; else FileNotFound.
std::filesystem::path find_rocm_path(const std::filesystem::path& default_root);

}  // namespace kiln::rocm::detail
