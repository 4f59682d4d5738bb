#include "kiln/cc.h"

#include <dlfcn.h>
#include <elf.h>

#include <fstream>
#include <regex>

#include <gtest/gtest.h>

#include "kiln/elf.h"
#include "kiln/error.h"
#include "kiln/paths.h"
#include "kiln/tar.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln::cc {
namespace {

namespace fs = std::filesystem;

constexpr const char* kAddSource = R"(#ifdef __cplusplus
extern "C"
#endif
int add(int a, int b) { return a + b; }
)";
constexpr const char* kMulSource = R"(#ifdef __cplusplus
extern "C"
#endif
int mul(int a, int b) { return a * b; }
)";
constexpr const char* kMainSource = R"(#include <stdio.h>
#ifdef __cplusplus
extern "C"
#endif
int add(int a, int b);
int main(void) { printf("%d\n", add(2, 3)); return 0; }
)";

fs::path write(const fs::path& path, std::string_view text) {
  std::ofstream(path) << text;
  return path;
}

// Every real compiler the machine has: gcc, g++ and clang.
class EachCompiler : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!which(GetParam()))
      GTEST_SKIP() << GetParam() << " is not installed (scripts/install-deps.sh)";
  }
  Options with_cc(Options o = {}) const {
    o.cc = GetParam();
    return o;
  }
  TempDirectory tmp_;
};

TEST_P(EachCompiler, SharedLibraryLoadsAndRuns) {
  fs::path lib = tmp_ / "libadd.so";
  create_shared(lib, {write(tmp_ / "add.c", kAddSource)}, with_cc({.options = {"-O2"}}));
  void* handle = ::dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << ::dlerror();
  auto* add = reinterpret_cast<int (*)(int, int)>(::dlsym(handle, "add"));
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add(2, 40), 42);
  ::dlclose(handle);
  EXPECT_EQ(get_global_symbol_section_map(lib).at("add"), "T");
}

TEST_P(EachCompiler, ExecutableRuns) {
  fs::path exe = tmp_ / "prog";
  create_executable(exe, {write(tmp_ / "main.c", kMainSource), write(tmp_ / "add.c", kAddSource)},
                    with_cc());
  RunResult r = run({.argv = {exe.string()}});
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.output, "5\n");
}

TEST_P(EachCompiler, ObjectForTheHostMachine) {
  fs::path object = tmp_ / "add.o";
  RunResult r = create_object(object, {write(tmp_ / "add.c", kAddSource)}, with_cc());
  EXPECT_NE(r.command_line.find(" -c -o "), std::string::npos) << r.command_line;
  EXPECT_EQ(read_elf_machine(object), EM_X86_64);
  EXPECT_EQ(get_global_symbol_section_map(object).at("add"), "T");
  // The seed's spelling: an output ending in .obj is compiled with -c.
  RunResult obj = create_executable(tmp_ / "add.obj", {tmp_ / "add.c"}, with_cc());
  EXPECT_NE(obj.command_line.find(" -c "), std::string::npos) << obj.command_line;
  EXPECT_TRUE(read_elf_machine(tmp_ / "add.obj").has_value());
}

TEST_P(EachCompiler, StaticLibraryFromObjectsAndFromATarOfObjects) {
  fs::path add_o = tmp_ / "add.o", mul_o = tmp_ / "mul.o";
  create_object(add_o, {write(tmp_ / "add.c", kAddSource)}, with_cc());
  create_object(mul_o, {write(tmp_ / "mul.c", kMulSource)}, with_cc());
  create_staticlib(tmp_ / "libarith.a", {add_o, mul_o});
  auto symbols = get_global_symbol_section_map(tmp_ / "libarith.a");
  EXPECT_EQ(symbols.at("add"), "T");
  EXPECT_EQ(symbols.at("mul"), "T");

  fs::path bundle = tmp_ / "objects.tar";
  tar(bundle, {add_o, mul_o});
  create_staticlib(tmp_ / "fromtar.a", {bundle});
  auto from_tar = get_global_symbol_section_map(tmp_ / "fromtar.a");
  EXPECT_EQ(from_tar.at("add"), "T");
  EXPECT_EQ(from_tar.at("mul"), "T");

  // And the archive links: main + libarith.a.
  fs::path exe = tmp_ / "prog";
  create_executable(exe, {write(tmp_ / "main.c", kMainSource), tmp_ / "libarith.a"}, with_cc());
  EXPECT_EQ(run({.argv = {exe.string()}}).output, "5\n");
}

INSTANTIATE_TEST_SUITE_P(RealCompilers, EachCompiler, ::testing::Values("gcc", "g++", "clang"));

TEST(Cc, GetCcFollowsCxxThenCcThenPath) {
  const char* old_cxx = std::getenv("CXX");
  const char* old_cc = std::getenv("CC");
  std::string saved_cxx = old_cxx ? old_cxx : "", saved_cc = old_cc ? old_cc : "";
  ::setenv("CXX", "my-cxx", 1);
  ::setenv("CC", "my-cc", 1);
  EXPECT_EQ(get_cc(), "my-cxx");
  ::unsetenv("CXX");
  EXPECT_EQ(get_cc(), "my-cc");
  ::unsetenv("CC");
  std::optional<std::string> found = get_cc();
  ASSERT_TRUE(found.has_value());
  EXPECT_TRUE(fs::path(*found).is_absolute()) << *found;
  if (old_cxx) ::setenv("CXX", saved_cxx.c_str(), 1);
  if (old_cc) ::setenv("CC", saved_cc.c_str(), 1);
}

TEST(Cc, CompileErrorHasTheSeedsMessage) {
  TempDirectory tmp;
  fs::path bad = write(tmp / "bad.c", "int f( { return }\n");
  try {
    create_object(tmp / "bad.o", {bad}, {.cc = "gcc"});
    FAIL() << "expected ToolFailed";
  } catch (const ToolFailed& e) {
    std::string what = e.what();
    EXPECT_TRUE(what.starts_with("Compilation error:\n")) << what;
    EXPECT_NE(what.find("error:"), std::string::npos) << "the compiler's own output";
    EXPECT_NE(what.find("\nCommand line: gcc -c -o "), std::string::npos) << what;
  }
  EXPECT_FALSE(fs::exists(tmp / "bad.o"));
}

TEST(Cc, ExecutableWithoutMainSaysWhichModeWasChosen) {
  TempDirectory tmp;
  try {
    create_executable(tmp / "libadd", {write(tmp / "add.c", kAddSource)}, {.cc = "gcc"});
    FAIL() << "expected ToolFailed";
  } catch (const ToolFailed& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("main"), std::string::npos) << what;
    EXPECT_NE(what.find("as an executable because its name does not end in .so"), std::string::npos)
        << what;
  }
}

// clang and ld.lld are a whole armhf toolchain, but Debian has no armhf C library here unless
// libc6-dev-armhf-cross is installed: the compile fails on stdio.h, the link on crti.o, and
// kiln says which package, once.
TEST(Cc, CrossBuildWithoutTheTargetsLibcNamesThePackage) {
  if (!which("clang") || !which("ld.lld")) GTEST_SKIP() << "clang or ld.lld is not installed";
  if (fs::exists("/usr/arm-linux-gnueabihf/lib/crti.o")) {
    GTEST_SKIP() << "libc6-dev-armhf-cross is installed: no target without its libc to try";
  }
  TempDirectory tmp;
  std::string note =
      "kiln: the toolchain ran, but the C library for armv7-linux-gnueabihf (its headers, crt1.o, "
      "crti.o, libc) is not installed: on Debian, `apt-get install libc6-dev-armhf-cross`";
  for (auto [source, symptom] :
       {std::pair{kMainSource, "stdio.h"}, std::pair{"int main(void) { return 0; }\n", "crti.o"}}) {
    try {
      create_executable(
          tmp / "main", {write(tmp / "main.c", source)},
          {.options = {"--target=armv7-linux-gnueabihf", "-fuse-ld=lld"}, .cc = "clang"});
      FAIL() << "built for armhf without its C library";
    } catch (const ToolFailed& e) {
      const std::string& output = e.output();
      EXPECT_NE(output.find(symptom), std::string::npos) << "the tool's own words: " << output;
      EXPECT_NE(output.find(note), std::string::npos) << output;
      EXPECT_EQ(output.find("C library for"), output.rfind("C library for")) << output;
    }
  }
}

// A failure that is not about the target's libc gets no such note.
TEST(Cc, OtherLinkErrorsGetNoLibcNote) {
  TempDirectory tmp;
  try {
    create_executable(tmp / "main", {write(tmp / "main.c", kMainSource)}, {.cc = "gcc"});
    FAIL() << "linked with add() undefined";
  } catch (const ToolFailed& e) {
    EXPECT_NE(e.output().find("add"), std::string::npos) << e.output();
    EXPECT_EQ(e.output().find("C library for"), std::string::npos) << e.output();
  }
}

TEST(Cc, MissingCompilerIsToolNotFound) {
  TempDirectory tmp;
  EXPECT_THROW(create_shared(tmp / "x.so", {write(tmp / "x.c", kAddSource)}, {.cc = "kiln-no-cc"}),
               ToolNotFound);
}

TEST(Cc, PathsInsideCwdArePassedRelative) {
  TempDirectory tmp;
  fs::path source = write(tmp / "add.c", kAddSource);
  RunResult r = create_object(tmp / "add.o", {source}, {.cc = "gcc", .cwd = tmp.path()});
  EXPECT_EQ(r.command_line, "gcc -c -o add.o add.c");
  EXPECT_TRUE(fs::exists(tmp / "add.o"));
}

// Options come before the inputs, as in tvm.support 0.27: `-x c++` then applies to the source.
TEST(Cc, OptionsPrecedeTheInputsSoXCxxAppliesToThem) {
  TempDirectory tmp;
  fs::path source = write(tmp / "twice.c",
                          "template <typename T> T twice(T x) { return x + x; }\n"
                          "extern \"C\" int twice_int(int x) { return twice(x); }\n");
  RunResult r = create_object(tmp / "twice.o", {source},
                              {.options = {"-x", "c++"}, .cc = "gcc", .cwd = tmp.path()});
  EXPECT_EQ(r.command_line, "gcc -c -o twice.o -x c++ twice.c");
  EXPECT_EQ(get_global_symbol_section_map(tmp / "twice.o").at("twice_int"), "T");
}

// A library named among the inputs follows the objects that need it, so that a linker with
// --as-needed (Debian's default) keeps it.
TEST(Cc, ALibraryAmongTheInputsIsLinkedAfterTheObjects) {
  TempDirectory tmp;
  fs::path main = write(tmp / "root.c",
                        "#include <math.h>\n#include <stdio.h>\n"
                        "int main(int argc, char** argv) { (void)argv; "
                        "printf(\"%.0f\\n\", sqrt(16.0 * argc)); return 0; }\n");
  RunResult r = create_executable(tmp / "root", {main, "-lm"}, {.options = {"-O0"}, .cc = "gcc"});
  EXPECT_LT(r.command_line.find("-O0"), r.command_line.find("root.c")) << r.command_line;
  EXPECT_LT(r.command_line.find("root.c"), r.command_line.find("-lm")) << r.command_line;
  EXPECT_EQ(run({.argv = {(tmp / "root").string()}}).output, "4\n");
}

TEST(Cc, SymbolMapErrors) {
  TempDirectory tmp;
  EXPECT_THROW(get_global_symbol_section_map(tmp / "missing.so"), FileNotFound);
  fs::path text = write(tmp / "notes.txt", "not an object file\n");
  try {
    get_global_symbol_section_map(text);
    FAIL() << "nm accepted a text file";
  } catch (const ToolFailed& e) {
    EXPECT_TRUE(std::string(e.what()).starts_with("Runtime error:\n")) << e.what();
    EXPECT_NE(e.output().find("notes.txt"), std::string::npos) << "nm's own output: " << e.output();
  }
}

TEST(Cc, TargetByDumpMachine) {
  std::optional<std::string> host = get_target_by_dump_machine("gcc")();
  ASSERT_TRUE(host.has_value());
  EXPECT_TRUE(host->starts_with("x86_64")) << *host;
  EXPECT_EQ(host->find('\n'), std::string::npos);
  EXPECT_FALSE(get_target_by_dump_machine("kiln-no-such-compiler")().has_value());
  if (which("clang")) {
    auto cross = get_target_by_dump_machine("clang", {"-O2", "--target=aarch64-linux-gnu", "-g"})();
    ASSERT_TRUE(cross.has_value());
    EXPECT_TRUE(cross->starts_with("aarch64")) << *cross;
  }
}

TEST(Cc, OutputFormatsAreCarried) {
  CompileFunction shared = shared_compiler({.cc = "gcc"});
  EXPECT_EQ(shared.output_format(), "so");
  EXPECT_TRUE(shared.get_target_triple()->starts_with("x86_64"));
  CompileFunction archive = cross_compiler(shared, {.output_format = "a"});
  EXPECT_EQ(archive.output_format(), "a");
  EXPECT_EQ(cross_compiler(archive).output_format(), "a") << "inherited from the base";
  CompileFunction plain([](auto&&...) { return RunResult{}; }, "");
  EXPECT_EQ(cross_compiler(plain).output_format(), "so") << "the seed's default";
  EXPECT_FALSE(cross_compiler(plain).get_target_triple().has_value());
}

TEST(Cc, CrossCompilerDoesNotAccumulateOptions) {
  TempDirectory tmp;
  fs::path source = write(tmp / "add.c", kAddSource);
  CompileFunction f = cross_compiler("gcc", {.options = {"-DKILN_BASE_OPTION=1"}});
  for (int i = 0; i < 3; ++i) {
    RunResult r = f(tmp / ("lib" + std::to_string(i) + ".so"), {source}, {"-DKILN_CALL_OPTION=1"});
    EXPECT_EQ(testing::count_occurrences(r.command_line, "-DKILN_BASE_OPTION=1"), 1u)
        << "call " << i << ": " << r.command_line;
    EXPECT_EQ(testing::count_occurrences(r.command_line, "-DKILN_CALL_OPTION=1"), 1u)
        << r.command_line;
    EXPECT_LT(r.command_line.find("-DKILN_BASE_OPTION"), r.command_line.find("-DKILN_CALL_OPTION"));
  }
}

TEST(Cc, CrossCompilerAddsFiles) {
  TempDirectory tmp;
  fs::path mul = write(tmp / "mul.c", kMulSource);
  CompileFunction f = cross_compiler("gcc", {.add_files = {mul}});
  f(tmp / "libboth.so", {write(tmp / "add.c", kAddSource)});
  auto symbols = get_global_symbol_section_map(tmp / "libboth.so");
  EXPECT_TRUE(symbols.contains("add"));
  EXPECT_TRUE(symbols.contains("mul"));
}

class CrossClang : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!which("clang") || !which("ld.lld"))
      GTEST_SKIP() << "needs clang and ld.lld (scripts/install-deps.sh)";
  }
  TempDirectory tmp_;
};

TEST_F(CrossClang, TargetOptionBuildsAnAArch64Library) {
  CompileFunction arm = cross_compiler(
      "clang", {.options = {"--target=aarch64-linux-gnu", "-nostdlib", "-fuse-ld=lld"}});
  std::optional<std::string> triple = arm.get_target_triple();
  ASSERT_TRUE(triple.has_value());
  EXPECT_TRUE(triple->starts_with("aarch64")) << *triple;
  fs::path lib = tmp_ / "libadd.so";
  arm(lib, {write(tmp_ / "add.c", kAddSource)});
  EXPECT_EQ(read_elf_machine(lib), EM_AARCH64);
  EXPECT_EQ(arm.output_format(), "so");
}

TEST_F(CrossClang, TargetPrefixedCompilerNameBuildsAnAArch64Library) {
  fs::path named = tmp_ / "aarch64-linux-gnu-clang";
  fs::create_symlink(fs::canonical(*which("clang")), named);
  CompileFunction arm = cross_compiler(named.string(), {.options = {"-nostdlib", "-fuse-ld=lld"}});
  ASSERT_TRUE(arm.get_target_triple().has_value());
  EXPECT_TRUE(arm.get_target_triple()->starts_with("aarch64")) << *arm.get_target_triple();
  fs::path lib = tmp_ / "libadd.so";
  arm(lib, {write(tmp_ / "add.c", kAddSource)});
  EXPECT_EQ(read_elf_machine(lib), EM_AARCH64);
}

TEST_F(CrossClang, HostObjectInACrossLinkIsRefused) {
  fs::path host_object = tmp_ / "add.o";
  create_object(host_object, {write(tmp_ / "add.c", kAddSource)}, {.cc = "gcc"});
  CompileFunction arm = cross_compiler(
      "clang", {.options = {"--target=aarch64-linux-gnu", "-nostdlib", "-fuse-ld=lld"}});
  try {
    arm(tmp_ / "libadd.so", {host_object});
    FAIL() << "an x86-64 object went into an aarch64 link";
  } catch (const InvalidArgument& e) {
    std::string what = e.what();
    EXPECT_NE(what.find(host_object.string()), std::string::npos) << what;
    EXPECT_NE(what.find("x86-64 (ELF machine 62)"), std::string::npos) << what;
    EXPECT_NE(what.find("AArch64 (ELF machine 183)"), std::string::npos) << what;
  }
  EXPECT_FALSE(fs::exists(tmp_ / "libadd.so"));
}

// gcc -m32 makes i386 objects although `gcc -m32 -dumpmachine` still says x86_64: the machine
// to expect is what the compiler makes with the call's own options.
class Gcc32 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (probe_elf_machine("gcc", {"-m32"}) != EM_386) {
      GTEST_SKIP() << "gcc -m32 -c does not work here (no 32-bit x86 code generation)";
    }
  }
  TempDirectory tmp_;
};

TEST_F(Gcc32, AnI386ObjectLinksThroughCrossCompiler) {
  fs::path object = tmp_ / "add32.o";
  create_object(object, {write(tmp_ / "add.c", kAddSource)}, {.options = {"-m32"}, .cc = "gcc"});
  ASSERT_EQ(read_elf_machine(object), EM_386);
  CompileFunction gcc32 = cross_compiler("gcc", {.options = {"-m32", "-nostdlib"}});
  ASSERT_TRUE(gcc32.get_target_triple().has_value());
  EXPECT_TRUE(gcc32.get_target_triple()->starts_with("x86_64"))
      << "-dumpmachine alone would have refused the object: " << *gcc32.get_target_triple();
  EXPECT_EQ(gcc32.expected_machine({}), EM_386);
  gcc32(tmp_ / "libadd32.so", {object});
  EXPECT_EQ(read_elf_machine(tmp_ / "libadd32.so"), EM_386);
}

TEST_F(Gcc32, AHostObjectInAnI386LinkIsRefused) {
  fs::path object = tmp_ / "add64.o";
  create_object(object, {write(tmp_ / "add.c", kAddSource)}, {.cc = "gcc"});
  CompileFunction gcc = cross_compiler("gcc", {.options = {"-nostdlib"}});
  try {
    gcc(tmp_ / "libadd.so", {object}, {"-m32"});  // -m32 given with the call, not the base
    FAIL() << "an x86-64 object went into an i386 link";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("Intel 80386 (ELF machine 3)"), std::string::npos)
        << e.what();
  }
  gcc(tmp_ / "libadd.so", {object});
  EXPECT_EQ(read_elf_machine(tmp_ / "libadd.so"), EM_X86_64);
}

// Where the machine cannot be learned, nothing is refused: the compiler has the last word.
TEST(Cc, AnUnsureCheckRefusesNothing) {
  TempDirectory tmp;
  fs::path object = tmp / "add.o";
  create_object(object, {write(tmp / "add.c", kAddSource)}, {.cc = "gcc"});
  EXPECT_FALSE(probe_elf_machine("kiln-no-such-compiler", {}).has_value());
  EXPECT_FALSE(probe_elf_machine("gcc", {"-kiln-no-such-option"}).has_value());
  EXPECT_EQ(probe_elf_machine("gcc", {"-O2"}), EM_X86_64);
  int calls = 0;
  CompileFunction custom(
      [&calls](auto&&...) {
        ++calls;
        return RunResult{.exit_code = 0};
      },
      "so", [] { return std::optional<std::string>("aarch64-linux-gnu"); });
  cross_compiler(custom)(tmp / "lib.so", {object});
  EXPECT_EQ(calls, 1) << "a triple alone does not say what the compiler makes of the options";
  // A compiler whose probe fails (an option it rejects only without -c would do too).
  CompileFunction failing = cross_compiler("gcc", {.options = {"-kiln-no-such-option"}});
  EXPECT_FALSE(failing.expected_machine({}).has_value());
  EXPECT_THROW(failing(tmp / "lib.so", {object}), ToolFailed) << "gcc itself refuses the option";
}

}  // namespace
}  // namespace kiln::cc
