// A module of many kernels compiled in parts at once (nvrtc_parallel.h), with the real NVRTC, its
// compile server (this binary, re-executed) and the toolkit's ptxas: every kernel's machine code
// is the one compile's, and whatever the split could get wrong is compiled whole.
#include "nvrtc_parallel.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/paths.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "testing/cuda_kernel.h"
#include "testing/test_support.h"

namespace kiln::cuda {
namespace {

namespace fs = std::filesystem;
using internal::ptxas_flags_if_splittable;
using testing::ScopedEnv;

// What a module holds beside module_of's kernels: helpers after TVM's, and a statement at the end
// of some kernels (by index).
struct Extra {
  std::string helpers;
  std::map<int, std::string> statements;
};

// A module shaped as TVM writes one: helpers (one never used: a warning every part repeats),
// every kernel declared, then `kernels` kernels of about `bytes` of straight-line arithmetic each.
// `broken`: that kernel reads an undeclared name.
std::string module_of(int kernels, size_t bytes, int broken = -1, const Extra& extra = {}) {
  std::string code =
      "#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 530)\n#include <cuda_fp16.h>\n#endif\n"
      "static __device__ float twice(float x) { return 2.0f * x; }\n"
      "static __device__ float unused_helper(float x) { return x; }\n" +
      extra.helpers;
  for (int k = 0; k < kernels; ++k) {
    code += fmt::format(
        "extern \"C\" __global__ void k{}(float* __restrict__ out, "
        "const float* __restrict__ in);\n",
        k);
  }
  for (int k = 0; k < kernels; ++k) {
    code += fmt::format(
        "extern \"C\" __global__ void __launch_bounds__(128) k{}(float* __restrict__ "
        "out, const float* __restrict__ in) {{\n",
        k);
    code += "  float a0 = in[threadIdx.x], a1 = a0 + 1.0f, a2 = a0 * 0.5f, a3 = twice(a0);\n";
    size_t begin = code.size();
    for (int j = 0; code.size() - begin < bytes; ++j) {
      code += fmt::format("  a{} = a{} * {}.{}f + in[(threadIdx.x + {}) & 1023];\n", j % 4,
                          (j + 1) % 4, k + 1, j % 97, j * 7 + k);
    }
    if (k == broken) code += "  a0 += not_declared_anywhere;\n";
    if (auto statement = extra.statements.find(k); statement != extra.statements.end()) {
      code += "  " + statement->second + "\n";
    }
    code += "  out[threadIdx.x] = a0 + a1 + a2 + a3;\n}\n\n";
  }
  return code;
}

// Every kernel but the first gets `statement`, the first `first`.
Extra in_kernels(int kernels, const std::string& helpers, const std::string& first,
                 const std::string& statement) {
  Extra extra{.helpers = helpers, .statements = {}};
  extra.statements[0] = first;
  for (int k = 1; k < kernels; ++k) extra.statements[k] = statement;
  return extra;
}

// What the kernels can tell of a cubin: its symbols (name, size, type, binding, visibility and
// the section's name, not where in it) and the sizes of its sections of device variables.
struct ElfState {
  std::multiset<std::string> symbols;                    // a symbol twice is there twice
  std::map<std::string, std::string> variable_sections;  // .nv.global*, .nv.constant*: size
  bool operator==(const ElfState&) const = default;
};

std::vector<std::string> words_of(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

// `readelf -W -S -s` of the cubin in `file`, read.
ElfState elf_state(const fs::path& readelf, const fs::path& file) {
  RunResult listing = run({.argv = {readelf.string(), "-W", "-S", "-s", file.string()},
                           .timeout = std::chrono::seconds(60)});
  EXPECT_TRUE(listing.ok()) << listing.output;
  ElfState state;
  std::map<std::string, std::string> section_names;  // by index
  std::istringstream lines(listing.output);
  for (std::string line; std::getline(lines, line);) {
    size_t open = line.find('[');
    size_t close = line.find(']');
    std::vector<std::string> words = words_of(line);
    if (open != std::string::npos && close != std::string::npos && open < 4 &&
        line.find(':') == std::string::npos) {  // [Nr] Name Type Address Off Size ...
      std::vector<std::string> rest = words_of(line.substr(close + 1));
      if (rest.size() < 5 || rest[0] == "Name") continue;
      std::string index = line.substr(open + 1, close - open - 1);
      section_names[std::to_string(std::stoi(index))] = rest[0];
      if (rest[0].starts_with(".nv.global") || rest[0].starts_with(".nv.constant")) {
        state.variable_sections[rest[0]] = rest[4];
      }
    } else if (words.size() >= 7 && words[0].ends_with(':') && words[0] != "Num:") {
      // Num: Value Size Type Bind Vis [<other>: N] Ndx [Name]
      size_t at = 5;
      std::string vis = words[at++];
      if (at < words.size() && words[at].starts_with("[")) {
        while (at < words.size() && !words[at].ends_with("]")) vis += " " + words[at++];
        if (at < words.size()) vis += " " + words[at++];
      }
      if (at >= words.size()) continue;
      std::string ndx = words[at++];
      std::string name = at < words.size() ? words[at] : "";
      auto section = section_names.find(ndx);
      state.symbols.insert(fmt::format("{} size={} {} {} {} in {}", name, words[2], words[3],
                                       words[4], vis,
                                       section != section_names.end() ? section->second : ndx));
    }
  }
  return state;
}

std::string listed(const ElfState& state) {
  std::string text;
  for (const auto& [section, size] : state.variable_sections) {
    text += fmt::format("  section {} size 0x{}\n", section, size);
  }
  for (const std::string& symbol : state.symbols) text += "  " + symbol + "\n";
  return text;
}

class NvrtcParallel : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = testing::cuda_toolkit_missing()) GTEST_SKIP() << *why;
    std::string why;
    if (testing::real_nvrtc_for_test(false, why).empty()) GTEST_SKIP() << why;
    if (::access((find_cuda_path() / "bin" / "ptxas").c_str(), X_OK) != 0) {
      GTEST_SKIP() << "no ptxas in the toolkit: modules are compiled whole";
    }
  }

  CompileResult compile(const std::string& code, CompileOptions options = {}) {
    options.arch = "sm_80";
    options.use_cache = false;
    return cuda::compile(code, options);
  }

  // The module's cubin as `cuobjdump -sass` lists it, by function.
  std::map<std::string, std::string> functions(const std::string& cubin, const char* name) {
    fs::path file = dir_ / name;
    std::ofstream(file, std::ios::binary) << cubin;
    return testing::sass_by_function(testing::sass_listing(file));
  }

  TempDirectory dir_;
  ScopedEnv cache_{"KILN_CACHE_DIR", (dir_ / "cache").string()};  // its compile server's home
  ScopedEnv idle_{"KILN_SERVER_IDLE", "5"};
  // Small kernels, a small threshold: NVVM's time grows faster than a kernel's size.
  ScopedEnv split_{"KILN_NVRTC_SPLIT", "4096"};
  ScopedEnv server_{"KILN_NO_SERVER", std::nullopt};
};

TEST_F(NvrtcParallel, AModuleOfManyKernelsIsCompiledInPartsIntoTheSameMachineCode) {
  std::string code = module_of(6, 3 << 10);
  CompileResult parts = compile(code);
  EXPECT_EQ(parts.programs, 2U);
  ASSERT_EQ(parts.bytes.substr(0, 4),
            "\x7f"
            "ELF");
  CompileResult whole;
  {
    ScopedEnv off("KILN_NVRTC_SPLIT", "0");
    whole = compile(code);
  }
  EXPECT_EQ(whole.programs, 1U);
  for (int k = 0; k < 6; ++k) {
    EXPECT_EQ(testing::count_occurrences(parts.log, fmt::format("entry function 'k{}'", k)), 1U)
        << "ptxas -v's lines for each kernel:\n"
        << parts.log;
  }
  EXPECT_EQ(testing::count_occurrences(parts.log, "\"unused_helper\" was declared but never"), 1U)
      << "a warning every part repeats is told once:\n"
      << parts.log;
  if (!testing::find_cuobjdump()) GTEST_SKIP() << "no cuobjdump: the machine code is not compared";
  auto split = functions(parts.bytes, "parts.cubin");
  auto single = functions(whole.bytes, "whole.cubin");
  ASSERT_EQ(split.size(), 6U) << testing::sass_listing(dir_ / "parts.cubin");
  for (const auto& [name, sass] : single) {
    EXPECT_EQ(split[name], sass) << name << "'s machine code differs from the one compile's";
  }
}

TEST_F(NvrtcParallel, AModuleThatDoesNotCompileFailsAsItDoesWhole) {
  std::string code = module_of(6, 3 << 10, 2);
  std::string split = testing::error_of([&] { compile(code); });
  ScopedEnv off("KILN_NVRTC_SPLIT", "0");
  std::string whole = testing::error_of([&] { compile(code); });
  EXPECT_NE(whole.find("identifier \"not_declared_anywhere\" is undefined"), std::string::npos)
      << whole;
  EXPECT_EQ(split, whole);
}

TEST_F(NvrtcParallel, WhatTheSplitCouldChangeIsCompiledWhole) {
  std::string code = module_of(6, 3 << 10);
  EXPECT_EQ(compile(code, {.options = {"--maxrregcount=32"}}).programs, 1U)
      << "an option for ptxas that is not passed on";
  EXPECT_EQ(compile(code, {.format = Format::ptx}).programs, 1U) << "PTX is the one compile's";
  {
    ScopedEnv default_threshold("KILN_NVRTC_SPLIT", std::nullopt);
    EXPECT_EQ(compile(code).programs, 1U) << "too small to gain";
  }
  {
    ScopedEnv none("KILN_NO_SERVER", "1");
    EXPECT_EQ(compile(code).programs, 1U) << "NVRTC compiles one program at a time in a process";
  }
  EXPECT_EQ(compile(code, {.options = {"-DUNUSED=1", "-Xptxas", "-O3"}}).programs, 2U);
}

// A module of four kernels that splits in two at the default threshold (each group spares 32 KiB),
// and one of six small kernels that splits at the fixture's: each kernel but the first uses what
// the helpers define, the first too or otherwise.
constexpr int kKernels = 4;
constexpr size_t kKernelBytes = 34 << 10;
constexpr int kSmallKernels = 6;
constexpr size_t kSmallKernelBytes = 3 << 10;

// The split's result against the one compile's, as their cubins' symbols and variable sections.
class NvrtcParallelState : public NvrtcParallel {
 protected:
  void SetUp() override {
    NvrtcParallel::SetUp();
    if (IsSkipped()) return;
    std::optional<fs::path> found = which("readelf");
    if (!found) GTEST_SKIP() << "no readelf (binutils): the cubins' symbols are not compared";
    readelf_ = *found;
  }

  // `code` compiled with the split allowed (at the default threshold when `default_threshold`)
  // into `split`, then with it off into `whole`; their cubins must have the same symbols and
  // sections of variables. `debug`: what KILN_SERVER_DEBUG=1 printed while `split` was compiled.
  void expect_split_equals_whole(const std::string& code, bool default_threshold,
                                 CompileResult& split, CompileResult& whole,
                                 std::string* debug = nullptr) {
    {
      std::optional<ScopedEnv> threshold;
      if (default_threshold) threshold.emplace("KILN_NVRTC_SPLIT", std::nullopt);
      ScopedEnv told("KILN_SERVER_DEBUG", "1");
      ::testing::internal::CaptureStderr();
      split = compile(code);
      std::string printed = ::testing::internal::GetCapturedStderr();
      if (debug != nullptr) *debug = printed;
    }
    if (!calls_.empty()) split_compiles_ = compiles();
    {
      ScopedEnv off("KILN_NVRTC_SPLIT", "0");
      whole = compile(code);
    }
    ASSERT_EQ(whole.programs, 1U);
    std::ofstream(dir_ / "split.cubin", std::ios::binary) << split.bytes;
    std::ofstream(dir_ / "whole.cubin", std::ios::binary) << whole.bytes;
    ElfState parts = elf_state(readelf_, dir_ / "split.cubin");
    ElfState single = elf_state(readelf_, dir_ / "whole.cubin");
    EXPECT_FALSE(single.symbols.empty());
    EXPECT_EQ(parts, single) << "compiled as " << split.programs << " programs:\n"
                             << listed(parts) << "compiled whole:\n"
                             << listed(single);
  }

  size_t compiles() const {
    return testing::count_occurrences(testing::read_file(calls_), "compile\n");
  }

  fs::path readelf_;
  fs::path calls_;  // where the NVRTC stand-in counts compiles, when it is used
  size_t split_compiles_ = 0;
};

TEST_F(NvrtcParallelState, APlainModuleIsSplitIntoTheWholeCompilesSymbols) {
  CompileResult split;
  CompileResult whole;
  expect_split_equals_whole(module_of(kKernels, kKernelBytes), true, split, whole);
  EXPECT_EQ(split.programs, 2U) << "a module as TVM writes one is still split";
}

TEST_F(NvrtcParallelState, AnAnonymousNamespaceVariableIsOneVariable) {
  // k0 writes it, the others (in the other group too) read it: one variable, as in one compile.
  Extra extra = in_kernels(kKernels, "namespace { __device__ int flag; }\n", "flag = a0 > 0.0f;",
                           "a1 += flag;");
  CompileResult split;
  CompileResult whole;
  std::string debug;
  expect_split_equals_whole(module_of(kKernels, kKernelBytes, -1, extra), true, split, whole,
                            &debug);
  EXPECT_EQ(split.programs, 1U);
  EXPECT_NE(debug.find("one program: its code uses an anonymous namespace"), std::string::npos)
      << debug;
}

// Nothing in the source says it at once: the parts' PTX names the counter after their first
// kernel.
TEST_F(NvrtcParallelState, AStaticHelpersStaticCounterIsOneCounter) {
  Extra extra = in_kernels(kSmallKernels,
                           "static __device__ __noinline__ int next_ticket() {\n"
                           "  static __device__ int counter;\n"
                           "  return atomicAdd(&counter, 1);\n"
                           "}\n",
                           "a2 += next_ticket();", "a2 += next_ticket();");
  CompileResult split;
  CompileResult whole;
  std::string debug;
  expect_split_equals_whole(module_of(kSmallKernels, kSmallKernelBytes, -1, extra), false, split,
                            whole, &debug);
  EXPECT_EQ(split.programs, 1U);
  EXPECT_NE(debug.find("one program: a part defines _ZZN"), std::string::npos) << debug;
  EXPECT_NE(debug.find("_INTERNAL_"), std::string::npos) << debug;
}

TEST_F(NvrtcParallelState, AnAnonymousNamespaceConstantIsOneConstant) {
  Extra extra = in_kernels(
      kSmallKernels, "namespace { __constant__ float scale[4] = {1.0f, 2.0f, 3.0f, 4.0f}; }\n",
      "a3 *= scale[threadIdx.x & 3];", "a3 *= scale[threadIdx.x & 3];");
  CompileResult split;
  CompileResult whole;
  expect_split_equals_whole(module_of(kSmallKernels, kSmallKernelBytes, -1, extra), false, split,
                            whole);
  EXPECT_EQ(split.programs, 1U);
}

// NVVM names a program's strings $str, $str$1, ... in its own order: a module that prints is
// compiled whole, and once (not as parts, then whole when their PTX does not merge).
TEST_F(NvrtcParallelState, AModuleThatPrintsIsCompiledOnceAndWhole) {
  calls_ = dir_ / "calls";
  ScopedEnv standin("KILN_NVRTC", KILN_TEST_NVRTC_STANDIN);
  std::string why;
  ScopedEnv real("KILN_REAL_NVRTC", testing::real_nvrtc_for_test(false, why));
  ScopedEnv counted("KILN_NVRTC_CALLS", calls_.string());
  Extra extra = in_kernels(kSmallKernels, "", "if (a0 < -1e30f) printf(\"k0 %f\\n\", a0);",
                           "if (a1 < -1e30f) printf(\"other %f %f\\n\", a1, a2);");
  std::string code = module_of(kSmallKernels, kSmallKernelBytes, -1, extra);
  code.erase(0, code.find("#endif\n") + 7);  // no headers: no compile makes a precompiled one
  CompileResult split;
  CompileResult whole;
  std::string debug;
  expect_split_equals_whole(code, false, split, whole, &debug);
  EXPECT_EQ(split.programs, 1U);
  EXPECT_EQ(split.bytes, whole.bytes);
  EXPECT_EQ(split_compiles_, 1U) << "one compile, no parts:\n" << testing::read_file(calls_);
  EXPECT_EQ(compiles(), 2U) << testing::read_file(calls_);
  EXPECT_NE(debug.find("one program: its code uses printf"), std::string::npos) << debug;
}

TEST(PtxasFlagsIfSplittable, PassesPtxasItsOptionsAndRefusesWhatItDoesNotKnow) {
  auto flags = ptxas_flags_if_splittable({"--gpu-architecture=compute_80", "-default-device",
                                          "-I/usr/local/cuda/include", "-I", "/opt/include",
                                          "-DX=1", "--use_fast_math", "--ptxas-options=-v",
                                          "-Xptxas", "--warn-on-spills", "-D", "Y"});
  ASSERT_TRUE(flags.has_value());
  EXPECT_EQ(*flags, (std::vector<std::string>{"-v", "--warn-on-spills"}));
  for (const char* option : {"-G", "-lineinfo", "--maxrregcount=32", "-rdc=true", "--fmad=false",
                             "-dlto", "--ftz=true", "--device-debug"}) {
    EXPECT_FALSE(ptxas_flags_if_splittable({"-default-device", option}).has_value()) << option;
  }
  EXPECT_FALSE(ptxas_flags_if_splittable({"-Xptxas"}).has_value()) << "a flag without its value";
}

}  // namespace
}  // namespace kiln::cuda
