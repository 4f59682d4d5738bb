// Emscripten for real (Debian's emscripten): the three runtime libraries are small C++ files
// built with emcc into a temporary TVM_HOME, then linked with a kernel into a standalone module.
#include "kiln/emcc.h"

#include <gtest/gtest.h>

#include <fstream>

#include "kiln/error.h"
#include "kiln/paths.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln::emcc {
namespace {

namespace fs = std::filesystem;

class Emcc : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!which("emcc")) GTEST_SKIP() << "needs emcc (scripts/install-deps.sh installs emscripten)";
    fs::path wasm = dir / "tvm" / "web" / "dist" / "wasm";
    fs::create_directories(wasm);
    for (const char* name : {"wasm_runtime", "tvmjs_support", "webgpu_runtime"}) {
      std::ofstream(dir / (std::string(name) + ".cc"))
          << "extern \"C\" int " << name << "_marker() { return 1; }\n";
      emcc_c(dir / (std::string(name) + ".cc"), wasm / (std::string(name) + ".bc"));
    }
    std::ofstream(dir / "kernel.cc")
        << "extern \"C\" __attribute__((used, export_name(\"kiln_add\"))) int kiln_add(int a, "
           "int b) { return a + b; }\n";
    emcc_c(dir / "kernel.cc", dir / "kernel.o");
  }
  static void emcc_c(const fs::path& source, const fs::path& object) {
    RunResult r = run({.argv = {"emcc", "-c", source.string(), "-o", object.string()}});
    ASSERT_TRUE(r.ok()) << r.output;
  }
  TempDirectory dir;
};

TEST_F(Emcc, AStandaloneModuleExportingTheKernel) {
  testing::ScopedEnv home("TVM_HOME", (dir / "tvm").string());
  EXPECT_EQ(find_wasm_lib("tvmjs_support.bc"),
            std::vector<fs::path>{dir / "tvm/web/dist/wasm/tvmjs_support.bc"});
  create_tvmjs_wasm(dir / "module.wasm", {dir / "kernel.o"});
  std::string module = testing::read_file(dir / "module.wasm");
  ASSERT_GE(module.size(), 8u);
  EXPECT_EQ(module.substr(0, 4), std::string("\0asm", 4));
  if (which("wasm-dis")) {
    RunResult dis = run({.argv = {"wasm-dis", (dir / "module.wasm").string()}});
    EXPECT_NE(dis.output.find("(export \"kiln_add\""), std::string::npos) << dis.output;
  }
  EXPECT_STREQ(kObjectFormat, "bc");
}

TEST_F(Emcc, MissingLibrariesAreClearErrors) {
  testing::ScopedEnv no_home("TVM_HOME", std::nullopt);  // `.root` is where to look without it
  try {
    create_tvmjs_wasm(dir / "m.wasm", {dir / "kernel.o"},
                      {.libs = {dir / "missing_lib.bc"}, .root = dir / "tvm"});
    FAIL();
  } catch (const FileNotFound& e) {
    EXPECT_NE(
        std::string(e.what()).find("Cannot find library: " + (dir / "missing_lib.bc").string()),
        std::string::npos)
        << e.what();
  }
  fs::remove(dir / "tvm/web/dist/wasm/webgpu_runtime.bc");
  try {
    create_tvmjs_wasm(dir / "m.wasm", {dir / "kernel.o"}, {.root = dir / "tvm"});
    FAIL();
  } catch (const FileNotFound& e) {
    EXPECT_NE(std::string(e.what()).find("Cannot find webgpu_runtime.bc; searched [" +
                                         (dir / "tvm/web/dist/wasm").string()),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "m.wasm"));
  EXPECT_FALSE(find_wasm_lib("webgpu_runtime.bc", true, dir / "tvm"));
  EXPECT_THROW(find_wasm_lib("wasm_runtime.bc"), FileNotFound);
  EXPECT_FALSE(find_wasm_lib("wasm_runtime.bc", true));
}

// As the seed: a list of every match, web/dist/wasm first; $TVM_HOME when set, else the source
// tree's top directory that the caller gives.
TEST(EmccLibraries, EveryMatchInOrderFromTvmHomeElseTheSourceTree) {
  TempDirectory home, tree;
  for (const fs::path& top : {home.path(), tree.path()}) {
    fs::create_directories(top / "web/dist/wasm");
    std::ofstream(top / "web/dist/wasm/wasm_runtime.bc") << "bc";
    std::ofstream(top / "web/dist/wasm_runtime.bc") << "bc";
  }
  std::vector<fs::path> both = {tree / "web/dist/wasm/wasm_runtime.bc",
                                tree / "web/dist/wasm_runtime.bc"};
  {
    testing::ScopedEnv no_home("TVM_HOME", std::nullopt);
    EXPECT_EQ(find_wasm_lib("wasm_runtime.bc", false, tree.path()), both);
  }
  testing::ScopedEnv with_home("TVM_HOME", home.path().string());
  EXPECT_EQ(find_wasm_lib("wasm_runtime.bc", false, tree.path())->front(),
            home / "web/dist/wasm/wasm_runtime.bc")
      << "TVM_HOME first, as the seed";
}

}  // namespace
}  // namespace kiln::emcc
