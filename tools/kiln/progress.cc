// kiln build's status line and per-job lines (progress.h).
#include "progress.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdlib>
#include <string_view>

#include <fmt/format.h>

#include "kiln/manifest.h"
#include "kiln/text.h"

namespace kiln::cli {

using build::Event;
using build::JobResult;
using build::JobStatus;

bool overprints(FILE* out) {
  const char* term = std::getenv("TERM");
  return ::isatty(::fileno(out)) != 0 && term != nullptr && *term != '\0' &&
         std::string_view(term) != "dumb";
}

void Progress::put(const std::string& text) {
  if (closed_.load()) return;
  (void)std::fwrite(text.data(), 1, text.size(), out_);
  if (std::ferror(out_) != 0) closed_.store(true);
}

Progress::Progress(FILE* out, bool terminal, bool verbose)
    : out_(out), terminal_(terminal), verbose_(verbose) {
  if (terminal_) ticker_ = std::thread([this] { tick(); });
}

Progress::~Progress() { stop(); }

void Progress::on_event(const Event& event) {
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

void Progress::stop() {
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

void Progress::report(const JobResult& job) {
  bool problem = job.status == JobStatus::failed || job.status == JobStatus::timeout ||
                 job.status == JobStatus::crashed;
  bool told = verbose_ && job.status == JobStatus::done && !job.log.empty();
  if (terminal_ && !problem && !told) return;
  if (terminal_) put("\r\x1b[K");
  std::string line =
      fmt::format("[{}/{}] {} {} {} {:.2f}s", finished_, total_, build::status_text(job),
                  build::kind_name(job.kind), printable(job.name), job.seconds);
  if (job.status == JobStatus::skipped && !job.log.empty()) line += " (" + printable(job.log) + ")";
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

void Progress::draw() {
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

void Progress::tick() {
  std::unique_lock lock(mutex_);
  while (!stopped_) {
    wake_.wait_for(lock, std::chrono::milliseconds(100));
    if (!stopped_ && !running_.empty()) draw();
  }
}

}  // namespace kiln::cli
