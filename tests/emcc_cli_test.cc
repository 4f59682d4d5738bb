// kiln emcc wasm, run as a user would.
#include <gtest/gtest.h>

#include <fstream>

#include "cli_support.h"
#include "kiln/paths.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using testing::kiln_cli;

TEST(EmccCli, WasmModuleAndMissingLibraries) {
  if (!which("emcc")) GTEST_SKIP() << "needs emcc (scripts/install-deps.sh installs emscripten)";
  TempDirectory dir;
  fs::path wasm = dir / "tvm/web/dist/wasm";
  fs::create_directories(wasm);
  auto emcc_c = [](const fs::path& source, const fs::path& object) {
    return run({.argv = {"emcc", "-c", source.string(), "-o", object.string()}}).ok();
  };
  for (const char* name : {"wasm_runtime", "tvmjs_support", "webgpu_runtime"}) {
    std::ofstream(dir / (std::string(name) + ".cc"))
        << "extern \"C\" int " << name << "_m() { return 0; }\n";
    ASSERT_TRUE(emcc_c(dir / (std::string(name) + ".cc"), wasm / (std::string(name) + ".bc")));
  }
  std::ofstream(dir / "k.cc") << "extern \"C\" int kiln_k() { return 7; }\n";
  ASSERT_TRUE(emcc_c(dir / "k.cc", dir / "k.o"));
  std::map<std::string, std::optional<std::string>> env = {{"TVM_HOME", (dir / "tvm").string()}};
  RunResult ok = kiln_cli({"emcc", "wasm", "-o", (dir / "m.wasm").string(), (dir / "k.o").string(),
                           "--", "-s", "EXPORTED_FUNCTIONS=_kiln_k"},
                          env);
  ASSERT_EQ(ok.exit_code, 0) << ok.error_output;
  EXPECT_EQ(testing::read_file(dir / "m.wasm").substr(0, 4), std::string("\0asm", 4));
  RunResult missing = kiln_cli({"emcc", "wasm", "-o", (dir / "n.wasm").string(),
                                (dir / "k.o").string(), "--lib", (dir / "nope.bc").string()},
                               env);
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.error_output.find("Cannot find library: "), std::string::npos);
}

}  // namespace
}  // namespace kiln
