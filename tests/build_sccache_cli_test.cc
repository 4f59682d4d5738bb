// kiln build --launcher sccache without a cluster (sccache compiles locally), about the private
// directories of kiln's sccache servers: a TMPDIR too deep for a socket path, and what a
// SIGKILLed kiln leaves behind. The compilers are gcc, one behind a gate (a shell script that
// waits for a file) to hold a build while the test looks. Skips without sccache.
#include <signal.h>

#include <chrono>
#include <fstream>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "build_project.h"
#include "kiln/paths.h"
#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "testing/background_process.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using nlohmann::json;
using Environment = std::map<std::string, std::optional<std::string>>;

std::optional<fs::path> sccache_bin_dir() {
  if (std::optional<fs::path> found = which("sccache")) return found->parent_path();
  if (fs::exists(fs::path(KILN_SCCACHE_BIN_DIR) / "sccache")) return KILN_SCCACHE_BIN_DIR;
  return std::nullopt;
}

// Polls `done` up to `limit`.
template <typename Done>
bool eventually(Done done, std::chrono::seconds limit = 60s) {
  for (auto end = std::chrono::steady_clock::now() + limit; std::chrono::steady_clock::now() < end;
       std::this_thread::sleep_for(20ms)) {
    if (done()) return true;
  }
  return done();
}

// Manifests, an sccache config of their own and a TMPDIR in one temporary directory.
class SccacheProject {
 public:
  SccacheProject(fs::path bin_dir, fs::path tmpdir) : bin_dir_(std::move(bin_dir)) {
    tmpdir_ = tmpdir.empty() ? path("tmp") : std::move(tmpdir);
    fs::create_directories(tmpdir_);
    project_.write("sccache.conf",
                   fmt::format("[cache.disk]\ndir = \"{}\"\n", path("sccache-cache").string()));
  }

  const fs::path& tmpdir() const { return tmpdir_; }
  fs::path path(const std::string& name) const { return project_.path(name); }

  // A manifest `name`.json of one C object; `gate`: its compiler (asked anything but --version,
  // which kiln asks for the cache key) waits for the file gate + ".go" after making gate +
  // ".started".
  // `timeout`: the job's, when given.
  fs::path manifest(const std::string& name, const std::string& gate = "",
                    std::optional<double> timeout = std::nullopt) const {
    json job = testing::c_job(name, fmt::format("int {}(void) {{ return 7; }}", name));
    if (timeout) job["timeout"] = *timeout;
    if (!gate.empty()) job["cc"] = project_.gated_compiler(gate).string();
    return project_.manifest({{"jobs", {job}}}, name + ".json");
  }

  std::vector<std::string> build_args(const std::string& name) const {
    return project_.argv(options(name));
  }
  Environment env() const { return project_.env(changes()); }
  RunResult build(const std::string& name) const { return project_.build_with(options(name)); }
  json job_result(const std::string& name) const {
    return project_.result(name + "-result.json")["jobs"][0];
  }
  // What TMPDIR holds now.
  std::set<std::string> tmp_entries() const {
    std::set<std::string> names;
    for (const auto& entry : fs::directory_iterator(tmpdir_)) {
      names.insert(entry.path().filename().string());
    }
    return names;
  }

 private:
  // A build's environment changes: TMPDIR, the sccache config, bin_dir first in PATH, and
  // KILN_NO_CACHE=1.
  Environment changes() const {
    return {{"TMPDIR", tmpdir_.string()},
            {"PATH", bin_dir_.string() + ":" + internal_path()},
            {"SCCACHE_CONF", path("sccache.conf").string()},
            {"KILN_NO_CACHE", "1"}};
  }
  // kiln build of `name`.json into out-`name`, its report `name`-result.json, through sccache.
  testing::BuildOptions options(const std::string& name) const {
    return {.args = {"--launcher", "sccache"},
            .env = changes(),
            .manifest = name + ".json",
            .out = fmt::format("out-{}", name),
            .report = name + "-result.json"};
  }
  static std::string internal_path() {
    const char* path = std::getenv("PATH");  // NOLINT(concurrency-mt-unsafe): tests set no env
    return path != nullptr ? path : "/usr/bin:/bin";
  }

  testing::BuildProject project_;
  fs::path bin_dir_;
  fs::path tmpdir_;
};

std::set<std::string> minus(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::set<std::string> out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::inserter(out, out.end()));
  return out;
}

std::string listed(const std::set<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += " " + name;
  return text;
}

// A CI runner's or a container's TMPDIR can be deeper than a Unix socket path may be (about 100
// bytes): kiln's sccache servers then put their sockets in a short private directory instead,
// and the build works as with any TMPDIR.
TEST(BuildSccacheCli, ATmpdirTooDeepForASocketStillBuilds) {
  std::optional<fs::path> bin = sccache_bin_dir();
  if (!bin) GTEST_SKIP() << "sccache is not installed (scripts/install-deps.sh installs it)";
  TempDirectory deep_root;
  fs::path deep = deep_root.path();
  while (deep.string().size() < 150) deep /= "a-directory-of-a-deep-tmpdir";
  SccacheProject project(*bin, deep);
  ASSERT_GE(project.tmpdir().string().size(), 150u);
  project.manifest("deep");
  RunResult r = project.build("deep");
  ASSERT_EQ(r.exit_code, 0) << r.output << r.error_output;
  json job = project.job_result("deep");
  EXPECT_EQ(job["status"], "done") << job.dump();
  EXPECT_EQ(job["engine"], "sccache") << job.dump();
  EXPECT_EQ(job["ran_detail"], "sccache: 1 compile locally") << job.dump();
  EXPECT_TRUE(project.tmp_entries().empty()) << "left in TMPDIR:" << listed(project.tmp_entries());
}

// SIGKILL gives kiln no chance to remove its sccache servers' directories: the next build does,
// and leaves those of a build still running alone.
TEST(BuildSccacheCli, TheNextBuildRemovesWhatAKilledOnesServersLeftButNotALiveOnes) {
  std::optional<fs::path> bin = sccache_bin_dir();
  if (!bin) GTEST_SKIP() << "sccache is not installed (scripts/install-deps.sh installs it)";
  SccacheProject project(*bin, {});
  project.manifest("killed", "gate-killed");
  project.manifest("live", "gate-live");
  project.manifest("next");
  auto started = [&](const std::string& gate) {
    return eventually([&] { return fs::exists(project.path(gate + ".started")); });
  };

  std::set<std::string> before = project.tmp_entries();
  testing::BackgroundProcess killed(project.build_args("killed"), project.env(),
                                    project.path("killed.log"));
  ASSERT_TRUE(started("gate-killed")) << killed.log();
  std::set<std::string> of_killed = minus(project.tmp_entries(), before);
  killed.kill();
  std::ofstream(project.path("gate-killed.go")).flush();  // a compiler that outlived kiln ends
  ASSERT_FALSE(of_killed.empty()) << "the killed build's servers made no directory in TMPDIR";

  testing::BackgroundProcess live(project.build_args("live"), project.env(),
                                  project.path("live.log"));
  ASSERT_TRUE(started("gate-live")) << live.log();
  std::set<std::string> of_live = minus(minus(project.tmp_entries(), before), of_killed);
  ASSERT_FALSE(of_live.empty()) << "the live build's servers made no directory in TMPDIR";

  RunResult next = project.build("next");
  EXPECT_EQ(next.exit_code, 0) << next.output << next.error_output;
  std::set<std::string> now = project.tmp_entries();
  std::set<std::string> left;
  std::set_intersection(now.begin(), now.end(), of_killed.begin(), of_killed.end(),
                        std::inserter(left, left.end()));
  EXPECT_TRUE(left.empty()) << "the killed build's left:" << listed(left);
  EXPECT_TRUE(minus(of_live, now).empty())
      << "the live build's directories were removed:" << listed(minus(of_live, now));

  std::ofstream(project.path("gate-live.go")).flush();
  EXPECT_TRUE(eventually([&] { return !live.running(); })) << live.log();
  EXPECT_EQ(project.job_result("live")["status"], "done") << live.log();
  EXPECT_TRUE(minus(project.tmp_entries(), before).empty())
      << "left in TMPDIR:" << listed(minus(project.tmp_entries(), before));
}

// A job that runs past its limit says so, naming the compile and the limit: kiln's question to
// its sccache server afterwards (the statistics that say where the job ran) is no run of the
// job's, and asked under the job's passed deadline it ended at once, "sccache: ... timed out
// after 0s ... --show-stats", and took the job's place in its log. Asked under a limit of its own,
// it still says where the job ran.
TEST(BuildSccacheCli, AJobThatTimesOutSaysSoNotItsStatisticsQuery) {
  std::optional<fs::path> bin = sccache_bin_dir();
  if (!bin) GTEST_SKIP() << "sccache is not installed (scripts/install-deps.sh installs it)";
  SccacheProject project(*bin, {});
  project.manifest("slow", "gate-slow", 1);
  RunResult r = project.build("slow");
  std::ofstream(project.path("gate-slow.go")).flush();  // the compiler sccache's server started
  EXPECT_EQ(r.exit_code, 1) << r.output << r.error_output;
  json job = project.job_result("slow");
  EXPECT_EQ(job["status"], "timeout") << job.dump();
  std::string log = job["log"].get<std::string>();
  EXPECT_NE(log.find("(job \"slow\"'s limit of 1s, the manifest's)"), std::string::npos) << log;
  EXPECT_EQ(log.find("--show-stats"), std::string::npos) << log;
  EXPECT_EQ(log.find("after 0s"), std::string::npos) << log;
  for (const json& command : job["command"]) {
    EXPECT_EQ(command.get<std::string>().find("--show-stats"), std::string::npos)
        << "kiln's question is no command of the job's: " << job.dump();
  }
  // The question was asked, and answered: where the job ran, as sccache's statistics have it.
  EXPECT_TRUE(job["ran_detail"].get<std::string>().starts_with("sccache: ")) << job.dump();
}

}  // namespace
}  // namespace kiln
