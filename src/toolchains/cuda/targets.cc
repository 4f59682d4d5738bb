// nvrtc_targets(): every target NVRTC compiles for, arch-specific variants included (kiln/cuda.h).
#include <fmt/format.h>

#include "kiln/cuda.h"

namespace kiln::cuda {

std::vector<std::string> nvrtc_targets(const std::vector<int>& archs, std::pair<int, int> version) {
  std::vector<std::string> targets;
  for (int arch : archs) {
    targets.push_back(fmt::format("sm_{}", arch));
    // Arch-specific features (wgmma, setmaxnreg, ...) came with sm_90a in CUDA 12.0; family
    // features shared by later members of a family with sm_100f and the like in CUDA 12.9.
    if (arch >= 90 && version >= std::pair{12, 0}) targets.push_back(fmt::format("sm_{}a", arch));
    if (arch >= 100 && version >= std::pair{12, 9}) targets.push_back(fmt::format("sm_{}f", arch));
  }
  return targets;
}

std::vector<std::string> nvrtc_targets() {
  return nvrtc_targets(nvrtc_supported_archs(), nvrtc_version());
}

}  // namespace kiln::cuda
