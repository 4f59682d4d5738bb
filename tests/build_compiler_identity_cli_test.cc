// kiln build keys the compiler that runs: a job's "cc": "gcc" is found as run() finds it (PATH,
// as execvp searches it) and that very file is run, so another gcc first on PATH (a wrapper, a
// conda or devtoolset compiler) is another key and makes the object, and a ./gcc in the working
// directory changes nothing. The stand-in is gcc in every way but one: it adds -DWRAPPED.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "build_project.h"
#include "cli_support.h"
#include "kiln/paths.h"
#include "kiln/process.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

// The global symbols `object` defines (nm -g --defined-only).
std::string symbols_of(const fs::path& object) {
  return run({.argv = {"nm", "-g", "--defined-only", object.string()}}).output;
}

TEST(BuildCompilerIdentity, TheGccFirstOnPathIsTheOneKeyedAndRun) {
  if (!fs::exists("/usr/bin/gcc") || !which("nm")) GTEST_SKIP() << "needs /usr/bin/gcc and nm";
  testing::BuildProject project;
  project.write("wrap/gcc", "#!/bin/sh\nexec /usr/bin/gcc -DWRAPPED \"$@\"\n", true);
  project.manifest({{"jobs",
                     {{{"name", "a"},
                       {"kind", "object"},
                       {"language", "c"},
                       {"cc", "gcc"},
                       {"code",
                        "#ifdef WRAPPED\nint wrapped(void) { return 1; }\n#else\n"
                        "int plain(void) { return 0; }\n#endif\n"}}}}});
  auto build = [&](const std::string& path, bool in_project) {
    RunResult r = project.build_with({.env = {{"PATH", path}}, .in_project_directory = in_project});
    EXPECT_EQ(r.exit_code, 0) << r.output << r.error_output;
    nlohmann::json job = project.jobs()["a"];
    return std::pair{job["cached"].get<bool>(), symbols_of(job["output"].get<std::string>())};
  };
  auto [cached, symbols] = build("/usr/bin:/bin", false);
  EXPECT_FALSE(cached);
  EXPECT_NE(symbols.find("plain"), std::string::npos) << symbols;
  // The wrapper first on PATH: another compiler, so a miss, and its object.
  std::tie(cached, symbols) = build(project.path("wrap").string() + ":/usr/bin:/bin", false);
  EXPECT_FALSE(cached) << "served the object of the other gcc";
  EXPECT_NE(symbols.find("wrapped"), std::string::npos) << symbols;
  // A ./gcc in the working directory is not what a bare "gcc" runs, nor what is keyed.
  std::tie(cached, symbols) = build("/usr/bin:/bin", true);
  EXPECT_NE(symbols.find("plain"), std::string::npos) << symbols;
  project.write("gcc", "#!/bin/sh\nexec /usr/bin/gcc -DWRAPPED \"$@\"\n", true);
  std::tie(cached, symbols) = build("/usr/bin:/bin", true);
  EXPECT_TRUE(cached) << "a ./gcc in the working directory changed the key";
  EXPECT_NE(symbols.find("plain"), std::string::npos) << symbols;
}

}  // namespace
}  // namespace kiln
