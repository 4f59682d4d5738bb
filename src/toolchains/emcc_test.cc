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
  EXPECT_EQ(find_wasm_lib("tvmjs_support.bc"), dir / "tvm/web/dist/wasm/tvmjs_support.bc");
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
    EXPECT_NE(std::string(e.what()).find("Cannot find library webgpu_runtime.bc"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "m.wasm"));
  EXPECT_FALSE(find_wasm_lib("webgpu_runtime.bc", true, dir / "tvm"));
  testing::ScopedEnv no_home("TVM_HOME", std::nullopt);
  EXPECT_THROW(find_wasm_lib("wasm_runtime.bc"), FileNotFound);
}

}  // namespace
}  // namespace kiln::emcc
