// The CUDA check against the real toolkit, and against the guide's case built for real: a toolkit
// root whose bin/nvcc is a link to another toolkit's nvcc while its version file says 12.1.
#include <gtest/gtest.h>

#include <fstream>

#include <fmt/format.h>

#include "kiln/cuda.h"
#include "kiln/doctor.h"
#include "kiln/temp_directory.h"
#include "support.h"
#include "testing/test_support.h"

namespace kiln::doctor {
namespace {

namespace fs = std::filesystem;
using testing::ScopedEnv;

std::optional<fs::path> real_nvcc() {
  std::optional<fs::path> nvcc = detail::first_on_path("nvcc");
  if (!nvcc) return std::nullopt;
  return fs::canonical(*nvcc);
}

TEST(DoctorCuda, ThisMachinesToolkitsAgree) {
  std::optional<fs::path> nvcc = real_nvcc();
  if (!nvcc) GTEST_SKIP() << "nvcc is not on PATH";
  ScopedEnv unset("CUDA_PATH", std::nullopt);
  std::vector<Finding> findings = check_cuda();
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_EQ(findings[0].status, Status::pass) << findings[0].finding;
  EXPECT_NE(findings[0].finding.find(nvcc->parent_path().parent_path().string()), std::string::npos)
      << findings[0].finding;
  // The driver is either reported or its absence is said.
  EXPECT_NE(findings[0].finding.find("driver"), std::string::npos) << findings[0].finding;
}

TEST(DoctorCuda, CudaPathOfAnotherVersionFailsNamingBoth) {
  std::optional<fs::path> nvcc = real_nvcc();
  if (!nvcc) GTEST_SKIP() << "nvcc is not on PATH";
  fs::path real_root = nvcc->parent_path().parent_path();
  TempDirectory root;
  fs::create_directories(root / "bin");
  fs::create_symlink(*nvcc, root / "bin" / "nvcc");
  std::ofstream(root / "version.txt") << "CUDA Version 12.1.105\n";
  ScopedEnv cuda_path("CUDA_PATH", root.path().string());
  std::vector<Finding> findings = check_cuda();
  ASSERT_EQ(findings.size(), 1u);
  const Finding& f = findings[0];
  EXPECT_EQ(f.status, Status::fail) << f.finding;
  EXPECT_NE(f.finding.find(root.path().string()), std::string::npos) << f.finding;
  EXPECT_NE(f.finding.find("12.1"), std::string::npos) << f.finding;
  EXPECT_NE(f.finding.find(real_root.string()), std::string::npos) << f.finding;
  std::optional<cuda::CudaVersion> real = cuda::nvcc_version(*nvcc);
  ASSERT_TRUE(real);
  EXPECT_NE(f.finding.find(fmt::format("CUDA {}.{}", real->major, real->minor)), std::string::npos)
      << f.finding;
  EXPECT_NE(f.finding.find("CUDA_ERROR_INVALID_VALUE"), std::string::npos) << f.finding;
  EXPECT_NE(f.fix.find("CUDA_PATH"), std::string::npos) << f.fix;
  // The root's own version file disagreeing with its nvcc is named as well.
  EXPECT_NE(f.finding.find("its version file says CUDA 12.1"), std::string::npos) << f.finding;
}

}  // namespace
}  // namespace kiln::doctor
