// A job's recipe is the one value its cache key and its making both read: for every kind, the
// identity of every tool that ran (asked afresh, from the command that ran) is one the key holds,
// and an in-process tool's step names a tool whose identity is in the key.
#include "recipe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>

#include "internal/files.h"
#include "kiln/cuda.h"
#include "kiln/paths.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "route.h"
#include "testing/test_support.h"

namespace kiln::build::detail {
namespace {

namespace fs = std::filesystem;

std::string first_word(const std::string& command_line) {
  return command_line.substr(0, command_line.find(' '));
}

// Performs `recipe` and checks that each tool it ran, and each in-process tool it called, has its
// identity in the job's key text.
void expect_what_ran_is_in_the_key(const Job& job, const Recipe& recipe, const Workspace& ws) {
  std::string key = key_text(job, recipe, ws);
  Cache no_cache = Cache::disabled();
  ToolIdentities afresh(no_cache);  // no memo shared with prepare()
  std::vector<RunScope::Record> ran;
  {
    RunScope scope({});
    perform(recipe);
    ran = scope.runs();
  }
  for (const RunScope::Record& run : ran) {
    if (run.in_process) continue;  // an NVRTC compile: its tool is checked below
    std::string identity = afresh.of(first_word(run.command_line)).text;
    EXPECT_NE(key.find(identity), std::string::npos)
        << job.name << " ran " << run.command_line << ", whose tool " << identity
        << " is not in the key";
  }
  for (const RecipeStep& step : recipe.steps) {
    const auto* call = std::get_if<CallStep>(&step);
    if (call == nullptr || call->tool.empty()) continue;
    const RecipeTool* tool = recipe.tool(call->tool);
    ASSERT_NE(tool, nullptr) << job.name << ": step " << call->name << " uses an unlisted tool";
    EXPECT_FALSE(tool->identity.empty());
    EXPECT_NE(key.find(tool->identity), std::string::npos) << job.name << ": " << tool->identity;
  }
  bool in_process = job.kind == JobKind::tar ||
                    (job.kind == JobKind::cuda && job.backend == cuda::Backend::nvrtc);
  bool tools_ran = std::any_of(ran.begin(), ran.end(),
                               [](const RunScope::Record& run) { return !run.in_process; });
  EXPECT_NE(tools_ran, in_process) << job.name;
}

TEST(Recipe, TheToolsThatRunAreTheToolsInTheKeyForEveryKind) {
  Manifest manifest = parse_manifest(fs::path(KILN_SOURCE_DIR) / "examples" / "kiln.json");
  std::set<JobKind> kinds;
  TempDirectory out;
  Cache cache = Cache::disabled();
  ToolIdentities identities(cache);
  pool::Worker nvrtc_worker;
  for (std::size_t i : manifest.order) {
    const Job& job = manifest.jobs[i];
    TempDirectory work;
    Workspace ws{.work_dir = work.path(),
                 .output = work.path() / job.output_name(),
                 .out_dir = out.path(),
                 .nvrtc_worker = &nvrtc_worker};
    for (const Input& input : job.inputs) {
      ws.inputs.push_back(input.job.empty()
                              ? input.file
                              : out.path() /
                                    manifest.jobs[*manifest.index_of(input.job)].output_name());
    }
    JobRecipe prepared = prepare(job, {}, ws, identities);
    if (!prepared.skip_reason.empty()) GTEST_SKIP() << job.name << ": " << prepared.skip_reason;
    SCOPED_TRACE(job.name);
    expect_what_ran_is_in_the_key(job, prepared.recipe, ws);
    internal::move_into_place(ws.output, out.path() / job.output_name());
    kinds.insert(job.kind);
  }
  EXPECT_EQ(kinds.size(), std::size(kJobKindNames)) << "the examples hold every kind";
}

Job inline_object() {
  Job job;
  job.name = "mul";
  job.kind = JobKind::object;
  job.code = "int mul(int a, int b) { return a * b; }";
  job.language = Language::c;
  return job;
}

// The key names the job's directories as $WORK and $OUT: the same job made in another
// temporary directory (every build makes a new one) has the same key.
TEST(Recipe, TheKeyHoldsAcrossWorkDirectories) {
  Cache cache = Cache::disabled();
  ToolIdentities identities(cache);
  Job job = inline_object();
  TempDirectory out;
  std::vector<std::string> keys;
  for (int i = 0; i < 2; ++i) {
    TempDirectory work;
    Workspace ws{.work_dir = work.path(), .output = work / "mul.o", .out_dir = out.path()};
    JobRecipe prepared = prepare(job, {}, ws, identities);
    if (!prepared.skip_reason.empty()) GTEST_SKIP() << prepared.skip_reason;
    keys.push_back(cache_key(job, prepared.recipe, ws));
  }
  EXPECT_EQ(keys[0], keys[1]);
}

// The key is computed from the recipe's tools: another identity is another key.
TEST(Recipe, AnotherToolIdentityIsAnotherKey) {
  Cache cache = Cache::disabled();
  ToolIdentities identities(cache);
  Job job = inline_object();
  TempDirectory work;
  Workspace ws{.work_dir = work.path(), .output = work / "mul.o", .out_dir = work.path()};
  JobRecipe prepared = prepare(job, {}, ws, identities);
  if (!prepared.skip_reason.empty()) GTEST_SKIP() << prepared.skip_reason;
  std::string key = cache_key(job, prepared.recipe, ws);
  ASSERT_FALSE(prepared.recipe.tools.empty());
  prepared.recipe.tools.back().identity += " (upgraded)";
  EXPECT_NE(cache_key(job, prepared.recipe, ws), key);
}

TEST(Recipe, AMissingToolIsTheSkipReason) {
  Cache cache = Cache::disabled();
  ToolIdentities identities(cache);
  Job job = inline_object();
  job.cc = "kiln-no-such-cc";
  TempDirectory work;
  Workspace ws{.work_dir = work.path(), .output = work / "mul.o", .out_dir = work.path()};
  JobRecipe prepared = prepare(job, {}, ws, identities);
  EXPECT_EQ(prepared.skip_reason,
            "toolchain absent: the C/C++ compiler (kiln-no-such-cc) is not installed or not on "
            "PATH");
}

Job nvrtc_kernel() {
  Job job;
  job.name = "k";
  job.kind = JobKind::cuda;
  job.code = "extern \"C\" __global__ void k(int* p) { p[0] = 1; }";
  job.arch = "sm_80";
  job.format = cuda::Format::cubin;
  job.backend = cuda::Backend::nvrtc;
  return job;
}

// Only a missing toolchain is a skip: any other error of the CUDA module (here, no output to
// write, which it checks before it looks for NVRTC) reaches the job as itself.
TEST(Recipe, ACudaErrorThatIsNoMissingToolchainIsNoSkip) {
  Cache cache = Cache::disabled();
  ToolIdentities identities(cache);
  TempDirectory work;
  Workspace ws{.work_dir = work.path(), .output = {}, .out_dir = work.path()};
  try {
    JobRecipe prepared = prepare(nvrtc_kernel(), {}, ws, identities);
    ADD_FAILURE() << "no error; skip reason: " << prepared.skip_reason;
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("name no output file"), std::string::npos) << e.what();
  }
}

// A pool worker for NVRTC is kiln itself, re-executed: when it cannot be started, the job fails
// naming that, never "toolchain absent" (which a CannotRunTool would read as).
TEST(Recipe, AnNvrtcWorkerThatCannotStartIsNoMissingToolchain) {
  testing::ScopedEnv no_server("KILN_NO_SERVER", "1");  // the worker is for what it cannot take
  Cache cache = Cache::disabled();
  ToolIdentities identities(cache);
  TempDirectory work;
  pool::Worker gone({.command = {(work / "kiln-deleted").string()}});
  Workspace ws{.work_dir = work.path(),
               .output = work / "k.cubin",
               .out_dir = work.path(),
               .nvrtc_worker = &gone};
  JobRecipe prepared = prepare(nvrtc_kernel(), {}, ws, identities);
  if (!prepared.skip_reason.empty()) GTEST_SKIP() << prepared.skip_reason;
  try {
    perform(prepared.recipe);
    ADD_FAILURE() << "the compile succeeded without its worker";
  } catch (const CannotRunTool& e) {
    ADD_FAILURE() << "reads as a missing tool: " << e.what();
  } catch (const Error& e) {
    std::string message = e.what();
    EXPECT_NE(message.find("kiln could not start its NVRTC worker"), std::string::npos) << message;
    EXPECT_NE(message.find("kiln-deleted"), std::string::npos) << message;
  }
}

// An NDK static library runs llvm-ar and llvm-ranlib beside $TVM_NDK_CC (here a clang named
// aarch64-linux-android24-clang, as ndk_test.cc makes it): both are in its key.
TEST(Recipe, AnNdkStaticLibrarysArchiverIsInItsKey) {
  std::optional<fs::path> clang = which("clang-14");
  if (!clang) clang = which("clang");
  fs::path llvm_bin = "/usr/lib/llvm-14/bin";
  if (!clang || !fs::exists(llvm_bin / "llvm-ar")) {
    GTEST_SKIP() << "needs clang and llvm-14's llvm-ar (scripts/install-deps.sh)";
  }
  TempDirectory dir;
  fs::create_directory(dir / "bin");
  fs::path cc = dir / "bin" / "aarch64-linux-android24-clang";
  fs::create_symlink(*clang, cc);
  for (const char* tool : {"llvm-ar", "llvm-ranlib"}) {
    fs::create_symlink(llvm_bin / tool, dir / "bin" / tool);
  }
  testing::ScopedEnv ndk_cc("TVM_NDK_CC", cc.string());
  std::ofstream(dir / "add.c") << "int kiln_add(int a, int b) { return a + b; }\n";
  ASSERT_TRUE(
      run({.argv = {cc.string(), "-c", (dir / "add.c").string(), "-o", (dir / "add.o").string()}})
          .ok());

  Job job;
  job.name = "libndk";
  job.kind = JobKind::static_library;
  job.inputs.push_back(Input{.job = "", .file = dir / "add.o"});
  job.toolchain = Toolchain::ndk;
  Cache cache = Cache::disabled();
  ToolIdentities identities(cache);
  TempDirectory work;
  Workspace ws{.work_dir = work.path(),
               .output = work / "libndk.a",
               .out_dir = work.path(),
               .inputs = {dir / "add.o"}};
  JobRecipe prepared = prepare(job, {}, ws, identities);
  ASSERT_EQ(prepared.skip_reason, "");
  std::string key = key_text(job, prepared.recipe, ws);
  for (const char* tool : {"llvm-ar", "llvm-ranlib"}) {
    const RecipeTool* found = prepared.recipe.tool((dir / "bin" / tool).string());
    ASSERT_NE(found, nullptr) << tool;
    EXPECT_EQ(found->path, fs::canonical(llvm_bin / tool));
    EXPECT_NE(key.find(ToolIdentities(cache).of((llvm_bin / tool).string()).text),
              std::string::npos)
        << tool << " is not in the key";
  }
  expect_what_ran_is_in_the_key(job, prepared.recipe, ws);
  EXPECT_TRUE(internal::is_file(ws.output));
}

// Which jobs the build's launcher takes, which of those it may send elsewhere, and why the
// others stay here.
TEST(Route, ALauncherTakesCompilesAndSaysWhyItLeavesTheRest) {
  Manifest m = parse_manifest_text(R"({"jobs": [
      {"name": "o", "kind": "object", "language": "c", "code": "int o;"},
      {"name": "so", "kind": "shared", "language": "c", "code": "int s;"},
      {"name": "nvrtc", "kind": "cuda", "code": "__global__ void k() {}", "arch": "sm_80"},
      {"name": "cubin", "kind": "cuda", "code": "__global__ void k() {}", "arch": "sm_90a",
       "backend": "nvcc", "format": "cubin"},
      {"name": "fat80", "kind": "cuda", "code": "__global__ void k() {}", "arch": "sm_80",
       "backend": "nvcc", "format": "fatbin"},
      {"name": "fat90a", "kind": "cuda", "code": "__global__ void k() {}", "arch": "sm_90a",
       "backend": "nvcc", "format": "fatbin"},
      {"name": "t", "kind": "tar", "inputs": ["@o"]}]})",
                                   ".", "test");
  Options sccache{.launcher = LauncherKind::sccache};
  auto route = [&](const char* name, const Options& options) {
    return route_of(m.jobs[m.index_of(name).value()], options);
  };
  EXPECT_EQ(route("o", {}).launcher, std::nullopt);
  Route object = route("o", sccache);
  EXPECT_EQ(object.launcher, LauncherKind::sccache);
  EXPECT_TRUE(object.distributes);
  Options ccache{.launcher = LauncherKind::ccache};
  EXPECT_FALSE(route("o", ccache).distributes);  // a cache, not a cluster
  Route link = route("so", sccache);
  EXPECT_EQ(link.launcher, LauncherKind::sccache);
  EXPECT_FALSE(link.distributes);
  EXPECT_EQ(link.why_local, "a compile that also links runs locally");
  EXPECT_EQ(route("nvrtc", sccache).launcher, std::nullopt);
  EXPECT_NE(route("nvrtc", sccache).why_local.find("NVRTC compiles in kiln's process"),
            std::string::npos);
  EXPECT_TRUE(route("cubin", sccache).distributes);
  EXPECT_TRUE(route("fat80", sccache).distributes);
  EXPECT_NE(route("fat90a", sccache).why_local.find("arch-specific target (sm_90a)"),
            std::string::npos);
  EXPECT_EQ(route("cubin", {.launcher = LauncherKind::distcc}).why_local,
            "distcc does not take nvcc compiles (sccache does)");
  EXPECT_EQ(route("t", sccache).why_local,
            "tar jobs run locally: sccache takes C/C++ and nvcc compiles");
}

}  // namespace
}  // namespace kiln::build::detail
