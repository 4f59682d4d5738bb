// Warm worker templates (pool.h, prepare_template), both sides.
//
// The control socket between the parent and a template is a SOCK_SEQPACKET pair, one message
// per request or answer, text lines:
//   parent:   "prepare\n<name>\n..."                  (once, first)
//   template: "ready\n<name that failed>\n..."  or  "unsafe\n<why>"
//   parent:   "fork\n<fd number>...\n\n<NAME=value>\n..." with the worker's descriptors attached
//             (SCM_RIGHTS), in the order of the numbers they get in the worker
//   template: "pid\n<pid>"  or  "error\n<why>"
// A template forks with clone(CLONE_PARENT): the worker is the parent's child, not the
// template's, so that the parent waits for it, reads its exit status and kills its group as it
// does for a worker it spawned. A process may only fork safely while it has a single thread:
// a template that has more after its preparation first runs the fork handlers of its libraries
// once (a throwaway fork(): OpenBLAS, which numpy starts, stops its threads there), and says
// "unsafe" when threads remain.
#include "template.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "internal/fd.h"
#include "kiln/error.h"
#include "kiln/pool.h"
#include "protocol.h"
#include "spawner.h"

namespace kiln::internal {
namespace {

constexpr std::size_t kMaxMessage = std::size_t{128} * 1024;
// The most descriptors a worker is handed (stdin to the board, and a spare).
constexpr std::size_t kMaxFds = 8;
// How long a ready template may take to answer a fork.
constexpr std::chrono::seconds kForkAnswer{10};
// Templates kept per process (one per program, directory and environment).
constexpr std::size_t kMaxTemplates = 4;
// A key whose templates died this many times before they were ready gets no more.
constexpr int kMaxLosses = 3;
// Left out of a template's key: set anew for every test by pytest.
constexpr std::string_view kVolatile[] = {"PYTEST_CURRENT_TEST="};

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    lines.emplace_back(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return lines;
}

std::string join_lines(const std::string& head, const std::vector<std::string>& lines) {
  std::string text = head;
  for (const std::string& line : lines) text += '\n' + line;
  return text;
}

// Sends one message with `fds` attached. False when the other side is gone.
bool send_message(int socket, const std::string& text, const std::vector<int>& fds = {}) {
  iovec data{const_cast<char*>(text.data()), text.size()};  // NOLINT: sendmsg does not write
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  std::vector<char> control(CMSG_SPACE(sizeof(int) * std::max<std::size_t>(fds.size(), 1)));
  if (!fds.empty()) {
    message.msg_control = control.data();
    message.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(header), fds.data(), sizeof(int) * fds.size());
  }
  return retry_eintr([&] { return ::sendmsg(socket, &message, MSG_NOSIGNAL); }) ==
         static_cast<long>(text.size());
}

// Receives one message and the descriptors attached to it (close-on-exec). std::nullopt at
// end of file or on an error.
std::optional<std::string> receive_message(int socket, std::vector<UniqueFd>* fds = nullptr) {
  std::string text(kMaxMessage, '\0');
  iovec data{text.data(), text.size()};
  std::vector<char> control(CMSG_SPACE(sizeof(int) * kMaxFds));
  msghdr message{};
  message.msg_iov = &data;
  message.msg_iovlen = 1;
  message.msg_control = control.data();
  message.msg_controllen = control.size();
  long got = retry_eintr([&] { return ::recvmsg(socket, &message, MSG_CMSG_CLOEXEC); });
  for (cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr;
       header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
    std::size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    std::vector<int> received(count);
    std::memcpy(received.data(), CMSG_DATA(header), sizeof(int) * count);
    for (int fd : received) {
      if (fds != nullptr) {
        fds->emplace_back(fd);
      } else {
        ::close(fd);
      }
    }
  }
  if (got <= 0 || (message.msg_flags & MSG_TRUNC) != 0) return std::nullopt;
  text.resize(static_cast<std::size_t>(got));
  return text;
}

bool wait_readable(int fd, std::chrono::milliseconds limit) {
  pollfd entry{fd, POLLIN, 0};
  return poll_until(&entry, 1, Clock::now() + limit) > 0 && entry.revents != 0;
}

// ---- The parent's side ------------------------------------------------------------------------

bool debug() {
  static const bool on = [] {
    const char* value = std::getenv("KILN_POOL_DEBUG");
    return value != nullptr && std::strcmp(value, "1") == 0;
  }();
  return on;
}

// One template process, as the parent sees it.
class TemplateProcess {
 public:
  TemplateProcess(const std::vector<std::string>& command, std::vector<std::string> environment,
                  std::vector<std::string> names)
      : names_(std::move(names)) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
      throw SystemError("socketpair for a worker template", errno);
    }
    UniqueFd theirs(pair[1]);
    control_.reset(pair[0]);
    SpawnSpec spec;
    spec.environment = std::move(environment);
    spec.executable = resolve_executable(command.at(0), path_of(spec.environment), {});
    spec.argv = command;
    spec.argv.insert(spec.argv.end(), {kTemplateFlag, std::to_string(::getpid())});
    UniqueFd devnull(::open("/dev/null", O_WRONLY | O_CLOEXEC));
    spec.fds = {{theirs.get(), kTemplateFd}, {devnull.get(), 1}, {2, 2}};
    child_ = Spawner::spawn(spec);
    if (!send_message(control_.get(), join_lines("prepare", names_))) {
      failure_ = "the template exited before it was told what to prepare";
    }
  }
  // A successor of `ready` (which stays): forked from it, so that it has everything `ready`
  // imported already and prepares only what `names` adds.
  TemplateProcess(TemplateProcess& ready, std::vector<std::string> names)
      : names_(std::move(names)) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
      throw SystemError("socketpair for a worker template", errno);
    }
    UniqueFd theirs(pair[1]);
    control_.reset(pair[0]);
    std::optional<pid_t> pid = ready.request_fork("template", {theirs.get()});
    if (!pid) throw SystemError(ready.failure(), 0);
    child_ = Child::adopt(*pid);
    if (!send_message(control_.get(), join_lines("prepare", names_))) {
      failure_ = "the template exited before it was told what to prepare";
    }
  }
  ~TemplateProcess() {
    control_.reset();  // the template sees the end and exits; its group is killed regardless
    if (child_) child_->terminate_group(std::chrono::milliseconds(0));
  }
  TemplateProcess(const TemplateProcess&) = delete;
  TemplateProcess& operator=(const TemplateProcess&) = delete;

  const std::vector<std::string>& names() const noexcept { return names_; }
  const std::vector<std::string>& failed_names() const noexcept { return failed_names_; }
  bool ready() const noexcept { return ready_; }
  // It prepared, but cannot fork safely (threads run in it): so would any other with its names.
  bool unsafe() const noexcept { return unsafe_; }
  // Set once the template is of no more use, saying why.
  const std::string& failure() const noexcept { return failure_; }

  // Reads the template's "ready" if it has come (waiting up to `limit`).
  void poll(std::chrono::milliseconds limit = std::chrono::milliseconds(0)) {
    if (ready_ || !failure_.empty() || !wait_readable(control_.get(), limit)) return;
    std::optional<std::string> answer = receive_message(control_.get());
    if (!answer) {
      failure_ = fmt::format("the template (pid {}) {} while it prepared", child_->pid(),
                             ended());
      return;
    }
    std::vector<std::string> lines = split_lines(*answer);
    if (lines[0] == "ready") {
      ready_ = true;
      failed_names_.assign(lines.begin() + 1, lines.end());
      std::erase(failed_names_, std::string());
    } else {
      unsafe_ = true;
      failure_ = fmt::format("the template cannot fork safely: {}",
                             lines.size() > 1 ? lines[1] : *answer);
    }
  }

  // A worker forked for `spec`, or std::nullopt with failure() set.
  std::optional<Child> fork(const SpawnSpec& spec) {
    std::string request = "fork";
    std::vector<int> fds;
    for (auto [parent_fd, child_fd] : spec.fds) {
      request += fmt::format("\n{}", child_fd);
      fds.push_back(parent_fd);
    }
    request += '\n';
    for (const std::string& entry : spec.environment) request += '\n' + entry;
    if (request.size() > kMaxMessage || fds.size() > kMaxFds) {
      reason_ = "the worker's environment is too large to send to its template";
      return std::nullopt;  // this worker only: the template stays
    }
    std::optional<pid_t> pid = request_fork(request, fds);
    if (!pid) return std::nullopt;
    return Child::adopt(*pid);
  }

  // Sends a fork request; the forked process's pid, or std::nullopt with failure() set.
  std::optional<pid_t> request_fork(const std::string& request, const std::vector<int>& fds) {
    if (!send_message(control_.get(), request, fds)) {
      failure_ = fmt::format("the template (pid {}) {}", child_->pid(), ended());
      return std::nullopt;
    }
    std::optional<std::string> answer;
    if (wait_readable(control_.get(), kForkAnswer)) answer = receive_message(control_.get());
    if (!answer) {
      failure_ = fmt::format("the template (pid {}) did not answer a fork within {} s: {}",
                             child_->pid(), kForkAnswer.count(), ended());
      return std::nullopt;
    }
    std::vector<std::string> lines = split_lines(*answer);
    if (lines[0] == "pid" && lines.size() == 2) {
      pid_t pid = static_cast<pid_t>(std::atol(lines[1].c_str()));
      if (pid > 0) return pid;
    }
    failure_ = fmt::format("the template could not fork: {}",
                           lines.size() > 1 ? lines[1] : *answer);
    return std::nullopt;
  }

  // Why the last fork() gave nothing while the template stays usable.
  std::string take_reason() { return std::exchange(reason_, {}); }

 private:
  std::string ended() {
    if (!child_) return "ended";
    child_->wait_until(Clock::now() + std::chrono::milliseconds(200));
    if (!child_->reaped()) return "stopped answering";
    int status = child_->wait_status();
    if (WIFSIGNALED(status)) return fmt::format("was killed by signal {}", WTERMSIG(status));
    return fmt::format("exited with code {}", WEXITSTATUS(status));
  }

  std::vector<std::string> names_;
  std::vector<std::string> failed_names_;
  std::optional<Child> child_;
  UniqueFd control_;
  bool ready_ = false;
  bool unsafe_ = false;
  std::string failure_;
  std::string reason_;
};

// The templates of this process, by key.
class Templates {
 public:
  // Without a lock, as Spawner: a forked child makes its own and leaves its parent's alone.
  static Templates& of_this_process() {
    static std::atomic<Templates*> current{nullptr};
    pid_t self = ::getpid();
    Templates* templates = current.load(std::memory_order_acquire);
    while (templates == nullptr || templates->owner_ != self) {
      // NOLINTNEXTLINE(cppcoreguidelines-owning-memory): lives as long as the process
      auto* fresh = new Templates(self);
      if (current.compare_exchange_strong(templates, fresh, std::memory_order_acq_rel)) {
        return *fresh;
      }
      delete fresh;  // NOLINT(cppcoreguidelines-owning-memory): another thread's won
    }
    return *templates;
  }

  bool prepare(const std::vector<std::string>& command, const std::vector<std::string>& names) {
    std::vector<std::string> environment = make_environment({}, false);
    std::lock_guard lock(mutex_);
    Entry& entry = entry_for(key_of(command, environment));
    entry.command = command;
    for (const std::string& name : names) {
      if (std::find(entry.wanted.begin(), entry.wanted.end(), name) == entry.wanted.end()) {
        entry.wanted.push_back(name);
      }
    }
    return refresh(entry, std::move(environment));
  }

  bool wait(const std::vector<std::string>& command, std::chrono::milliseconds limit,
            bool only_if_preparing) {
    if (only_if_preparing) {  // the common case, at every call: nothing is being prepared
      std::lock_guard lock(mutex_);
      bool preparing = std::any_of(entries_.begin(), entries_.end(),
                                   [](const auto& entry) { return entry.second.next != nullptr; });
      if (!preparing) return false;
    }
    std::string key = key_of(command, make_environment({}, false));
    Clock::time_point deadline = Clock::now() + limit;
    for (;;) {
      {
        std::lock_guard lock(mutex_);
        auto it = entries_.find(key);
        if (it == entries_.end()) return false;
        Entry& entry = it->second;
        promote(entry);
        if (!entry.next) return entry.ready != nullptr;
      }
      if (Clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }

  std::optional<Child> fork(const SpawnSpec& spec) {
    std::vector<std::string> command(spec.argv.begin(), spec.argv.end() - 2);
    std::lock_guard lock(mutex_);
    auto it = entries_.find(key_of(command, spec.environment));
    if (it == entries_.end()) return fall_back("no template was prepared for this program here");
    Entry& entry = it->second;
    promote(entry);
    if (!entry.ready) {
      return fall_back(entry.next ? "its template is still preparing" : entry.last_failure);
    }
    std::optional<Child> worker = entry.ready->fork(spec);
    if (worker) {
      ++stats_.forks;
      return worker;
    }
    if (std::string reason = entry.ready->take_reason(); !reason.empty()) return fall_back(reason);
    lose(entry, entry.ready);
    refresh(entry, spec.environment);  // a template that died is rebuilt
    return fall_back(entry.last_failure);
  }

  pool::TemplateStats stats() {
    std::lock_guard lock(mutex_);
    return stats_;
  }

 private:
  struct Entry {
    std::vector<std::string> command;
    std::vector<std::string> wanted;
    std::unique_ptr<TemplateProcess> ready;  // forks workers
    std::unique_ptr<TemplateProcess> next;   // preparing, to replace `ready`
    std::string last_failure = "no template yet";
    int losses = 0;
    std::uint64_t used = 0;
  };

  explicit Templates(pid_t owner) : owner_(owner) {}

  static std::string key_of(const std::vector<std::string>& command,
                            const std::vector<std::string>& environment) {
    std::error_code ec;
    std::string key = std::filesystem::current_path(ec).string();
    for (const std::string& word : command) key += '\0' + word;
    key += '\1';
    for (const std::string& entry : environment) {
      bool skip = std::any_of(std::begin(kVolatile), std::end(kVolatile),
                              [&](std::string_view name) { return entry.starts_with(name); });
      if (!skip) key += '\0' + entry;
    }
    return key;
  }

  Entry& entry_for(const std::string& key) {
    auto it = entries_.find(key);
    if (it == entries_.end()) {
      if (entries_.size() >= kMaxTemplates) {  // the least recently used goes
        auto oldest = std::min_element(entries_.begin(), entries_.end(), [](auto& a, auto& b) {
          return a.second.used < b.second.used;
        });
        entries_.erase(oldest);
      }
      it = entries_.emplace(key, Entry{}).first;
    }
    it->second.used = ++clock_;
    return it->second;
  }

  // The names `process` lacks of what is wanted (less those it could not prepare).
  static bool lacks(const Entry& entry, const TemplateProcess& process) {
    return std::any_of(entry.wanted.begin(), entry.wanted.end(), [&](const std::string& name) {
      const auto& has = process.names();
      return std::find(has.begin(), has.end(), name) == has.end();
    });
  }

  // Starts a template with everything wanted, unless one has it or is preparing.
  bool refresh(Entry& entry, std::vector<std::string> environment) {
    promote(entry);
    if (entry.next || entry.losses >= kMaxLosses) return false;
    if (entry.ready && !lacks(entry, *entry.ready)) return false;
    try {
      if (entry.ready) {
        try {
          entry.next = std::make_unique<TemplateProcess>(*entry.ready, entry.wanted);
        } catch (const std::exception& error) {
          note(fmt::format("a successor could not be forked ({}): starting one afresh",
                           error.what()));
        }
      }
      if (!entry.next) {
        entry.next = std::make_unique<TemplateProcess>(entry.command, std::move(environment),
                                                       entry.wanted);
      }
    } catch (const std::exception& error) {
      entry.last_failure = fmt::format("the template could not start: {}", error.what());
      note(entry.last_failure);
      ++entry.losses;
      return false;
    }
    ++stats_.started;
    return true;
  }

  // A template that finished preparing replaces the ready one; one that failed is dropped.
  void promote(Entry& entry) {
    if (!entry.next) return;
    entry.next->poll();
    if (!entry.next->failure().empty()) {
      // One that cannot fork safely is not tried again: its successor would import the same.
      entry.losses = entry.next->unsafe() ? kMaxLosses : entry.losses + 1;
      lose(entry, entry.next);
    } else if (entry.next->ready()) {
      entry.losses = 0;
      entry.ready = std::move(entry.next);
      // What it could not import is not wanted any more: asking for it again would rebuild
      // the template for ever.
      for (const std::string& name : entry.ready->failed_names()) std::erase(entry.wanted, name);
    }
  }

  void lose(Entry& entry, std::unique_ptr<TemplateProcess>& process) {
    entry.last_failure = process->failure();
    note(entry.last_failure);
    ++stats_.lost;
    process.reset();
  }

  std::optional<Child> fall_back(const std::string& reason) {
    ++stats_.fallbacks;
    stats_.last_reason = reason;
    return std::nullopt;
  }

  static void note(const std::string& reason) {
    if (debug()) std::fprintf(stderr, "kiln pool: worker template: %s\n", reason.c_str());
  }

  const pid_t owner_;
  std::mutex mutex_;
  std::map<std::string, Entry> entries_;
  std::uint64_t clock_ = 0;
  pool::TemplateStats stats_;
};

// ---- The template's side ----------------------------------------------------------------------

int thread_count() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("Threads:", 0) == 0) return std::atoi(line.c_str() + 8);
  }
  return 1;
}

std::string describe_threads() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    names.push_back(name);
  }
  std::string text = fmt::format("{} threads run in it after its preparation (", names.size());
  for (std::size_t i = 0; i < names.size(); ++i) text += (i ? ", " : "") + names[i];
  return text + ")";
}

// A throwaway fork: it runs the fork handlers of the libraries loaded here, which stop the
// threads of those that have them (OpenBLAS's), then exits at once.
void run_fork_handlers(const pool::TemplateHooks& hooks) {
  if (hooks.before_fork) hooks.before_fork();
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  if (hooks.after_fork_in_parent) hooks.after_fork_in_parent();
  if (pid > 0) (void)retry_eintr([&] { return ::waitpid(pid, nullptr, 0); });
}

// In the forked worker: its descriptors onto their numbers, nothing else open above them.
void place_fds(std::vector<UniqueFd>& fds, const std::vector<int>& targets) {
  std::vector<int> high;
  for (UniqueFd& fd : fds) high.push_back(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 64));
  int top = 2;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    (void)::dup2(high[i], targets[i]);  // dup2 clears close-on-exec on the target
    top = std::max(top, targets[i]);
  }
  for (int fd : high) ::close(fd);
  for (UniqueFd& fd : fds) (void)fd.release();  // among those closed below, or dup2'd over
  if (::syscall(SYS_close_range, top + 1, ~0U, 0) != 0) {
    for (int fd = top + 1; fd < 4096; ++fd) ::close(fd);
  }
}

pid_t clone_as_sibling() {
  // fork() whose child is the template's parent's child. No stack of its own (0): the child
  // goes on from here on a copy of this one's, as with fork.
  return static_cast<pid_t>(::syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0));
}

}  // namespace

std::optional<Child> fork_from_template(const SpawnSpec& spec) {
  if (spec.argv.size() < 3) return std::nullopt;
  return Templates::of_this_process().fork(spec);
}

}  // namespace kiln::internal

namespace kiln::pool {

bool prepare_template(const std::vector<std::string>& command,
                      const std::vector<std::string>& names) {
  if (command.empty()) throw InvalidArgument("prepare_template: the command is empty");
  return internal::Templates::of_this_process().prepare(command, names);
}

bool wait_for_template(const std::vector<std::string>& command, std::chrono::milliseconds limit,
                       bool only_if_preparing) {
  return internal::Templates::of_this_process().wait(command, limit, only_if_preparing);
}

TemplateStats template_stats() { return internal::Templates::of_this_process().stats(); }

namespace {

// One fork request, answered; returns the worker in the child that was forked.
std::optional<ForkedWorker> serve_fork(int control, const std::string& request,
                                       std::vector<internal::UniqueFd>& fds,
                                       const std::vector<std::string>& args, pid_t parent,
                                       const TemplateHooks& hooks) {
  std::vector<std::string> lines = internal::split_lines(request);
  std::vector<int> targets;
  std::size_t i = 1;
  for (; i < lines.size() && !lines[i].empty(); ++i) targets.push_back(std::atoi(lines[i].c_str()));
  std::vector<std::string> environment(lines.begin() + static_cast<long>(std::min(i + 1, lines.size())),
                                       lines.end());
  if (targets.size() != fds.size()) {
    (void)internal::send_message(control, "error\nthe request's descriptors do not match");
    return std::nullopt;
  }
  if (internal::thread_count() > 1) {
    (void)internal::send_message(control, "error\n" + internal::describe_threads());
    return std::nullopt;
  }
  if (hooks.before_fork) hooks.before_fork();
  pid_t pid = internal::clone_as_sibling();
  if (pid == 0) {
    if (hooks.after_fork_in_child) hooks.after_fork_in_child();
    (void)::setpgid(0, 0);
    internal::place_fds(fds, targets);
    ::clearenv();
    for (const std::string& entry : environment) {
      std::size_t eq = entry.find('=');
      if (eq != std::string::npos) ::setenv(entry.substr(0, eq).c_str(), entry.c_str() + eq + 1, 1);
    }
    ForkedWorker worker{std::vector<std::string>(args.begin(), args.end() - 2), environment};
    worker.args.insert(worker.args.end(), {internal::kWorkerFlag, std::to_string(parent)});
    return worker;
  }
  int error = errno;
  if (hooks.after_fork_in_parent) hooks.after_fork_in_parent();
  fds.clear();
  (void)internal::send_message(
      control, pid > 0 ? fmt::format("pid\n{}", pid) : fmt::format("error\nclone: {}", std::strerror(error)));
  return std::nullopt;
}

// A "template" request: forks a successor of this template, which takes the descriptor sent as
// its control socket. True in the successor.
bool fork_successor(int control, std::vector<internal::UniqueFd>& fds, pid_t parent,
                    const TemplateHooks& hooks) {
  if (fds.size() != 1 || internal::thread_count() > 1) {
    (void)internal::send_message(control, "error\ncannot fork a successor here");
    return false;
  }
  if (hooks.before_fork) hooks.before_fork();
  pid_t pid = internal::clone_as_sibling();
  if (pid == 0) {
    if (hooks.after_fork_in_child) hooks.after_fork_in_child();
    (void)::setpgid(0, 0);
    (void)::dup2(fds[0].get(), control);  // dup2 clears close-on-exec: set again below
    (void)::fcntl(control, F_SETFD, FD_CLOEXEC);
    (void)fds[0].release();
    if (::syscall(SYS_close_range, control + 1, ~0U, 0) != 0) {
      for (int fd = control + 1; fd < 4096; ++fd) ::close(fd);
    }
    (void)::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(1);
    return true;
  }
  int error = errno;
  if (hooks.after_fork_in_parent) hooks.after_fork_in_parent();
  fds.clear();
  (void)internal::send_message(control, pid > 0 ? fmt::format("pid\n{}", pid)
                                                : fmt::format("error\nclone: {}", std::strerror(error)));
  return false;
}

// One template's life: prepares, then forks what it is asked to. Returns the worker in a forked
// worker, true in a forked successor (which then lives a life of its own), false at the end.
std::variant<bool, ForkedWorker> serve_one_template(const std::vector<std::string>& args,
                                                    pid_t parent, const TemplateHooks& hooks) {
  int control = internal::kTemplateFd;
  std::optional<std::string> prepare = internal::receive_message(control);
  if (!prepare) return false;
  std::vector<std::string> names = internal::split_lines(*prepare);
  names.erase(names.begin());
  std::vector<std::string> failed = hooks.prepare ? hooks.prepare(names) : std::vector<std::string>{};
  if (internal::thread_count() > 1) internal::run_fork_handlers(hooks);
  if (internal::thread_count() > 1) {
    (void)internal::send_message(control, "unsafe\n" + internal::describe_threads());
    return false;
  }
  if (!internal::send_message(control, internal::join_lines("ready", failed))) return false;
  for (;;) {
    std::vector<internal::UniqueFd> fds;
    std::optional<std::string> request = internal::receive_message(control, &fds);
    if (!request) return false;  // the parent is gone, or has no more use for this template
    if (*request == "template") {
      if (fork_successor(control, fds, parent, hooks)) return true;
    } else if (request->starts_with("fork")) {
      if (auto worker = serve_fork(control, *request, fds, args, parent, hooks)) return *worker;
    }
  }
}

}  // namespace

std::variant<int, ForkedWorker> serve_template(const std::vector<std::string>& args,
                                               const TemplateHooks& hooks) {
  if (args.size() < 2 || args[args.size() - 2] != internal::kTemplateFlag) return 2;
  pid_t parent = static_cast<pid_t>(std::atol(args.back().c_str()));
  (void)::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) return 1;
  (void)::fcntl(internal::kTemplateFd, F_SETFD, FD_CLOEXEC);
  for (;;) {
    std::variant<bool, ForkedWorker> served = serve_one_template(args, parent, hooks);
    if (auto* worker = std::get_if<ForkedWorker>(&served)) return std::move(*worker);
    if (!std::get<bool>(served)) return 0;
  }
}

}  // namespace kiln::pool
