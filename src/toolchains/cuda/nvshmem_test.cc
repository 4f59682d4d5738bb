// NVSHMEM for real, with the headers and device library of NVIDIA's wheel (installed by
// scripts/install-deps.sh): both backends link a kernel that calls nvshmem_ device functions.
#include <gtest/gtest.h>

#include <sstream>

#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln::cuda {
namespace {

namespace fs = std::filesystem;

constexpr const char* kNvshmemKernel = R"(#include <nvshmem.h>
extern "C" __global__ void kiln_put(int* dst, int value) {
  int pe = (nvshmem_my_pe() + 1) % nvshmem_n_pes();
  nvshmem_int_p(dst, value, pe);
}
)";

// Symbols a cubin may leave to the CUDA driver, which resolves them when it loads the module.
bool driver_provided(const std::string& symbol) {
  return symbol == "vprintf" || symbol.starts_with(".nv.reservedSmem");
}

TEST(Nvshmem, BothBackendsLinkTheDeviceLibraryIntoACubin) {
  fs::path home = KILN_TEST_NVSHMEM_HOME;
  if (!fs::exists(home / "include/nvshmem.h")) {
    GTEST_SKIP() << "NVSHMEM is not in " << home << " (scripts/install-deps.sh installs it)";
  }
  try {
    find_cuda_path();
  } catch (const Error& e) {
    GTEST_SKIP() << "needs the CUDA toolkit: " << e.what();
  }
  testing::ScopedEnv nvshmem_home("NVSHMEM_HOME", home.string());
  EXPECT_TRUE(uses_nvshmem(kNvshmemKernel));
  for (Backend backend : {Backend::nvcc, Backend::nvrtc}) {
    SCOPED_TRACE(backend_name(backend));
    TempDirectory dir;
    // Asking for PTX still gives a cubin: linking needs one.
    std::string cubin = compile_cuda(
        kNvshmemKernel,
        {.format = Format::ptx, .arch = "sm_90", .output = dir / "k.cubin", .backend = backend});
    ASSERT_EQ(cubin.substr(0, 4),
              "\x7f"
              "ELF");
    RunResult symbols = run({.argv = {"readelf", "-sW", (dir / "k.cubin").string()}});
    ASSERT_TRUE(symbols.ok()) << symbols.output;
    std::istringstream lines(symbols.output);
    int nvshmem_defined = 0;
    bool kernel = false;
    for (std::string line; std::getline(lines, line);) {
      std::istringstream fields(line);
      std::vector<std::string> f;
      for (std::string word; fields >> word;) f.push_back(word);
      if (f.size() < 8) continue;
      const std::string& name = f.back();  // an "[<other>: N]" column may stand before Ndx
      if (f[f.size() - 2] == "UND") {
        EXPECT_TRUE(driver_provided(name)) << "unresolved: " << name;
      } else if (name.find("nvshmem") != std::string::npos) {
        ++nvshmem_defined;
      }
      kernel = kernel || name == "kiln_put";
    }
    EXPECT_GT(nvshmem_defined, 0) << "the device library's symbols were linked in";
    EXPECT_TRUE(kernel);
  }
}

}  // namespace
}  // namespace kiln::cuda
