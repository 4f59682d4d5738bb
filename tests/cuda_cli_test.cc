// kiln cuda and kiln cache, run as a user would. Skips, saying why, without a CUDA toolkit.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <regex>
#include <thread>

#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/temp_directory.h"
#include "testing/cuda_kernel.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::kiln_cli;

class CudaCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = testing::cuda_toolkit_missing()) GTEST_SKIP() << *why;
    std::ofstream(dir / "k.cu") << "#if !KILN_ON\n#error KILN_ON is not set\n#endif\n"
                                   "extern \"C\" __global__ void k(float* a) { a[0] *= 2; }\n";
    std::ofstream(dir / "broken.cu") << "__global__ void broken() { int x = ; }\n";
  }
  std::map<std::string, std::optional<std::string>> env() const {
    return {{"KILN_CACHE_DIR", (dir / "cache").string()}, {"KILN_NO_CACHE", std::nullopt}};
  }
  // The cache's files with their inodes: storing an entry again makes a new file. (Not the
  // lookup counters, which every run adds to.)
  std::map<std::string, ino_t> entries() const {
    std::map<std::string, ino_t> found;
    for (const auto& entry : fs::recursive_directory_iterator(dir / "cache")) {
      struct stat st {};
      if (entry.path().filename().string().starts_with("counters")) continue;
      if (entry.is_regular_file() && ::stat(entry.path().c_str(), &st) == 0) {
        found[entry.path().string()] = st.st_ino;
      }
    }
    return found;
  }
  TempDirectory dir;
};

TEST_F(CudaCli, InfoReportsTheToolkitAndWhyAnythingIsMissing) {
  RunResult r = kiln_cli({"cuda", "info", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.error_output;
  nlohmann::json j = nlohmann::json::parse(r.output);
  for (const char* key : {"cuda_path", "cuda_version", "nvrtc_version", "nvrtc_architectures",
                          "libdevice", "nvshmem", "device_compute_capability"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["cuda_version"], cuda::get_cuda_version().to_string());
  EXPECT_TRUE(j["nvrtc_architectures"].is_array());
  RunResult text = kiln_cli({"cuda", "info"});
  EXPECT_NE(text.output.find("cuda_version"), std::string::npos);
}

TEST_F(CudaCli, CompileWritesTheFormatAskedForAndPassesOptionsThrough) {
  RunResult cubin = kiln_cli({"cuda", "compile", (dir / "k.cu").string(), "--arch", "sm_80", "-o",
                              (dir / "k.cubin").string(), "--", "-DKILN_ON=1"},
                             env());
  ASSERT_EQ(cubin.exit_code, 0) << cubin.error_output;
  EXPECT_EQ(testing::read_file(dir / "k.cubin").substr(0, 4),
            "\x7f"
            "ELF");
  RunResult fatbin = kiln_cli(
      {"cuda", "compile", (dir / "k.cu").string(), "--backend", "nvcc", "--format", "fatbin",
       "--arch", "sm_90a", "-o", (dir / "k.fatbin").string(), "--", "-DKILN_ON=1"},
      env());
  ASSERT_EQ(fatbin.exit_code, 0) << fatbin.error_output;
  EXPECT_EQ(testing::read_file(dir / "k.fatbin").substr(0, 4), "\x50\xed\x55\xba");
  RunResult stats = kiln_cli({"cache", "stats"}, env());
  // Each compile stores one entry: the headers it read (direct mode) and its output.
  EXPECT_NE(stats.output.find("entries    2"), std::string::npos) << stats.output;
  RunResult clear = kiln_cli({"cache", "clear"}, env());
  EXPECT_NE(clear.output.find("removed 2 entries"), std::string::npos) << clear.output;
}

TEST_F(CudaCli, FailuresAreClearAndLeaveNoOutput) {
  RunResult syntax = kiln_cli({"cuda", "compile", (dir / "broken.cu").string(), "--arch", "sm_80",
                               "-o", (dir / "broken.cubin").string()},
                              env());
  EXPECT_EQ(syntax.exit_code, 1);
  EXPECT_NE(syntax.error_output.find("int x = ;"), std::string::npos) << syntax.error_output;
  EXPECT_NE(syntax.error_output.find("NVRTC compilation failed"), std::string::npos);
  EXPECT_EQ(dir.listdir(), (std::vector<std::string>{"broken.cu", "cache", "k.cu"}))
      << "no partial output";
  RunResult backend = kiln_cli({"cuda", "compile", (dir / "k.cu").string(), "--backend", "clang"});
  EXPECT_EQ(backend.exit_code, 2);
  RunResult fatbin = kiln_cli(
      {"cuda", "compile", (dir / "k.cu").string(), "--format", "fatbin", "--arch", "sm_80"}, env());
  EXPECT_EQ(fatbin.exit_code, 2);
  EXPECT_NE(fatbin.error_output.find("NVRTC does not support fatbin"), std::string::npos);
  RunResult missing = kiln_cli({"cuda", "compile", (dir / "missing.cu").string()});
  EXPECT_EQ(missing.exit_code, 2);
  std::string why;
  if (!cuda::device_compute_version(&why)) {
    RunResult no_arch = kiln_cli({"cuda", "compile", (dir / "k.cu").string()}, env());
    EXPECT_EQ(no_arch.exit_code, 2);
    EXPECT_NE(no_arch.error_output.find("--arch"), std::string::npos) << no_arch.error_output;
  }
}

// A header found through options after `--` is keyed: editing it between two compiles changes
// the output, and compiling again with nothing changed is a hit. Both backends; NVRTC through
// nvcc's dependency output (NVRTC has no dependency option), nvcc through its own -MD.
TEST_F(CudaCli, AHeaderFoundThroughOptionsAfterTheDashesIsKeyed) {
  fs::create_directories(dir / "inc");
  std::string kernel = "extern \"C\" __global__ void k(int* a) { a[0] = VALUE; }\n";
  std::ofstream(dir / "h.cu") << "#include \"h.h\"\n" << kernel;
  std::ofstream(dir / "bare.cu") << kernel;
  struct Case {
    std::string backend;
    std::string source;
    std::vector<std::string> options;
  };
  std::string inc = (dir / "inc").string();
  for (const Case& c : {Case{"nvrtc", "h.cu", {"-I", inc}}, Case{"nvcc", "h.cu", {"-I", inc}},
                        Case{"nvrtc", "bare.cu", {"-include", inc + "/h.h"}}}) {
    SCOPED_TRACE(c.backend + " " + c.options.front());
    std::vector<std::string> args = {"cuda",
                                     "compile",
                                     (dir / c.source).string(),
                                     "--backend",
                                     c.backend,
                                     "--format",
                                     "ptx",
                                     "--arch",
                                     "sm_80",
                                     "-o",
                                     (dir / "h.ptx").string(),
                                     "--"};
    args.insert(args.end(), c.options.begin(), c.options.end());
    auto compile = [&] {
      RunResult r = kiln_cli(args, env());
      EXPECT_EQ(r.exit_code, 0) << r.error_output;
      return testing::read_file(dir / "h.ptx");
    };
    std::ofstream(dir / "inc" / "h.h") << "#define VALUE 11111\n";
    std::string first = compile();
    EXPECT_NE(first.find("11111"), std::string::npos);
    std::ofstream(dir / "inc" / "h.h") << "#define VALUE 22222\n";
    std::string edited = compile();
    EXPECT_NE(edited.find("22222"), std::string::npos) << "the old output came from the cache";
    std::map<std::string, ino_t> before = entries();
    EXPECT_EQ(compile(), edited);
    EXPECT_EQ(entries(), before) << "an unchanged compile stored its entries again: not a hit";
  }
}

// No usable cache directory (none named at all; a HOME that does not exist and cannot be made, as
// a service account's HOME=/nonexistent, here under /proc so that root cannot make it either; one
// where nothing can be made): the compile goes on uncached, with one warning that says why.
TEST_F(CudaCli, CompilesUncachedWithOneWarningWhenNoCacheDirectoryIsUsable) {
  for (const std::optional<std::string>& home :
       {std::optional<std::string>(), std::optional<std::string>("/proc/nonexistent"),
        std::optional<std::string>("/proc")}) {
    SCOPED_TRACE("HOME=" + home.value_or("(unset)"));
    fs::remove(dir / "k.cubin");
    RunResult r = kiln_cli({"cuda", "compile", (dir / "k.cu").string(), "--arch", "sm_80", "-o",
                            (dir / "k.cubin").string(), "--", "-DKILN_ON=1"},
                           {{"HOME", home},
                            {"KILN_CACHE_DIR", std::nullopt},
                            {"XDG_CACHE_HOME", std::nullopt},
                            {"KILN_NO_CACHE", std::nullopt}});
    EXPECT_EQ(r.exit_code, 0) << r.error_output;
    EXPECT_EQ(testing::count_occurrences(r.error_output,
                                         "kiln: warning: kiln's kernel cache is not used: "),
              1u)
        << r.error_output;
    EXPECT_EQ(testing::read_file(dir / "k.cubin").substr(0, 4),
              "\x7f"
              "ELF");
  }
}

// A source over the compile server's 64 MiB request limit is not sent: it compiles in process.
TEST_F(CudaCli, ASourceOverTheServersLimitCompilesInProcess) {
  {
    std::ofstream big(dir / "big.cu");
    big << "extern \"C\" __global__ void k(int* a) { a[0] = 1; }\n";
    std::string comment = "// " + std::string(1021, 'x') + "\n";
    for (int i = 0; i < 65 * 1024; ++i) big << comment;  // 65 MiB of comments
  }
  std::map<std::string, std::optional<std::string>> vars = env();
  vars["KILN_SERVER_DEBUG"] = "1";
  vars["KILN_NO_CACHE"] = "1";
  RunResult r = kiln_cli({"cuda", "compile", (dir / "big.cu").string(), "--arch", "sm_80", "-o",
                          (dir / "big.cubin").string()},
                         vars);
  EXPECT_EQ(r.exit_code, 0) << r.error_output.substr(0, 2000);
  EXPECT_NE(r.error_output.find("bytes, over the limit of 64 MiB: compiling here"),
            std::string::npos)
      << r.error_output.substr(0, 2000);
  fs::remove(dir / "big.cu");
}

// The compile server's precompiled headers live in the cache: counted, and removed by clear.
TEST_F(CudaCli, CacheStatsCountsTheServersPrecompiledHeadersAndClearRemovesThem) {
  std::ofstream(dir / "half.cu") << "#include <cuda_fp16.h>\n"
                                    "extern \"C\" __global__ void h(half* a) { a[0] = a[1]; }\n";
  RunResult compiled = kiln_cli({"cuda", "compile", (dir / "half.cu").string(), "--arch", "sm_80",
                                 "-o", (dir / "half.cubin").string()},
                                env());
  ASSERT_EQ(compiled.exit_code, 0) << compiled.error_output;
  auto pch_files = [&] {
    size_t found = 0;
    std::error_code ec;
    for (const auto& entry : fs::recursive_directory_iterator(dir / "cache" / "servers", ec)) {
      found += entry.path().extension() == ".pch" ? 1 : 0;
    }
    return found;
  };
  // The server makes it after answering: seconds on a loaded machine.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (pch_files() == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(pch_files(), 1u) << "no precompiled header was made";
  RunResult stats = kiln_cli({"cache", "stats"}, env());
  std::smatch counted;
  ASSERT_TRUE(std::regex_search(stats.output, counted,
                                std::regex("servers    ([0-9]+) files, ([0-9]+) bytes")))
      << stats.output;
  EXPECT_GE(std::stoul(counted[1]), 1u);
  EXPECT_GT(std::stoul(counted[2]), 1u << 20) << "a PCH of cuda_fp16.h takes megabytes";
  RunResult clear = kiln_cli({"cache", "clear"}, env());
  EXPECT_NE(clear.output.find("and " + counted[1].str() + " compile server files"),
            std::string::npos)
      << clear.output;
  EXPECT_EQ(pch_files(), 0u);
}

}  // namespace
}  // namespace kiln
