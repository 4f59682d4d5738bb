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

namespace kiln::pool {
namespace {

using internal::Clock;
using internal::UniqueFd;

// Starts every worker from one thread that lives as long as the process: PR_SET_PDEATHSIG fires
// when the thread that started a child exits, so a worker started from a short-lived thread
// would otherwise be killed with that thread.
class Spawner {
 public:
  static internal::Child spawn(const internal::SpawnSpec& spec) {
    static Spawner* instance =
        new Spawner;  // NOLINT(cppcoreguidelines-owning-memory): lives forever
    std::packaged_task<internal::Child()> job([&spec] { return internal::Child::spawn(spec); });
    std::future<internal::Child> result = job.get_future();
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
        std::packaged_task<internal::Child()> job = std::move(jobs_.front());
        jobs_.pop_front();
        lock.unlock();
        job();
      }
    }).detach();
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::packaged_task<internal::Child()>> jobs_;
};

std::string describe_death(int wait_status) {
  if (WIFSIGNALED(wait_status)) return "killed by signal " + signal_name(WTERMSIG(wait_status));
  if (WIFEXITED(wait_status)) return fmt::format("exited with code {}", WEXITSTATUS(wait_status));
  return "ended";
}

UniqueFd open_output(const WorkerOptions& options) {
  if (options.output == Output::inherit) return UniqueFd();
  const char* path = options.output == Output::discard ? "/dev/null" : options.output_file.c_str();
  int flags = options.output == Output::discard ? O_WRONLY : O_WRONLY | O_CREAT | O_APPEND;
  UniqueFd fd(::open(path, flags | O_CLOEXEC, 0644));
  if (!fd) throw SystemError(fmt::format("open worker output '{}'", path), errno);
  return fd;
}

}  // namespace

struct Worker::State {
  WorkerOptions options;
  std::optional<internal::Child> child;
  UniqueFd requests;   // we write, the worker reads on its fd 3
  UniqueFd responses;  // the worker writes on its fd 4, we read
  internal::FrameDecoder decoder;
  int uses = 0;
  bool pending = false;
  std::string pending_task;
  std::optional<Clock::time_point> deadline;

  void start();
  void stop() noexcept;
  void write_request(const std::string& op, std::string_view task, const Value& args);
  Value read_response(std::string_view task);
  [[noreturn]] void died(std::string_view task);
};

void Worker::State::start() {
  internal::Pipe to_worker = internal::make_pipe();
  internal::Pipe from_worker = internal::make_pipe();
  UniqueFd output = open_output(options);
  internal::SpawnSpec spec;
  spec.executable = std::filesystem::read_symlink("/proc/self/exe");
  spec.argv = {spec.executable.string(), internal::kWorkerFlag, std::to_string(::getpid())};
  spec.environment = internal::make_environment({}, false);
  spec.fds = {{to_worker.read.get(), internal::kRequestFd},
              {from_worker.write.get(), internal::kResponseFd}};
  int out = output ? output.get() : 1, err = output ? output.get() : 2;
  spec.fds.emplace_back(out, 1);
  spec.fds.emplace_back(err, 2);
  child = Spawner::spawn(spec);
  requests = std::move(to_worker.write);
  responses = std::move(from_worker.read);
  decoder = internal::FrameDecoder();
  uses = 0;
  pending = false;
  if (!options.initializer.empty()) {
    deadline.reset();
    write_request("init", options.initializer, options.initializer_args);
    read_response(options.initializer);
  }
}

void Worker::State::stop() noexcept {
  if (child) child->terminate_group(std::chrono::milliseconds(0));
  child.reset();
  requests.reset();
  responses.reset();
  pending = false;
}

void Worker::State::write_request(const std::string& op, std::string_view task, const Value& args) {
  std::string frame = internal::encode_frame(Value{{"op", op}, {"task", task}, {"args", args}});
  size_t done = 0;
  while (done < frame.size()) {
    long n =
        internal::write_without_sigpipe(requests.get(), frame.data() + done, frame.size() - done);
    if (n <= 0) break;  // the worker is gone; read_response() reports how it ended
    done += static_cast<size_t>(n);
  }
}

void Worker::State::died(std::string_view task) {
  child->reap();
  std::string how = describe_death(child->wait_status());
  pid_t pid = child->pid();
  stop();
  throw ChildProcessError(fmt::format("worker {} running task '{}' {}", pid, task, how));
}

Value Worker::State::read_response(std::string_view task) {
  std::string buffer(size_t{64} * 1024, '\0');
  for (;;) {
    std::optional<Value> response;
    try {
      response = decoder.next();
    } catch (const ProtocolError& e) {
      stop();
      throw ProtocolError(fmt::format("{} (task '{}'; the worker was killed)", e.what(), task));
    }
    if (response) {
      if (response->contains("ok")) return std::move((*response)["ok"]);
      const Value& error = response->value("error", Value::object());
      throw TaskError(error.value("type", "unknown"), error.value("message", ""));
    }
    int wait_ms = -1;
    if (deadline) {
      auto left = *deadline - Clock::now();
      if (left <= Clock::duration::zero()) {
        stop();
        throw TimeoutError(fmt::format("task '{}' timed out; its worker was killed", task));
      }
      wait_ms = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(left).count());
    }
    pollfd p{responses.get(), POLLIN, 0};
    int r = internal::retry_eintr([&] { return ::poll(&p, 1, wait_ms); });
    if (r == -1) throw SystemError("poll", errno);
    if (r == 0) continue;  // the deadline check above fires
    ssize_t n = internal::retry_eintr(
        [&] { return ::read(responses.get(), buffer.data(), buffer.size()); });
    if (n <= 0) died(task);
    decoder.feed(buffer.data(), static_cast<size_t>(n));
  }
}

Worker::Worker(WorkerOptions options) : state_(std::make_unique<State>()) {
  state_->options = std::move(options);
}

Worker::~Worker() {
  if (state_) state_->stop();
}

Worker::Worker(Worker&&) noexcept = default;
Worker& Worker::operator=(Worker&& other) noexcept {
  if (this != &other) {
    if (state_) state_->stop();
    state_ = std::move(other.state_);
  }
  return *this;
}

void Worker::send(std::string_view task, const Value& args,
                  std::optional<std::chrono::milliseconds> timeout) {
  State& s = *state_;
  if (s.child && s.options.max_uses > 0 && s.uses >= s.options.max_uses) s.stop();
  if (s.child && s.child->has_exited()) s.stop();
  if (!s.child) s.start();
  s.deadline.reset();
  if (timeout) s.deadline = Clock::now() + *timeout;
  s.pending = true;
  s.pending_task = std::string(task);
  s.write_request("call", task, args);
}

Value Worker::recv() {
  State& s = *state_;
  if (!s.pending || !s.child) throw InvalidArgument("Worker::recv: no call was sent");
  s.pending = false;
  ++s.uses;
  return s.read_response(s.pending_task);
}

Value Worker::call(std::string_view task, const Value& args,
                   std::optional<std::chrono::milliseconds> timeout) {
  send(task, args, timeout);
  return recv();
}

void Worker::kill() noexcept { state_->stop(); }

bool Worker::is_alive() { return state_->child && !state_->child->has_exited(); }

bool Worker::join(std::chrono::milliseconds timeout) {
  if (!state_->child) return true;
  bool exited = state_->child->wait_exit_until(Clock::now() + timeout);
  if (exited) state_->stop();
  return exited;
}

pid_t Worker::pid() const noexcept { return state_->child ? state_->child->pid() : 0; }

}  // namespace kiln::pool
