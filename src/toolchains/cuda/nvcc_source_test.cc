// The nvcc backend and the user's file (CompileOptions::source_path), with the real nvcc: "..."
// includes are found beside the file, messages name it and its lines, and the kernel cache is
// keyed by the file and its content, never by a temporary path.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "kiln/cuda.h"
#include "kiln/error.h"
#include "kiln/temp_directory.h"
#include "testing/cuda_kernel.h"
#include "testing/test_support.h"

namespace kiln::cuda {
namespace {

namespace fs = std::filesystem;
using testing::ScopedEnv;

class NvccSource : public ::testing::Test {
 protected:
  void SetUp() override {
    if (auto why = testing::cuda_toolkit_missing()) GTEST_SKIP() << *why;
    fs::create_directories(dir / "src");
  }
  static void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }
  // The kernel cache stores nothing when a file the compile read was modified in the clock tick
  // the compile started in (it may have changed during the compile): files written just now
  // wait for the coarse clock to move on.
  static void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(50)); }
  // What the ToolFailed of a compile says; "" when it compiled.
  static std::string failure(const std::string& code, const CompileOptions& options) {
    try {
      compile(code, options);
    } catch (const ToolFailed& e) {
      return e.what();
    }
    return "";
  }
  TempDirectory dir;
};

constexpr const char* kIncluding =
    "#include \"val.cuh\"\nextern \"C\" __global__ void k(int* a) { a[0] = VALUE; }\n";

TEST_F(NvccSource, QuotedIncludesAreFoundBesideTheUsersFile) {
  fs::path file = dir / "src" / "k.cu";
  write(file, kIncluding);
  write(dir / "src" / "val.cuh", "#define VALUE 424242\n");
  CompileOptions options{.format = Format::ptx,
                         .arch = "sm_80",
                         .source_path = file,
                         .backend = Backend::nvcc,
                         .use_cache = false};
  // The code exactly as in the file: compiled in place.
  EXPECT_NE(compile(kIncluding, options).bytes.find("424242"), std::string::npos);
  // Other code than the file's (a caller that edited it): a copy, its directory searched first.
  std::string edited = std::string(kIncluding) + "// edited\n";
  EXPECT_NE(compile(edited, options).bytes.find("424242"), std::string::npos);
  // A header beside the file wins over one of the same name in a directory given with -I, as
  // with nvcc given the file; both ways.
  fs::create_directories(dir / "other");
  write(dir / "other" / "val.cuh", "#define VALUE 111\n");
  options.options = {"-I" + (dir / "other").string()};
  EXPECT_NE(compile(kIncluding, options).bytes.find("424242"), std::string::npos);
  EXPECT_NE(compile(edited, options).bytes.find("424242"), std::string::npos);
  // Without the file's name, the header is nowhere to be found: the feature is what finds it.
  options.options.clear();
  options.source_path.clear();
  EXPECT_NE(failure(kIncluding, options).find("val.cuh"), std::string::npos);
}

TEST_F(NvccSource, MessagesNameTheUsersFileAndItsLines) {
  fs::path file = dir / "src" / "broken.cu";
  const std::string code =
      "// line 1\n// line 2\nextern \"C\" __global__ void broken(int* a) { int x = ; }\n";
  write(file, code);
  CompileOptions options{
      .arch = "sm_80", .source_path = file, .backend = Backend::nvcc, .use_cache = false};
  for (const std::string& compiled : {code, code + "\n"}) {  // in place, then a copy
    SCOPED_TRACE(compiled == code ? "in place" : "a copy");
    std::string message = failure(compiled, options);
    EXPECT_NE(message.find(file.string() + "(3): error"), std::string::npos) << message;
    EXPECT_EQ(message.find("tvm_kernels.cu("), std::string::npos) << message;
  }
}

TEST_F(NvccSource, TheCacheKeyHoldsTheFileAndItsContentNotATemporaryPath) {
  ScopedEnv on("KILN_NO_CACHE", std::nullopt);
  ScopedEnv where("KILN_CACHE_DIR", (dir / "cache").string());
  fs::path file = dir / "src" / "k.cu";
  write(file, kIncluding);
  write(dir / "src" / "val.cuh", "#define VALUE 424242\n");
  CompileOptions options{
      .format = Format::ptx, .arch = "sm_80", .source_path = file, .backend = Backend::nvcc};
  settle();
  CompileResult first = compile(kIncluding, options);
  EXPECT_FALSE(first.cached);
  CompileResult again = compile(kIncluding, options);
  EXPECT_TRUE(again.cached) << "the key depends on something that changes from run to run";
  EXPECT_EQ(again.bytes, first.bytes);
  // The same content in another directory includes another val.cuh: not the first one's output.
  fs::create_directories(dir / "elsewhere");
  write(dir / "elsewhere" / "k.cu", kIncluding);
  write(dir / "elsewhere" / "val.cuh", "#define VALUE 737373\n");
  options.source_path = dir / "elsewhere" / "k.cu";
  settle();
  CompileResult elsewhere = compile(kIncluding, options);
  EXPECT_FALSE(elsewhere.cached);
  EXPECT_NE(elsewhere.bytes.find("737373"), std::string::npos);
  EXPECT_TRUE(compile(kIncluding, options).cached);
  // The header beside the file is keyed (direct mode), and so is the file's content.
  write(dir / "elsewhere" / "val.cuh", "#define VALUE 747474\n");
  EXPECT_NE(compile(kIncluding, options).bytes.find("747474"), std::string::npos);
  std::string changed = "#define EXTRA 1\n" + std::string(kIncluding);
  write(dir / "elsewhere" / "k.cu", changed);
  EXPECT_FALSE(compile(changed, options).cached);
}

}  // namespace
}  // namespace kiln::cuda
