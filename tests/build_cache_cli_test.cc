// kiln build's cache against stale outputs: headers reached every way the compiler finds them
// (-iquote, -isystem, -include, CPATH, C_INCLUDE_PATH, CPLUS_INCLUDE_PATH) are keyed through the
// compiler's own dependency output, an unchanged rebuild is still a hit, and a source edited
// while its compile runs is not stored under the key of its old content.
#include <fstream>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "build_project.h"
#include "cli_support.h"
#include "kiln/paths.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::kiln_cli;
using testing::read_file;
using Env = std::map<std::string, std::optional<std::string>>;

// A project that builds one job at a time, with none of the compiler's include path variables
// set but those a test gives.
class CacheProject {
 public:
  // Writes the file, then waits for the kernel's coarse clock (which stamps modification times)
  // to pass its time: kiln stores no entry whose header changed at or after its compile began
  // (it may have changed during it), so a header written in the same tick as the build starts
  // (a 4 ms tick; kiln now starts within it) would make an unchanged rebuild a miss, rightly.
  void write(const std::string& name, const std::string& text) const {
    project_.write(name, text);
    testing::wait_for_coarse_clock_past(path(name));
  }
  fs::path path(const std::string& name) const { return project_.path(name); }

  // Builds the one job; returns its status ("done"; others followed by the job's report) and its
  // output's bytes.
  std::pair<std::string, std::string> build(const json& job, const Env& extra = {}) const {
    project_.manifest({{"jobs", {job}}});
    fs::remove(path("result.json"));
    Env env;
    for (const char* name : {"CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH"})
      env[name] = std::nullopt;
    for (const auto& [name, value] : extra) env[name] = value;
    RunResult r = project_.build({}, env);
    if (!fs::exists(path("result.json"))) ADD_FAILURE() << r.output << r.error_output;
    json result = project_.result();
    const json& only = result["jobs"].at(0);
    std::string output = only.contains("output") && only["output"].is_string()
                             ? read_file(only["output"].get<std::string>())
                             : "";
    return {only["status"].get<std::string>() + (only["status"] == "done" ? "" : only.dump()),
            output};
  }

 private:
  testing::BuildProject project_;
};

struct HeaderCase {
  std::string name;
  std::string language;  // "c" or "c++"
  std::string code;
  std::vector<std::string> options;  // "{inc}" stands for the header's directory
  std::string variable;              // an environment variable set to it, or ""
};

// The header changes between builds: the second build must compile again and make other bytes;
// a build with nothing changed must be a hit.
void check_header_is_keyed(const HeaderCase& c) {
  SCOPED_TRACE(c.name);
  CacheProject project;
  std::string inc = project.path("inc").string();
  std::vector<std::string> options;
  for (const std::string& option : c.options) {
    options.push_back(option.starts_with("{inc}") ? inc + option.substr(5) : option);
  }
  json job = {{"name", "k"},
              {"kind", "object"},
              {"code", c.code},
              {"language", c.language},
              {"options", options}};
  Env env;
  if (!c.variable.empty()) env[c.variable] = inc;

  project.write("inc/h.h", "#define VALUE 11111\n");
  auto [first_status, first] = project.build(job, env);
  EXPECT_EQ(first_status, "done");
  auto [again_status, again] = project.build(job, env);
  EXPECT_EQ(again_status.substr(0, 6), "cached") << "an unchanged rebuild must be a cache hit";
  EXPECT_EQ(again, first);

  project.write("inc/h.h", "#define VALUE 22222\n");
  auto [edited_status, edited] = project.build(job, env);
  EXPECT_EQ(edited_status, "done") << "the header changed: the old output was served";
  EXPECT_NE(edited, first);
}

constexpr const char* kQuoted = "#include \"h.h\"\nint value(void) { return VALUE; }\n";
constexpr const char* kAngled = "#include <h.h>\nint value(void) { return VALUE; }\n";
constexpr const char* kBare = "int value(void) { return VALUE; }\n";

TEST(BuildCacheCli, AHeaderFoundThroughIquoteIsKeyed) {
  check_header_is_keyed({"-iquote", "c", kQuoted, {"-iquote", "{inc}"}, ""});
}

TEST(BuildCacheCli, AHeaderFoundThroughIsystemIsKeyed) {
  check_header_is_keyed({"-isystem", "c", kAngled, {"-isystem", "{inc}"}, ""});
}

TEST(BuildCacheCli, AHeaderForcedWithIncludeIsKeyed) {
  check_header_is_keyed({"-include", "c", kBare, {"-include", "{inc}/h.h"}, ""});
}

TEST(BuildCacheCli, AHeaderFoundThroughCpathIsKeyed) {
  check_header_is_keyed({"CPATH", "c", kAngled, {}, "CPATH"});
}

TEST(BuildCacheCli, AHeaderFoundThroughCIncludePathIsKeyed) {
  check_header_is_keyed({"C_INCLUDE_PATH", "c", kAngled, {}, "C_INCLUDE_PATH"});
}

TEST(BuildCacheCli, AHeaderFoundThroughCplusIncludePathIsKeyed) {
  check_header_is_keyed({"CPLUS_INCLUDE_PATH", "c++", kAngled, {}, "CPLUS_INCLUDE_PATH"});
}

// Assembly that is not preprocessed (.s) has no dependency output: it is still cached.
TEST(BuildCacheCli, AnUnpreprocessedAssemblySourceIsStillCached) {
  CacheProject project;
  project.write("a.s", ".text\n.globl f\nf:\n  ret\n");
  json job = {{"name", "a"}, {"kind", "object"}, {"sources", {project.path("a.s")}}};
  auto [first_status, first] = project.build(job);
  ASSERT_EQ(first_status, "done");
  auto [again_status, again] = project.build(job);
  EXPECT_EQ(again_status.substr(0, 6), "cached") << again_status;
  EXPECT_EQ(again, first);
}

// A CUDA job's header beside its source: NVRTC reports no dependencies, so they are asked of
// nvcc's dependency output; the key must still follow the header.
TEST(BuildCacheCli, AHeaderOfACudaKernelIsKeyed) {
  std::optional<fs::path> nvcc = which("nvcc");
  if (!nvcc && !fs::exists("/usr/local/cuda/bin/nvcc")) GTEST_SKIP() << "needs the CUDA toolkit";
  CacheProject project;
  project.write("k.cu",
                "#include \"h.h\"\nextern \"C\" __global__ void k(int* a) { a[0] = VALUE; }\n");
  json job = {{"name", "k"},
              {"kind", "cuda"},
              {"sources", {project.path("k.cu")}},
              {"format", "ptx"},
              {"arch", "sm_80"}};
  project.write("h.h", "#define VALUE 11111\n");
  auto [first_status, first] = project.build(job);
  if (first_status.find("toolchain absent") != std::string::npos) GTEST_SKIP() << first_status;
  ASSERT_EQ(first_status, "done");
  EXPECT_NE(first.find("11111"), std::string::npos);
  EXPECT_EQ(project.build(job).first.substr(0, 6), "cached");
  project.write("h.h", "#define VALUE 22222\n");
  auto [edited_status, edited] = project.build(job);
  EXPECT_EQ(edited_status, "done") << "the header changed: the old output was served";
  EXPECT_NE(edited.find("22222"), std::string::npos);
}

// A kernel that includes only the toolkit's headers (as TVM's do) reads nothing the toolkit's
// identity does not already key: its NVRTC compile costs no extra nvcc -M run, and is cached.
TEST(BuildCacheCli, AKernelOfToolkitHeadersOnlyNeedsNoHeaderScan) {
  if (!which("nvcc") && !fs::exists("/usr/local/cuda/bin/nvcc")) {
    GTEST_SKIP() << "needs the CUDA toolkit";
  }
  CacheProject project;
  project.write("k.cu",
                "#include <cuda_fp16.h>\n"
                "extern \"C\" __global__ void k(__half* a) { a[0] = __hadd(a[1], a[2]); }\n");
  json job = {{"name", "k"},     {"kind", "cuda"},  {"sources", {project.path("k.cu")}},
              {"format", "ptx"}, {"arch", "sm_80"}, {"backend", "nvrtc"}};
  auto [status, ptx] = project.build(job);
  if (status.find("toolchain absent") != std::string::npos) GTEST_SKIP() << status;
  ASSERT_EQ(status, "done");
  json commands = json::parse(read_file(project.path("result.json")))["jobs"][0]["commands"];
  for (const json& command : commands) {
    EXPECT_EQ(command.get<std::string>().find(" -M "), std::string::npos) << command;
  }
  EXPECT_EQ(project.build(job).first.substr(0, 6), "cached");
}

// Each variable the CUDA toolchain reads that changes what it makes: a build with it after a
// build without it is not served from the cache, and shows the variable's effect.
TEST(BuildCacheCli, CudaEnvironmentVariablesAreNotServedStaleOutputs) {
  if (!which("nvcc") && !fs::exists("/usr/local/cuda/bin/nvcc")) {
    GTEST_SKIP() << "needs the CUDA toolkit";
  }
  CacheProject project;
  project.write("k.cu", "extern \"C\" __global__ void k(float* a) { a[0] = a[1] / a[2]; }\n");
  auto job = [&](const std::string& backend) {
    return json{{"name", "k"},     {"kind", "cuda"},  {"sources", {project.path("k.cu")}},
                {"format", "ptx"}, {"arch", "sm_80"}, {"backend", backend}};
  };
  auto [plain_status, plain] = project.build(job("nvcc"));
  if (plain_status.find("toolchain absent") != std::string::npos) GTEST_SKIP() << plain_status;
  ASSERT_EQ(plain_status, "done");
  EXPECT_NE(plain.find("div.approx"), std::string::npos) << "fast math by default";

  auto [exact_status, exact] = project.build(job("nvcc"), {{"TVM_CUDA_NVCC_NO_FAST_MATH", "1"}});
  EXPECT_EQ(exact_status, "done");
  EXPECT_EQ(exact.find("div.approx"), std::string::npos) << "TVM_CUDA_NVCC_NO_FAST_MATH ignored";

  auto [debug_status, debug] = project.build(job("nvcc"), {{"TVM_KERNEL_DEBUG", "1"}});
  EXPECT_EQ(debug_status, "done");
  EXPECT_NE(debug, plain) << "TVM_KERNEL_DEBUG ignored";

  auto [nvrtc_status, nvrtc] = project.build(job("nvrtc"));
  if (nvrtc_status.find("toolchain absent") == std::string::npos) {
    ASSERT_EQ(nvrtc_status, "done");
    auto [bogus_status, bogus] =
        project.build(job("nvrtc"), {{"TVM_CUDA_NVRTC_EXTRA_OPTS", "--no-such-nvrtc-option"}});
    EXPECT_EQ(bogus_status.substr(0, 6), "failed") << "a bogus TVM_CUDA_NVRTC_EXTRA_OPTS";
    std::string dump = project.path("dump").string();
    for (int run = 0; run < 2; ++run) {  // a dump is asked for each time: never a cache hit
      fs::remove_all(dump);
      auto [dump_status, dumped] = project.build(job("nvrtc"), {{"TVM_KERNEL_DUMP", dump}});
      EXPECT_EQ(dump_status, "done");
      EXPECT_TRUE(fs::exists(fs::path(dump) / "tvm_kernels.cu")) << "no dump written";
    }
  }
}

// A stand-in compiler that, like an editor saving mid-compile, rewrites the source once after
// kiln hashed it and before the real gcc reads it (not when kiln asks its --version).
TEST(BuildCacheCli, ASourceEditedDuringItsCompileIsNotStoredUnderItsOldContent) {
  std::optional<fs::path> gcc = which("gcc");
  if (!gcc) GTEST_SKIP() << "needs gcc on PATH";
  CacheProject project;
  std::string original = "int value(void) { return 11111; }\n";
  project.write("a.c", original);
  project.write("editing-cc",
                "#!/bin/sh\n"
                "if [ \"$1\" != --version ] && [ ! -e \"$EDIT_MARKER\" ]; then\n"
                "  : > \"$EDIT_MARKER\"\n"
                "  printf 'int value(void) { return 22222; }\\n' > \"$EDIT_SOURCE\"\n"
                "fi\n"
                "exec " +
                    gcc->string() + " \"$@\"\n");
  fs::permissions(project.path("editing-cc"), fs::perms::owner_all);
  json job = {{"name", "a"},
              {"kind", "object"},
              {"sources", {project.path("a.c").string()}},
              {"cc", project.path("editing-cc").string()}};
  Env env{{"EDIT_MARKER", project.path("edited").string()},
          {"EDIT_SOURCE", project.path("a.c").string()}};
  auto [first_status, made_from_edit] = project.build(job, env);
  ASSERT_EQ(first_status, "done");

  project.write("a.c", original);  // back to the content kiln hashed before that compile
  auto [second_status, second] = project.build(job, env);
  EXPECT_EQ(second_status, "done") << "the output of the edited source was stored under the key "
                                      "of the original";
  EXPECT_NE(second, made_from_edit);
  auto [third_status, third] = project.build(job, env);
  EXPECT_EQ(third_status.substr(0, 6), "cached");
  EXPECT_EQ(third, second);
}

// No usable cache directory (no HOME at all; a service account's HOME that does not exist and
// cannot be made, here under /proc so that root cannot make it either): kiln build runs every job
// uncached, with one warning that says why, where it used to fail as a whole.
TEST(BuildCacheCliNoCacheDir, BuildsUncachedWithOneWarning) {
  if (!which("gcc")) GTEST_SKIP() << "gcc is not installed";
  TempDirectory dir;
  std::ofstream(dir.path() / "a.c") << "int a(void) { return 1; }\n";
  json job = {{"name", "a"}, {"kind", "object"}, {"sources", {(dir.path() / "a.c").string()}}};
  std::ofstream(dir.path() / "kiln.json") << json{{"jobs", {job}}}.dump();
  for (const std::optional<std::string>& home :
       {std::optional<std::string>(), std::optional<std::string>("/proc/nonexistent")}) {
    SCOPED_TRACE("HOME=" + home.value_or("(unset)"));
    fs::remove_all(dir.path() / "out");
    RunResult r = kiln_cli(
        {"build", (dir.path() / "kiln.json").string(), "--out", (dir.path() / "out").string()},
        {{"HOME", home},
         {"KILN_CACHE_DIR", std::nullopt},
         {"XDG_CACHE_HOME", std::nullopt},
         {"KILN_NO_CACHE", std::nullopt}});
    EXPECT_EQ(r.exit_code, 0) << r.output << r.error_output;
    EXPECT_EQ(testing::count_occurrences(r.error_output,
                                         "kiln: warning: kiln's kernel cache is not used: "),
              1u)
        << r.error_output;
    EXPECT_NE(r.output.find("1 done"), std::string::npos) << r.output;
    EXPECT_TRUE(fs::exists(dir.path() / "out" / "a.o"));
  }
}

}  // namespace
}  // namespace kiln
