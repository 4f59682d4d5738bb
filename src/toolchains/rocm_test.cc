#include "kiln/rocm.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "kiln/error.h"
#include "kiln/paths.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "rocm_path.h"
#include "testing/test_support.h"

namespace kiln::rocm {
namespace {

namespace fs = std::filesystem;
using testing::ScopedEnv;

constexpr std::string_view kAllNames[] = {"oclc_daz_opt_on",
                                          "ocml",
                                          "irif",
                                          "oclc_correctly_rounded_sqrt_off",
                                          "oclc_correctly_rounded_sqrt_on",
                                          "oclc_daz_opt_off",
                                          "oclc_finite_only_off",
                                          "oclc_finite_only_on",
                                          "oclc_isa_version_803",
                                          "oclc_isa_version_900",
                                          "oclc_isa_version_906",
                                          "oclc_isa_version_1030",
                                          "oclc_unsafe_math_off",
                                          "oclc_unsafe_math_on",
                                          "oclc_wavefrontsize64_on",
                                          "oclc_abi_version_500"};

// A kernel calling device-library math (ocml) directly, as TVM's AMDGPU code does.
constexpr const char* kKernel = R"(float __ocml_sin_f32(float);
float __ocml_sqrt_f32(float);
__kernel void kiln_scale(__global float* a, float s) {
  int i = __builtin_amdgcn_workitem_id_x();
  a[i] = __ocml_sqrt_f32(a[i]) * s + __ocml_sin_f32(a[i]);
}
)";

// clang and ld.lld of the LLVM that built Debian's rocm-device-libs.
struct Toolchain {
  std::string clang;
  std::string lld;
};

std::optional<Toolchain> toolchain() {
  for (int major : {17, 16, 15}) {
    auto clang = which(fmt::format("clang-{}", major));
    auto lld = find_lld({.required = false, .llvm_major = major});
    if (clang && !lld.empty() && lld.front().find(std::to_string(major)) != std::string::npos) {
      return Toolchain{clang->string(), lld.front()};
    }
  }
  return std::nullopt;
}

TEST(Rocm, AKernelLinkedWithTheDeviceLibrariesBecomesACodeObject) {
  std::optional<Toolchain> tools = toolchain();
  if (!tools) GTEST_SKIP() << "needs clang-15 and ld.lld-15 (scripts/install-deps.sh)";
  std::vector<fs::path> bitcode;
  try {
    bitcode = callback_rocm_bitcode_path();
  } catch (const Error& e) {
    GTEST_SKIP() << "needs rocm-device-libs (scripts/install-deps.sh): " << e.what();
  }
  TempDirectory dir;
  std::ofstream(dir / "k.cl") << kKernel;
  for (const char* arch : {"gfx900", "gfx90a"}) {
    SCOPED_TRACE(arch);
    std::vector<std::string> argv = {tools->clang,
                                     "-x",
                                     "cl",
                                     "-cl-std=CL2.0",
                                     "-target",
                                     "amdgcn-amd-amdhsa",
                                     fmt::format("-mcpu={}", arch),
                                     "-nogpulib",
                                     "-O2",
                                     "-c",
                                     (dir / "k.cl").string(),
                                     "-o",
                                     (dir / "k.o").string()};
    for (const fs::path& library : bitcode) {
      argv.insert(argv.end(), {"-Xclang", "-mlink-builtin-bitcode", "-Xclang", library.string()});
    }
    RunResult compiled = run({.argv = argv});
    ASSERT_TRUE(compiled.ok()) << compiled.output;
    std::string code_object = callback_rocm_link(testing::read_file(dir / "k.o"), tools->lld);
    ASSERT_GT(code_object.size(), 64u);
    EXPECT_EQ(code_object.substr(0, 4),
              "\x7f"
              "ELF");
    std::uint16_t machine = 0;
    std::memcpy(&machine, code_object.data() + 18, 2);
    EXPECT_EQ(machine, 224) << "EM_AMDGPU";
    std::ofstream(dir / "k.co", std::ios::binary) << code_object;
    RunResult symbols = run({.argv = {"readelf", "-sW", (dir / "k.co").string()}});
    EXPECT_NE(symbols.output.find("kiln_scale.kd"), std::string::npos) << symbols.output;
  }
}

TEST(Rocm, AnUndefinedSymbolFailsWithTheLinkersMessage) {
  std::optional<Toolchain> tools = toolchain();
  if (!tools) GTEST_SKIP() << "needs clang-15 and ld.lld-15 (scripts/install-deps.sh)";
  TempDirectory dir;
  std::ofstream(dir / "bad.cl")
      << "void kiln_missing(void);\n__kernel void k(__global int* a) { kiln_missing(); }\n";
  RunResult compiled =
      run({.argv = {tools->clang, "-x", "cl", "-target", "amdgcn-amd-amdhsa", "-mcpu=gfx900",
                    "-nogpulib", "-c", (dir / "bad.cl").string(), "-o", (dir / "bad.o").string()}});
  ASSERT_TRUE(compiled.ok()) << compiled.output;
  try {
    rocm_link(dir / "bad.o", dir / "bad.co", tools->lld);
    FAIL() << "expected ToolFailed";
  } catch (const ToolFailed& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("Linking error using ld.lld:"), std::string::npos) << what;
    EXPECT_NE(what.find("undefined"), std::string::npos) << what;
    EXPECT_NE(what.find("kiln_missing"), std::string::npos) << what;
  }
  EXPECT_FALSE(fs::exists(dir / "bad.co"));
}

void make_tree(const fs::path& dir, std::string_view suffix, std::string_view skip = {}) {
  fs::create_directories(dir);
  for (std::string_view name : kAllNames) {
    if (name != skip) std::ofstream(dir / (std::string(name) + std::string(suffix)));
  }
}

TEST(RocmBitcode, BothSpellingsAndTheSeedsOrder) {
  TempDirectory dir;
  make_tree(dir / "new", ".bc");
  make_tree(dir / "old", ".amdgcn.bc");
  for (const char* tree : {"new", "old"}) {
    std::vector<fs::path> paths = callback_rocm_bitcode_path(dir / tree);
    ASSERT_EQ(paths.size(), std::size(kAllNames)) << tree;
    for (size_t i = 0; i < paths.size(); ++i) {
      EXPECT_TRUE(paths[i].filename().string().starts_with(std::string(kAllNames[i]) + "."));
    }
  }
  EXPECT_EQ(callback_rocm_bitcode_path(dir / "new")[1], dir / "new" / "ocml.bc");
  EXPECT_EQ(callback_rocm_bitcode_path(dir / "old")[1], dir / "old" / "ocml.amdgcn.bc");
}

TEST(RocmBitcode, OptionalAndRequiredLibraries) {
  TempDirectory dir;
  make_tree(dir / "no_irif", ".bc", "irif");
  make_tree(dir / "no_isa", ".bc", "oclc_isa_version_1030");
  make_tree(dir / "no_ocml", ".bc", "ocml");
  EXPECT_EQ(callback_rocm_bitcode_path(dir / "no_irif").size(), std::size(kAllNames) - 1);
  EXPECT_EQ(callback_rocm_bitcode_path(dir / "no_isa").size(), std::size(kAllNames) - 1);
  try {
    callback_rocm_bitcode_path(dir / "no_ocml");
    FAIL();
  } catch (const FileNotFound& e) {
    EXPECT_NE(std::string(e.what()).find("could not find bitcode ocml"), std::string::npos);
  }
}

// rocminfo's layout: the CPU agent first (its Name is no gfx), then two GPUs.
constexpr const char* kRocminfo = R"(ROCk module is loaded
=====================
HSA System Attributes
=====================
Runtime Version:         1.1
System Timestamp Freq.:  1000.000000MHz
==========
HSA Agents
==========
*******
Agent 1
*******
  Name:                    AMD EPYC 7763 64-Core Processor
  Uuid:                    CPU-XX
  Marketing Name:          AMD EPYC 7763 64-Core Processor
  Vendor Name:             CPU
  Device Type:             CPU
*******
Agent 2
*******
  Name:                    gfx90a
  Uuid:                    GPU-1a2b3c4d5e6f7a8b
  Marketing Name:          AMD Instinct MI210
  Vendor Name:             AMD
  Device Type:             GPU
  ISA Info:
    ISA 1
      Name:                    amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-
*******
Agent 3
*******
  Name:                    gfx1030
  Marketing Name:          AMD Radeon PRO W6800
  Device Type:             GPU
*** Done ***
)";

TEST(RocmArch, TheFirstGpuAgentAfterTheCpus) {
  EXPECT_EQ(parse_rocminfo(kRocminfo), "gfx90a");
  EXPECT_FALSE(parse_rocminfo("Agent 1\n  Name: AMD EPYC\n"));
}

TEST(RocmArch, NoRocminfoMeansGfx900AndSaysWhy) {
  TempDirectory rocm;  // a ROCm directory without bin/rocminfo
  RocmArch arch = get_rocm_arch(rocm.path());
  EXPECT_EQ(arch.arch, "gfx900");
  EXPECT_NE(arch.reason.find("rocminfo"), std::string::npos) << arch.reason;
  RocmArch nowhere = get_rocm_arch(rocm / "absent");
  EXPECT_EQ(nowhere.arch, "gfx900");
  EXPECT_NE(nowhere.reason.find("ROCm not detected"), std::string::npos) << nowhere.reason;
}

// As the seed's: the LLVM major TVM was built with comes first (ld.lld-<M>.0, ld.lld-<M>), then
// plain ld.lld; the Python side passes TVM's major.
TEST(Rocm, FindLldPrefersTheGivenLlvmMajor) {
  for (int major : {14, 15}) {
    if (!which(fmt::format("ld.lld-{}", major))) continue;
    std::vector<std::string> found = find_lld({.llvm_major = major});
    ASSERT_FALSE(found.empty());
    EXPECT_EQ(fs::path(found.front()).filename(), fmt::format("ld.lld-{}", major));
    if (which("ld.lld")) {
      EXPECT_EQ(fs::path(found.back()).filename(), "ld.lld") << "plain ld.lld after it";
    }
  }
}

// The last resort (/opt/rocm for real) counts only when it holds bin/hipcc, as in the seed.
TEST(RocmPath, TheDefaultRootNeedsHipcc) {
  TempDirectory root, empty_path;
  ScopedEnv no_rocm("ROCM_PATH", std::nullopt);
  ScopedEnv path("PATH", empty_path.path().string());  // no hipcc on PATH
  try {
    detail::find_rocm_path(root.path());
    FAIL() << "a root without bin/hipcc was taken for ROCm";
  } catch (const FileNotFound& e) {
    EXPECT_NE(std::string(e.what()).find((root / "bin/hipcc").string()), std::string::npos)
        << e.what();
  }
  fs::create_directories(root / "bin");
  std::ofstream(root / "bin/hipcc") << "#!/bin/sh\n";
  EXPECT_EQ(detail::find_rocm_path(root.path()), root.path());
  if (!fs::exists("/opt/rocm/bin/hipcc")) {
    EXPECT_THROW(find_rocm_path(), FileNotFound);
  }
}

TEST(RocmPath, EnvironmentFirstAndMatrixCores) {
  TempDirectory dir;
  {
    ScopedEnv rocm("ROCM_PATH", dir.path().string());
    EXPECT_EQ(find_rocm_path(), dir.path());
  }
  EXPECT_TRUE(have_matrixcore("9.0"));
  EXPECT_TRUE(have_matrixcore("9.0.a"));
  EXPECT_FALSE(have_matrixcore("7.0"));
  EXPECT_THROW(have_matrixcore("gfx"), InvalidArgument);
  if (which("ld.lld")) {
    EXPECT_FALSE(find_lld({.required = false, .llvm_major = 99}).empty())
        << "ld.lld itself is still a candidate";
  }
}

}  // namespace
}  // namespace kiln::rocm
