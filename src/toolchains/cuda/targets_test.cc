// nvrtc_targets(): the rules, and the real NVRTC compiling each target they list and refusing
// each variant they leave out.
#include <gtest/gtest.h>

#include <algorithm>

#include "kiln/cuda.h"
#include "kiln/error.h"

namespace kiln::cuda {
namespace {

TEST(NvrtcTargets, VariantsFollowTheArchAndTheVersion) {
  std::vector<int> archs = {80, 89, 90, 100, 120};
  EXPECT_EQ(nvrtc_targets(archs, {13, 0}),
            (std::vector<std::string>{"sm_80", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a",
                                      "sm_100f", "sm_120", "sm_120a", "sm_120f"}));
  EXPECT_EQ(nvrtc_targets(archs, {12, 8}),
            (std::vector<std::string>{"sm_80", "sm_89", "sm_90", "sm_90a", "sm_100", "sm_100a",
                                      "sm_120", "sm_120a"}));
  EXPECT_EQ(nvrtc_targets({80, 90}, {11, 8}), (std::vector<std::string>{"sm_80", "sm_90"}));
}

// What kiln cuda info lists, it really compiles: a trivial kernel for every listed target, and
// no variant that the rules leave out (sm_80a, sm_90f, ...) compiles.
TEST(NvrtcTargets, TheInstalledNvrtcCompilesExactlyTheListedTargets) {
  std::vector<std::string> listed;
  std::vector<int> archs;
  try {
    listed = nvrtc_targets();
    archs = nvrtc_supported_archs();
  } catch (const Error& e) {
    GTEST_SKIP() << "needs NVRTC: " << e.what();
  }
  auto compiles = [](const std::string& target) {
    try {
      compile("extern \"C\" __global__ void k(float* a) { a[0] *= 2; }\n",
              {.format = Format::cubin, .arch = target, .use_cache = false});
      return true;
    } catch (const Error&) {
      return false;
    }
  };
  for (int arch : archs) {
    for (const char* suffix : {"", "a", "f"}) {
      std::string target = "sm_" + std::to_string(arch) + suffix;
      bool is_listed = std::find(listed.begin(), listed.end(), target) != listed.end();
      EXPECT_EQ(compiles(target), is_listed) << target << (is_listed ? " is listed" : " is not");
    }
  }
}

}  // namespace
}  // namespace kiln::cuda
