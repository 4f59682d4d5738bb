// The parent side of one pool worker (the seed's PopenWorker).
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "internal/fd.h"
#include "internal/spawn.h"
#include "kiln/error.h"
#include "kiln/pool.h"
#include "kiln/process.h"
#include "pool/frame.h"
#include "pool/protocol.h"
#include "pool/worker_process.h"

namespace kiln::internal {
namespace {

// Starts every worker from one thread that lives as long as the process: PR_SET_PDEATHSIG fires
// when the thread that started a child exits, so a worker started from a short-lived thread
// would otherwise be killed with that thread.
class Spawner {
 public:
  static Child spawn(const SpawnSpec& spec) {
    static Spawner* instance =
        new Spawner;  // NOLINT(cppcoreguidelines-owning-memory): lives forever
    std::packaged_task<Child()> job([&spec] { return Child::spawn(spec); });
    std::future<Child> result = job.get_future();
    {
      std::lock_guard lock(instance->mutex_);
      instance->jobs_.push_back(std::move(job));
    }
    instance->wake_.notify_one();
    return result.get();
  }

 private:
  Spawner() {
    std::thread([this] {
      for (;;) {
        std::unique_lock lock(mutex_);
        wake_.wait(lock, [this] { return !jobs_.empty(); });
        std::packaged_task<Child()> job = std::move(jobs_.front());
        jobs_.pop_front();
        lock.unlock();
        job();
      }
    }).detach();
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<Child()>> jobs_;
};

constexpr std::chrono::seconds kStartTimeout{60};

std::string describe_death(int wait_status) {
  if (WIFSIGNALED(wait_status)) return "killed by signal " + signal_name(WTERMSIG(wait_status));
  if (WIFEXITED(wait_status)) return fmt::format("exited with code {}", WEXITSTATUS(wait_status));
  return "ended";
}

UniqueFd open_output(const pool::WorkerOptions& options) {
  if (options.output == pool::Output::inherit) return UniqueFd();
  const char* path =
      options.output == pool::Output::discard ? "/dev/null" : options.output_file.c_str();
  int flags = options.output == pool::Output::discard ? O_WRONLY : O_WRONLY | O_CREAT | O_APPEND;
  UniqueFd fd(::open(path, flags | O_CLOEXEC, 0644));
  if (!fd) throw SystemError(fmt::format("open worker output '{}'", path), errno);
  return fd;
}

}  // namespace

void WorkerProcess::start() {
  Pipe to_worker = make_pipe();
  Pipe from_worker = make_pipe();
  UniqueFd output = open_output(options_);
  SpawnSpec spec;
  spec.executable = std::filesystem::read_symlink("/proc/self/exe");
  spec.argv = {spec.executable.string(), kWorkerFlag, std::to_string(::getpid())};
  spec.environment = make_environment({}, false);
  spec.fds = {{to_worker.read.get(), kRequestFd}, {from_worker.write.get(), kResponseFd}};
  spec.fds.emplace_back(output ? output.get() : 1, 1);
  spec.fds.emplace_back(output ? output.get() : 2, 2);
  child_ = Spawner::spawn(spec);
  requests_ = std::move(to_worker.write);
  responses_ = std::move(from_worker.read);
  set_nonblocking(responses_.get());
  decoder_ = FrameDecoder();
  uses_ = 0;
  // Wait for the worker's "ready": loading a large program can take longer than a task's
  // deadline, and a program that never calls serve_if_worker() must be a clear error.
  task_ = "(starting the worker: does main() call kiln::pool::serve_if_worker() first?)";
  deadline_ = Clock::now() + kStartTimeout;
  busy_ = true;
  wait();
  if (!options_.initializer.empty()) {
    task_ = options_.initializer;
    deadline_.reset();
    busy_ = true;
    write_request("init", options_.initializer, options_.initializer_args);
    wait();
  }
}

void WorkerProcess::stop() noexcept {
  if (child_) child_->terminate_group(std::chrono::milliseconds(0));
  child_.reset();
  requests_.reset();
  responses_.reset();
  busy_ = false;
}

void WorkerProcess::write_request(const std::string& op, std::string_view task, const Value& args) {
  std::string frame = encode_frame(Value{{"op", op}, {"task", task}, {"args", args}});
  size_t done = 0;
  while (done < frame.size()) {
    long n = write_without_sigpipe(requests_.get(), frame.data() + done, frame.size() - done);
    if (n <= 0) break;  // the worker is gone; reading the response reports how it ended
    done += static_cast<size_t>(n);
  }
}

void WorkerProcess::begin_call(std::string_view task, const Value& args,
                               std::optional<std::chrono::milliseconds> timeout) {
  bool worn_out = options_.max_uses > 0 && uses_ >= options_.max_uses;
  if (child_ && (worn_out || child_->has_exited())) stop();
  if (!child_) start();
  task_ = std::string(task);
  deadline_.reset();
  if (timeout) deadline_ = Clock::now() + *timeout;
  busy_ = true;
  ++uses_;
  write_request("call", task, args);
}

void WorkerProcess::died() {
  child_->reap();
  std::string how = describe_death(child_->wait_status());
  pid_t pid = child_->pid();
  std::string task = task_;
  stop();
  throw ChildProcessError(fmt::format("worker {} running task '{}' {}", pid, task, how));
}

std::optional<Value> WorkerProcess::take_response() {
  std::optional<Value> response;
  try {
    response = decoder_.next();
  } catch (const ProtocolError& e) {
    std::string task = task_;
    stop();
    throw ProtocolError(fmt::format("{} (task '{}'; the worker was killed)", e.what(), task));
  }
  if (!response) return std::nullopt;
  busy_ = false;
  if (response->contains("ok")) return std::move((*response)["ok"]);
  const Value& error = response->value("error", Value::object());
  throw TaskError(error.value("type", "unknown"), error.value("message", ""));
}

std::optional<Value> WorkerProcess::read_available() {
  if (std::optional<Value> done = take_response()) return done;
  char buffer[64 * 1024];
  ssize_t n = retry_eintr([&] { return ::read(responses_.get(), buffer, sizeof buffer); });
  if (n == -1 && (errno == EAGAIN || errno == EWOULDBLOCK)) return std::nullopt;
  if (n <= 0) died();
  decoder_.feed(buffer, static_cast<size_t>(n));
  return take_response();
}

void WorkerProcess::expire() {
  std::string task = task_;
  stop();
  throw TimeoutError(fmt::format("task '{}' timed out; its worker was killed", task));
}

Value WorkerProcess::wait() {
  for (;;) {
    if (std::optional<Value> done = take_response()) return std::move(*done);
    int wait_ms = -1;
    if (deadline_) {
      auto left = *deadline_ - Clock::now();
      if (left <= Clock::duration::zero()) expire();
      wait_ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(left).count());
    }
    pollfd p{responses_.get(), POLLIN, 0};
    int r = retry_eintr([&] { return ::poll(&p, 1, wait_ms); });
    if (r == -1) throw SystemError("poll", errno);
    if (r > 0) {
      if (std::optional<Value> done = read_available()) return std::move(*done);
    }
  }
}

}  // namespace kiln::internal

namespace kiln::pool {

struct Worker::State {
  explicit State(WorkerOptions options) : process(std::move(options)) {}
  internal::WorkerProcess process;
};

Worker::Worker(WorkerOptions options) : state_(std::make_unique<State>(std::move(options))) {}
Worker::~Worker() = default;
Worker::Worker(Worker&&) noexcept = default;
Worker& Worker::operator=(Worker&&) noexcept = default;

void Worker::send(std::string_view task, const Value& args,
                  std::optional<std::chrono::milliseconds> timeout) {
  state_->process.begin_call(task, args, timeout);
}

Value Worker::recv() {
  if (!state_->process.busy()) throw InvalidArgument("Worker::recv: no call was sent");
  return state_->process.wait();
}

Value Worker::call(std::string_view task, const Value& args,
                   std::optional<std::chrono::milliseconds> timeout) {
  send(task, args, timeout);
  return recv();
}

void Worker::kill() noexcept { state_->process.stop(); }

bool Worker::is_alive() {
  internal::Child* child = state_->process.child();
  return child != nullptr && !child->has_exited();
}

bool Worker::join(std::chrono::milliseconds timeout) {
  internal::Child* child = state_->process.child();
  if (child == nullptr) return true;
  bool exited = child->wait_exit_until(internal::Clock::now() + timeout);
  if (exited) state_->process.stop();
  return exited;
}

pid_t Worker::pid() const noexcept { return state_->process.pid(); }

}  // namespace kiln::pool
