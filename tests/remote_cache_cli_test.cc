// kiln build with a shared remote cache on real servers (docs/remote-cache.md): a redis-server
// and an nginx serving WebDAV, each started by the test on loopback (src/testing/cache_servers.h).
//
//   - Two machines on one: two checkouts of one generated project (>= 50 C/C++ jobs, >= 10 CUDA
//     jobs through NVRTC and nvcc) at different absolute paths, with their own HOME and local
//     cache. What the first builds cold (read-write) the second gets from the server, byte for
//     byte what a build without any cache makes; a changed header, flag or toolchain variable
//     misses exactly the jobs it changes.
//   - Objects damaged on the server (flipped bytes, truncated, another object's bytes) are never
//     served: those jobs compile, the others still hit, one warning.
//   - A server killed before or during the build, one that stalls, answers 500 or garbage: the
//     build succeeds locally within a bound, with one warning.
//   - Read-only mode (the default) uploads nothing; wrong credentials are one warning that never
//     shows the password.
//   - `kiln cache stats` counts the remote hits.
//
// Each test skips, saying why, when redis-server, nginx or (for the CUDA jobs) nvcc is missing.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "build_project.h"
#include "kiln/paths.h"
#include "kiln/process.h"
#include "kiln/remote_store.h"
#include "kiln/temp_directory.h"
#include "testing/cache_servers.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::Environment;
using testing::FaultyServer;
using testing::read_file;
using testing::redis_command;
using testing::RedisServer;
using testing::RespReply;
using testing::WebdavServer;

// Writes `text` as it is to `path`, making its directories.
void write_text(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// --- The servers ---

enum class Server { redis, webdav };

std::string server_name(Server server) { return server == Server::redis ? "Redis" : "WebDAV"; }

// How gtest names a parameter in its messages.
void PrintTo(Server server, std::ostream* os) { *os << server_name(server); }

// A Redis or WebDAV server of a test, and what it holds, seen as the objects "ac/<hex>" and
// "cas/<hex>" of docs/remote-cache.md (Redis: the keys kiln:ac:<hex>, kiln:cas:<hex>).
class CacheServer {
 public:
  // Without credentials, or needing `password` (Redis: requirepass) or `user` and `password`
  // (WebDAV: basic auth).
  explicit CacheServer(Server kind, const std::string& user = "",
                       const std::string& password = "") {
    if (kind == Server::redis) {
      redis_ = std::make_unique<RedisServer>(RedisServer::Options{.password = password});
    } else {
      webdav_ =
          std::make_unique<WebdavServer>(WebdavServer::Options{.user = user, .password = password});
    }
  }

  static std::optional<std::string> missing(Server kind) {
    return kind == Server::redis ? RedisServer::missing() : WebdavServer::missing();
  }

  bool running() { return redis_ ? redis_->running() : webdav_->running(); }
  std::string why() const { return redis_ ? redis_->why() : webdav_->why(); }
  // The URL without credentials (a test gives them in a file).
  std::string url() const { return redis_ ? redis_->url_with("") : webdav_->url_with(""); }
  // "127.0.0.1:<port>", what every message about the server names.
  std::string address() const { return url().substr(url().find("://") + 3); }
  void kill() { redis_ ? redis_->kill() : webdav_->kill(); }

  // Every object on the server: kiln's as "<kind>/<hex>", anything else under its own name.
  std::set<std::string> objects() const {
    std::set<std::string> names;
    if (redis_) {
      RespReply keys = redis_command(redis_->port(), {"KEYS", "*"});
      EXPECT_EQ(keys.error, "") << "KEYS *";
      std::regex kiln_key("kiln:(ac|cas):([0-9a-f]+)");
      for (const std::string& key : keys.strings) {
        std::smatch m;
        names.insert(std::regex_match(key, m, kiln_key) ? m.str(1) + "/" + m.str(2) : key);
      }
      return names;
    }
    for (const fs::directory_entry& entry : fs::recursive_directory_iterator(webdav_->objects())) {
      if (entry.is_regular_file()) {
        names.insert(entry.path().lexically_relative(webdav_->objects()).string());
      }
    }
    return names;
  }

  // How many keys the Redis server holds (DBSIZE), or files the WebDAV server stores.
  long long count() const {
    if (redis_) return redis_command(redis_->port(), {"DBSIZE"}).integer;
    return static_cast<long long>(objects().size());
  }

  // The bytes of `object` ("cas/<hex>"): read through kiln's own client (Redis), or from the
  // file nginx stored (WebDAV).
  std::string read(const std::string& object) {
    auto [kind, hex] = split(object);
    if (webdav_) return read_file(webdav_->object_path(kind, hex));
    std::optional<std::string> bytes = store().get(kind, hex);
    EXPECT_TRUE(bytes.has_value()) << object << " is not on the server";
    return bytes.value_or("");
  }

  // Replaces the bytes of `object` behind kiln's back, as a failing disk or a hostile writer.
  void plant(const std::string& object, const std::string& bytes) {
    auto [kind, hex] = split(object);
    if (webdav_) {
      write_text(webdav_->object_path(kind, hex), bytes);
    } else {
      store().put(kind, hex, bytes);
    }
  }

 private:
  static std::pair<std::string, std::string> split(const std::string& object) {
    size_t slash = object.find('/');
    return {object.substr(0, slash), object.substr(slash + 1)};
  }
  RemoteStore& store() {
    if (!store_) store_ = open_remote_store(RemoteStoreOptions::parse(url()));
    return *store_;
  }

  std::unique_ptr<RedisServer> redis_;
  std::unique_ptr<WebdavServer> webdav_;
  std::unique_ptr<RemoteStore> store_;
};

// --- The project ---

bool have_nvcc() { return which("nvcc") || fs::exists("/usr/local/cuda/bin/nvcc"); }

constexpr int kHeaders = 4;  // include/proj/h0.h .. h3.h

struct Shape {
  int c_jobs = 0;     // C and C++, object and shared
  int cuda_jobs = 0;  // NVRTC (cubin, ptx) and nvcc (ptx, cubin)
};

// A generated project: its files (relative path -> text) and jobs, the same in every checkout
// but for the absolute include directory some jobs are given.
struct Project {
  std::map<std::string, std::string> files;
  json jobs = json::array();
  std::map<std::string, int> header_of;  // a C/C++ job -> the N of the include/proj/hN.h it reads
  std::set<std::string> c_jobs, cuda_jobs;

  std::set<std::string> all_jobs() const {
    std::set<std::string> all = c_jobs;
    all.insert(cuda_jobs.begin(), cuda_jobs.end());
    return all;
  }
  // A manifest of the jobs `keep` accepts.
  json manifest(const std::function<bool(const std::string&)>& keep = {}) const {
    json kept = json::array();
    for (const json& job : jobs) {
      if (!keep || keep(job["name"].get<std::string>())) kept.push_back(job);
    }
    return {{"jobs", kept}};
  }
};

std::string header_text(int n, int value) {
  return fmt::format("#ifndef PROJ_H{0}_H\n#define PROJ_H{0}_H\n#define H_VALUE {1}\n#endif\n", n,
                     value);
}

// Job i of the C/C++ jobs: C or C++, an object or a shared library, reading a project header
// found through -I<checkout>/include (an absolute path, different in every checkout), through a
// quoted path relative to the source, or none; each with its own -D flag.
void add_c_job(Project& project, const fs::path& root, int i) {
  std::string name = fmt::format("cc{:02}", i);
  bool cxx = i % 2 == 1;
  int header = i % kHeaders;
  std::string include;
  std::string value = std::to_string(i + 100);
  json options = {"-O1", fmt::format("-DJOB_TAG={}", i)};
  if (i % 3 == 0) {
    include = fmt::format("#include <proj/h{}.h>\n", header);
    options.push_back("-I" + (root / "include").string());
  } else if (i % 3 == 1) {
    include = fmt::format("#include \"../include/proj/h{}.h\"\n", header);
  }
  if (!include.empty()) {
    value = "H_VALUE";
    project.header_of[name] = header;
  }
  std::string source =
      cxx ? fmt::format(
                "{0}namespace proj {{\ntemplate <typename T>\nT {1}_scale(T a) {{ return a * "
                "JOB_TAG + {2}; }}\n}}  // namespace proj\nint {1}_value(int a) {{ return "
                "proj::{1}_scale(a); }}\n",
                include, name, value)
          : fmt::format("{0}int {1}_value(int a) {{ return a * JOB_TAG + {2}; }}\n", include, name,
                        value);
  std::string file = fmt::format("src/{}.{}", name, cxx ? "cc" : "c");
  project.files[file] = source;
  project.jobs.push_back({{"name", name},
                          {"kind", i % 5 == 4 ? "shared" : "object"},
                          {"sources", {file}},
                          {"options", options}});
  project.c_jobs.insert(name);
}

// CUDA job j: the first seven through NVRTC, the rest through nvcc, cubin and ptx in turn; the
// first reads cuda/kern.h beside it.
void add_cuda_job(Project& project, int j) {
  std::string name = fmt::format("cu{:02}", j);
  bool nvrtc = j < 7;
  std::string format = (j % 2 == 0) == nvrtc ? "cubin" : "ptx";
  std::string file = fmt::format("cuda/{}.cu", name);
  project.files[file] = fmt::format(
      "{0}extern \"C\" __global__ void {1}(float* y, const float* x, int n) {{\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i < n) y[i] = x[i] * {2}.0f + {3};\n}}\n",
      j == 0 ? "#include \"kern.h\"\n" : "", name, j + 2, j == 0 ? "KERNEL_BIAS" : "0.25f");
  project.jobs.push_back({{"name", name},
                          {"kind", "cuda"},
                          {"sources", {file}},
                          {"backend", nvrtc ? "nvrtc" : "nvcc"},
                          {"format", format},
                          {"arch", "sm_80"}});
  project.cuda_jobs.insert(name);
}

Project generate(const fs::path& root, const Shape& shape) {
  Project project;
  for (int n = 0; n < kHeaders; ++n) {
    project.files[fmt::format("include/proj/h{}.h", n)] = header_text(n, 11 * n + 3);
  }
  project.files["cuda/kern.h"] = "#define KERNEL_BIAS 0.5f\n";
  for (int i = 0; i < shape.c_jobs; ++i) add_c_job(project, root, i);
  for (int j = 0; j < shape.cuda_jobs; ++j) add_cuda_job(project, j);
  return project;
}

// Writes every file of `project` and its manifest kiln.json under `root`.
void write_project(const fs::path& root, const Project& project) {
  for (const auto& [name, text] : project.files) write_text(root / name, text);
  write_text(root / "kiln.json", project.manifest().dump(2));
  testing::wait_for_coarse_clock_past(root / "kiln.json");
}

// --- Builds ---

struct Build {
  RunResult result;
  json report;                             // null when kiln wrote none
  std::map<std::string, json> jobs;        // the report's jobs, by name
  std::map<std::string, std::string> ran;  // each job's "ran" ("" for null)

  // What a failed expectation shows: how kiln ended, and what it printed.
  std::string context() const {
    return fmt::format("kiln {}\n--- stdout:\n{}\n--- stderr:\n{}", result.status_text(),
                       result.output, result.error_output);
  }
  const json& remote() const { return report.at("summary").at("remote_cache"); }
  long long remote_count(const char* counter) const {
    return report.is_object() && remote().is_object() ? remote().value(counter, -1LL) : -1;
  }
  // Each job's output bytes, by name.
  std::map<std::string, std::string> outputs() const {
    std::map<std::string, std::string> bytes;
    for (const auto& [name, job] : jobs) {
      if (job["output"].is_string()) bytes[name] = read_file(job["output"].get<std::string>());
    }
    return bytes;
  }
};

struct BuildSpec {
  // Names the output directory (<machine>/out-<label>) and report (<machine>/<label>.json).
  std::string label;
  // After `build <checkout>/<manifest> --out ... --json ... -j 2`.
  std::vector<std::string> args{};
  // Over the machine's environment.
  Environment env{};
  std::string manifest = "kiln.json";
};

// One developer's machine: a HOME, a local kiln cache and a checkout of the project at
// `checkout`, all under `root`.
class Machine {
 public:
  Machine(fs::path root, fs::path checkout)
      : root_(std::move(root)), checkout_(std::move(checkout)) {
    fs::create_directories(root_ / "home");
    fs::create_directories(checkout_);
    use_cache("cache");
  }

  const fs::path& checkout() const { return checkout_; }
  // Later builds use a local cache of this name (a new one is empty).
  void use_cache(const std::string& name) { cache_ = root_ / name; }

  // The environment of every build: the machine's HOME and cache, and nothing of the test's
  // that would change a remote cache, the base directory or what a compiler reads.
  Environment environment() const {
    Environment env = {{"HOME", (root_ / "home").string()}, {"KILN_CACHE_DIR", cache_.string()}};
    for (const char* name :
         {"KILN_NO_CACHE", "KILN_REMOTE_CACHE", "KILN_REMOTE_CACHE_MODE",
          "KILN_REMOTE_CACHE_CREDENTIALS", "KILN_REMOTE_CACHE_CA", "KILN_REMOTE_CACHE_TIMEOUT",
          "KILN_BASE_DIR", "XDG_CACHE_HOME", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH",
          "LIBRARY_PATH", "TVM_WIN_TARGET", "TVM_WIN_CC", "CC", "CXX"}) {
      env[name] = std::nullopt;
    }
    return env;
  }

  Build build(const BuildSpec& spec) const {
    fs::path out = root_ / ("out-" + spec.label);
    fs::path report = root_ / (spec.label + ".json");
    fs::remove_all(out);
    fs::remove(report);
    std::vector<std::string> argv = {
        KILN_BINARY,     "build",      (checkout_ / spec.manifest).string(),
        "--out",         out.string(), "--json",
        report.string(), "-j",         "2"};
    argv.insert(argv.end(), spec.args.begin(), spec.args.end());
    Environment env = environment();
    for (const auto& [name, value] : spec.env) env.insert_or_assign(name, value);
    Build build;
    build.result =
        run({.argv = argv, .env = env, .merge_stderr = false, .timeout = std::chrono::minutes(5)});
    if (fs::exists(report)) {
      build.report = json::parse(read_file(report));
      build.jobs = testing::jobs_by_name(build.report);
      for (const auto& [name, job] : build.jobs) {
        build.ran[name] = job["ran"].is_string() ? job["ran"].get<std::string>() : "";
      }
    }
    return build;
  }

  // `kiln cache stats` on this machine's cache.
  RunResult cache_stats(const Environment& changes = {}) const {
    Environment env = environment();
    for (const auto& [name, value] : changes) env.insert_or_assign(name, value);
    return run({.argv = {KILN_BINARY, "cache", "stats"},
                .env = env,
                .merge_stderr = false,
                .timeout = std::chrono::seconds(60)});
  }

 private:
  fs::path root_;
  fs::path checkout_;
  fs::path cache_;
};

// The jobs of `build` whose "ran" is not `expected(name)`, one line each; "" when there are none.
std::string unexpected_ran(const Build& build, const std::set<std::string>& names,
                           const std::function<std::string(const std::string&)>& expected) {
  std::string lines;
  for (const std::string& name : names) {
    auto it = build.ran.find(name);
    std::string got = it == build.ran.end() ? "(not in the report)" : it->second;
    if (got != expected(name)) {
      lines += fmt::format("  {}: ran \"{}\", expected \"{}\" ({})\n", name, got, expected(name),
                           build.jobs.count(name) ? build.jobs.at(name).value("log", "") : "");
    }
  }
  return lines;
}

// The jobs whose outputs differ between `a` and `b` (or are missing from one), one per line.
std::string different_outputs(const std::map<std::string, std::string>& a,
                              const std::map<std::string, std::string>& b,
                              const std::set<std::string>& names) {
  std::string lines;
  for (const std::string& name : names) {
    if (!a.count(name) || !b.count(name)) {
      lines += fmt::format("  {}: no output\n", name);
    } else if (a.at(name) != b.at(name)) {
      lines += fmt::format("  {}: {} bytes vs {} bytes, not the same\n", name, a.at(name).size(),
                           b.at(name).size());
    }
  }
  return lines;
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// The lines of `text` that speak of the remote cache.
std::vector<std::string> remote_cache_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (lower(line).find("remote cache") != std::string::npos) lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string text;
  for (const std::string& line : lines) text += line + "\n";
  return text;
}

// Two machines, Alice's and Bob's, with checkouts of `shape` at different depths of `dir`.
struct TwoMachines {
  TwoMachines(const fs::path& dir, const Shape& shape)
      : alice(dir / "alice", dir / "alice" / "proj"),
        bob(dir / "bob", dir / "bob" / "work" / "proj"),
        alice_project(generate(alice.checkout(), shape)),
        bob_project(generate(bob.checkout(), shape)) {
    write_project(alice.checkout(), alice_project);
    write_project(bob.checkout(), bob_project);
  }
  Machine alice;
  Machine bob;
  Project alice_project;
  Project bob_project;
};

class RemoteCacheCli : public ::testing::TestWithParam<Server> {
 protected:
  void SetUp() override {
    if (!which("gcc")) GTEST_SKIP() << "needs gcc on PATH";
    if (std::optional<std::string> why = CacheServer::missing(GetParam())) GTEST_SKIP() << *why;
  }
  // A server of this test's kind, running (the test fails when it does not start).
  std::unique_ptr<CacheServer> start_server(const std::string& user = "",
                                            const std::string& password = "") {
    auto server = std::make_unique<CacheServer>(GetParam(), user, password);
    EXPECT_TRUE(server->running()) << server->why();
    return server;
  }
  TempDirectory dir_;
};

// --- Two machines ---

TEST_P(RemoteCacheCli, TwoCheckoutsOnTwoMachinesShareEveryJobAndMissExactlyWhatChanged) {
  if (!have_nvcc()) GTEST_SKIP() << "needs the CUDA toolkit (nvcc) for the CUDA jobs";
  std::unique_ptr<CacheServer> server = start_server();
  ASSERT_TRUE(server->running());
  TwoMachines m(dir_.path(), {.c_jobs = 52, .cuda_jobs = 10});
  const std::set<std::string> all = m.bob_project.all_jobs();
  const std::set<std::string>& c_jobs = m.bob_project.c_jobs;
  Environment remote = {{"KILN_REMOTE_CACHE", server->url()}};

  // Alice fills the server: every job compiled.
  Build alice = m.alice.build(
      {.label = "cold", .args = {"--remote-cache-mode", "read-write"}, .env = remote});
  ASSERT_TRUE(alice.report.is_object()) << alice.context();
  for (const auto& [name, job] : alice.jobs) {
    if (job.value("log", "").find("toolchain absent") != std::string::npos) {
      GTEST_SKIP() << name << ": " << job["log"];
    }
  }
  ASSERT_EQ(alice.result.exit_code, 0) << alice.context();
  EXPECT_EQ(unexpected_ran(alice, all, [](const std::string&) { return "local"; }), "");
  EXPECT_EQ(alice.remote_count("hits"), 0) << alice.remote().dump();
  EXPECT_EQ(alice.remote_count("errors"), 0) << alice.remote().dump();
  EXPECT_GT(alice.remote_count("bytes_up"), 0) << alice.remote().dump();
  EXPECT_EQ(remote_cache_lines(alice.result.error_output).size(), 0u) << alice.context();
  const std::map<std::string, std::string> alice_outputs = alice.outputs();

  // Bob, read-only (the default), with an empty local cache: every job from the server.
  Build bob = m.bob.build({.label = "remote", .args = {"--remote-cache", server->url()}});
  ASSERT_EQ(bob.result.exit_code, 0) << bob.context();
  EXPECT_EQ(unexpected_ran(bob, all, [](const std::string&) { return "remote-cache"; }), "");
  EXPECT_GE(bob.remote_count("hits"), static_cast<long long>(all.size())) << bob.remote().dump();
  EXPECT_EQ(bob.remote_count("errors"), 0) << bob.remote().dump();
  EXPECT_EQ(bob.remote_count("bytes_up"), 0) << "read-only uploaded: " << bob.remote().dump();
  EXPECT_GT(bob.remote_count("bytes_down"), 0) << bob.remote().dump();
  const std::map<std::string, std::string> bob_outputs = bob.outputs();
  EXPECT_EQ(different_outputs(alice_outputs, bob_outputs, all), "");

  // ... byte for byte what Bob's checkout makes with no cache at all.
  Build uncached = m.bob.build({.label = "uncached", .env = {{"KILN_NO_CACHE", "1"}}});
  ASSERT_EQ(uncached.result.exit_code, 0) << uncached.context();
  EXPECT_EQ(unexpected_ran(uncached, all, [](const std::string&) { return "local"; }), "");
  EXPECT_EQ(different_outputs(uncached.outputs(), bob_outputs, all), "");

  // Each change below is made to Bob's checkout as it came, and built with an empty local cache
  // (so that every hit is the server's): the jobs it changes compile, every other is a hit.
  auto build_changed = [&](const std::string& label) {
    m.bob.use_cache("cache-" + label);
    return m.bob.build({.label = label, .env = {{"KILN_REMOTE_CACHE", server->url()}}});
  };
  auto restore = [&] { write_project(m.bob.checkout(), m.bob_project); };

  // One header: exactly the jobs that include it.
  write_text(m.bob.checkout() / "include/proj/h1.h", header_text(1, 4242));
  testing::wait_for_coarse_clock_past(m.bob.checkout() / "include/proj/h1.h");
  Build header = build_changed("header");
  ASSERT_EQ(header.result.exit_code, 0) << header.context();
  auto reads_h1 = [&](const std::string& name) {
    auto it = m.bob_project.header_of.find(name);
    return it != m.bob_project.header_of.end() && it->second == 1;
  };
  EXPECT_EQ(unexpected_ran(
                header, all,
                [&](const std::string& name) { return reads_h1(name) ? "local" : "remote-cache"; }),
            "");
  std::map<std::string, std::string> header_outputs = header.outputs();
  for (const std::string& name : all) {
    if (reads_h1(name)) {
      EXPECT_NE(header_outputs[name], alice_outputs.at(name)) << name << ": the old header's";
    }
  }
  restore();

  // One job's flag: exactly that job.
  json changed = m.bob_project.manifest();
  for (json& job : changed["jobs"]) {
    if (job["name"] == "cc05") job["options"][1] = "-DJOB_TAG=500";
  }
  write_text(m.bob.checkout() / "kiln.json", changed.dump(2));
  Build option = build_changed("option");
  ASSERT_EQ(option.result.exit_code, 0) << option.context();
  EXPECT_EQ(unexpected_ran(
                option, all,
                [](const std::string& name) { return name == "cc05" ? "local" : "remote-cache"; }),
            "");
  EXPECT_NE(option.outputs()["cc05"], alice_outputs.at("cc05"));
  restore();

  // A variable every C/C++ and CUDA toolchain reads and keys (CPATH: both lists in
  // src/toolchains/toolchain_environment.cc have it), naming a directory whose header shadows
  // nothing: every job compiles, to the same bytes.
  write_text(m.bob.checkout() / "extra/kiln_keyed_only.h", "#define KILN_KEYED_ONLY 1\n");
  m.bob.use_cache("cache-cpath");
  Build cpath = m.bob.build({.label = "cpath",
                             .env = {{"KILN_REMOTE_CACHE", server->url()},
                                     {"CPATH", (m.bob.checkout() / "extra").string()}}});
  ASSERT_EQ(cpath.result.exit_code, 0) << cpath.context();
  EXPECT_EQ(unexpected_ran(cpath, all, [](const std::string&) { return "local"; }), "");
  EXPECT_EQ(different_outputs(cpath.outputs(), alice_outputs, all), "");

  // A variable only the C/C++ toolchain keys (TVM_WIN_TARGET): exactly the C/C++ jobs.
  m.bob.use_cache("cache-win-target");
  Build win =
      m.bob.build({.label = "win-target",
                   .env = {{"KILN_REMOTE_CACHE", server->url()}, {"TVM_WIN_TARGET", "x86_64"}}});
  ASSERT_EQ(win.result.exit_code, 0) << win.context();
  EXPECT_EQ(unexpected_ran(win, all,
                           [&](const std::string& name) {
                             return c_jobs.count(name) ? "local" : "remote-cache";
                           }),
            "");
  EXPECT_EQ(different_outputs(win.outputs(), alice_outputs, all), "");
}

// --- Integrity ---

// The objects of `after` not in `before` whose name starts with `kind` ("cas/").
std::vector<std::string> added(const std::set<std::string>& before,
                               const std::set<std::string>& after, const std::string& kind) {
  std::vector<std::string> names;
  for (const std::string& name : after) {
    if (!before.count(name) && name.starts_with(kind)) names.push_back(name);
  }
  return names;
}

TEST_P(RemoteCacheCli, ACorruptTruncatedOrSubstitutedObjectIsNeverServed) {
  std::unique_ptr<CacheServer> server = start_server();
  ASSERT_TRUE(server->running());
  TwoMachines m(dir_.path(), {.c_jobs = 10});
  const std::set<std::string> all = m.bob_project.all_jobs();
  const std::vector<std::string> damaged = {"cc00", "cc01", "cc02"};
  Environment remote = {{"KILN_REMOTE_CACHE", server->url()},
                        {"KILN_REMOTE_CACHE_MODE", "read-write"}};

  // Alice fills the server with every other job, then builds each of the three alone: what
  // each adds to the server is its action entry and the content it names.
  auto is_damaged = [&](const std::string& name) {
    return std::find(damaged.begin(), damaged.end(), name) != damaged.end();
  };
  write_text(m.alice.checkout() / "fill.json",
             m.alice_project.manifest([&](const std::string& n) { return !is_damaged(n); }).dump());
  Build fill = m.alice.build({.label = "fill", .env = remote, .manifest = "fill.json"});
  ASSERT_EQ(fill.result.exit_code, 0) << fill.context();
  std::map<std::string, std::string> alice_outputs = fill.outputs();
  std::vector<std::string> others = added({}, server->objects(), "cas/");
  ASSERT_FALSE(others.empty()) << "Alice uploaded nothing: " << fill.context();
  std::map<std::string, std::string> content_of;  // a damaged job -> its "cas/<hex>"
  for (const std::string& name : damaged) {
    std::string manifest = "only-" + name + ".json";
    write_text(m.alice.checkout() / manifest,
               m.alice_project.manifest([&](const std::string& n) { return n == name; }).dump());
    std::set<std::string> before = server->objects();
    Build alone = m.alice.build({.label = name, .env = remote, .manifest = manifest});
    ASSERT_EQ(alone.result.exit_code, 0) << alone.context();
    alice_outputs[name] = alone.outputs()[name];
    std::set<std::string> after = server->objects();
    ASSERT_EQ(added(before, after, "ac/").size(), 1u) << name;
    std::vector<std::string> content = added(before, after, "cas/");
    ASSERT_EQ(content.size(), 1u) << name;
    content_of[name] = content.front();
  }

  // Damage them: bytes flipped in the middle, cut in half, another job's (valid) content.
  std::string flipped = server->read(content_of["cc00"]);
  ASSERT_GT(flipped.size(), 16u);
  for (size_t i = flipped.size() / 2; i < flipped.size() / 2 + 8; ++i) flipped[i] ^= '\x5a';
  server->plant(content_of["cc00"], flipped);
  std::string truncated = server->read(content_of["cc01"]);
  server->plant(content_of["cc01"], truncated.substr(0, truncated.size() / 2));
  server->plant(content_of["cc02"], server->read(others.front()));

  Build bob = m.bob.build({.label = "remote", .env = {{"KILN_REMOTE_CACHE", server->url()}}});
  ASSERT_EQ(bob.result.exit_code, 0) << bob.context();
  EXPECT_EQ(unexpected_ran(bob, all,
                           [&](const std::string& name) {
                             return is_damaged(name) ? "local" : "remote-cache";
                           }),
            "");
  EXPECT_EQ(different_outputs(bob.outputs(), alice_outputs, all), "")
      << "a damaged object was served";
  std::vector<std::string> warnings = remote_cache_lines(bob.result.error_output);
  ASSERT_EQ(warnings.size(), 1u) << bob.context();
  EXPECT_NE(warnings[0].find(server->url()), std::string::npos) << warnings[0];
  bool names_one = std::any_of(content_of.begin(), content_of.end(), [&](const auto& entry) {
    return warnings[0].find(entry.second) != std::string::npos;
  });
  EXPECT_TRUE(names_one) << "the warning names none of the damaged objects: " << warnings[0];
}

// --- Read-only mode, credentials ---

TEST_P(RemoteCacheCli, ReadOnlyModeUploadsNothing) {
  std::unique_ptr<CacheServer> server = start_server();
  ASSERT_TRUE(server->running());
  TwoMachines m(dir_.path(), {.c_jobs = 8});
  Build cold = m.alice.build({.label = "cold", .env = {{"KILN_REMOTE_CACHE", server->url()}}});
  ASSERT_EQ(cold.result.exit_code, 0) << cold.context();
  EXPECT_EQ(
      unexpected_ran(cold, m.alice_project.all_jobs(), [](const std::string&) { return "local"; }),
      "");
  EXPECT_GE(cold.remote_count("misses"), 8) << "it asked the server: " << cold.context();
  EXPECT_EQ(cold.remote_count("errors"), 0) << cold.context();
  EXPECT_EQ(cold.remote_count("bytes_up"), 0) << cold.context();
  std::set<std::string> uploaded = server->objects();
  EXPECT_EQ(server->count(), 0) << "on the server after a read-only build:\n"
                                << joined({uploaded.begin(), uploaded.end()});

  // The same build read-write does upload: the server was reachable all along.
  m.alice.use_cache("cache-rw");
  Build rw = m.alice.build({.label = "rw",
                            .args = {"--remote-cache-mode", "read-write"},
                            .env = {{"KILN_REMOTE_CACHE", server->url()}}});
  ASSERT_EQ(rw.result.exit_code, 0) << rw.context();
  EXPECT_GT(server->count(), 0);
}

TEST_P(RemoteCacheCli, WrongCredentialsAreOneWarningThatNeverShowsThePassword) {
  const std::string right = "right-horse-battery";
  const std::string wrong = "wrong-staple-7391";
  std::unique_ptr<CacheServer> server = start_server("kiln", right);
  ASSERT_TRUE(server->running());
  TwoMachines m(dir_.path(), {.c_jobs = 4});
  fs::path credentials = dir_.path() / "credentials";
  // Redis: the password alone (AUTH password); WebDAV: basic auth.
  write_text(credentials, GetParam() == Server::redis ? wrong + "\n" : "kiln:" + wrong + "\n");
  ::chmod(credentials.c_str(), 0600);

  std::vector<std::pair<std::string, Environment>> attempts = {
      {"file",
       {{"KILN_REMOTE_CACHE", server->url()},
        {"KILN_REMOTE_CACHE_CREDENTIALS", credentials.string()}}}};
  if (GetParam() == Server::redis) {
    std::string in_url = server->url().replace(0, 8, "redis://:" + wrong + "@");
    attempts.push_back({"url", {{"KILN_REMOTE_CACHE", in_url}}});
  } else {
    std::string in_url = server->url().replace(0, 7, "http://kiln:" + wrong + "@");
    attempts.push_back({"url", {{"KILN_REMOTE_CACHE", in_url}}});
  }
  for (const auto& [label, env] : attempts) {
    SCOPED_TRACE("credentials in the " + label);
    m.alice.use_cache("cache-" + label);
    Build b = m.alice.build({.label = label, .env = env});
    ASSERT_EQ(b.result.exit_code, 0) << b.context();
    EXPECT_EQ(
        unexpected_ran(b, m.alice_project.all_jobs(), [](const std::string&) { return "local"; }),
        "");
    std::vector<std::string> warnings = remote_cache_lines(b.result.error_output);
    ASSERT_EQ(warnings.size(), 1u) << b.context();
    std::string warning = lower(warnings[0]);
    EXPECT_TRUE(warning.find("auth") != std::string::npos ||
                warning.find("password") != std::string::npos)
        << warnings[0];
    EXPECT_NE(warnings[0].find(server->address()), std::string::npos)
        << "names the server: " << warnings[0];
    for (const std::string& text : {b.result.output, b.result.error_output, b.report.dump()}) {
      EXPECT_EQ(text.find(wrong), std::string::npos) << "the password was shown:\n" << text;
    }
  }
}

// --- kiln cache stats ---

TEST_P(RemoteCacheCli, CacheStatsCountsTheRemoteHits) {
  std::unique_ptr<CacheServer> server = start_server();
  ASSERT_TRUE(server->running());
  TwoMachines m(dir_.path(), {.c_jobs = 6});
  Environment remote = {{"KILN_REMOTE_CACHE", server->url()}};
  Build alice = m.alice.build(
      {.label = "cold", .args = {"--remote-cache-mode", "read-write"}, .env = remote});
  ASSERT_EQ(alice.result.exit_code, 0) << alice.context();
  Build bob = m.bob.build({.label = "remote", .env = remote});
  ASSERT_EQ(bob.result.exit_code, 0) << bob.context();
  ASSERT_GT(bob.remote_count("hits"), 0) << bob.context();

  RunResult stats = m.bob.cache_stats(remote);
  ASSERT_EQ(stats.exit_code, 0) << stats.output << stats.error_output;
  EXPECT_NE(lower(stats.output).find("remote"), std::string::npos) << stats.output;
  std::smatch hits;
  ASSERT_TRUE(std::regex_search(stats.output, hits,
                                std::regex("remote hits[:\\s]+([0-9]+)", std::regex::icase)))
      << stats.output;
  EXPECT_EQ(std::stoll(hits.str(1)), bob.remote_count("hits")) << stats.output;
}

INSTANTIATE_TEST_SUITE_P(Servers, RemoteCacheCli, ::testing::Values(Server::redis, Server::webdav),
                         [](const ::testing::TestParamInfo<Server>& info) {
                           return server_name(info.param);
                         });

// --- Faults ---

// What every faulty server must give: exit 0, every job compiled here, one warning that names
// the server, within `bound`.
void expect_survived(const Build& b, const std::set<std::string>& jobs, const std::string& url,
                     std::chrono::seconds bound) {
  EXPECT_EQ(b.result.exit_code, 0) << b.context();
  EXPECT_EQ(unexpected_ran(b, jobs, [](const std::string&) { return "local"; }), "");
  std::vector<std::string> warnings = remote_cache_lines(b.result.error_output);
  EXPECT_EQ(warnings.size(), 1u) << b.context();
  if (!warnings.empty()) {
    EXPECT_NE(warnings[0].find(url), std::string::npos) << warnings[0];
  }
  EXPECT_LT(b.result.duration, bound) << "the faulty server held the build up: " << b.context();
  EXPECT_GE(b.remote_count("errors"), 1) << b.context();
}

class RemoteCacheCliFaults : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!which("gcc")) GTEST_SKIP() << "needs gcc on PATH";
  }
  TempDirectory dir_;
};

TEST_F(RemoteCacheCliFaults, AServerKilledBeforeTheBuildIsOneWarning) {
  if (std::optional<std::string> why = RedisServer::missing()) GTEST_SKIP() << *why;
  RedisServer redis;
  ASSERT_TRUE(redis.running()) << redis.why();
  std::string url = redis.url();
  redis.kill();
  Machine machine(dir_.path() / "m", dir_.path() / "m" / "proj");
  Project project = generate(machine.checkout(), {.c_jobs = 10});
  write_project(machine.checkout(), project);
  Build b = machine.build({.label = "dead",
                           .args = {"--remote-cache-mode", "read-write"},
                           .env = {{"KILN_REMOTE_CACHE", url}}});
  expect_survived(b, project.all_jobs(), url, std::chrono::seconds(30));
}

TEST_F(RemoteCacheCliFaults, AServerKilledMidBuildIsSurvived) {
  if (std::optional<std::string> why = RedisServer::missing()) GTEST_SKIP() << *why;
  RedisServer redis;
  ASSERT_TRUE(redis.running()) << redis.why();
  Machine machine(dir_.path() / "m", dir_.path() / "m" / "proj");
  Project project = generate(machine.checkout(), {.c_jobs = 40});
  write_project(machine.checkout(), project);
  std::future<Build> running = std::async(std::launch::async, [&] {
    return machine.build({.label = "killed",
                          .args = {"--remote-cache-mode", "read-write"},
                          .env = {{"KILN_REMOTE_CACHE", redis.url()}}});
  });
  // Once a few jobs are done (their outputs in place), the server dies.
  fs::path out = dir_.path() / "m" / "out-killed";
  auto outputs = [&] {
    int count = 0;
    std::error_code error;
    for (const fs::directory_entry& entry : fs::directory_iterator(out, error)) {
      std::string ext = entry.path().extension().string();
      count += ext == ".o" || ext == ".so";
    }
    return count;
  };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (outputs() < 3 && std::chrono::steady_clock::now() < deadline &&
         running.wait_for(std::chrono::milliseconds(2)) != std::future_status::ready) {
  }
  bool ended_first = running.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  redis.kill();
  Build b = running.get();
  ASSERT_FALSE(ended_first) << "the build ended before the server was killed: " << b.context();
  expect_survived(b, project.all_jobs(), redis.url(), std::chrono::seconds(60));
  EXPECT_GE(b.remote_count("misses"), 1) << "nothing was asked before the kill";
}

struct FaultCase {
  FaultyServer::Mode mode;
  std::string scheme;  // "redis" or "http"
  std::string name;
};

void PrintTo(const FaultCase& c, std::ostream* os) { *os << c.name; }

class RemoteCacheCliFaultyServer : public ::testing::TestWithParam<FaultCase> {
 protected:
  void SetUp() override {
    if (!which("gcc")) GTEST_SKIP() << "needs gcc on PATH";
  }
  TempDirectory dir_;
};

// A listener that stalls, answers 500 or garbage, to reads and (read-write) uploads.
TEST_P(RemoteCacheCliFaultyServer, TheBuildSucceedsLocallyWithOneWarning) {
  FaultyServer faulty(GetParam().mode);
  std::string url = faulty.url(GetParam().scheme);
  Machine machine(dir_.path() / "m", dir_.path() / "m" / "proj");
  Project project = generate(machine.checkout(), {.c_jobs = 10});
  write_project(machine.checkout(), project);
  Build b = machine.build(
      {.label = "faulty", .args = {"--remote-cache", url, "--remote-cache-mode", "read-write"}});
  expect_survived(b, project.all_jobs(), url, std::chrono::seconds(30));
  EXPECT_GE(faulty.connections(), 1) << "kiln never asked the server";
}

INSTANTIATE_TEST_SUITE_P(
    Modes, RemoteCacheCliFaultyServer,
    ::testing::Values(FaultCase{FaultyServer::Mode::stall, "redis", "RedisStalls"},
                      FaultCase{FaultyServer::Mode::stall, "http", "HttpStalls"},
                      FaultCase{FaultyServer::Mode::http_500, "http", "HttpAnswers500"},
                      FaultCase{FaultyServer::Mode::http_500, "redis", "RedisGetsAnHttpAnswer"},
                      FaultCase{FaultyServer::Mode::garbage, "redis", "RedisAnswersGarbage"},
                      FaultCase{FaultyServer::Mode::garbage, "http", "HttpAnswersGarbage"}),
    [](const ::testing::TestParamInfo<FaultCase>& info) { return info.param.name; });

// --- Ctrl-C and a server that never answers ---

// The processes below `root` (its children, theirs, ...), from /proc.
std::set<pid_t> descendants(pid_t root) {
  std::map<pid_t, pid_t> parent;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string stat = read_file(entry.path() / "stat");
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    int ppid = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %*c %d", &ppid) == 1) {
      parent[std::stoi(name)] = ppid;
    }
  }
  std::set<pid_t> found;
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [pid, ppid] : parent) {
      if ((ppid == root || found.count(ppid)) && found.insert(pid).second) grew = true;
    }
  }
  return found;
}

// Whether `pid` runs (a zombie does not).
bool alive(pid_t pid) {
  std::string stat = read_file(fs::path("/proc") / std::to_string(pid) / "stat");
  return !stat.empty() && stat.find(") Z ") == std::string::npos;
}

// The temporaries kiln left in `out`.
std::vector<std::string> temporaries_in(const fs::path& out) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(out, ec)) {
    std::string name = entry.path().filename().string();
    if (name.starts_with(".kiln-tmp")) found.push_back(name);
  }
  return found;
}

struct StuckCase {
  int signal;
  int jobs;
};

void PrintTo(const StuckCase& c, std::ostream* os) {
  *os << (c.signal == SIGTERM ? "SIGTERM" : "SIGINT") << " -j" << c.jobs;
}

class RemoteCacheCliStuck : public ::testing::TestWithParam<StuckCase> {};

// Every worker is inside a lookup the server never answers (a 30 s limit): SIGTERM or SIGINT
// still ends kiln build within a second, 128 + the signal, with no process and no temporary
// directory left behind.
TEST_P(RemoteCacheCliStuck, ASignalEndsTheBuildWithinASecond) {
  if (!which("gcc")) GTEST_SKIP() << "needs gcc on PATH";
  FaultyServer stalled(FaultyServer::Mode::stall);
  testing::BuildProject project;
  json jobs = json::array();
  for (int i = 0; i < 12; ++i) {
    jobs.push_back(
        testing::c_job(fmt::format("j{}", i), fmt::format("int j{0}(void) {{ return {0}; }}", i)));
  }
  project.manifest({{"jobs", jobs}});
  int devnull = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
  pid_t kiln = project.start(
      {.args = {"-j", std::to_string(GetParam().jobs)},
       .env = {{"KILN_REMOTE_CACHE", stalled.url("redis")}, {"KILN_REMOTE_CACHE_TIMEOUT", "30"}}},
      devnull, devnull);
  ::close(devnull);
  ASSERT_GT(kiln, 0);
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (stalled.connections() < std::min(GetParam().jobs, 12) &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // well inside the lookups
  EXPECT_GE(stalled.connections(), 1) << "kiln never asked the server";
  std::set<pid_t> children = descendants(kiln);
  auto sent = std::chrono::steady_clock::now();
  ::kill(kiln, GetParam().signal);
  int status = testing::wait_exit(kiln);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  std::printf("kiln -j%d exited %.3f s after %s\n", GetParam().jobs, seconds,
              GetParam().signal == SIGTERM ? "SIGTERM" : "SIGINT");
  EXPECT_EQ(status, 128 + GetParam().signal);
  EXPECT_LT(seconds, 1.5) << "the stalled lookups held kiln up";
  EXPECT_EQ(temporaries_in(project.out()), std::vector<std::string>{});
  // The guard kills what is left once kiln is gone: give it a moment.
  auto gone = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  auto survivors = [&] {
    std::vector<pid_t> left;
    for (pid_t pid : children) {
      if (alive(pid)) left.push_back(pid);
    }
    return left;
  };
  while (!survivors().empty() && std::chrono::steady_clock::now() < gone) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(survivors(), std::vector<pid_t>{}) << "a child of kiln outlived it";
}

INSTANTIATE_TEST_SUITE_P(Signals, RemoteCacheCliStuck,
                         ::testing::Values(StuckCase{SIGTERM, 2}, StuckCase{SIGTERM, 8},
                                           StuckCase{SIGINT, 2}, StuckCase{SIGINT, 8}),
                         [](const ::testing::TestParamInfo<StuckCase>& info) {
                           return fmt::format("{}J{}",
                                              info.param.signal == SIGTERM ? "Sigterm" : "Sigint",
                                              info.param.jobs);
                         });

// --- A failed server is remembered across processes ---

// The first build pays for a stalling server (its lookups run into their limit); the next
// process, within a minute, does not ask it at all, says why once, and still builds everything.
TEST(RemoteCacheCliFaultMemory, TheNextProcessSkipsAServerThatFailedRecently) {
  if (!which("gcc")) GTEST_SKIP() << "needs gcc on PATH";
  FaultyServer stalled(FaultyServer::Mode::stall);
  testing::BuildProject project;
  // Each build its own code, so that no job is a local hit and every one asks the server.
  auto write_manifest = [&](int variant) {
    json jobs = json::array();
    for (int i = 0; i < 6; ++i) {
      jobs.push_back(testing::c_job(fmt::format("j{}", i),
                                    fmt::format("int j{}(void) {{ return {}; }}", i, variant + i)));
    }
    project.manifest({{"jobs", jobs}});
  };
  testing::Environment env = {{"KILN_REMOTE_CACHE", stalled.url("redis")},
                              {"KILN_REMOTE_CACHE_TIMEOUT", "1"},
                              {"KILN_REMOTE_CACHE_FAULT_MEMORY", std::nullopt}};
  auto remote_seconds = [&](const std::string& report) {
    return project.result(report).at("summary").at("remote_cache").value("seconds", -1.0);
  };
  write_manifest(100);
  RunResult cold = project.build_with({.args = {"-j", "2"}, .env = env, .report = "cold.json"});
  ASSERT_EQ(cold.exit_code, 0) << cold.output << cold.error_output;
  double cold_seconds = remote_seconds("cold.json");
  std::printf("first build: %.3f s waiting for the server, %.3f s in all\n", cold_seconds,
              std::chrono::duration<double>(cold.duration).count());
  EXPECT_GE(cold_seconds, 0.9) << "the first build never waited for the server";
  fs::path marks = project.path("cache") / "remote-faults";
  ASSERT_TRUE(fs::is_directory(marks)) << cold.error_output;
  struct stat st {};
  ASSERT_EQ(::stat(marks.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(st.st_uid, ::geteuid());

  write_manifest(200);
  RunResult next = project.build_with({.args = {"-j", "2"}, .env = env, .report = "next.json"});
  ASSERT_EQ(next.exit_code, 0) << next.output << next.error_output;
  double next_seconds = remote_seconds("next.json");
  std::printf("next build: %.3f s waiting for the server, %.3f s in all\n", next_seconds,
              std::chrono::duration<double>(next.duration).count());
  EXPECT_LT(next_seconds, 0.05) << next.error_output;
  std::vector<std::string> warnings = remote_cache_lines(next.error_output);
  ASSERT_EQ(warnings.size(), 1u) << next.error_output;
  EXPECT_NE(warnings[0].find("failed recently"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("skipped"), std::string::npos) << warnings[0];
  for (const auto& [name, job] : project.jobs("next.json")) {
    EXPECT_EQ(job.value("status", ""), "done") << name;
  }

  // Not remembered when told not to: the server is asked again.
  env["KILN_REMOTE_CACHE_FAULT_MEMORY"] = "0";
  write_manifest(300);
  RunResult asked = project.build_with({.args = {"-j", "2"}, .env = env, .report = "asked.json"});
  ASSERT_EQ(asked.exit_code, 0) << asked.output << asked.error_output;
  EXPECT_GE(remote_seconds("asked.json"), 0.9) << asked.error_output;
}

// --- A URL kiln cannot read ---

// The flag and the variable alike: a bad command line (exit 2) naming which, before anything
// is built.
TEST(RemoteCacheCliUrl, AMalformedUrlExitsTwoNamingTheFlagOrTheVariable) {
  testing::BuildProject project;
  project.manifest({{"jobs", {testing::c_job("a", "int a(void) { return 1; }")}}});
  RunResult flag = project.build({"--remote-cache", "ftp://cache.example/kiln"});
  EXPECT_EQ(flag.exit_code, 2) << flag.output << flag.error_output;
  EXPECT_NE(flag.error_output.find("--remote-cache"), std::string::npos) << flag.error_output;
  RunResult variable = project.build({}, {{"KILN_REMOTE_CACHE", "ftp://cache.example/kiln"}});
  EXPECT_EQ(variable.exit_code, 2) << variable.output << variable.error_output;
  EXPECT_NE(variable.error_output.find("KILN_REMOTE_CACHE"), std::string::npos)
      << variable.error_output;
  EXPECT_FALSE(fs::exists(project.out() / "a.o"));
}

// --- An entry that holds another valid object ---

// The server's action entry for an object job names a shared library's content (valid, its
// hash right): kiln sees it is not an object, compiles, counts it rejected, warns once, and
// keeps nothing of it.
TEST_F(RemoteCacheCliFaults, AnEntryOfAnotherKindIsRejectedNotServed) {
  if (std::optional<std::string> why = RedisServer::missing()) GTEST_SKIP() << *why;
  CacheServer server(Server::redis);
  ASSERT_TRUE(server.running()) << server.why();
  TwoMachines m(dir_.path(), {.c_jobs = 5});  // cc04 is a shared library, cc00 an object
  Environment remote = {{"KILN_REMOTE_CACHE", server.url()},
                        {"KILN_REMOTE_CACHE_MODE", "read-write"}};
  std::map<std::string, std::string> action_of, output_of;
  for (const std::string name : {"cc00", "cc04"}) {
    std::string manifest = "only-" + name + ".json";
    write_text(m.alice.checkout() / manifest,
               m.alice_project.manifest([&](const std::string& n) { return n == name; }).dump());
    std::set<std::string> before = server.objects();
    Build alone = m.alice.build({.label = name, .env = remote, .manifest = manifest});
    ASSERT_EQ(alone.result.exit_code, 0) << alone.context();
    output_of[name] = alone.outputs()[name];
    std::vector<std::string> actions = added(before, server.objects(), "ac/");
    ASSERT_EQ(actions.size(), 1u) << name;
    action_of[name] = actions.front();
  }
  server.plant(action_of["cc00"], server.read(action_of["cc04"]));

  write_text(m.bob.checkout() / "only-cc00.json",
             m.bob_project.manifest([](const std::string& n) { return n == "cc00"; }).dump());
  Build bob = m.bob.build(
      {.label = "bob", .env = {{"KILN_REMOTE_CACHE", server.url()}}, .manifest = "only-cc00.json"});
  ASSERT_EQ(bob.result.exit_code, 0) << bob.context();
  EXPECT_EQ(bob.ran["cc00"], "local") << bob.context();
  EXPECT_EQ(bob.remote_count("rejected"), 1) << bob.remote().dump();
  EXPECT_EQ(bob.remote_count("hits"), 0) << bob.remote().dump();
  EXPECT_EQ(bob.outputs()["cc00"], output_of["cc00"]) << "the shared library was served";
  std::vector<std::string> warnings = remote_cache_lines(bob.result.error_output);
  ASSERT_EQ(warnings.size(), 1u) << bob.context();
  EXPECT_NE(warnings[0].find("shared object"), std::string::npos) << warnings[0];

  // Nothing of it was kept locally: the next build compiles (or asks the server) again, and
  // never finds the library in the local cache.
  Build again = m.bob.build({.label = "again",
                             .env = {{"KILN_REMOTE_CACHE", server.url()}},
                             .manifest = "only-cc00.json"});
  ASSERT_EQ(again.result.exit_code, 0) << again.context();
  EXPECT_EQ(again.outputs()["cc00"], output_of["cc00"]);
}

// --- Children never see the credentials ---

// The compiler (gcc behind a stand-in that records its environment first) gets the cache's URL
// without the password, and a credentials file instead.
TEST(RemoteCacheCliChildren, ACompilerNeverSeesTheCachePassword) {
  if (!which("gcc")) GTEST_SKIP() << "needs gcc on PATH";
  const std::string password = "child-must-not-see-4411";
  testing::BuildProject project;
  fs::path recorded = project.path("cc.env");
  project.write("recording-cc",
                fmt::format("#!/bin/sh\nenv > '{}'\nexec gcc \"$@\"\n", recorded.string()), true);
  json job = testing::c_job("a", "int a(void) { return 1; }");
  job["cc"] = project.path("recording-cc").string();
  project.manifest({{"jobs", {job}}});
  int port = testing::unused_loopback_port();
  RunResult r = project.build(
      {}, {{"KILN_REMOTE_CACHE", fmt::format("redis://:{}@127.0.0.1:{}", password, port)},
           {"KILN_REMOTE_CACHE_CREDENTIALS", std::nullopt}});
  ASSERT_EQ(r.exit_code, 0) << r.output << r.error_output;
  std::string env = read_file(recorded);
  ASSERT_FALSE(env.empty()) << "the compiler stand-in did not run";
  EXPECT_EQ(env.find(password), std::string::npos) << env;
  EXPECT_NE(env.find(fmt::format("KILN_REMOTE_CACHE=redis://127.0.0.1:{}", port)),
            std::string::npos)
      << env;
  std::smatch file;
  ASSERT_TRUE(std::regex_search(env, file, std::regex("KILN_REMOTE_CACHE_CREDENTIALS=(\\S+)")))
      << env;
  EXPECT_EQ(read_file(file.str(1)), password + "\n");
  struct stat st {};
  ASSERT_EQ(::stat(file.str(1).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

}  // namespace
}  // namespace kiln
