// The process pool: run hang-prone and crash-prone work in worker processes, with deadlines the
// parent enforces, as tvm.support.popen_pool.
//
// Tasks are functions registered by name; their arguments and results are plain data
// (kiln::Value, i.e. nlohmann::json, with binary byte strings). A worker is a re-executed copy
// of the host program: every program that uses the pool calls kiln::pool::serve_if_worker()
// first thing in main(), where a worker stops and serves. A host that cannot re-execute itself
// (a Python interpreter) names another worker program instead (WorkerOptions::command), which
// registers its tasks and calls kiln::pool::serve_worker().
//
//   KILN_TASK(square, [](const kiln::Value& x) -> kiln::Value { return x.get<int>() * x.get<int>();
//   });
//
//   int main(int argc, char** argv) {
//     kiln::pool::serve_if_worker(argc, argv);   // a re-executed worker never returns from here
//     kiln::pool::Worker worker;
//     kiln::Value nine = worker.call("square", 3, std::chrono::seconds(2));
//   }
//
// Errors from a call: kiln::TimeoutError (the worker was killed, with its whole process group,
// and is restarted on the next call), kiln::ChildProcessError (the worker died, the message says
// how: exit code or signal name; or its task closed or replaced the worker's answer pipe,
// descriptor 4, and it was killed), kiln::TaskError (the task threw; its type name and message;
// a task that threw a kiln::ToolFailed fails the call with that ToolFailed, every field kept),
// kiln::ProtocolError (the worker wrote garbage or an oversize frame and was killed). A worker's
// death is seen as it happens, from its pidfd, even while a grandchild holds its pipes; a task
// that ends its worker's process says so first (task_ends_process), so the call fails at once.
// Workers die with their parent, even when it is SIGKILLed: they are started from one
// long-lived thread with PR_SET_PDEATHSIG, and they watch their request pipe for a hang-up.
// A process forked from one that used the pool (fork() copies only the calling thread) starts
// workers of its own: the starting thread is per process; see Worker and Executor for what a
// forked child may do with those it inherited.
// A timeout is reported as soon as the worker's group is SIGKILLed; the worker is reaped once it
// has died (a large process takes a millisecond or two), by the next use of its Worker or by the
// Executor's dispatcher. Quick calls in a row are not slowed by waking sleeping CPUs: a worker
// answering call after call, and a Worker waiting for a call that typically takes under 100 us,
// poll for up to 100 us (yielding the CPU) before they sleep.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln {

// What tasks take and return.
using Value = nlohmann::json;

namespace pool {

// The most that one message between a pool's parent and a worker may take, encoded (CBOR): a
// call's task name and arguments, or its result. Arguments over it fail send() or the call with
// kiln::InvalidArgument; a result over it fails the call with a kiln::TaskError of type
// "kiln::InvalidArgument" naming the size and the limit, and the worker stays. Both sides hold a
// whole message in memory, the parent of a Python pool about four copies of it at once; real
// payloads are far smaller (a MetaSchedule build's arguments and results: kilobytes; a large
// compiled kernel: a few MB), so a larger value is better passed as a file.
inline constexpr std::size_t kMaxMessageBytes = std::size_t{256} << 20;

// A task receives its argument by value, moved out of the request: a task that takes `Value`
// (rather than `const Value&`) can keep or return it without copying, which matters for large
// byte strings.
using TaskFn = std::function<Value(Value)>;

// Registers `fn` under `name` (a later registration of the same name replaces it). Returns
// true, so that it can initialize a static; KILN_TASK does that.
bool register_task(const std::string& name, TaskFn fn);

// If argv says this process is a pool worker, serves tasks and exits; if it says it is one of the
// registered services, runs it and exits; otherwise returns at once.
void serve_if_worker(int argc, char** argv);

// The worker side of WorkerOptions::command: when the last two of `args` (the program's
// arguments) are the two the pool appends, serves the registered tasks until the parent closes
// its end and returns the status the program should exit with (the caller exits; nothing here
// calls exit()); otherwise returns std::nullopt at once. Like a re-executed worker it dies with
// its parent (PR_SET_PDEATHSIG, and a watch on the request pipe).
std::optional<int> serve_worker(const std::vector<std::string>& args);

// Called by a task in a worker that is about to end the worker's process with exit status
// `code` (a Python task's sys.exit, as tvm.testing.terminate_self does): tells the parent now,
// so that the call fails with ChildProcessError ("exited with code N") at once, however long the
// process then takes to end (tens of milliseconds for one that loaded TVM) and whatever its
// deadline. The parent then kills the worker's process group; the caller ends the process at
// once, and nothing is answered after this. Outside a worker, and in a process that the worker
// forked, does nothing.
void task_ends_process(int code) noexcept;

// Called by a task in a worker: its preparation (a Python worker unpickling the function it is
// to run, which may import modules) is over, and its deadline counts from now. Matters only to
// pools with WorkerOptions::preparation_timeout; elsewhere, and outside a worker, does nothing.
void task_begins() noexcept;

// A long-lived service this program can be re-executed as (kiln's NVRTC compile server): `fn`
// gets the arguments after the service's name and must not return. Returns true, so that it can
// initialize a static.
using ServiceFn = void (*)(const std::vector<std::string>& args);
bool register_service(const std::string& name, ServiceFn fn);
// The command line that re-executes this program as service `name` with `args`: this program's
// own file, when it called serve_if_worker() (which is where a service starts), else
// $KILN_SERVICE_PROGRAM (a kiln binary, for a host that cannot re-execute itself, e.g. Python);
// std::nullopt when neither can.
std::optional<std::vector<std::string>> service_command(const std::string& name,
                                                        const std::vector<std::string>& args);

// Where a worker's stdout and stderr go. The protocol has descriptors of its own, so nothing a
// task prints can corrupt it.
enum class Output { inherit, discard, file };

struct WorkerOptions {
  // A registered task run at every (re)start of the worker, before any call; not a use.
  std::string initializer{};
  Value initializer_args{};
  // After this many calls the worker is replaced by a fresh process; 0: never.
  int max_uses = 0;
  Output output = Output::inherit;
  // With Output::file: appended to (created if missing).
  std::filesystem::path output_file{};
  // Descriptors of the caller's to connect the worker's stdout / stderr to, overriding `output`
  // for that stream (duplicated at every start: keep them open while the worker may start).
  std::optional<int> stdout_fd{};
  std::optional<int> stderr_fd{};
  // Changes to the worker's environment (std::nullopt unsets), e.g. TMPDIR for a library that
  // keeps files there.
  std::map<std::string, std::optional<std::string>> env{};
  // The worker program, when it is not this one re-executed: an argument vector (argv[0] a path,
  // or a name looked up on PATH) to which the pool appends two arguments for serve_worker(),
  // e.g. {"/usr/bin/python3", "-m", "my_worker"}. Empty: this program, which must call
  // serve_if_worker() first thing in main().
  std::vector<std::string> command{};
  // Set when the worker's tasks prepare before they start and report the end of it with
  // task_begins() (a Python worker unpickles its function, which may import modules): a call's
  // timeout then counts from that report, as tvm.support.popen_pool's does, and the preparation
  // itself may take this long. A task that never reports is held to this limit alone.
  // std::nullopt: timeouts count from when the worker takes the call.
  std::optional<std::chrono::milliseconds> preparation_timeout{};
  // Fork the worker from this process's template for `command` (prepare_template) when one is
  // ready, instead of starting the program afresh; otherwise (none ready, or it cannot fork
  // safely) start it as usual. Only for a `command` whose program calls serve_template().
  bool from_template = false;
};

// Warm worker templates. A template is a process of the worker program, started here with the
// two arguments serve_template() looks for, that prepares once what the workers' tasks need (a
// Python template imports the modules `names`) and then forks each new worker from itself, so
// that a worker is ready in milliseconds however long the preparation took. One per worker
// program and working directory in each process (and per environment, less
// PYTEST_CURRENT_TEST and the shell's _, OLDPWD, PWD and SHLVL: a forked worker gets the
// environment, directory and umask of its request), started from the pool's spawning thread: it
// dies with this process. Forked workers are this process's own children (CLONE_PARENT), so they
// are timed out, killed, reaped and reported exactly like started ones.
//
// With KILN_POOL_TEMPLATE_SERVICE (the default) a template is a service that outlives this
// process instead (pool/template_service.h): a later process of the same user, cgroup and
// namespaces with the same key joins it while every file it imported is unchanged, and gets
// warm workers from its first call. Its workers are its children, watched and reported through
// a status socket each (to a caller they look the same), and die with their caller.
//
// Starts, in the background, a template for workers of `command` that prepares `names` (all
// names asked for so far, in order), unless one that has them is ready or being prepared. One
// that is ready keeps serving until the new one is. Returns true when it started one. With no
// `names`, only joins a service that is there. `unless_elsewhere`: nor when another process
// is preparing the service of this key (a template made ahead, which this one may join later).
bool prepare_template(const std::vector<std::string>& command,
                      const std::vector<std::string>& names, bool unless_elsewhere = false);
// Waits up to `limit` while a template of `command` is being prepared (a new worker would spend
// that time importing what it imports); returns whether one is ready. `only_if_preparing`:
// returns false at once, without looking further, when no template of this process is being
// prepared (what a pool asks at every call). `needed`: what the worker about to start needs (a
// Python task's module); when the ready template has all of it that was asked for, returns true
// at once, and the worker is forked from that one while its successor prepares the rest (a slow
// import learned from another task does not hold up this one).
bool wait_for_template(const std::vector<std::string>& command, std::chrono::milliseconds limit,
                       bool only_if_preparing = false, const std::vector<std::string>& needed = {});
// What this process's templates did: workers forked, plain starts because none could fork (and
// the last reason why), templates started and lost.
struct TemplateStats {
  std::uint64_t forks = 0;
  std::uint64_t fallbacks = 0;
  std::uint64_t started = 0;
  std::uint64_t lost = 0;
  std::string last_reason{};
  // Template services (KILN_POOL_TEMPLATE_SERVICE) that an earlier process started and this one
  // joined, and those it found stale (a file they imported changed), the last one saying why.
  std::uint64_t joined = 0;
  std::uint64_t stale = 0;
  std::string last_stale{};
};
TemplateStats template_stats();

// This user's template services in this process's scope (`kiln templates`): each one's socket
// and its answer to "status" ("pid N\ncallers N\nworkers N\nfiles N\nnames N"), or why none
// came. With `stop`, each is told to stop first: it takes no more callers and ends once its
// workers have (the answer is then "told to stop").
struct TemplateService {
  std::filesystem::path socket;
  std::string status;
};
std::vector<TemplateService> template_services(bool stop = false);
// Where they live: $XDG_RUNTIME_DIR/kiln/templates-<scope> or /tmp/kiln-<uid>/templates-<scope>.
std::filesystem::path template_service_directory();

// The template's side, what a worker program calls when its last two arguments are the ones a
// template gets. `prepare` runs once with the names; the fork hooks run around every fork (a
// Python program passes PyOS_BeforeFork, PyOS_AfterFork_Parent and PyOS_AfterFork_Child).
// Returns, in the template, its exit status once the parent is gone; in each worker it forked,
// the worker's arguments (for serve_worker) and its environment ("NAME=value" each, already
// set in environ: a Python caller updates os.environ from it).
struct TemplateHooks {
  std::function<std::vector<std::string>(const std::vector<std::string>& names)> prepare;
  // After prepare, for a template service: what a fresh worker's imports depend on
  // (pool/template_freshness.h says the form); the service serves while it is unchanged.
  std::function<std::vector<std::string>()> sources;
  std::function<void()> before_fork;
  std::function<void()> after_fork_in_parent;
  std::function<void()> after_fork_in_child;
};
struct ForkedWorker {
  std::vector<std::string> args;
  std::vector<std::string> environment;
};
std::variant<int, ForkedWorker> serve_template(const std::vector<std::string>& args,
                                               const TemplateHooks& hooks);

// One worker process, started lazily (the seed's PopenWorker). Not thread-safe: one caller at a
// time. Destroying it kills the process group and reaps the worker. In a process forked from the
// one that made it, a Worker forgets its parent's worker and call (without signalling them: they
// are the parent's) and starts a worker of its own at the next send().
class Worker {
 public:
  explicit Worker(WorkerOptions options = {});
  ~Worker();
  Worker(const Worker&) = delete;
  Worker& operator=(const Worker&) = delete;
  Worker(Worker&&) noexcept;
  Worker& operator=(Worker&&) noexcept;

  // Sends one call, starting the worker first if needed; the deadline (if any) counts from when
  // the worker is ready, so a cold start is not charged to the task. One call at a time:
  // throws InvalidState while the previous call's result has not been received.
  void send(std::string_view task, const Value& args,
            std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // The result of the call sent last; throws as described above (InvalidState if none).
  Value recv();
  // Waits up to `timeout` for the call sent last to end; true when recv() will return (or throw)
  // without waiting. Lets a caller wait in slices, e.g. to look for signals in between (Python's
  // Ctrl-C); the call's own deadline is enforced however it is waited for.
  bool wait_for(std::chrono::milliseconds timeout);
  // send() then recv().
  Value call(std::string_view task, const Value& args,
             std::optional<std::chrono::milliseconds> timeout = std::nullopt);

  // Kills the worker and its descendants (SIGKILL to its process group) and reaps it.
  void kill() noexcept;
  bool is_alive();
  // Waits up to `timeout` for the worker to exit on its own; true when it is not running.
  bool join(std::chrono::milliseconds timeout);
  // The worker's pid, or 0 when none is running.
  pid_t pid() const noexcept;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// The seed's StatusKind, with its numbering.
enum class StatusKind { RUNNING = 0, COMPLETE = 1, EXCEPTION = 2, TIMEOUT = 3 };

struct MapResult {
  StatusKind status = StatusKind::RUNNING;
  // The task's result when COMPLETE; the error message when EXCEPTION or TIMEOUT.
  Value value{};
};

struct ExecutorOptions {
  // Number of worker processes; 0: one per core.
  int workers = 0;
  // Deadline of every task, from when a worker starts it; std::nullopt: none.
  std::optional<std::chrono::milliseconds> timeout{};
  // Initializer, max_uses and output of every worker.
  WorkerOptions worker{};
};

// A pool of workers fed from one queue (the seed's PopenPoolExecutor). One dispatcher thread
// drives every worker through a poll loop, so 64 workers cost one thread, not 64; workers start
// without holding it up. A worker whose calls prove quick is sent several at once, about as many
// as it runs in a millisecond (at most 64), so trivial tasks cost little more than their pipe
// traffic; a worker whose calls take a millisecond or more gets one at a time, so long work never
// waits behind other long work on a busy worker while another is free. Calls sent behind one that
// crashes or times out never started: they are run again, not failed. Thread-safe: submit from
// any thread. The dispatcher never waits for a process that may not have died (a killed worker is
// reaped once its pidfd says it died), so one misbehaving worker cannot stall the others' calls
// or deadlines. An Executor belongs to the process that made it: in a process forked from that
// one, submit() throws kiln::InvalidState, shutdown() does nothing, and the destructor leaves its
// memory as it is (its thread is not there to join, its locks may be held).
//
//   kiln::pool::Executor pool({.workers = 4, .timeout = std::chrono::seconds(2)});
//   std::future<kiln::Value> f = pool.submit("square", 7);   // f.get() == 49
//   auto results = pool.map_with_error_catching("square", {1, 2, 3});
class Executor {
 public:
  explicit Executor(ExecutorOptions options = {});
  // shutdown(false): kills every worker and reaps it; never waits for queued work.
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Queues one call. The future's get() returns the result or throws what Worker::call would
  // (TimeoutError, ...), the exception made in the thread that calls get(). The future is a
  // deferred one: get() and wait() block until the task ends, wait_for() reports
  // std::future_status::deferred. After shutdown(), submit() throws kiln::InvalidState.
  std::future<Value> submit(std::string task, Value args);

  // How a call ended: calling it returns the result or throws what Worker::call would. Call it
  // once, from any thread.
  using Result = std::function<Value()>;
  // Told of each call's end: its index in the submission, and its Result. Runs on the pool's
  // dispatcher thread (or in shutdown()): it must return quickly, must not throw and must not
  // call this Executor.
  using Ended = std::function<void(std::size_t index, Result result)>;
  // Queues one call per item of `items`, under one lock, and returns at once; `ended` hears of
  // each as it ends, in any order (shutdown(false) ends the rest with kiln::Cancelled). Throws
  // kiln::InvalidState after shutdown().
  void submit_each(const std::string& task, std::vector<Value> items, Ended ended);
  // Runs `task` on every item; results in input order, errors caught as statuses.
  std::vector<MapResult> map_with_error_catching(const std::string& task,
                                                 const std::vector<Value>& items);
  // Stops the pool. wait: finish queued and running tasks first; else they fail with
  // kiln::Cancelled and running workers are killed. Idempotent; returns when every worker is
  // reaped. A shutdown(false) from another thread cuts a waiting shutdown(true) short.
  void shutdown(bool wait = true);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace pool
}  // namespace kiln

#define KILN_TASK_CONCAT_INNER(a, b) a##b
#define KILN_TASK_CONCAT(a, b) KILN_TASK_CONCAT_INNER(a, b)
// Registers a task at static-initialization time: KILN_TASK(name, callable).
#define KILN_TASK(name, ...)                                                         \
  [[maybe_unused]] static const bool KILN_TASK_CONCAT(kiln_task_registered_, name) = \
      ::kiln::pool::register_task(#name, __VA_ARGS__)
