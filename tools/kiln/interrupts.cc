// kiln build's Ctrl-C: signals read from a signalfd, turned into a cancel pipe (interrupts.h).
#include "interrupts.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "kiln/error.h"

namespace kiln::cli {

Interrupts::Interrupts(std::chrono::milliseconds overdue_limit, std::function<void()> last_words)
    : overdue_limit_(overdue_limit), last_words_(std::move(last_words)) {
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

Interrupts::~Interrupts() {
  (void)::write(stop_[1], "x", 1);
  watcher_.join();
  ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  for (int fd : {signals_, cancel_[0], cancel_[1], stop_[0], stop_[1]}) ::close(fd);
}

void Interrupts::watch() {
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
      if (last_words_) wait_or_end(static_cast<int>(info.ssi_signo));
    }
  }
}

void Interrupts::wait_or_end(int signal) {
  pollfd stop = {stop_[0], POLLIN, 0};
  auto until = std::chrono::steady_clock::now() + overdue_limit_;
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    int n = ::poll(&stop, 1, static_cast<int>(left.count()));
    if (n > 0) return;  // the build ended in time; ~Interrupts stops the watcher
    if (n < 0 && errno != EINTR) break;
  }
  last_words_();
  ::_exit(128 + signal);
}

}  // namespace kiln::cli
