// Toolkit finders against synthetic trees (each layout the seed knows, and kiln's additions) and
// against the real toolkit; compute versions and predicates.
#include <gtest/gtest.h>

#include <fstream>

#include "internal/shell_words.h"
#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln::cuda {
namespace {

namespace fs = std::filesystem;
using testing::ScopedEnv;

void write(const fs::path& path, const std::string& text = "") {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

TEST(CudaVersion, ReadsEachVersionFileLayout) {
  TempDirectory plain, debian, json;
  write(plain / "version.txt", "CUDA Version 11.2.67\n");
  write(debian / "lib/cuda/version.txt", "12.0.140\n");
  write(json / "version.json", R"({"cuda": {"name": "CUDA SDK", "version": "12.4.131"}})");
  EXPECT_EQ(get_cuda_version(plain.path()), (CudaVersion{11, 2, 67}));
  EXPECT_EQ(get_cuda_version(debian.path()), (CudaVersion{12, 0, 140}));
  EXPECT_EQ(get_cuda_version(json.path()), (CudaVersion{12, 4, 131}));
  EXPECT_EQ(get_cuda_version(json.path()).to_string(), "12.4.131");
}

TEST(CudaVersion, BadFilesAndNothingAtAllAreErrorsThatSayWhere) {
  TempDirectory bad, empty;
  write(bad / "version.txt", "CUDA Version unknown\n");
  EXPECT_NE(testing::error_of([&] { get_cuda_version(bad.path()); }).find("version.txt"),
            std::string::npos);
  std::string nothing = testing::error_of([&] { get_cuda_version(empty.path()); });
  EXPECT_NE(nothing.find("version.json"), std::string::npos) << nothing;
  EXPECT_NE(nothing.find("bin/nvcc"), std::string::npos) << nothing;
}

TEST(CudaVersion, EachWayOfFailingHasItsOwnClass) {
  TempDirectory bad_txt, bad_json, silent_nvcc, not_executable, empty;
  write(bad_txt / "version.txt", "CUDA Version unknown\n");
  EXPECT_THROW(get_cuda_version(bad_txt.path()), UnexpectedOutput);
  write(bad_json / "version.json", R"({"cuda": {"name": "CUDA SDK"}})");
  EXPECT_THROW(get_cuda_version(bad_json.path()), UnexpectedOutput);
  // A real program that runs and succeeds but names no CUDA release.
  fs::create_directories(silent_nvcc / "bin");
  fs::create_symlink("/bin/true", silent_nvcc / "bin" / "nvcc");
  EXPECT_THROW(get_cuda_version(silent_nvcc.path()), UnexpectedOutput);
  write(not_executable / "bin" / "nvcc", "not a program");
  fs::permissions(not_executable / "bin" / "nvcc", fs::perms::owner_read);
  try {
    get_cuda_version(not_executable.path());
    FAIL() << "ran a file without execute permission";
  } catch (const ToolNotExecutable& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with("Cannot read cuda version: ")) << e.what();
  }
  EXPECT_THROW(get_cuda_version(empty.path()), FileNotFound);
}

// This machine's toolkit has no version file: the version comes from `nvcc --version`.
TEST(CudaVersion, TheRealToolkitThroughNvccVersion) {
  fs::path cuda;
  try {
    cuda = find_cuda_path();
  } catch (const Error& e) {
    GTEST_SKIP() << "no CUDA toolkit: " << e.what();
  }
  CudaVersion version = get_cuda_version(cuda);
  RunResult nvcc = run({.argv = {(cuda / "bin/nvcc").string(), "--version"}});
  ASSERT_TRUE(nvcc.ok()) << nvcc.output;
  EXPECT_NE(nvcc.output.find("V" + version.to_string()), std::string::npos)
      << version.to_string() << " vs\n"
      << nvcc.output;
  EXPECT_GE(version.major, 11);
  EXPECT_TRUE(have_cudagraph());
}

TEST(CudaPath, EnvironmentThenNvccOnPathThenUsrLocal) {
  TempDirectory fake;
  {
    ScopedEnv cuda_path("CUDA_PATH", fake.path().string());
    EXPECT_EQ(find_cuda_path(), fake.path());
  }
  ScopedEnv no_cuda_path("CUDA_PATH", std::nullopt);
  // A bin/nvcc on PATH: its toolkit is two levels above the real path (symlinks resolved).
  write(fake / "toolkit/bin/nvcc", "#!/bin/sh\n");
  fs::permissions(fake / "toolkit/bin/nvcc", fs::perms::owner_all);
  fs::create_directories(fake / "links");
  fs::create_symlink(fake / "toolkit/bin/nvcc", fake / "links/nvcc");
  {
    ScopedEnv path("PATH", (fake / "links").string());
    EXPECT_EQ(find_cuda_path(), fs::canonical(fake / "toolkit"));
  }
  ScopedEnv path("PATH", fake.path().string());  // no nvcc on PATH
  if (fs::exists("/usr/local/cuda/bin/nvcc")) {
    EXPECT_EQ(find_cuda_path(), fs::path("/usr/local/cuda"));
  } else {
    EXPECT_THROW(find_cuda_path(), FileNotFound);
  }
}

TEST(Libdevice, PicksTheLargestArchNotAboveTheTarget) {
  TempDirectory cuda;
  ScopedEnv cuda_path("CUDA_PATH", cuda.path().string());
  write(cuda / "version.txt", "CUDA Version 12.4.1");
  for (const char* name : {"libdevice.compute_50.10.bc", "libdevice.compute_70.10.bc",
                           "libdevice.compute_90.10.bc", "other.bc"}) {
    write(cuda / "nvvm/libdevice" / name);
  }
  EXPECT_EQ(find_libdevice_path(80).filename(), "libdevice.compute_70.10.bc");
  EXPECT_EQ(find_libdevice_path(90).filename(), "libdevice.compute_90.10.bc");
  EXPECT_THROW(find_libdevice_path(30), FileNotFound);
  write(cuda / "nvvm/libdevice/libdevice.10.bc");  // CUDA 12's single file serves any arch
  EXPECT_EQ(find_libdevice_path(30).filename(), "libdevice.10.bc");
  EXPECT_EQ(find_libdevice_path(80).filename(), "libdevice.compute_70.10.bc");
}

TEST(Libdevice, OldToolkitsAndDebiansLayout) {
  TempDirectory old, debian;
  write(old / "version.txt", "CUDA Version 11.2.152");
  write(old / "nvvm/libdevice/libdevice.10.bc");
  write(debian / "lib/cuda/version.txt", "12.0.140");
  write(debian / "lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc");
  {
    ScopedEnv cuda_path("CUDA_PATH", old.path().string());
    EXPECT_EQ(find_libdevice_path(80), old / "nvvm/libdevice/libdevice.10.bc");
  }
  ScopedEnv cuda_path("CUDA_PATH", debian.path().string());
  EXPECT_EQ(find_libdevice_path(80), debian / "lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc");
}

TEST(Libdevice, TheRealToolkit) {
  try {
    find_cuda_path();
  } catch (const Error& e) {
    GTEST_SKIP() << "no CUDA toolkit: " << e.what();
  }
  fs::path libdevice = find_libdevice_path(80);
  EXPECT_TRUE(fs::is_regular_file(libdevice)) << libdevice;
  EXPECT_TRUE(libdevice.filename().string().starts_with("libdevice")) << libdevice;
}

// The seed's callback_libdevice_path: the path, or "" and a warning, never an exception.
TEST(Libdevice, TheCallbackWarnsAndReturnsNothingWhenThereIsNone) {
  TempDirectory cuda;
  write(cuda / "version.txt", "CUDA Version 12.4.1");
  write(cuda / "nvvm/libdevice/libdevice.compute_90.10.bc");
  ScopedEnv cuda_path("CUDA_PATH", cuda.path().string());
  std::string warning;
  EXPECT_EQ(callback_libdevice_path(90, &warning),
            (cuda / "nvvm/libdevice/libdevice.compute_90.10.bc").string());
  EXPECT_EQ(warning, "");
  EXPECT_EQ(callback_libdevice_path(80, &warning), "");
  EXPECT_TRUE(warning.starts_with("Cannot find libdevice path: Cannot find libdevice for arch 80"))
      << warning;
  EXPECT_EQ(callback_libdevice_path(80), "") << "no warning asked for";
  TempDirectory empty;
  ScopedEnv nowhere("CUDA_PATH", empty.path().string());
  EXPECT_EQ(callback_libdevice_path(80, &warning), "");
  EXPECT_NE(warning, "");
}

// The seed's have_cudagraph answers False, without an exception, where no toolkit says its
// version.
TEST(CudaVersion, NoToolkitMeansNoCudaGraph) {
  TempDirectory empty;  // no version file, no bin/nvcc
  ScopedEnv cuda_path("CUDA_PATH", empty.path().string());
  EXPECT_FALSE(have_cudagraph());
  write(empty / "version.txt", "CUDA Version 9.2.148");
  EXPECT_FALSE(have_cudagraph());
  write(empty / "version.txt", "CUDA Version 10.0.130");
  EXPECT_TRUE(have_cudagraph());
}

TEST(Nvshmem, VersionedIncludeDirsAndTheWheelLayout) {
  TempDirectory home, wheel;
  write(home / "include/nvshmem_12/nvshmem.h");
  write(home / "lib64/libnvshmem.a");
  {
    ScopedEnv nvshmem("NVSHMEM_HOME", home.path().string());
    NvshmemPaths paths = find_nvshmem_paths();
    EXPECT_EQ(paths.include_dir, home / "include/nvshmem_12");
    EXPECT_EQ(paths.lib_dir, home / "lib64");
  }
  write(wheel / "include/nvshmem.h");
  write(wheel / "lib/libnvshmem_host.so.3");
  write(wheel / "lib/libnvshmem_device.a");
  ScopedEnv nvshmem("NVSHMEM_HOME", wheel.path().string());
  NvshmemPaths paths = find_nvshmem_paths();
  EXPECT_EQ(paths.include_dir, wheel / "include");
  EXPECT_EQ(paths.lib_dir, wheel / "lib");
}

TEST(Nvshmem, NotFoundListsTheRootsAndTheFix) {
  TempDirectory empty;
  ScopedEnv nvshmem("NVSHMEM_HOME", empty.path().string());
  std::string message = testing::error_of([] { find_nvshmem_paths(); });
  if (message == "no error") GTEST_SKIP() << "this machine has NVSHMEM under /usr or /usr/local";
  EXPECT_NE(message.find("Could not find NVSHMEM"), std::string::npos) << message;
  EXPECT_NE(message.find("  - " + empty.path().string()), std::string::npos) << message;
  EXPECT_NE(message.find("  - /usr/local"), std::string::npos) << message;
  EXPECT_NE(message.find("NVSHMEM_HOME"), std::string::npos) << message;
}

TEST(ComputeVersion, ArchSpellings) {
  EXPECT_EQ(compute_version_of_arch("sm_86"), "8.6");
  EXPECT_EQ(compute_version_of_arch("sm_90a"), "9.0.a");
  EXPECT_EQ(compute_version_of_arch("sm_100a"), "10.0.a");
  EXPECT_EQ(compute_version_of_arch("compute_80"), "8.0");
  EXPECT_EQ(get_target_compute_version("sm_75"), "7.5");
  for (const char* bad : {"sm_8", "gfx90a", "sm_", "86", "sm_x6", ""}) {
    EXPECT_THROW(compute_version_of_arch(bad), InvalidArgument) << bad;
  }
  EXPECT_EQ(parse_compute_version("8.6"), (std::pair{8, 6}));
  EXPECT_EQ(parse_compute_version("9.0.a"), (std::pair{9, 0}));
  for (const char* bad : {"8", "x.y", "8.", ".6", ""}) {
    std::string message = testing::error_of([&] { parse_compute_version(bad); });
    EXPECT_NE(message.find("Compute version parsing error"), std::string::npos) << bad;
  }
}

TEST(ComputeVersion, Predicates) {
  EXPECT_TRUE(have_fp16("5.3"));
  EXPECT_FALSE(have_fp16("5.2"));
  EXPECT_TRUE(have_fp16("6.0"));
  EXPECT_FALSE(have_int8("5.3"));
  EXPECT_TRUE(have_int8("6.1"));
  EXPECT_FALSE(have_tensorcore("6.1"));
  EXPECT_TRUE(have_tensorcore("7.0"));
  EXPECT_FALSE(have_bf16("7.5"));
  EXPECT_TRUE(have_bf16("8.0"));
  EXPECT_FALSE(have_fp8("8.6"));
  EXPECT_TRUE(have_fp8("8.9"));
  EXPECT_TRUE(have_fp8("9.0.a"));
  EXPECT_TRUE(have_fp4("10.0"));
  EXPECT_FALSE(have_fp4("10.1"));
  EXPECT_FALSE(have_fp4("9.0"));
  EXPECT_THROW(have_bf16("eight"), InvalidArgument);
}

// With no arch and no GPU, the error says what was tried and asks for an arch: never a default.
TEST(ComputeVersion, NoArchAndNoDeviceAsksForAnArch) {
  std::string why;
  if (device_compute_version(&why)) GTEST_SKIP() << "this machine has a CUDA device";
  EXPECT_FALSE(why.empty());
  std::string message = testing::error_of([] { get_target_compute_version(); });
  EXPECT_NE(message.find(why), std::string::npos) << message;
  EXPECT_NE(message.find("-arch=sm_xx"), std::string::npos) << message;
}

TEST(ShellWords, SplitsLikeAShellWithoutRunningOne) {
  using kiln::internal::split_shell_words;
  EXPECT_EQ(split_shell_words("  -O1  --foo=bar ", "X"),
            (std::vector<std::string>{"-O1", "--foo=bar"}));
  EXPECT_EQ(split_shell_words(R"(-D'A B' "-DC=\"d\"" e\ f $(x) ;)", "X"),
            (std::vector<std::string>{"-DA B", "-DC=\"d\"", "e f", "$(x)", ";"}));
  EXPECT_TRUE(split_shell_words("", "X").empty());
  EXPECT_NE(testing::error_of([] {
              split_shell_words("'open", "TVM_CUDA_PTXAS_EXTRA_OPTS");
            }).find("TVM_CUDA_PTXAS_EXTRA_OPTS: an unterminated single quote"),
            std::string::npos);
  EXPECT_THROW(split_shell_words("end\\", "X"), InvalidArgument);
}

}  // namespace
}  // namespace kiln::cuda
