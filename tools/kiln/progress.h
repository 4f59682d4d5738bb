// kiln build's progress: on a terminal one status line rewritten in place (the longest-running
// job and its time, refreshed while it runs), else one plain line per finished job; failures in
// full. It is fed the build's events and may be called from the build's threads.
//
//   Progress progress(stdout, overprints(stdout), /*verbose=*/false);
//   options.on_event = [&progress](const build::Event& event) { progress.on_event(event); };
//   build::Report report = build::run_build(manifest, options);
//   progress.stop();   // the status line is gone before the summary is printed
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "kiln/build.h"

namespace kiln::cli {

// Whether progress may rewrite a status line in place on `out`: a terminal that understands
// "\r" and "\x1b[K", which TERM=dumb (Emacs' shell, some CI logs) and no TERM at all do not
// promise. Elsewhere it prints one line per job.
bool overprints(FILE* out);

// Progress: on a terminal one status line rewritten in place (the longest-running job and its
// time, refreshed while it runs), else one plain line per finished job; failures in full.
class Progress {
 public:
  // Writes to `out`; a closed or full stream is not the build's failure. Once the reader is
  // gone (EPIPE: `kiln build | head -1`), printing stops and the build goes on to its end.
  void put(const std::string& text);

  // `out`: stdout, or stderr when a report goes to stdout (--json -). `verbose`: also print what
  // the tools of each job that was done printed (warnings).
  Progress(FILE* out, bool terminal, bool verbose);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void on_event(const build::Event& event);

  // Clears the status line for good.
  void stop();

 private:
  struct Running {
    build::JobKind kind;
    std::chrono::steady_clock::time_point since;
  };

  void report(const build::JobResult& job);
  void draw();
  void tick();

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

}  // namespace kiln::cli
