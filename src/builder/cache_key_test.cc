// Every environment variable a toolchain reads changes the cache key of what it makes: the test
// walks each toolchain's list (kiln/toolchain_environment.h), sets each variable in turn, and
// compares the key of a recipe of that toolchain with the key made without it.
#include <gtest/gtest.h>

#include "internal/files.h"
#include "kiln/cache.h"
#include "kiln/cc.h"
#include "kiln/clang.h"
#include "kiln/cuda.h"
#include "kiln/emcc.h"
#include "kiln/error.h"
#include "kiln/ndk.h"
#include "kiln/paths.h"
#include "kiln/rocm.h"
#include "kiln/temp_directory.h"
#include "kiln/toolchain_environment.h"
#include "recipe.h"
#include "testing/test_support.h"

namespace kiln::build::detail {
namespace {

namespace fs = std::filesystem;

// A recipe of the toolchain whose list is `list`, as kiln build would key it.
Recipe recipe_of(const EnvironmentList& list, const fs::path& dir) {
  fs::path out = dir / "out";
  std::string_view name = list.toolchain();
  if (name == "cuda") {
    return cuda::compile_recipe("__global__ void k() {}",
                                {.arch = "sm_80", .output = out, .backend = cuda::Backend::nvcc});
  }
  if (name == "cc") return cc::object_recipe(out, {dir / "a.c"}, {.cc = "gcc"});
  if (name == "clang")
    return clang::llvm_recipe({(dir / "a.c").string()}, {.output = out, .cc = "clang"}, dir);
  if (name == "ndk") {
    testing::ScopedEnv cc("TVM_NDK_CC", kiln::internal::env("TVM_NDK_CC").value_or("/bin/false"));
    return ndk::shared_recipe(out, {dir / "a.o"}, std::nullopt);
  }
  if (name == "emcc") return emcc::standalone_wasm_recipe(out, {dir / "a.o"}, {});
  return rocm::code_object_recipe(dir / "a.cl", out,
                                  {.arch = "gfx900", .clang = "clang", .lld = "ld.lld"});
}

std::string key_of(const EnvironmentList& list, const fs::path& dir) {
  Job job;
  job.name = "k";
  Workspace ws{.work_dir = dir, .output = dir / "out"};
  return key_text(job, recipe_of(list, dir), ws);
}

TEST(EnvironmentKey, EveryVariableAToolchainReadsChangesItsKey) {
  TempDirectory dir;
  kiln::internal::write_file(dir / "a.c", "int a;\n");
  for (const EnvironmentList* list : toolchain_environments()) {
    SCOPED_TRACE(list->toolchain());
    if (list->toolchain() == "cuda") {
      try {
        cuda::find_cuda_path();
      } catch (const Error& e) {
        std::printf("skipped the cuda list: %s\n", e.what());
        continue;
      }
    }
    std::vector<std::unique_ptr<testing::ScopedEnv>> unset;
    for (std::string_view name : list->keyed()) {
      unset.push_back(std::make_unique<testing::ScopedEnv>(std::string(name), std::nullopt));
    }
    std::string plain = key_of(*list, dir.path());
    for (std::string_view name : list->keyed()) {
      testing::ScopedEnv set(std::string(name), "/kiln-test-" + std::string(name));
      EXPECT_NE(key_of(*list, dir.path()), plain) << name << " does not change the key";
    }
  }
}

TEST(EnvironmentKey, AVariableNotOnItsToolchainsListIsRefused) {
  EXPECT_THROW(cuda_environment().get("HOME"), InvalidState);
  EXPECT_THROW(cc_environment().get("TVM_KERNEL_DUMP"), InvalidState);
  testing::ScopedEnv set("TVM_CUDA_NVCC_NO_FAST_MATH", "1");
  EXPECT_EQ(cuda_environment().get("TVM_CUDA_NVCC_NO_FAST_MATH"), "1");
}

TEST(EnvironmentKey, MaterialNamesTheSetVariablesInTheListsOrder) {
  EnvironmentList list("test", {"KILN_TEST_C", "KILN_TEST_B", "KILN_TEST_A"});
  testing::ScopedEnv a("KILN_TEST_A", "1");
  testing::ScopedEnv b("KILN_TEST_B", std::nullopt);
  testing::ScopedEnv c("KILN_TEST_C", "x y");
  EXPECT_EQ(list.material(), (std::vector<std::string>{"KILN_TEST_C=x y", "KILN_TEST_A=1"}));
}

TEST(EnvironmentKey, AKernelDumpIsNeverServedFromTheCache) {
  TempDirectory dir;
  try {
    cuda::find_cuda_path();
  } catch (const Error& e) {
    GTEST_SKIP() << "needs the CUDA toolkit: " << e.what();
  }
  EXPECT_TRUE(recipe_of(cuda_environment(), dir.path()).cacheable);
  testing::ScopedEnv dump("TVM_KERNEL_DUMP", (dir / "dump").string());
  EXPECT_FALSE(recipe_of(cuda_environment(), dir.path()).cacheable);
}

// A '$' the user wrote is not a placeholder: `-DWHERE="$BASE/data"` and the same option naming
// the base directory itself are two compiles (both once keyed as "$BASE/data", so the second
// was served the first's object); so are a literal $WORK/$OUT and the job's own directories.
TEST(RelocatedKey, ALiteralPlaceholderIsNotTheDirectoryItNames) {
  TempDirectory dir;
  fs::path base = dir / "proj";
  fs::create_directories(base);
  kiln::internal::write_file(base / "a.c", "int a;\n");
  Cache cache = Cache::open({.directory = dir / "cache",
                             .enabled = true,
                             .remote = RemoteCacheOptions{},
                             .base_directory = base});
  Workspace ws{.work_dir = dir / "work",
               .output = dir / "work/a.o",
               .out_dir = dir / "out",
               .cache = &cache};
  auto key_with = [&](const std::string& option) {
    Job job;
    job.name = "a";
    job.sources = {base / "a.c"};
    job.options = {option};
    Recipe recipe = cc::object_recipe(ws.output, job.sources, {.options = {option}, .cc = "gcc"});
    return cache_key(job, recipe, ws);
  };
  EXPECT_NE(key_with("-DWHERE=\"$BASE/data\""), key_with("-DWHERE=\"" + base.string() + "/data\""));
  EXPECT_NE(key_with("-DW=$WORK/x"), key_with("-DW=" + ws.work_dir.string() + "/x"));
  EXPECT_NE(key_with("-DW=$OUT/x"), key_with("-DW=" + ws.out_dir.string() + "/x"));
  EXPECT_NE(key_with("-DW=$$BASE"), key_with("-DW=$BASE"));
  // Still relocated: the same option in another checkout is the same key.
  fs::path other = dir / "other" / "proj";
  fs::create_directories(other);
  kiln::internal::write_file(other / "a.c", "int a;\n");
  Cache at_other = Cache::open({.directory = dir / "cache",
                                .enabled = true,
                                .remote = RemoteCacheOptions{},
                                .base_directory = other});
  std::string here = key_with("-I" + base.string() + "/include");
  ws.cache = &at_other;
  base = other;
  EXPECT_EQ(key_with("-I" + other.string() + "/include"), here);
}

}  // namespace
}  // namespace kiln::build::detail
