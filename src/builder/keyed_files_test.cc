// Each file a job's key covers is read once before its compile (the key, the CUDA recipe's code
// and the cache's record all take that one read) and once after (the check that the compile read
// what the key says), counted through read_file's seam.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <mutex>

#include "internal/files.h"
#include "keyed_files.h"
#include "kiln/build.h"
#include "kiln/direct_cache.h"
#include "kiln/manifest.h"
#include "kiln/temp_directory.h"
#include "testing/cuda_kernel.h"
#include "testing/test_support.h"

namespace kiln::build::detail {
namespace {

namespace fs = std::filesystem;

std::mutex reads_mutex;
std::map<std::string, int> reads;

void count_read(const fs::path& path) {
  std::lock_guard lock(reads_mutex);
  ++reads[path.string()];
}

// Counts the reads of every file while it lives.
struct CountedReads {
  CountedReads() {
    reads.clear();
    internal::observe_reads(count_read);
  }
  ~CountedReads() { internal::observe_reads(nullptr); }
  int of(const fs::path& path) {
    std::lock_guard lock(reads_mutex);
    return reads[path.string()];
  }
};

TEST(KeyedFiles, ReadsEachFileOnceAndHashesAsTheCacheDoes) {
  TempDirectory dir;
  fs::path source = dir.path() / "a.c";
  fs::path input = dir.path() / "b.o";
  std::ofstream(source) << "int a;\n";
  std::ofstream(input) << "object";
  CountedReads counted;
  KeyedFiles files({source}, {input});
  EXPECT_EQ(files.content(source), "int a;\n");
  auto hashes = files.hashes();
  ASSERT_EQ(hashes.size(), 2u);
  EXPECT_EQ(hashes[0], std::make_pair(source, content_key("int a;\n")));
  EXPECT_EQ(hashes[1], std::make_pair(input, content_key("object")));
  EXPECT_EQ(counted.of(source), 1);
  EXPECT_EQ(counted.of(input), 1);
  EXPECT_THROW(files.content(input), InvalidArgument);  // an input's content is not kept
  EXPECT_THROW(files.content(dir.path() / "other"), InvalidArgument);
}

// Builds `manifest` with a fresh cache, counting reads.
void check_read_once_before_and_once_after(const Manifest& manifest,
                                           const std::vector<fs::path>& sources) {
  TempDirectory dir;
  testing::ScopedEnv cache("KILN_CACHE_DIR", (dir.path() / "cache").string());
  testing::ScopedEnv on("KILN_NO_CACHE", std::nullopt);
  CountedReads counted;
  Report report = run_build(manifest, {.jobs = 1, .out_dir = dir.path() / "out"});
  for (const JobResult& job : report.jobs) {
    ASSERT_EQ(job.status, JobStatus::done) << job.name << ": " << job.log;
  }
  for (const fs::path& source : sources) {
    EXPECT_EQ(counted.of(source), 2) << source;
  }
}

TEST(KeyedFiles, ACJobsSourceIsReadOnceBeforeAndOnceAfterItsCompile) {
  TempDirectory dir;
  fs::path source = dir.path() / "a.c";
  std::ofstream(source) << "int a(void) { return 1; }\n";
  Manifest manifest = parse_manifest_text(
      R"({"jobs": [{"name": "a", "kind": "object", "sources": ["a.c"]}]})", dir.path(), "test");
  check_read_once_before_and_once_after(manifest, {source});
}

TEST(KeyedFiles, ACudaJobsSourceIsReadOnceBeforeAndOnceAfterItsCompile) {
  if (auto why = testing::cuda_toolkit_missing()) GTEST_SKIP() << *why;
  TempDirectory dir;
  fs::path source = dir.path() / "k.cu";
  std::ofstream(source) << "#include \"near.h\"\n"
                           "extern \"C\" __global__ void k(float* a) { a[0] *= NEAR; }\n";
  std::ofstream(dir.path() / "near.h") << "#define NEAR 2\n";
  Manifest manifest = parse_manifest_text(
      R"({"jobs": [{"name": "k", "kind": "cuda", "sources": ["k.cu"], "arch": "sm_80"}]})",
      dir.path(), "test");
  check_read_once_before_and_once_after(manifest, {source});
}

}  // namespace
}  // namespace kiln::build::detail
