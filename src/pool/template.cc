// Warm worker templates (pool.h, prepare_template), both sides.
//
// The control socket between the parent and a template is a SOCK_SEQPACKET pair, one message
// per request or answer, text lines:
//   parent:   "prepare\n<name>\n..."                  (once, first)
//   template: "ready\n<name that failed>\n..."  or  "unsafe\n<why>"
//   parent:   "fork\n<fd number>...\n\n<NAME=value>\n..." with the worker's descriptors attached
//             (SCM_RIGHTS), in the order of the numbers they get in the worker
//   template: "pid\n<pid>"  or  "error\n<why>"  or  "refused\n<why>" (this worker cannot be
//             forked here, but the template stays usable)
// A template forks with clone(CLONE_PARENT): the worker is the parent's child, not the
// template's, so that the parent waits for it, reads its exit status and kills its group as it
// does for a worker it spawned. A process may only fork safely while it has a single thread:
// a template that has more after its preparation first runs the fork handlers of its libraries
// once (a throwaway fork(): OpenBLAS, which numpy starts, stops its threads there), and says
// "unsafe" when threads remain.
//
// Descriptors: a template holds the numbers of a worker's protocol (protocol.h) with /dev/null
// from its start, so that what its imports open lands above them, as in a started worker; a
// forked worker gets its descriptors on those numbers and keeps every other one the template
// holds (a module's log file stays open under its Python object). A template that lost one of
// those numbers to its imports says "unsafe".
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
#include "internal/sha256.h"
#include "kiln/error.h"
#include "kiln/pool.h"
#include "kiln/settings.h"
#include "protocol.h"
#include "spawner.h"
#include "template_messages.h"
#include "template_scope.h"
#include "template_service.h"

namespace kiln::internal {
namespace {

// How long a ready template may take to answer a fork.
constexpr std::chrono::seconds kForkAnswer{10};
// Templates kept per process (one per program, directory and environment).
constexpr std::size_t kMaxTemplates = 4;
// A key whose templates died this many times before they were ready gets no more.
constexpr int kMaxLosses = 3;
// Left out of a template's key: set anew for every test by pytest, or by the shell for every
// command, and read by no import. (A worker still gets them: its environment is its caller's.)
constexpr std::string_view kVolatile[] = {
    "PYTEST_CURRENT_TEST=", "_=", "OLDPWD=", "PWD=", "SHLVL="};
// How long a template service may take to answer a hello.
constexpr std::chrono::seconds kHelloAnswer{5};

// ---- The parent's side ------------------------------------------------------------------------

bool debug() {
  static const bool on = settings::flag("KILN_POOL_DEBUG");
  return on;
}

bool services() { return settings::flag("KILN_POOL_TEMPLATE_SERVICE"); }

// The umask, read without changing it (umask(2) would, for every thread, for a moment).
std::optional<mode_t> current_umask() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.starts_with("Umask:")) {
      return static_cast<mode_t>(std::strtoul(line.c_str() + 6, nullptr, 8));
    }
  }
  return std::nullopt;
}

// One template process, as the parent sees it.
class TemplateProcess {
 public:
  // Starts a template; with `service` ("service:<digest>:<socket>"), one that detaches and
  // outlives this process (template_service.h).
  TemplateProcess(const std::vector<std::string>& command, std::vector<std::string> environment,
                  std::vector<std::string> names, const std::string& service = {})
      : names_(std::move(names)), service_(!service.empty()) {
    UniqueFd theirs = open_control();
    SpawnSpec spec;
    spec.environment = std::move(environment);
    spec.executable = resolve_executable(command.at(0), path_of(spec.environment), {});
    spec.argv = command;
    spec.argv.insert(spec.argv.end(),
                     {kTemplateFlag, service_ ? service : std::to_string(::getpid())});
    UniqueFd devnull(::open("/dev/null", O_WRONLY | O_CLOEXEC));
    spec.fds = {{theirs.get(), kTemplateFd}, {devnull.get(), 1}, {2, 2}};
    child_ = Spawner::spawn(spec);
    if (!send_message(control_.get(), join_lines("prepare", names_))) {
      failure_ = "the template exited before it was told what to prepare";
    }
    if (service_) {  // what was started exits as soon as the service it forked has detached
      child_->wait_until(Clock::now() + kForkAnswer);
      child_.reset();
    }
  }
  // A connection to the template service at `socket` for the key with `digest`: ready() when
  // it welcomed this process, else failure() says why not.
  TemplateProcess(const std::filesystem::path& socket, const std::string& digest) : service_(true) {
    control_ = connect_to_service(socket, failure_);
    if (!control_) return;
    std::optional<std::string> answer;
    if (send_message(control_.get(), "hello\n" + digest) &&
        wait_readable(control_.get(), kHelloAnswer)) {
      answer = receive_message(control_.get());
    }
    std::vector<std::string> lines = split_lines(answer.value_or("no answer"));
    if (lines[0] != "welcome") {
      failure_ = fmt::format("the template service at {} did not serve this process ({}): {}",
                             socket.string(), lines[0], lines.size() > 1 ? lines[1] : lines[0]);
      return;
    }
    auto gap = std::find(lines.begin() + 1, lines.end(), std::string());
    names_.assign(lines.begin() + 1, gap);
    if (gap != lines.end()) failed_names_.assign(gap + 1, lines.end());
    std::erase(failed_names_, std::string());
    ready_ = true;
  }
  // A successor of `ready` (which stays): forked from it, so that it has everything `ready`
  // imported already and prepares only what `names` adds.
  TemplateProcess(TemplateProcess& ready, std::vector<std::string> names)
      : names_(std::move(names)), service_(ready.service_) {
    UniqueFd theirs = open_control();
    std::optional<pid_t> pid = ready.request_fork("template", {theirs.get()});
    if (!pid) throw SystemError(ready.failure(), 0);
    if (!service_) child_ = Child::adopt(*pid);  // a service's successor is nobody's child here
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
  // It outlives this process (template_service.h).
  bool service() const noexcept { return service_; }
  // It prepared, but cannot fork safely (threads run in it): so would any other with its names.
  bool unsafe() const noexcept { return unsafe_; }
  // Set once the template is of no more use, saying why.
  const std::string& failure() const noexcept { return failure_; }

  // Reads the template's "ready" if it has come (waiting up to `limit`).
  void poll(std::chrono::milliseconds limit = std::chrono::milliseconds(0)) {
    if (ready_ || !failure_.empty() || !wait_readable(control_.get(), limit)) return;
    std::optional<std::string> answer = receive_message(control_.get());
    if (!answer) {
      failure_ = fmt::format("{} {} while it prepared", who(), ended());
      return;
    }
    std::vector<std::string> lines = split_lines(*answer);
    if (lines[0] == "ready") {
      ready_ = true;
      failed_names_.assign(lines.begin() + 1, lines.end());
      std::erase(failed_names_, std::string());
    } else {
      unsafe_ = true;
      failure_ =
          fmt::format("the template cannot fork safely: {}", lines.size() > 1 ? lines[1] : *answer);
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
    // The directory and umask the worker starts with, as a spawned one would: this process's now.
    UniqueFd cwd(::open(".", O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (cwd) {
      request += "\ncwd";
      fds.push_back(cwd.get());
    }
    if (std::optional<mode_t> mask = current_umask()) request += fmt::format("\numask={:o}", *mask);
    request += '\n';
    for (const std::string& entry : spec.environment) request += '\n' + entry;
    if (request.size() > kMaxTemplateMessage || fds.size() > kMaxTemplateFds) {
      reason_ = "the worker's environment is too large to send to its template";
      return std::nullopt;  // this worker only: the template stays
    }
    UniqueFd status;
    std::optional<pid_t> pid = request_fork(request, fds, &status);
    if (!pid) return std::nullopt;
    if (!service_) return Child::adopt(*pid);
    if (!status) {
      failure_ = "the template service sent no status socket with its worker";
      ::kill(-*pid, SIGKILL);
      return std::nullopt;
    }
    return Child::foreign(*pid, std::move(status));
  }

  // Sends a fork request; the forked process's pid, or std::nullopt with failure() set.
  // `status`: where a service's answer puts the worker's status socket.
  std::optional<pid_t> request_fork(const std::string& request, const std::vector<int>& fds,
                                    UniqueFd* status = nullptr) {
    if (!send_message(control_.get(), request, fds)) {
      failure_ = fmt::format("{} {}", who(), ended());
      return std::nullopt;
    }
    std::optional<std::string> answer;
    std::vector<UniqueFd> attached;
    if (wait_readable(control_.get(), kForkAnswer)) {
      answer = receive_message(control_.get(), &attached);
    }
    if (!answer) {
      failure_ = fmt::format("{} did not answer a fork within {} s: {}", who(), kForkAnswer.count(),
                             ended());
      return std::nullopt;
    }
    std::vector<std::string> lines = split_lines(*answer);
    if (lines[0] == "pid" && lines.size() == 2) {
      pid_t pid = static_cast<pid_t>(std::atol(lines[1].c_str()));
      if (status != nullptr && attached.size() == 1) *status = std::move(attached[0]);
      if (pid > 0) return pid;
    }
    if (lines[0] == "stale" && lines.size() == 2) {
      failure_ = fmt::format("the template service is stale: {}", lines[1]);
      return std::nullopt;
    }
    if (lines[0] == "refused" && lines.size() == 2) {
      reason_ = fmt::format("the template could not fork this worker: {}", lines[1]);
      return std::nullopt;
    }
    failure_ =
        fmt::format("the template could not fork: {}", lines.size() > 1 ? lines[1] : *answer);
    return std::nullopt;
  }

  // Why the last fork() gave nothing while the template stays usable.
  std::string take_reason() { return std::exchange(reason_, {}); }

 private:
  // Makes the control socket: keeps this end, returns the template's.
  UniqueFd open_control() {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
      throw SystemError("socketpair for a worker template", errno);
    }
    control_.reset(pair[0]);
    return UniqueFd(pair[1]);
  }

  std::string who() const {
    return child_ ? fmt::format("the template (pid {})", child_->pid()) : "the template service";
  }

  std::string ended() {
    if (!child_) return service_ ? "hung up" : "ended";
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
  bool service_ = false;
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

  bool prepare(const std::vector<std::string>& command, const std::vector<std::string>& names,
               bool unless_elsewhere) {
    std::vector<std::string> environment = make_environment({}, false);
    std::lock_guard lock(mutex_);
    std::string key = key_of(command, environment);
    Entry& entry = entry_for(key);
    entry.command = command;
    entry.key = std::move(key);
    for (const std::string& name : names) {
      if (std::find(entry.wanted.begin(), entry.wanted.end(), name) == entry.wanted.end()) {
        entry.wanted.push_back(name);
      }
    }
    return refresh(entry, std::move(environment), unless_elsewhere);
  }

  bool wait(const std::vector<std::string>& command, std::chrono::milliseconds limit,
            bool only_if_preparing, const std::vector<std::string>& needed) {
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
        // The ready one serves while its successor prepares what others need.
        if (entry.ready && !needed.empty() && has_all(entry, *entry.ready, needed)) return true;
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
    std::string key;
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

  // Whether `process` has each of `names` that is wanted (a name never asked for, or one that
  // could not be imported, is no reason to wait).
  static bool has_all(const Entry& entry, const TemplateProcess& process,
                      const std::vector<std::string>& names) {
    const auto& has = process.names();
    return std::all_of(names.begin(), names.end(), [&](const std::string& name) {
      bool wanted = std::find(entry.wanted.begin(), entry.wanted.end(), name) != entry.wanted.end();
      return !wanted || std::find(has.begin(), has.end(), name) != has.end();
    });
  }

  // Starts a template with everything wanted, unless one has it or is preparing.
  bool refresh(Entry& entry, std::vector<std::string> environment, bool unless_elsewhere = false) {
    promote(entry);
    if (entry.next || entry.losses >= kMaxLosses) return false;
    if (entry.ready && !lacks(entry, *entry.ready)) return false;
    if (entry.ready && start_successor(entry)) return true;
    std::string service;
    if (!entry.ready && services()) {
      if (join_service(entry, service)) return true;
      if (entry.wanted.empty()) return false;  // only asked to join one that was there
      if (unless_elsewhere && !service.empty() &&
          preparing_elsewhere(template_service_socket(sha256_hex(entry.key)))) {
        note("another process prepares this template service");
        return false;
      }
    }
    try {
      entry.next = std::make_unique<TemplateProcess>(entry.command, std::move(environment),
                                                     entry.wanted, service);
    } catch (const std::exception& error) {
      entry.last_failure = fmt::format("the template could not start: {}", error.what());
      note(entry.last_failure);
      ++entry.losses;
      return false;
    }
    ++stats_.started;
    return true;
  }

  // Joins the template service of entry's key when one is there and fresh; otherwise `service`
  // becomes the argument that starts one (empty when services cannot be used here).
  bool join_service(Entry& entry, std::string& service) {
    std::string digest = sha256_hex(entry.key);
    std::filesystem::path socket;
    try {
      socket = template_service_socket(digest);
    } catch (const std::exception& error) {
      note(fmt::format("no template service: {}", error.what()));
      return false;
    }
    service = fmt::format("{}{}:{}", kServiceArgument, digest, socket.string());
    auto joined = std::make_unique<TemplateProcess>(socket, digest);
    if (!joined->ready()) {
      if (joined->failure().find("(stale)") != std::string::npos) {
        ++stats_.stale;
        stats_.last_stale = joined->failure();
      }
      note(joined->failure());
      return false;
    }
    entry.ready = std::move(joined);
    ++stats_.joined;
    for (const std::string& name : entry.ready->failed_names()) std::erase(entry.wanted, name);
    for (const std::string& name : entry.ready->names()) {
      if (std::find(entry.wanted.begin(), entry.wanted.end(), name) == entry.wanted.end()) {
        entry.wanted.push_back(name);
      }
    }
    if (lacks(entry, *entry.ready)) start_successor(entry);
    return true;
  }

  // Forks the ready template's successor, which imports what the ready one lacks; false (with
  // a note) when it cannot be forked.
  bool start_successor(Entry& entry) {
    try {
      entry.next = std::make_unique<TemplateProcess>(*entry.ready, entry.wanted);
    } catch (const std::exception& error) {
      note(fmt::format("a successor could not be forked ({})", error.what()));
      return false;
    }
    ++stats_.started;
    return true;
  }

  // A template that finished preparing replaces the ready one; one that failed is dropped. One
  // that lacks names wanted while it prepared gets a successor at once: nobody may ask again.
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
      if (lacks(entry, *entry.ready)) start_successor(entry);
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
    note(fmt::format("a worker starts afresh: {}", reason));
    return std::nullopt;
  }

  static void note(const std::string& reason) {
    if (debug()) (void)std::fprintf(stderr, "kiln pool: worker template: %s\n", reason.c_str());
  }

  const pid_t owner_;
  std::mutex mutex_;
  std::map<std::string, Entry> entries_;
  std::uint64_t clock_ = 0;
  pool::TemplateStats stats_;
};

}  // namespace

std::optional<Child> fork_from_template(const SpawnSpec& spec) {
  if (spec.argv.size() < 3) return std::nullopt;
  return Templates::of_this_process().fork(spec);
}

}  // namespace kiln::internal

namespace kiln::pool {

bool prepare_template(const std::vector<std::string>& command,
                      const std::vector<std::string>& names, bool unless_elsewhere) {
  if (command.empty()) throw InvalidArgument("prepare_template: the command is empty");
  return internal::Templates::of_this_process().prepare(command, names, unless_elsewhere);
}

bool wait_for_template(const std::vector<std::string>& command, std::chrono::milliseconds limit,
                       bool only_if_preparing, const std::vector<std::string>& needed) {
  return internal::Templates::of_this_process().wait(command, limit, only_if_preparing, needed);
}

TemplateStats template_stats() { return internal::Templates::of_this_process().stats(); }

}  // namespace kiln::pool
