// Each seed name resolves and returns what the direct C++ call returns.
#include "kiln/callbacks.h"

#include <gtest/gtest.h>

#include <fstream>

#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/libinfo.h"
#include "kiln/paths.h"
#include "kiln/process.h"
#include "kiln/rocm.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln::callbacks {
namespace {

namespace fs = std::filesystem;

TEST(Callbacks, EverySeedNameIsThereAndDescribeListsThem) {
  std::vector<std::string> expected = {"tvm.support.nvcc.get_compute_version",
                                       "tvm.support.nvcc.supports_bf16",
                                       "tvm.support.nvcc.supports_fp4",
                                       "tvm.support.nvcc.supports_fp8",
                                       "tvm_callback_cuda_compile",
                                       "tvm_callback_libdevice_path",
                                       "tvm_callback_rocm_bitcode_path",
                                       "tvm_callback_rocm_get_arch",
                                       "tvm_callback_rocm_link"};
  EXPECT_EQ(names(), expected);
  Value described = Value::parse(describe_json(describe()));
  EXPECT_EQ(described["callbacks"], Value(expected));
}

TEST(Callbacks, PredicatesAndComputeVersion) {
  for (const char* version : {"7.5", "8.0", "8.9", "9.0", "10.0"}) {
    EXPECT_EQ(call("tvm.support.nvcc.supports_bf16", {version}), cuda::have_bf16(version));
    EXPECT_EQ(call("tvm.support.nvcc.supports_fp8", {version}), cuda::have_fp8(version));
    EXPECT_EQ(call("tvm.support.nvcc.supports_fp4", {version}), cuda::have_fp4(version));
  }
  EXPECT_EQ(call("tvm.support.nvcc.get_compute_version", {"sm_90a"}),
            cuda::get_target_compute_version("sm_90a"));
}

TEST(Callbacks, BadCallsAreClearErrors) {
  try {
    call("tvm_callback_opencl_compile", Value::array());
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("no callback named 'tvm_callback_opencl_compile'"),
              std::string::npos);
    EXPECT_NE(std::string(e.what()).find("tvm_callback_rocm_link"), std::string::npos);
  }
  EXPECT_THROW(call("tvm.support.nvcc.supports_bf16", Value::array()), InvalidArgument);
  EXPECT_THROW(call("tvm.support.nvcc.supports_bf16", {8}), InvalidArgument);
  EXPECT_THROW(call("tvm_callback_libdevice_path", {"eighty"}), InvalidArgument);
}

TEST(Callbacks, CudaCompileAndLibdevice) {
  try {
    cuda::find_cuda_path();
  } catch (const Error& e) {
    GTEST_SKIP() << "needs the CUDA toolkit: " << e.what();
  }
  EXPECT_EQ(call("tvm_callback_libdevice_path", {80}), cuda::find_libdevice_path(80).string());
  const std::string kernel = "extern \"C\" __global__ void k(float* a) { a[0] = 1.0f; }\n";
  testing::ScopedEnv mode("TVM_CUDA_COMPILE_MODE", "nvrtc");
  Value via_callback = call("tvm_callback_cuda_compile", {kernel, "sm_80"});
  ASSERT_TRUE(via_callback.is_binary());
  std::string direct = cuda::tvm_callback_cuda_compile(kernel, "sm_80");
  EXPECT_EQ(std::string(via_callback.get_binary().begin(), via_callback.get_binary().end()),
            direct);
}

TEST(Callbacks, RocmArchBitcodeAndLink) {
  EXPECT_EQ(call("tvm_callback_rocm_get_arch", Value::array()), rocm::get_rocm_arch().arch);
  try {
    auto direct = rocm::callback_rocm_bitcode_path();
    Value listed = call("tvm_callback_rocm_bitcode_path", Value::array());
    ASSERT_EQ(listed.size(), direct.size());
    for (size_t i = 0; i < direct.size(); ++i) EXPECT_EQ(listed[i], direct[i].string());
  } catch (const FileNotFound&) {  // no device libraries here: the callback says the same
    EXPECT_THROW(call("tvm_callback_rocm_bitcode_path", Value::array()), FileNotFound);
  }
  std::optional<fs::path> clang = which("clang-14");
  if (!clang || rocm::find_lld({.required = false}).empty()) {
    GTEST_SKIP() << "needs clang-14 and ld.lld for an AMDGPU object";
  }
  TempDirectory dir;
  std::ofstream(dir / "k.cl") << "__kernel void k(__global int* a) { a[0] = 7; }\n";
  RunResult compiled =
      run({.argv = {clang->string(), "-x", "cl", "-target", "amdgcn-amd-amdhsa", "-mcpu=gfx900",
                    "-nogpulib", "-c", (dir / "k.cl").string(), "-o", (dir / "k.o").string()}});
  ASSERT_TRUE(compiled.ok()) << compiled.output;
  std::string object = testing::read_file(dir / "k.o");
  // Value::array: a braced list of one binary value would be that value, not an array.
  Value linked =
      call("tvm_callback_rocm_link",
           Value::array({Value::binary(std::vector<std::uint8_t>(object.begin(), object.end()))}));
  ASSERT_TRUE(linked.is_binary());
  std::string direct = rocm::callback_rocm_link(object);
  EXPECT_EQ(std::string(linked.get_binary().begin(), linked.get_binary().end()), direct);
}

}  // namespace
}  // namespace kiln::callbacks
