// The worker side of the pool: the task registry and the serve loop a re-executed program runs.
#include <cxxabi.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <string_view>
#include <thread>
#include <typeinfo>

#include <fmt/format.h>

#include "begin_board.h"
#include "internal/fd.h"
#include "kiln/error.h"
#include "kiln/pool.h"
#include "kiln/settings.h"
#include "outbox.h"
#include "protocol.h"
#include "tool_failure_codec.h"

namespace kiln::pool {
namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, TaskFn, std::less<>> tasks;
  std::map<std::string, ServiceFn, std::less<>> services;
};

// Whether this program called serve_if_worker(): only then can it be re-executed as a service.
std::atomic<bool> serves{false};

Registry& registry() {
  static Registry* r = new Registry;  // NOLINT(cppcoreguidelines-owning-memory): never destroyed
  return *r;
}

std::string type_name_of(const std::exception& e) {
  const char* mangled = typeid(e).name();
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string name = status == 0 && demangled != nullptr ? demangled : mangled;
  std::free(demangled);  // NOLINT(cppcoreguidelines-no-malloc): __cxa_demangle's contract
  return name;
}

// Blocking writes without a SIGPIPE guard: a parent that closed its end has killed this worker
// or is gone, and SIGPIPE (or EPIPE, where the program ignores it) ends the worker either way.
bool write_all(int fd, internal::Outbox& out) {
  while (!out.empty()) {
    if (out.write_some(fd, false) <= 0) return false;
  }
  return true;
}

// This process, once it serves as a worker (0 before): a process a task forks is a copy of the
// worker, with its descriptors, but must never speak for it.
std::atomic<pid_t> worker_pid{0};
// One frame at a time on the answer pipe: the serve loop's answers, and an exit notice that
// another thread of a task may send (task_ends_process).
std::mutex answer_mutex;

bool write_answer(internal::Outbox& out) {
  std::lock_guard lock(answer_mutex);
  return write_all(internal::kResponseFd, out);
}

// Answers one request: runs its task and writes the answer. Throws ProtocolError for a request
// that is not [task name, args] (the parent is broken, and the worker exits). Returns false when
// the parent is gone.
bool answer(Value request, internal::Outbox& out) {
  if (!request.is_array() || request.size() != 2 || !request[0].is_string()) {
    throw ProtocolError("worker protocol: a request that is not [task, args]");
  }
  const std::string& task = request[0].get_ref<const std::string&>();
  TaskFn fn;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    auto it = r.tasks.find(task);
    if (it != r.tasks.end()) fn = it->second;
  }
  if (!fn) {
    out.append_error(
        "kiln::InvalidArgument",
        fmt::format("unknown task '{}': this program registers no task by that name", task));
    return write_answer(out);
  }
  Value result;
  try {
    result = fn(std::move(request[1]));
    try {
      out.append_answer(result, true);    // written below, while `result` lives
    } catch (const InvalidArgument& e) {  // past the frame limit: the call fails, the worker stays
      out.append_error("kiln::InvalidArgument",
                       fmt::format("the result of task '{}' cannot be sent: {}", task, e.what()));
    }
  } catch (const TaskError& e) {
    try {
      out.append_error(e.type_name(), e.message(), e.details());
    } catch (const InvalidArgument&) {  // details past the frame limit: the rest still goes
      out.append_error(e.type_name(), e.message());
    }
  } catch (const ToolFailed& e) {  // its fields go along: the caller throws it again
    try {
      out.append_error(internal::kToolFailedType, e.what(), internal::encode_failure(e.failure()));
    } catch (const InvalidArgument&) {  // past the frame limit: a TaskError with the message
      out.append_error(internal::kToolFailedType, e.what());
    }
  } catch (const std::exception& e) {
    out.append_error(type_name_of(e), e.what());
  } catch (...) {
    out.append_error("unknown", "the task threw something that is not a std::exception");
  }
  if (::getpid() != worker_pid.load()) std::_Exit(0);  // a copy the task forked returned here
  return write_answer(out);
}

// Exits the worker as soon as the parent's end of the request pipe is gone, even while a task
// runs: the pipe hang-up check that backs up PR_SET_PDEATHSIG.
void watch_for_hangup() {
  std::thread([] {
    pollfd p{internal::kRequestFd, 0, 0};  // no events: only POLLHUP/POLLERR are reported
    while (::poll(&p, 1, -1) == -1 && errno == EINTR) {
    }
    std::_Exit(0);
  }).detach();
}

// Large values would make glibc map and unmap memory on every call, and the page faults cost
// more than the copying: a worker keeps what it freed while it is busy (its heap is its own; the
// worker never returns to the program's main), and gives memory back once idle for kIdleAfter.
constexpr size_t kKeptCapacity = size_t{256} * 1024;
constexpr int kIdleAfterMs = 50;

void keep_freed_memory_while_busy() {
  (void)::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  (void)::mallopt(M_TRIM_THRESHOLD, 1 << 30);
}

// Waits for the next request while holding large buffers; if none comes soon, frees them.
void release_when_idle(internal::FrameDecoder& decoder, internal::Outbox& out) {
  if (decoder.capacity() <= kKeptCapacity && out.capacity() <= kKeptCapacity) return;
  pollfd p{internal::kRequestFd, POLLIN, 0};
  if (internal::retry_eintr([&] { return ::poll(&p, 1, kIdleAfterMs); }) != 0) return;
  decoder.release();
  out.clear();
  (void)::malloc_trim(0);
}

// The worker's board (task_begins), and the number of the request being served (from 1).
internal::BeginBoard board;
std::atomic<std::uint64_t> current_request{0};

int serve() {
  internal::FrameDecoder decoder;
  internal::Outbox out;
  std::uint64_t requests = 0;
  bool spin = false;
  for (;;) {
    // Each answer goes out as soon as its task is done, even when more requests are buffered:
    // the parent's deadline for the next call starts when it reads this answer.
    bool answered = false;
    while (std::optional<Value> request = decoder.next()) {
      current_request.store(++requests, std::memory_order_relaxed);
      if (!answer(std::move(*request), out)) return 1;
      answered = true;
    }
    auto idle_since = std::chrono::steady_clock::now();
    if (answered && spin)
      (void)internal::spin_until_readable(internal::kRequestFd, internal::kSpin);
    release_when_idle(decoder, out);
    ssize_t n = decoder.read_from(internal::kRequestFd);
    spin = std::chrono::steady_clock::now() - idle_since < internal::kSpin;  // a tight loop
    if (n == 0) return 0;  // the parent closed the pipe: done
    if (n < 0) return 1;
  }
}

// A program executed as /proc/self/exe (a worker or a service: service_command) is named "exe"
// by the kernel; it takes back its file's name, which ps, top and pgrep show.
void restore_name() {
  char name[16] = {};
  if (::prctl(PR_GET_NAME, name) != 0 || std::strcmp(name, "exe") != 0) return;
  std::error_code ec;
  std::string file = std::filesystem::read_symlink("/proc/self/exe", ec).filename().string();
  constexpr std::string_view kDeleted = " (deleted)";
  if (file.ends_with(kDeleted)) file.resize(file.size() - kDeleted.size());
  if (!file.empty()) (void)::prctl(PR_SET_NAME, file.substr(0, 15).c_str());
}

// The life of a worker whose parent is process `parent_pid`: returns its exit status.
// `own_heap`: the program is a worker and nothing else (a re-executed C++ program), so its
// malloc may be tuned for the pool's buffers; a Python worker's heap is Python's.
int serve_as_worker(const char* parent_pid, bool own_heap) {
  pid_t parent = static_cast<pid_t>(std::atol(parent_pid));
  worker_pid.store(::getpid());
  (void)::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) return 1;  // the parent died before the line above took effect
  // Whatever a task starts must not inherit the protocol's descriptors.
  (void)::fcntl(internal::kRequestFd, F_SETFD, FD_CLOEXEC);
  (void)::fcntl(internal::kResponseFd, F_SETFD, FD_CLOEXEC);
  board = internal::BeginBoard::adopt(internal::kBoardFd);
  // Tell the parent this program really is a worker, loaded and ready: its deadlines start now.
  internal::Outbox ready;
  ready.append_answer("ready", false);
  if (!write_answer(ready)) return 1;
  watch_for_hangup();  // after "ready": starting a thread need not delay it
  if (own_heap) keep_freed_memory_while_busy();
  try {
    return serve();
  } catch (const std::exception&) {
    return 1;  // a garbage request: the parent sees the worker exit
  }
}

}  // namespace

bool register_task(const std::string& name, TaskFn fn) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.tasks[name] = std::move(fn);
  return true;
}

bool register_service(const std::string& name, ServiceFn fn) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  r.services[name] = fn;
  return true;
}

std::optional<std::vector<std::string>> service_command(const std::string& name,
                                                        const std::vector<std::string>& args) {
  std::string program;
  if (serves.load()) {
    // The file this process runs, even when it was deleted or replaced since (set_program() in
    // worker_process.cc says why its path would not do).
    program = "/proc/self/exe";
  } else if (std::optional<std::string> named = settings::text("KILN_SERVICE_PROGRAM")) {
    program = *named;
  }
  if (program.empty()) return std::nullopt;
  std::vector<std::string> argv = {program, internal::kServiceFlag, name};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

void serve_if_worker(int argc, char** argv) {
  serves.store(true);
  bool serving = argc >= 3 && (std::strcmp(argv[1], internal::kServiceFlag) == 0 ||
                               std::strcmp(argv[1], internal::kWorkerFlag) == 0);
  if (serving) restore_name();
  if (argc >= 3 && std::strcmp(argv[1], internal::kServiceFlag) == 0) {
    ServiceFn fn = nullptr;
    {
      Registry& r = registry();
      std::lock_guard lock(r.mutex);
      auto it = r.services.find(argv[2]);
      if (it != r.services.end()) fn = it->second;
    }
    if (fn == nullptr) std::_Exit(2);  // a program of another build: it has no such service
    fn(std::vector<std::string>(argv + 3, argv + argc));
    std::_Exit(1);  // services do not return
  }
  if (argc < 3 || std::strcmp(argv[1], internal::kWorkerFlag) != 0) return;
  std::exit(serve_as_worker(argv[2], true));
}

std::optional<int> serve_worker(const std::vector<std::string>& args) {
  if (args.size() < 2 || args[args.size() - 2] != internal::kWorkerFlag) return std::nullopt;
  return serve_as_worker(args.back().c_str(), false);
}

void task_begins() noexcept { board.post(current_request.load(std::memory_order_relaxed)); }

void task_ends_process(int code) noexcept {
  if (worker_pid.load() == 0 || ::getpid() != worker_pid.load()) return;
  // Taken for good: nothing may follow the notice (the caller ends the process).
  answer_mutex.lock();  // NOLINT(clang-analyzer-cplusplus.*): never unlocked, on purpose
  try {
    internal::Outbox notice;
    notice.append_exit_notice(code & 0xff);  // the status the parent would see
    (void)write_all(internal::kResponseFd, notice);
  } catch (...) {  // out of memory: the parent will see the process end instead
  }
}

}  // namespace kiln::pool
