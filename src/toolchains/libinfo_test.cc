#include "kiln/libinfo.h"

#include <cstdlib>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kiln/paths.h"

namespace kiln {
namespace {

TEST(Libinfo, HeaderExample) {
  std::map<std::string, std::string> info = libinfo();
  EXPECT_EQ(info.at("KILN_VERSION"), describe().version);
  EXPECT_FALSE(info.at("GIT_COMMIT_HASH").empty());
  EXPECT_EQ(info.at("USE_CCACHE"), which("ccache") ? "ON" : "OFF") << "a probe, not a constant";
  std::string text = describe_text(describe());
  EXPECT_TRUE(text.starts_with("kiln version "));
}

TEST(Libinfo, TvmUseVariablesOverride) {
  ::setenv("TVM_USE_CUDA", "forced", 1);
  ::setenv("TVM_USE_NCCL", "ON", 1);
  auto info = libinfo();
  ::unsetenv("TVM_USE_CUDA");
  ::unsetenv("TVM_USE_NCCL");
  EXPECT_EQ(info.at("USE_CUDA"), "forced");
  EXPECT_EQ(info.at("USE_NCCL"), "ON") << "options kiln does not know are added";
  EXPECT_NE(libinfo().at("USE_CUDA"), "forced");
}

TEST(Libinfo, HasEveryKeyOfTvmSupport027) {
  auto info = libinfo();
  for (const char* key :
       {"USE_CUDA", "USE_LLVM", "USE_NCCL", "USE_NVTX", "USE_NVSHMEM", "USE_HEXAGON", "USE_CUDNN",
        "USE_CUTLASS", "USE_VULKAN", "USE_OPENCL", "USE_METAL", "USE_ROCM", "USE_CLML",
        "USE_NNAPI_RUNTIME", "USE_NNAPI_CODEGEN"}) {
    EXPECT_TRUE(info.contains(key)) << key;
  }
}

TEST(Describe, TextHasPlatformAndSortedOptions) {
  Description d = describe();
  EXPECT_FALSE(d.platform.at("sysname").empty());
  std::string text = describe_text(d);
  EXPECT_NE(text.find("uname: " + d.platform.at("sysname")), std::string::npos);
  EXPECT_NE(text.find("Built with " + d.compiler), std::string::npos);
  size_t build_type = text.find("\"BUILD_TYPE\"");
  size_t use_cuda = text.find("\"USE_CUDA\"");
  ASSERT_NE(build_type, std::string::npos);
  ASSERT_NE(use_cuda, std::string::npos);
  EXPECT_LT(build_type, use_cuda) << "options are sorted by key";
  EXPECT_NE(text.find("\n  \"USE_CUDA\": "), std::string::npos) << "options are indented JSON";
}

TEST(Describe, JsonRoundTrips) {
  Description d = describe();
  nlohmann::json j = nlohmann::json::parse(describe_json(d));
  EXPECT_EQ(j.at("version"), d.version);
  EXPECT_EQ(j.at("git_commit"), d.git_commit);
  EXPECT_EQ(j.at("platform").at("machine"), d.platform.at("machine"));
  using Options = std::map<std::string, std::string>;
  EXPECT_EQ(j.at("options").get<Options>(), d.options);
}

}  // namespace
}  // namespace kiln
