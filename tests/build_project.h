// The project of an end-to-end test of `kiln build`: a temporary directory, removed with the
// object, holding a manifest, its sources, an output directory and a private kiln cache; kiln
// build run on it to its end (build) or in the background (start); its --json report read back.
//
//   kiln::testing::BuildProject project;
//   project.write("a.c", "int a(void) { return 1; }\n");
//   project.manifest({{"jobs", {{{"name", "a"}, {"kind", "object"}, {"sources", {"a.c"}}}}}});
//   // kiln build <dir>/kiln.json --out <dir>/out --json <dir>/result.json --keep-going
//   kiln::RunResult r = project.build({"--keep-going"});
//   EXPECT_EQ(r.exit_code, 0) << r.output << r.error_output;
//   EXPECT_EQ(project.jobs()["a"]["status"], "done");
//   // Another shape of build: the report on stdout, none in a file; a longer deadline.
//   r = project.build_with(
//       {.args = {"--json", "-"}, .report = "", .timeout = std::chrono::minutes(3)});
//
// A test that needs more of its project (a gated compiler, an sccache config) adds it in a small
// class of its own that holds or derives from this one.
//
// Errors: write() and manifest() do not report a file they could not write (the test's later
// assertions do); result() and jobs() throw nlohmann::json::parse_error when the report is missing
// or is not JSON. The const members may be called from several threads at once.
#pragma once

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "kiln/process.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX declares it nowhere

namespace kiln::testing {

// Environment changes: a value sets the variable, std::nullopt unsets it.
using Environment = std::map<std::string, std::optional<std::string>>;

// How BuildProject::build_with() runs kiln build. Names of files are relative to the project's
// directory (an absolute one is taken as it is).
struct BuildOptions {
  // Given after `build <manifest> --out <out> [--json <report>]`.
  std::vector<std::string> args{};
  // Changes over the project's env().
  Environment env{};
  std::string manifest = "kiln.json";
  std::string out = "out";
  // The file of --json; "" gives no --json (the test names its own report in `args`, or none).
  std::string report = "result.json";
  // Runs kiln in the project's directory; otherwise in the test's.
  bool in_project_directory = false;
  // The kiln that builds, and what runs it (a network namespace's exec prefix, or nothing).
  std::filesystem::path kiln = KILN_BINARY;
  std::vector<std::string> prefix{};
  // Past it kiln is stopped, and the result says it timed out.
  std::chrono::seconds timeout = std::chrono::seconds(120);
};

// A manifest's job of C code (a "language": "c" job), an object file unless `kind` says otherwise.
inline nlohmann::json c_job(const std::string& name, const std::string& code,
                            const std::string& kind = "object") {
  return {{"name", name}, {"kind", kind}, {"code", code}, {"language", "c"}};
}

// Each job of a --json report, by its name.
inline std::map<std::string, nlohmann::json> jobs_by_name(const nlohmann::json& report) {
  std::map<std::string, nlohmann::json> jobs;
  for (const nlohmann::json& job : report.at("jobs")) jobs[job.at("name").get<std::string>()] = job;
  return jobs;
}

// The exit status of the child `pid` as a shell reports it (128 + the signal that killed it).
inline int wait_exit(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) == -1 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// The directory, with cache/ in it, lives as long as the object (movable, not copyable).
class BuildProject {
 public:
  BuildProject() { std::filesystem::create_directories(path("cache")); }

  const std::filesystem::path& dir() const { return dir_.path(); }
  std::filesystem::path path(const std::string& name) const { return dir_ / name; }
  // The default --out.
  std::filesystem::path out() const { return path("out"); }

  // Writes `text` as it is to `name`, making its directories; owner-only rwx when `executable`.
  void write(const std::string& name, const std::string& text, bool executable = false) const {
    std::filesystem::create_directories(path(name).parent_path());
    std::ofstream(path(name), std::ios::binary) << text;
    if (executable) std::filesystem::permissions(path(name), std::filesystem::perms::owner_all);
  }
  // Writes `doc` (indented) as the manifest `name`; returns its path.
  std::filesystem::path manifest(const nlohmann::json& doc,
                                 const std::string& name = "kiln.json") const {
    write(name, doc.dump(2));
    return path(name);
  }

  // Writes `gate`-cc, a compiler that is gcc except that a compile (anything but --version) first
  // makes the file `gate`.started and waits for `gate`.go (at most 120 s); returns its path.
  std::filesystem::path gated_compiler(const std::string& gate) const {
    write(gate + "-cc",
          fmt::format(
              "#!/bin/sh\ncase \"$1\" in --version) exec gcc --version;; esac\n: > '{0}.started'\n"
              "i=0\nwhile [ ! -e '{0}.go' ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done\n"
              "exec gcc \"$@\"\n",
              path(gate).string()),
          true);
    return path(gate + "-cc");
  }

  // The environment of a build: KILN_CACHE_DIR the project's cache/, KILN_NO_CACHE unset, then
  // `changes` over them.
  Environment env(const Environment& changes = {}) const {
    Environment env{{"KILN_CACHE_DIR", path("cache").string()}, {"KILN_NO_CACHE", std::nullopt}};
    for (const auto& [name, value] : changes) env.insert_or_assign(name, value);
    return env;
  }

  // The command line: prefix..., kiln, build <manifest> --out <out> [--json <report>] args...
  std::vector<std::string> argv(const BuildOptions& options = {}) const {
    std::vector<std::string> argv = options.prefix;
    argv.insert(argv.end(), {options.kiln.string(), "build", path(options.manifest).string(),
                             "--out", path(options.out).string()});
    if (!options.report.empty()) argv.insert(argv.end(), {"--json", path(options.report).string()});
    argv.insert(argv.end(), options.args.begin(), options.args.end());
    return argv;
  }

  // Runs kiln build as `options` say, stdout and stderr apart, and returns what happened.
  RunResult build_with(const BuildOptions& options) const {
    return run({.argv = argv(options),
                .cwd = options.in_project_directory ? dir() : std::filesystem::path(),
                .env = env(options.env),
                .merge_stderr = false,
                .timeout = options.timeout});
  }
  // kiln build kiln.json --out out --json result.json args..., with `changes` over env().
  RunResult build(std::vector<std::string> args = {}, Environment changes = {}) const {
    return build_with({.args = std::move(args), .env = std::move(changes)});
  }

  // Starts the build in the background (options.timeout does not apply), its stdout on
  // `stdout_fd` and its stderr on `stderr_fd` (-1: /dev/null); returns its pid, to be reaped with
  // wait_exit(). Fails the running test when it cannot start.
  pid_t start(const BuildOptions& options, int stdout_fd, int stderr_fd = -1) const {
    std::vector<std::string> args = argv(options);
    Environment changes = env(options.env);
    std::vector<std::string> environment;
    for (char** e = environ; *e != nullptr; ++e) {
      std::string entry = *e;
      if (!changes.contains(entry.substr(0, entry.find('=')))) environment.push_back(entry);
    }
    for (const auto& [name, value] : changes) {
      if (value) environment.push_back(name + "=" + *value);
    }
    auto pointers = [](std::vector<std::string>& strings) {
      std::vector<char*> all;
      for (std::string& s : strings) all.push_back(s.data());
      all.push_back(nullptr);
      return all;
    };
    std::vector<char*> c_argv = pointers(args);
    std::vector<char*> c_env = pointers(environment);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
    if (stderr_fd >= 0) {
      posix_spawn_file_actions_adddup2(&actions, stderr_fd, 2);
    } else {
      posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
    }
    if (options.in_project_directory) posix_spawn_file_actions_addchdir_np(&actions, dir().c_str());
    pid_t pid = -1;
    int rc = posix_spawnp(&pid, c_argv[0], &actions, nullptr, c_argv.data(), c_env.data());
    posix_spawn_file_actions_destroy(&actions);
    EXPECT_EQ(rc, 0) << "cannot start " << args[0];
    return pid;
  }

  // The --json report `report`, and its jobs by name.
  nlohmann::json result(const std::string& report = "result.json") const {
    return nlohmann::json::parse(read_file(path(report)));
  }
  std::map<std::string, nlohmann::json> jobs(const std::string& report = "result.json") const {
    return jobs_by_name(result(report));
  }

 private:
  TempDirectory dir_;
};

}  // namespace kiln::testing
