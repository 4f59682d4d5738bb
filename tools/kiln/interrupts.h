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
#include <thread>

namespace kiln::cli {

class Interrupts {
 public:
  // Blocks the signals in this thread and starts the watcher; throws SystemError when a pipe or
  // the signalfd cannot be had.
  Interrupts();
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

  sigset_t set_{};
  sigset_t old_{};
  int cancel_[2] = {-1, -1};
  int stop_[2] = {-1, -1};
  int signals_ = -1;
  std::atomic<int> received_{0};
  std::thread watcher_;
};

}  // namespace kiln::cli
