// Ctrl-C for kiln build: SIGINT, SIGTERM and SIGHUP (a closed terminal), blocked in every thread
// of the build and read from a signalfd by one watcher thread that turns them into a readable
// pipe: the build's cancel descriptor (build::Options::cancel_fd). The signals are blocked in the
// thread that makes it, and so in the threads that thread starts afterwards (the build's).
//
//   Interrupts interrupts;
//   options.cancel_fd = interrupts.fd();
//   build::Report report = build::run_build(manifest, options);
//   if (report.summary.interrupted) return 128 + interrupts.received();   // SIGINT: 130
#pragma once

#include <signal.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

namespace kiln::cli {

class Interrupts {
 public:
  // Blocks the signals in this thread and starts the watcher; throws SystemError when a pipe or
  // the signalfd cannot be had. The last resort: when the process still runs `overdue_limit`
  // after a signal (a thread that cannot be interrupted holds the build up), the watcher calls
  // `last_words` (remove what must not be left, say why) and ends the process with _exit(128 +
  // the signal); the child guard kills what it had started. Without `last_words`, none. Both are
  // given here, before the watcher starts, so that it reads them with no race.
  explicit Interrupts(std::chrono::milliseconds overdue_limit = {},
                      std::function<void()> last_words = {});
  // Stops the watcher and restores the signal mask.
  ~Interrupts();
  Interrupts(const Interrupts&) = delete;
  Interrupts& operator=(const Interrupts&) = delete;

  // Readable once a signal came.
  int fd() const { return cancel_[0]; }
  // The last signal that came; 0 for none.
  int received() const { return received_.load(); }

 private:
  void watch();
  // After `signal`: returns once stopped, or ends the process when overdue.
  void wait_or_end(int signal);

  sigset_t set_{};
  sigset_t old_{};
  int cancel_[2] = {-1, -1};
  int stop_[2] = {-1, -1};
  int signals_ = -1;
  std::atomic<int> received_{0};
  const std::chrono::milliseconds overdue_limit_;
  const std::function<void()> last_words_;
  std::thread watcher_;
};

}  // namespace kiln::cli
