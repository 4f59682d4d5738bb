// kiln build [MANIFEST] [-j N|auto] [--local-jobs N] [--timeout S] [--out DIR] [--json FILE]
// [--trace FILE]
//            [--launcher L] [--keep-going] [--no-cache] [--dry-run] [--allow-shared-out] [-v]
// Builds every job of a manifest (default: the bundled examples), with progress, a summary, and
// Ctrl-C that stops everything and leaves no partial output.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "commands.h"
#include "kiln/build.h"
#include "kiln/error.h"
#include "kiln/manifest.h"
#include "kiln/text.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;
using build::Event;
using build::JobResult;
using build::JobStatus;

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
};

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

// SIGINT, SIGTERM and SIGHUP (a closed terminal), blocked in every thread of the build and read
// from a signalfd by one watcher thread that turns them into a readable pipe: the build's cancel
// descriptor.
class Interrupts {
 public:
  Interrupts() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    sigaddset(&set_, SIGHUP);
    if (::pipe2(cancel_, O_CLOEXEC) != 0 || ::pipe2(stop_, O_CLOEXEC) != 0) {
      throw SystemError("pipe2", errno);
    }
    ::pthread_sigmask(SIG_BLOCK, &set_, &old_);
    signals_ = ::signalfd(-1, &set_, SFD_CLOEXEC);
    if (signals_ == -1) throw SystemError("signalfd", errno);
    watcher_ = std::thread([this] { watch(); });
  }
  ~Interrupts() {
    (void)::write(stop_[1], "x", 1);
    watcher_.join();
    ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    for (int fd : {signals_, cancel_[0], cancel_[1], stop_[0], stop_[1]}) ::close(fd);
  }
  Interrupts(const Interrupts&) = delete;
  Interrupts& operator=(const Interrupts&) = delete;

  int fd() const { return cancel_[0]; }
  int received() const { return received_.load(); }

 private:
  void watch() {
    for (;;) {
      pollfd fds[2] = {{signals_, POLLIN, 0}, {stop_[0], POLLIN, 0}};
      if (::poll(fds, 2, -1) == -1) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[1].revents != 0) return;
      signalfd_siginfo info{};
      if (::read(signals_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
        received_.store(static_cast<int>(info.ssi_signo));
        (void)::write(cancel_[1], "x", 1);
      }
    }
  }

  sigset_t set_{};
  sigset_t old_{};
  int cancel_[2] = {-1, -1};
  int stop_[2] = {-1, -1};
  int signals_ = -1;
  std::atomic<int> received_{0};
  std::thread watcher_;
};

// Progress: on a terminal one status line rewritten in place (the longest-running job and its
// time, refreshed while it runs), else one plain line per finished job; failures in full.
class Progress {
 public:
  // Writes to `out`; a closed or full stream is not the build's failure. Once the reader is
  // gone (EPIPE: `kiln build | head -1`), printing stops and the build goes on to its end.
  void put(const std::string& text) {
    if (closed_.load()) return;
    (void)std::fwrite(text.data(), 1, text.size(), out_);
    if (std::ferror(out_) != 0) closed_.store(true);
  }

  // `out`: stdout, or stderr when a report goes to stdout (--json -). `verbose`: also print what
  // the tools of each job that was done printed (warnings).
  Progress(FILE* out, bool terminal, bool verbose)
      : out_(out), terminal_(terminal), verbose_(verbose) {
    if (terminal_) ticker_ = std::thread([this] { tick(); });
  }
  ~Progress() { stop(); }
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void on_event(const Event& event) {
    std::lock_guard lock(mutex_);
    finished_ = event.finished_count;
    total_ = event.total;
    const JobResult& job = *event.job;
    if (event.kind == Event::started) {
      running_[job.name] = {job.kind, std::chrono::steady_clock::now()};
    } else {
      running_.erase(job.name);
      report(job);
    }
    if (terminal_) draw();
  }

  // Clears the status line for good.
  void stop() {
    {
      std::lock_guard lock(mutex_);
      if (stopped_) return;
      stopped_ = true;
      if (terminal_ && drawn_) put("\r\x1b[K");
      (void)std::fflush(out_);
    }
    wake_.notify_all();
    if (ticker_.joinable()) ticker_.join();
  }

 private:
  struct Running {
    build::JobKind kind;
    std::chrono::steady_clock::time_point since;
  };

  void report(const JobResult& job) {
    bool problem = job.status == JobStatus::failed || job.status == JobStatus::timeout ||
                   job.status == JobStatus::crashed;
    bool told = verbose_ && job.status == JobStatus::done && !job.log.empty();
    if (terminal_ && !problem && !told) return;
    if (terminal_) put("\r\x1b[K");
    std::string line =
        fmt::format("[{}/{}] {} {} {} {:.2f}s", finished_, total_, build::status_text(job),
                    build::kind_name(job.kind), printable(job.name), job.seconds);
    if (job.status == JobStatus::skipped && !job.log.empty())
      line += " (" + printable(job.log) + ")";
    put(line + "\n");
    if (problem) {
      std::string block =
          fmt::format("FAILED: {} ({}, {})\n{}\n", printable(job.name), build::kind_name(job.kind),
                      build::status_text(job), printable_lines(job.log));
      put(block);
    } else if (told) {
      put(printable_lines(job.log) + (job.log.ends_with('\n') ? "" : "\n"));
    }
    drawn_ = false;
  }

  void draw() {
    if (stopped_) return;
    std::string line = fmt::format("[{}/{}]", finished_, total_);
    if (!running_.empty()) {
      auto oldest = running_.begin();
      for (auto it = running_.begin(); it != running_.end(); ++it) {
        if (it->second.since < oldest->second.since) oldest = it;
      }
      double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - oldest->second.since)
              .count();
      line += fmt::format(" {} {} {:.1f}s", build::kind_name(oldest->second.kind),
                          printable(oldest->first), seconds);
      if (running_.size() > 1) line += fmt::format(" (+{} running)", running_.size() - 1);
    }
    winsize size{};
    size_t width =
        ::ioctl(::fileno(out_), TIOCGWINSZ, &size) == 0 && size.ws_col > 0 ? size.ws_col : 80;
    if (line.size() >= width) line = std::string(utf8_prefix(line, width - 1));
    put("\r" + line + "\x1b[K");
    (void)std::fflush(out_);
    drawn_ = true;
  }

  void tick() {
    std::unique_lock lock(mutex_);
    while (!stopped_) {
      wake_.wait_for(lock, std::chrono::milliseconds(100));
      if (!stopped_ && !running_.empty()) draw();
    }
  }

  FILE* out_;
  std::atomic<bool> closed_{false};
  bool terminal_;
  bool verbose_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::map<std::string, Running> running_;
  size_t finished_ = 0;
  size_t total_ = 0;
  bool drawn_ = false;
  bool stopped_ = false;
  std::thread ticker_;
};

// Whether progress may rewrite a status line in place on `out`: a terminal that understands
// "\r" and "\x1b[K", which TERM=dumb (Emacs' shell, some CI logs) and no TERM at all do not
// promise. Elsewhere it prints one line per job.
bool overprints(FILE* out) {
  const char* term = std::getenv("TERM");
  return ::isatty(::fileno(out)) != 0 && term != nullptr && *term != '\0' &&
         std::string_view(term) != "dumb";
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

int run_build_command(const BuildArgs& args) {
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
                         .launcher = args.launcher,
                         .keep_going = args.keep_going,
                         .use_cache = !args.no_cache};

  if (args.dry_run) {
    std::vector<build::PlannedJob> plan = build::plan_build(manifest, options);
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
    return kExitOk;
  }

  Interrupts interrupts;
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
  if (report.summary.interrupted) {
    std::cerr << "kiln: interrupted; running jobs were killed and no partial output was kept\n";
    return 128 + (interrupts.received() != 0 ? interrupts.received() : SIGINT);
  }
  if (!args.json.empty()) build::write_report_file(args.json, build::report_json(report));
  if (!args.trace.empty()) build::write_report_file(args.trace, build::trace_json(report));
  return report.summary.ok() ? kExitOk : kExitFailed;
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
