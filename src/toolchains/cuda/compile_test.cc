// compile_cuda with the real nvcc and NVRTC (no GPU needed): every format each backend makes, for
// sm_80 and sm_90a, the seed's errors, and the seed's environment variables.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "backends.h"
#include "kiln/cache.h"
#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "nvrtc_source.h"
#include "testing/cuda_kernel.h"
#include "testing/test_support.h"

namespace kiln::cuda {
namespace {

namespace fs = std::filesystem;
using testing::ScopedEnv;

constexpr const char* kKernel = kiln::testing::kPreambleKernel;

class CudaCompile : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = testing::cuda_toolkit_missing()) GTEST_SKIP() << *why;
  }
};

std::uint16_t u16(const std::string& b, size_t at) {
  std::uint16_t v = 0;
  std::memcpy(&v, b.data() + at, 2);
  return v;
}

std::uint32_t u32(const std::string& b, size_t at) {
  std::uint32_t v = 0;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

// A cubin: a 64-bit ELF for EM_CUDA (190) whose flags name the SM.
void expect_cubin(const std::string& bytes, int sm) {
  ASSERT_GT(bytes.size(), 64u);
  EXPECT_EQ(bytes.substr(0, 4),
            "\x7f"
            "ELF");
  EXPECT_EQ(u16(bytes, 18), 190) << "e_machine";
  std::uint32_t flags = u32(bytes, 48);
  bool names_sm = (flags & 0xff) == static_cast<unsigned>(sm) ||
                  ((flags >> 8) & 0xff) == static_cast<unsigned>(sm);
  EXPECT_TRUE(names_sm) << "e_flags " << std::hex << flags << " for sm_" << std::dec << sm;
}

TEST_F(CudaCompile, EveryFormatOfBothBackendsForSm80AndSm90a) {
  for (Backend backend : {Backend::nvrtc, Backend::nvcc}) {
    for (const std::string arch : {"sm_80", "sm_90a"}) {
      SCOPED_TRACE(std::string(backend_name(backend)) + " " + arch);
      int sm = arch == "sm_80" ? 80 : 90;
      std::string ptx =
          compile_cuda(kKernel, {.format = Format::ptx, .arch = arch, .backend = backend});
      EXPECT_NE(ptx.find(".version "), std::string::npos);
      EXPECT_NE(ptx.find(".target " + arch), std::string::npos) << ptx.substr(0, 400);
      EXPECT_NE(ptx.find("kiln_test"), std::string::npos);
      expect_cubin(
          compile_cuda(kKernel, {.format = Format::cubin, .arch = arch, .backend = backend}), sm);
      if (backend == Backend::nvcc) {
        std::string fatbin =
            compile_cuda(kKernel, {.format = Format::fatbin, .arch = arch, .backend = backend});
        ASSERT_GE(fatbin.size(), 4u);
        EXPECT_EQ(u32(fatbin, 0), 0xBA55ED50u) << "fatbin magic";
      }
    }
  }
}

// The SMs of the cubins a fatbin holds (nvcc stores small ones uncompressed): each embedded ELF's
// e_flags name its SM.
std::set<int> embedded_sms(const std::string& fatbin) {
  std::set<int> sms;
  for (size_t at = fatbin.find("\x7f"
                               "ELF");
       at != std::string::npos && at + 52 <= fatbin.size(); at = fatbin.find("\x7f"
                                                                             "ELF",
                                                                             at + 4)) {
    std::uint32_t flags = u32(fatbin, at + 48);
    sms.insert(static_cast<int>((flags >> 8) & 0xff));
  }
  return sms;
}

// The seed's list-valued arch: several targets in one nvcc compile.
TEST_F(CudaCompile, SeveralTargetsWithNvccAndOneWithNvrtc) {
  std::string both = compile_cuda(
      kKernel, {.format = Format::fatbin, .archs = {"sm_80", "sm_90"}, .backend = Backend::nvcc});
  EXPECT_EQ(u32(both, 0), 0xBA55ED50u) << "fatbin magic";
  EXPECT_EQ(embedded_sms(both), (std::set<int>{80, 90}));
  // The seed's own spelling: nvcc arguments, passed as they are.
  std::string raw = compile_cuda(kKernel, {.format = Format::fatbin,
                                           .archs = {"-gencode", "arch=compute_75,code=sm_75",
                                                     "-gencode", "arch=compute_86,code=sm_86"},
                                           .backend = Backend::nvcc});
  EXPECT_EQ(embedded_sms(raw), (std::set<int>{75, 86}));
  expect_cubin(compile_cuda(kKernel, {.archs = {"sm_80"}}), 80);  // NVRTC: one arch is the arch
  EXPECT_THROW(compile_cuda(kKernel, {.archs = {"sm_80", "sm_90"}}), InvalidArgument);
  EXPECT_THROW(
      compile_cuda(kKernel, {.arch = "sm_80", .archs = {"sm_90"}, .backend = Backend::nvcc}),
      InvalidArgument);
  EXPECT_EQ(internal::gencode_options({"sm_90a", "compute_90", "-lineinfo"}),
            (std::vector<std::string>{"-gencode", "arch=compute_90a,code=sm_90a", "-gencode",
                                      "arch=compute_90,code=compute_90", "-lineinfo"}));
}

TEST_F(CudaCompile, DefaultsAndTheOutputFile) {
  TempDirectory dir;
  std::string cubin = compile_cuda(kKernel, {.arch = "sm_80", .output = dir / "k.cubin"});
  expect_cubin(cubin, 80);  // NVRTC, cubin by default
  EXPECT_EQ(testing::read_file(dir / "k.cubin"), cubin);
  std::string ptx = compile_cuda(kKernel, {.arch = "sm_80", .backend = Backend::nvcc});
  EXPECT_NE(ptx.find(".target sm_80"), std::string::npos) << "nvcc: PTX by default";
  // NVRTC respells the arch for the format: compute_ for PTX, sm_ for a cubin.
  expect_cubin(compile_cuda(kKernel, {.format = Format::cubin, .arch = "compute_80"}), 80);
}

TEST_F(CudaCompile, ASyntaxErrorCarriesTheSourceAndTheLog) {
  const std::string broken = "extern \"C\" __global__ void broken() { int x = ; }\n";
  for (Backend backend : {Backend::nvrtc, Backend::nvcc}) {
    try {
      compile_cuda(broken, {.arch = "sm_80", .backend = backend});
      ADD_FAILURE() << "expected ToolFailed from " << backend_name(backend);
    } catch (const ToolFailed& e) {
      std::string what = e.what();
      EXPECT_NE(what.find(broken), std::string::npos) << what;
      EXPECT_NE(
          what.find(backend == Backend::nvrtc ? "NVRTC compilation failed" : "Compilation error:"),
          std::string::npos)
          << what;
      EXPECT_NE(what.find("expected an expression"), std::string::npos) << what;
    }
  }
}

TEST_F(CudaCompile, EachBadRequestIsItsOwnClearError) {
  auto message = [](const std::function<void()>& fn) -> std::string {
    try {
      fn();
    } catch (const InvalidArgument& e) {
      return e.what();
    }
    return "no InvalidArgument";
  };
  EXPECT_NE(message([] {
              compile_cuda(kKernel, {.format = Format::fatbin, .arch = "sm_80"});
            }).find("NVRTC does not support fatbin"),
            std::string::npos);
  EXPECT_NE(message([] {
              backend_from_name("clang");
            }).find("cuda compiler must be 'nvcc' or 'nvrtc', got: clang"),
            std::string::npos);
  EXPECT_NE(message([] { format_from_name("elf"); }).find("'elf'"), std::string::npos);
  EXPECT_NE(message([] { compile_cuda(kKernel, {.arch = "sm_x9"}); }).find("sm_x9"),
            std::string::npos);
  EXPECT_NE(message([] {
              compile_cuda(kKernel, {.arch = "sm_x9", .backend = Backend::nvcc});
            }).find("sm_x9"),
            std::string::npos);
}

// nvcc told to only preprocess a comment, as C and without line markers, succeeds and writes an
// empty file: the seed's error, as a compiler that gave nothing usable.
TEST_F(CudaCompile, AnEmptyResultIsUnexpectedOutput) {
  try {
    compile_cuda("/* nothing */\n", {.format = Format::ptx,
                                     .arch = "sm_80",
                                     .options = {"-x", "c", "-E", "-Xcompiler", "-P"},
                                     .backend = Backend::nvcc,
                                     .use_cache = false});
    FAIL() << "an empty result was accepted";
  } catch (const UnexpectedOutput& e) {
    EXPECT_STREQ(e.what(), "Compilation error: empty result is generated");
  }
}

TEST_F(CudaCompile, NvccOnlyOptionsAreDroppedForNvrtcAndTheRestReachIt) {
  const std::string needs_define =
      "#if !KILN_DEFINED\n#error not defined\n#endif\n"
      "extern \"C\" __global__ void k() {}\n";
  expect_cubin(compile_cuda(needs_define, {.arch = "sm_80",
                                           .options = {"-O3", "-std=c++17", "-Xcompiler", "-fPIC",
                                                       "-shared", "-DKILN_DEFINED=1"}}),
               80);
  EXPECT_THROW(compile_cuda(needs_define, {.arch = "sm_80"}), ToolFailed);
}

TEST_F(CudaCompile, TensorMapIsDeclaredForNvrtc) {
  const std::string code =
      "#include <cuda.h>\n"
      "extern \"C\" __global__ void k(const __grid_constant__ CUtensorMap map, int* out) {\n"
      "  out[0] = sizeof(map) == 128;\n}\n";
  expect_cubin(compile_cuda(code, {.arch = "sm_90a"}), 90);
}

TEST_F(CudaCompile, CompileModePicksBackendAndFormat) {
  {
    ScopedEnv mode("TVM_CUDA_COMPILE_MODE", "NVRTC");
    expect_cubin(tvm_callback_cuda_compile(kKernel, "sm_80"), 80);
  }
  {
    ScopedEnv mode("TVM_CUDA_COMPILE_MODE", "nvcc");
    EXPECT_EQ(u32(tvm_callback_cuda_compile(kKernel, "sm_80"), 0), 0xBA55ED50u);
  }
  ScopedEnv mode("TVM_CUDA_COMPILE_MODE", "hipcc");
  try {
    tvm_callback_cuda_compile(kKernel, "sm_80");
    FAIL();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("Invalid TVM_CUDA_COMPILE_MODE: hipcc"),
              std::string::npos);
  }
}

TEST_F(CudaCompile, KernelDumpWritesSourceAndIntermediates) {
  TempDirectory dump;
  ScopedEnv env("TVM_KERNEL_DUMP", dump.path().string());
  std::string nvcc = compile_cuda(kKernel, {.arch = "sm_80", .backend = Backend::nvcc});
  EXPECT_EQ(u32(nvcc, 0), 0xBA55ED50u) << "dumping makes nvcc produce a fatbin";
  EXPECT_EQ(testing::read_file(dump / "tvm_kernels.cu"), kKernel);
  bool has_ptx = false;
  for (const auto& entry : fs::directory_iterator(dump.path())) {
    has_ptx = has_ptx || entry.path().extension() == ".ptx";
  }
  EXPECT_TRUE(has_ptx) << "nvcc --keep left its intermediates";
  EXPECT_EQ(testing::read_file(dump / "tvm_kernels.fatbin"), nvcc)
      << "the final fatbin stays in the dump directory, as the seed's";
  // Given an output file (the seed's path_target), nvcc writes that instead.
  TempDirectory dump2, out;
  ScopedEnv env_output("TVM_KERNEL_DUMP", dump2.path().string());
  std::string named = compile_cuda(
      kKernel, {.arch = "sm_80", .output = out / "k.fatbin", .backend = Backend::nvcc});
  EXPECT_EQ(testing::read_file(out / "k.fatbin"), named);
  EXPECT_FALSE(fs::exists(dump2 / "tvm_kernels.fatbin"));
  EXPECT_TRUE(fs::exists(dump2 / "tvm_kernels.cu"));
  TempDirectory nvrtc_dump;
  ScopedEnv env2("TVM_KERNEL_DUMP", nvrtc_dump.path().string());
  std::string cubin = compile_cuda(kKernel, {.arch = "sm_80"});
  EXPECT_NE(testing::read_file(nvrtc_dump / "tvm_kernels.cu").find("kiln_test"), std::string::npos);
  EXPECT_EQ(testing::read_file(nvrtc_dump / "tvm_kernels.cubin"), cubin);
  EXPECT_NE(testing::read_file(nvrtc_dump / "tvm_kernels.nvrtc.log").find("ptxas"),
            std::string::npos)
      << "ptxas -v reports through the NVRTC log";
}

TEST_F(CudaCompile, KernelDebugAddsDebugInfo) {
  std::string plain =
      compile_cuda(kKernel, {.format = Format::ptx, .arch = "sm_80", .backend = Backend::nvcc});
  ScopedEnv debug("TVM_KERNEL_DEBUG", "1");
  std::string debug_ptx =
      compile_cuda(kKernel, {.format = Format::ptx, .arch = "sm_80", .backend = Backend::nvcc});
  EXPECT_EQ(plain.find(".target sm_80, debug"), std::string::npos);
  EXPECT_NE(debug_ptx.find(".target sm_80, debug"), std::string::npos) << debug_ptx.substr(0, 400);
}

TEST_F(CudaCompile, PtxasAndNvrtcOptionsFromTheEnvironmentReachTheCompiler) {
  for (Backend backend : {Backend::nvrtc, Backend::nvcc}) {
    SCOPED_TRACE(backend_name(backend));
    ScopedEnv extra("TVM_CUDA_PTXAS_EXTRA_OPTS", "--kiln-no-such-ptxas-flag");
    try {
      compile_cuda(kKernel, {.format = Format::cubin, .arch = "sm_80", .backend = backend});
      ADD_FAILURE() << "ptxas accepted an unknown flag?";
    } catch (const ToolFailed& e) {
      EXPECT_NE(std::string(e.what()).find("kiln-no-such-ptxas-flag"), std::string::npos)
          << e.what();
    }
  }
  {
    ScopedEnv level("TVM_CUDA_PTXAS_REG_LEVEL", "7");
    try {
      compile_cuda("#error stop\n", {.arch = "sm_80"});
    } catch (const ToolFailed& e) {
      EXPECT_NE(e.command_line().find("--ptxas-options=--register-usage-level=7"),
                std::string::npos)
          << e.command_line();
    }
  }
  ScopedEnv nvrtc_extra("TVM_CUDA_NVRTC_EXTRA_OPTS", "-DKILN_DEFINED=1 -DKILN_OTHER=\"a b\"");
  expect_cubin(compile_cuda("#if !KILN_DEFINED\n#error no\n#endif\n"
                            "extern \"C\" __global__ void k() {}\n",
                            {.arch = "sm_80"}),
               80);
}

TEST_F(CudaCompile, NoFastMathSwitchesToIeeeDivision) {
  const std::string div = "extern \"C\" __global__ void k(float* a) { a[0] = a[1] / a[2]; }\n";
  std::string fast =
      compile_cuda(div, {.format = Format::ptx, .arch = "sm_80", .backend = Backend::nvcc});
  ScopedEnv slow("TVM_CUDA_NVCC_NO_FAST_MATH", "1");
  std::string ieee =
      compile_cuda(div, {.format = Format::ptx, .arch = "sm_80", .backend = Backend::nvcc});
  EXPECT_EQ(fast.find("div.rn.f32"), std::string::npos) << fast;
  EXPECT_NE(ieee.find("div.rn.f32"), std::string::npos) << ieee;
}

// TVM after 0.27 lets NVRTC compiles opt out of fast math the same way.
TEST_F(CudaCompile, NvrtcNoFastMathGivesIeeeDivision) {
  const std::string div = "extern \"C\" __global__ void k(float* a) { a[0] = a[1] / a[2]; }\n";
  ScopedEnv uncached("KILN_NO_CACHE", "1");
  std::string fast = compile_cuda(div, {.format = Format::ptx, .arch = "sm_80"});
  ScopedEnv slow("TVM_CUDA_NVRTC_NO_FAST_MATH", "1");
  std::string ieee = compile_cuda(div, {.format = Format::ptx, .arch = "sm_80"});
  EXPECT_EQ(fast.find("div.rn.f32"), std::string::npos) << fast;
  EXPECT_NE(ieee.find("div.rn.f32"), std::string::npos) << ieee;
}

// kiln's faster layout (leading #includes first, automatic PCH) gives exactly what the seed's
// preamble and options give.
TEST_F(CudaCompile, KilnsNvrtcLayoutGivesTheSeedsResult) {
  using namespace internal;
  auto without_comments = [](const std::string& ptx) {
    std::string kept;
    std::istringstream lines(ptx);
    for (std::string line; std::getline(lines, line);) {
      if (!line.starts_with("//")) kept += line + "\n";
    }
    return kept;
  };
  for (Format format : {Format::ptx, Format::cubin}) {
    Request request{kKernel, format, "sm_90a", {}, false};
    std::string arch = spelled_arch(request);
    std::vector<std::string> options = nvrtc_options(request, arch);
    std::vector<std::string> seed_options;
    for (const std::string& option : options) {
      if (option != "-pch") seed_options.push_back(option);
    }
    bool cubin = format == Format::cubin;
    std::string seed =
        run_nvrtc(kKernel, seed_nvrtc_source(kKernel, false), seed_options, cubin).bytes;
    std::string kiln = compile_cuda(kKernel, {.format = format, .arch = "sm_90a"});
    if (cubin) {
      EXPECT_EQ(kiln.size(), seed.size());
      EXPECT_TRUE(kiln == seed) << "the cubins differ";
    } else {
      EXPECT_EQ(without_comments(kiln), without_comments(seed));
    }
  }
}

// What the cache directory holds besides kiln's compile server (its own subdirectory).
std::vector<std::string> cache_entries(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  // Entries are named by their keys (32 hex digits); the servers' files, the counters and the
  // tools' content hashes lie beside them.
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::string name = entry.path().filename().string();
    if (name.size() == 32 && name.find_first_not_of("0123456789abcdef") == std::string::npos) {
      names.push_back(name);
    }
  }
  return names;
}

TEST_F(CudaCompile, TheKernelCacheHitsOnlyWhenEverythingMatches) {
  TempDirectory dir;
  ScopedEnv on("KILN_NO_CACHE", std::nullopt);
  ScopedEnv where("KILN_CACHE_DIR", dir.path().string());
  auto entries = [&] { return cache_entries(dir.path()); };
  CompileOptions base{.format = Format::cubin, .arch = "sm_80"};
  std::string first = compile_cuda(kKernel, base);
  // One entry a compile: the headers it read (direct mode; none here but the toolkit's), an
  // empty line, then the output.
  ASSERT_EQ(entries().size(), 1u);
  // A hit really comes from the cache: plant other bytes under the output's key.
  Cache cache = Cache::open({.directory = dir.path(), .enabled = true});
  std::string key;
  for (const std::string& entry : entries()) {
    if (cache.get(entry) == "\n" + first) key = entry;
  }
  ASSERT_FALSE(key.empty());
  cache.put(key, "\nplanted");
  EXPECT_EQ(compile_cuda(kKernel, base), "planted");
  cache.put(key, "\n" + first);
  EXPECT_EQ(compile_cuda(kKernel, base), first);
  EXPECT_EQ(entries().size(), 1u);
  // Each part of the key, changed alone, misses.
  size_t expected = 1;
  auto misses = [&](const std::string& code, const CompileOptions& options, const char* what) {
    compile_cuda(code, options);
    expected += 1;
    EXPECT_EQ(entries().size(), expected) << what << " did not change the key";
  };
  misses(kKernel, {.format = Format::cubin, .arch = "sm_90a"}, "the arch");
  misses(kKernel, {.format = Format::ptx, .arch = "sm_80"}, "the format");
  misses(kKernel, {.format = Format::cubin, .arch = "sm_80", .options = {"-DKILN_X=1"}},
         "an option");
  misses(std::string(kKernel) + "// edited\n", base, "the source");
  misses(kKernel, {.format = Format::cubin, .arch = "sm_80", .backend = Backend::nvcc},
         "the backend");
  {
    ScopedEnv level("TVM_CUDA_PTXAS_REG_LEVEL", "8");
    misses(kKernel, base, "TVM_CUDA_PTXAS_REG_LEVEL");
  }
  {
    ScopedEnv debug("TVM_KERNEL_DEBUG", "1");
    misses(kKernel, {.format = Format::cubin, .arch = "sm_80", .backend = Backend::nvcc},
           "TVM_KERNEL_DEBUG");
  }
  compile_cuda(kKernel, {.format = Format::cubin, .arch = "sm_80", .use_cache = false});
  EXPECT_EQ(entries().size(), expected) << "use_cache = false stores nothing";
}

TEST_F(CudaCompile, FourProcessesCompilingTheSameKernelAgreeAndLeaveOneEntry) {
  TempDirectory dir;
  std::map<std::string, std::optional<std::string>> env = {{"KILN_CACHE_DIR", dir.path().string()},
                                                           {"KILN_NO_CACHE", std::nullopt}};
  std::vector<RunResult> results(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      results[i] =
          run({.argv = testing::child_argv("cuda-compile", {kKernel, "sm_80"}), .env = env});
    });
  }
  for (auto& t : threads) t.join();
  std::string expected = cache_key({compile_cuda(kKernel, {.arch = "sm_80", .use_cache = false})});
  for (const RunResult& r : results) {
    EXPECT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output, expected + "\n");
  }
  EXPECT_EQ(cache_entries(dir.path()).size(), 1u) << "one entry, no temporary file";
}

// The command lines keep the seed's order of flags.
TEST_F(CudaCompile, FlagsComeInTheSeedsOrder) {
  auto command_of = [](Backend backend) {
    try {
      compile_cuda("#error stop\n",
                   {.arch = "sm_80", .options = {"-DKILN_USER=1"}, .backend = backend});
    } catch (const ToolFailed& e) {
      return e.command_line();
    }
    return std::string("no failure");
  };
  ScopedEnv debug("TVM_KERNEL_DEBUG", "1");
  auto in_order = [](const std::string& line, const std::vector<std::string>& flags) {
    size_t at = 0;
    for (const std::string& flag : flags) {
      size_t next = line.find(flag, at);
      EXPECT_NE(next, std::string::npos) << flag << " missing or out of order in\n" << line;
      if (next == std::string::npos) return;
      at = next + flag.size();
    }
  };
  in_order(command_of(Backend::nvcc),
           {"--ptx", "-O3", "-g", "-G", "-arch sm_80", "-U__CUDA_NO_HALF_OPERATORS__",
            "-U__CUDA_NO_BFLOAT162_CONVERSIONS__", "--expt-relaxed-constexpr",
            "--expt-extended-lambda", "--use_fast_math",
            "--ptxas-options=-v,--register-usage-level=10,--warn-on-local-memory-usage",
            "-DKILN_USER=1", "-o", "tvm_kernels.cu"});
  in_order(command_of(Backend::nvrtc),
           {"--gpu-architecture=sm_80", "-default-device", "--device-int128", "-I",
            "-D__NV_SILENCE_DEPRECATION_BEGIN=", "-D__NV_SILENCE_HOST_DEPRECATION_END=",
            "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_BFLOAT162_CONVERSIONS__",
            "--use_fast_math", "--ptxas-options=-v", "--ptxas-options=--register-usage-level=10",
            "--ptxas-options=--warn-on-local-memory-usage", "-DKILN_USER=1"});
}

// Kernels that use what NVRTC's --minimal would omit (textures, the runtime API's types) compile.
TEST_F(CudaCompile, TexturesAndTheRuntimeApiStillCompile) {
  const std::string texture =
      "extern \"C\" __global__ void k(cudaTextureObject_t t, float* out) {\n"
      "  out[threadIdx.x] = tex1Dfetch<float>(t, threadIdx.x);\n}\n";
  expect_cubin(compile_cuda(texture, {.arch = "sm_80"}), 80);
}

TEST_F(CudaCompile, NvrtcVersionAndArchitectures) {
  auto [major, minor] = nvrtc_version();
  EXPECT_GE(major, 11);
  std::vector<int> archs = nvrtc_supported_archs();
  EXPECT_NE(std::find(archs.begin(), archs.end(), 80), archs.end());
  EXPECT_NE(std::find(archs.begin(), archs.end(), 90), archs.end());
  (void)minor;
}

// Where NVRTC cannot be loaded, asking for it is an error naming what was tried; the nvcc
// backend and the rest of kiln need no NVRTC (kiln links no CUDA library).
TEST(CudaWithoutNvrtc, AskingForItNamesWhatWasTried) {
  RunResult child = run({.argv = testing::child_argv("nvrtc-version"),
                         .env = {{"KILN_NVRTC", "/nonexistent/libnvrtc.so.99"}}});
  EXPECT_EQ(child.exit_code, 1) << child.output;
  EXPECT_NE(child.output.find("NVRTC (libnvrtc.so, from the CUDA toolkit) is not available"),
            std::string::npos)
      << child.output;
  EXPECT_NE(child.output.find("/nonexistent/libnvrtc.so.99: no such file"), std::string::npos)
      << child.output;
  RunResult needed = run({.argv = {"readelf", "-d", testing::self_exe()}});
  if (needed.ok()) {
    for (const char* lib : {"libnvrtc", "libcuda.so", "libcudart", "libnvJitLink"}) {
      EXPECT_EQ(needed.output.find(lib), std::string::npos) << lib << " is linked";
    }
  }
}

}  // namespace
}  // namespace kiln::cuda
