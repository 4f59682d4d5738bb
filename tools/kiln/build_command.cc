// kiln build [MANIFEST] [-j N|auto] [--local-jobs N] [--timeout S] [--out DIR] [--json FILE]
// [--trace FILE]
//            [--launcher L] [--keep-going] [--no-cache] [--dry-run] [--allow-shared-out] [-v]
//            [--remote-cache URL] [--remote-cache-mode read-only|read-write]
// Builds every job of a manifest (default: the bundled examples), with progress, a summary, and
// Ctrl-C that stops everything and leaves no partial output.
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "commands.h"
#include "interrupts.h"
#include "kiln/build.h"
#include "kiln/error.h"
#include "kiln/launcher.h"
#include "kiln/manifest.h"
#include "kiln/remote_store.h"
#include "kiln/settings.h"
#include "kiln/text.h"
#include "progress.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;
using build::Event;

struct BuildArgs {
  std::string manifest;
  std::string jobs;  // a number or "auto"; "": the doctor's recommendation
  int local_jobs = 0;
  std::optional<double> timeout;
  std::string out = "kiln-out";
  std::string json;
  std::string trace;
  std::string launcher;
  bool keep_going = false;
  bool no_cache = false;
  bool dry_run = false;
  bool allow_shared_out = false;
  bool verbose = false;
  std::string remote_cache;
  std::string remote_cache_mode;
};

// --remote-cache and --remote-cache-mode are the settings KILN_REMOTE_CACHE and
// KILN_REMOTE_CACHE_MODE of this process (kiln/settings.h: above the environment, and passed to
// the processes it starts), so that every cache of the build (the jobs', the CUDA kernels', its
// NVRTC workers') uses them. A mode or URL kiln cannot read is a bad command line (exit 2), not a
// warning.
void configure_remote_cache(const BuildArgs& args) {
  if (!args.remote_cache.empty()) {
    settings::set_by_flag("KILN_REMOTE_CACHE", args.remote_cache, "--remote-cache");
  }
  if (!args.remote_cache_mode.empty()) {
    settings::set_by_flag("KILN_REMOTE_CACHE_MODE", args.remote_cache_mode, "--remote-cache-mode");
  }
  std::optional<RemoteCacheOptions> remote;
  try {
    remote = RemoteCacheOptions::from_environment();
  } catch (const InvalidArgument& e) {
    std::string what = e.what();
    if (!args.remote_cache.empty() && what.starts_with("KILN_REMOTE_CACHE: ")) {
      throw InvalidArgument("--remote-cache: " + what.substr(19));
    }
    throw;
  }
  if (remote) {
    (void)RemoteStoreOptions::parse(remote->url, remote->credentials_file, remote->ca_file);
  }
}

// How long after Ctrl-C (SIGINT, SIGTERM, SIGHUP) kiln build may take to end.
constexpr std::chrono::milliseconds kInterruptLimit{800};

// Removes the temporary directories this process made in `out_dir` (.kiln-tmp-<pid>-*).
void remove_own_temporaries(const fs::path& out_dir) {
  std::string prefix = fmt::format(".kiln-tmp-{}-", ::getpid());
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(out_dir, ec)) {
    if (entry.path().filename().string().starts_with(prefix)) fs::remove_all(entry.path(), ec);
  }
}

// The manifest to build: the one named, else examples/kiln.json here, else the bundled one.
fs::path manifest_path(const std::string& given) {
  if (!given.empty()) return given;
  std::error_code ec;
  if (fs::is_regular_file("examples/kiln.json", ec)) return "examples/kiln.json";
  fs::path bundled = fs::path(KILN_EXAMPLES_DIR) / "kiln.json";
  if (fs::is_regular_file(bundled, ec)) return bundled;
  throw InvalidArgument(fmt::format(
      "no manifest given, and neither examples/kiln.json nor {} exists", bundled.string()));
}

// -j's value: a positive number, or "auto" (the distributing launcher's cluster decides).
int jobs_value(const std::string& text) {
  if (text.empty()) return 0;
  if (text == "auto") return build::kAutoJobs;
  int jobs = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), jobs);
  if (error != std::errc() || end != text.data() + text.size() || jobs < 0) {
    throw InvalidArgument(
        fmt::format("-j {}: must be a number of jobs (0: the recommendation) or auto", text));
  }
  return jobs;
}

// --launcher's value: std::nullopt when not given; a name not in kLaunchers is
// InvalidArgument (exit 2).
std::optional<LauncherKind> launcher_of(const std::string& name) {
  if (name.empty()) return std::nullopt;
  return known_launcher_kind(name);
}

// --dry-run: what would run, one line a job.
void print_plan(const std::vector<build::PlannedJob>& plan) {
  for (size_t i = 0; i < plan.size(); ++i) {
    const build::PlannedJob& p = plan[i];
    std::string note = !p.skip_reason.empty() ? " (would be skipped: " + p.skip_reason + ")"
                       : p.cached             ? " (cached)"
                       : !p.route.empty()     ? " (" + p.route + ")"
                                              : "";
    std::cout << fmt::format("[{}/{}] {} {} -> {}{}\n", i + 1, plan.size(),
                             build::kind_name(p.job->kind), printable(p.job->name),
                             printable(p.output.string()), printable(note));
  }
}

// An interrupted build's end: 128 + the signal (SIGINT when none was read). Not through exit():
// a thread may still be inside a remote operation it abandoned (internal/remote_level.h), and
// static destructors must not pull its libraries away.
[[noreturn]] void end_interrupted(int signal) {
  std::cerr << "kiln: interrupted; running jobs were killed and no partial output was kept\n";
  std::cout.flush();
  std::cerr.flush();
  (void)std::fflush(nullptr);
  std::_Exit(128 + (signal != 0 ? signal : SIGINT));
}

int run_build_command(const BuildArgs& args) {
  configure_remote_cache(args);
  fs::path file = manifest_path(args.manifest);
  build::Manifest manifest;
  try {
    manifest = build::parse_manifest(file);
  } catch (const FileNotFound& e) {
    throw InvalidArgument(e.what());  // a bad command line: exit 2
  }
  build::Options options{.jobs = jobs_value(args.jobs),
                         .local_jobs = args.local_jobs,
                         .timeout = args.timeout,
                         .out_dir = args.out,
                         .allow_shared_out = args.allow_shared_out,
                         .launcher = launcher_of(args.launcher),
                         .keep_going = args.keep_going,
                         .use_cache = !args.no_cache};

  if (args.dry_run) {
    print_plan(build::plan_build(manifest, options));
    return kExitOk;
  }

  Interrupts interrupts(kInterruptLimit, [out_dir = fs::absolute(args.out)] {
    remove_own_temporaries(out_dir);
    (void)std::fputs(
        "kiln: interrupted; a job did not stop in time and was abandoned, running jobs were "
        "killed and no partial output was kept\n",
        stderr);
  });
  options.cancel_fd = interrupts.fd();
  // A report written to stdout must be all that is there, so that it can be piped.
  bool report_to_stdout = args.json == "-" || args.trace == "-";
  FILE* out = report_to_stdout ? stderr : stdout;
  Progress progress(out, overprints(out), args.verbose);
  options.on_event = [&progress](const Event& event) { progress.on_event(event); };
  build::Report report = build::run_build(manifest, options);
  progress.stop();
  if (!report.cache_warning.empty()) std::cerr << "kiln: warning: " << report.cache_warning << "\n";
  (report_to_stdout ? std::cerr : std::cout) << build::summary_text(report) << std::flush;
  if (report.summary.interrupted) end_interrupted(interrupts.received());
  if (!args.json.empty()) build::write_report_file(args.json, build::report_json(report));
  if (!args.trace.empty()) build::write_report_file(args.trace, build::trace_json(report));
  return report.summary.ok() ? kExitOk : kExitFailed;
}

// --remote-cache's help: the forms of the registry's backends, each once.
std::string remote_cache_help() {
  std::vector<std::string> forms;
  for (const RemoteBackendInfo& backend : remote_backends()) {
    if (std::find(forms.begin(), forms.end(), backend.form) == forms.end()) {
      forms.push_back(backend.form);
    }
  }
  return fmt::format(
      "A shared second level for the cache: {}; default $KILN_REMOTE_CACHE "
      "(docs/remote-cache.md)",
      fmt::join(forms, ", "));
}

}  // namespace

void add_build(CLI::App& app, int* status) {
  auto args = std::make_shared<BuildArgs>();
  CLI::App* sub = app.add_subcommand(
      "build",
      "Compile every job of a manifest in parallel (default: the bundled examples); exit 1 when "
      "a job failed, timed out or crashed, 2 for a bad manifest");
  sub->add_option("manifest", args->manifest, "The manifest (JSON; see docs/manifest.md)");
  sub->add_option("-j,--jobs", args->jobs,
                  "Jobs at once (default: the doctor's recommendation for this machine); with a "
                  "launcher that distributes (sccache-dist, distcc, icecc) the cluster's slots, "
                  "or auto to ask sccache-dist's scheduler");
  sub->add_option("--local-jobs", args->local_jobs,
                  "With a distributing launcher: jobs that run locally at once (links, NVRTC, "
                  "tar; default: the doctor's recommendation)");
  sub->add_option("--timeout", args->timeout,
                  "Seconds every job may take (0: none), overriding the manifest");
  sub->add_option("--out", args->out, "Where outputs go, as <name>.<ext> (default: kiln-out)");
  sub->add_option("--json", args->json,
                  "Write per-job results and the summary as JSON (-: stdout, and progress goes "
                  "to stderr)");
  sub->add_option("--trace", args->trace,
                  "Write a Chrome trace (Perfetto, chrome://tracing; -: stdout)");
  sub->add_option("--launcher", args->launcher,
                  "ccache, sccache, distcc or icecc in front of C/C++ compiles (sccache also in "
                  "front of nvcc; NVRTC compiles in kiln's process, never elsewhere)");
  sub->add_flag("--keep-going", args->keep_going, "Build what does not depend on a failure");
  sub->add_flag("--no-cache", args->no_cache, "Neither read nor fill the cache");
  sub->add_option("--remote-cache", args->remote_cache, remote_cache_help());
  sub->add_option("--remote-cache-mode", args->remote_cache_mode,
                  "read-only (default: only fetch) or read-write (also upload what is built); "
                  "default $KILN_REMOTE_CACHE_MODE")
      ->check(CLI::IsMember({"read-only", "read-write"}));
  sub->add_flag("--dry-run", args->dry_run, "Print what would be built, build nothing");
  sub->add_flag("-v,--verbose", args->verbose,
                "Also print what the tools of each job that was done printed (warnings; "
                "ptxas' resource lines for CUDA)");
  sub->add_flag("--allow-shared-out", args->allow_shared_out,
                "Build into an --out that another user can write (or one of its parents): by "
                "default refused, since they could replace the outputs");
  sub->callback([args, status] {
    require_no_passthrough("build");
    *status = run_build_command(*args);
  });
}

}  // namespace kiln::cli
