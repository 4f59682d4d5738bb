// kiln::pool for kiln.support.popen_pool. The Python side pickles; here a call's payload is one
// byte string, run in a Python worker (kiln/support/popen_worker.py) by the one task "python".
//
// A call's end reaches Python as a tuple, the same for PoolWorker.recv() and
// PoolExecutor.collect() (where the call's index comes first):
//   ("ok", pickled result)
//   ("exception", pickled exception or b"", type name, message)   the task raised
//   ("timeout" | "died" | "cancelled" | "error", message)         the pool's own errors
// ("died": the worker ended, or broke the protocol and was killed)
// The GIL is released wherever a call may wait: starting a worker, waiting for answers, shutdown;
// recv() and join() wait in slices and look for signals in between, so Ctrl-C interrupts them.
// Timeouts are seconds, a float or None (seconds.h), as everywhere in the extension.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "kiln/error.h"
#include "kiln/pool.h"
#include "kiln/process.h"
#include "seconds.h"

namespace kiln::python {
namespace {

namespace py = pybind11;
using kiln::pool::Executor;
using kiln::pool::Worker;
using kiln::pool::WorkerOptions;

constexpr const char* kTask = "python";

// How a call ended, gathered without the GIL; made a Python tuple with it.
struct End {
  std::string kind;
  std::string data;  // "ok": the pickled result; "exception": the pickled exception
  std::string type;
  std::string message;
};

Value binary_of(const py::bytes& bytes) {
  std::string_view view = bytes;
  return Value::binary({view.begin(), view.end()});
}

End end_of(const Executor::Result& result) {
  try {
    Value value = result();
    const auto& bytes = value.get_binary();
    return {"ok", std::string(bytes.begin(), bytes.end()), {}, {}};
  } catch (const TaskError& e) {
    return {"exception", e.details(), e.type_name(), e.message()};
  } catch (const kiln::TimeoutError& e) {
    return {"timeout", {}, {}, e.what()};
  } catch (const ChildProcessError& e) {
    return {"died", {}, {}, e.what()};
  } catch (const ProtocolError& e) {  // the worker wrote garbage and was killed: a crash
    return {"died", {}, {}, e.what()};
  } catch (const Cancelled& e) {
    return {"cancelled", {}, {}, e.what()};
  } catch (const std::exception& e) {
    return {"error", {}, {}, e.what()};
  }
}

py::tuple tuple_of(const End& end) {
  if (end.kind == "ok") return py::make_tuple(end.kind, py::bytes(end.data));
  if (end.kind == "exception") {
    return py::make_tuple(end.kind, py::bytes(end.data), end.type, end.message);
  }
  return py::make_tuple(end.kind, end.message);
}

WorkerOptions worker_options(const py::kwargs& kw) {
  WorkerOptions options;
  options.command = kw["command"].cast<std::vector<std::string>>();
  if (!kw["initializer"].is_none()) {
    options.initializer = kTask;
    options.initializer_args = binary_of(kw["initializer"].cast<py::bytes>());
  }
  options.max_uses = kw["max_uses"].cast<int>();
  options.stdout_fd = kw["stdout_fd"].cast<std::optional<int>>();
  options.stderr_fd = kw["stderr_fd"].cast<std::optional<int>>();
  options.preparation_timeout =
      milliseconds_of(kw["preparation_timeout"].cast<std::optional<double>>());
  options.from_template = kw.contains("from_template") && kw["from_template"].cast<bool>();
  return options;
}

// An Executor whose calls end into a queue that Python's collector thread drains. The queue is
// declared first so that it outlives the executor, whose destructor may still end calls. In a
// process forked from the one that made it, none of it is touched: a collector thread of the
// parent's may have been waiting on the condition variable at the fork (destroying it would then
// wait forever), and the executor is the parent's (pool::Executor says what it does there).
class PyExecutor {
 public:
  PyExecutor(int workers, std::optional<std::chrono::milliseconds> timeout, WorkerOptions options)
      : shared_(std::make_unique<Shared>(workers, timeout, std::move(options))) {}
  ~PyExecutor() {
    if (forked()) {
      [[maybe_unused]] Shared* left = shared_.release();
    }
  }
  PyExecutor(const PyExecutor&) = delete;
  PyExecutor& operator=(const PyExecutor&) = delete;

  void submit(std::size_t first, const std::vector<py::bytes>& payloads) {
    std::vector<Value> items;
    items.reserve(payloads.size());
    for (const py::bytes& p : payloads) items.push_back(binary_of(p));
    // With the GIL held: queueing never waits for long (the dispatcher holds the queue's lock
    // for moments and never takes the GIL), and letting the collector thread have the GIL for
    // each submit would make it bounce between the threads.
    Shared* shared = shared_.get();
    shared->executor.submit_each(kTask, std::move(items),
                                 [shared, first](std::size_t index, Executor::Result result) {
                                   {
                                     std::lock_guard lock(shared->mutex);
                                     shared->ended.emplace_back(first + index, std::move(result));
                                   }
                                   shared->wake.notify_one();
                                 });
  }

  // Every call that ended since the last collect(), waiting for one; empty once closed.
  py::list collect() {
    Shared& s = *shared_;
    std::vector<std::pair<std::size_t, End>> ends;
    {
      py::gil_scoped_release release;
      std::unique_lock lock(s.mutex);
      s.wake.wait(lock, [&s] { return !s.ended.empty() || s.closed; });
      std::deque<std::pair<std::size_t, Executor::Result>> taken;
      taken.swap(s.ended);
      lock.unlock();
      for (auto& [index, result] : taken) ends.emplace_back(index, end_of(result));
    }
    py::list out;
    for (const auto& [index, end] : ends) {
      out.append(py::make_tuple(index, tuple_of(end)));
    }
    return out;
  }

  void shutdown(bool wait) {
    if (forked()) return;  // the parent's pool
    Shared& s = *shared_;
    {
      py::gil_scoped_release release;
      s.executor.shutdown(wait);
    }
    std::lock_guard lock(s.mutex);
    s.closed = true;
    s.wake.notify_all();
  }

 private:
  struct Shared {
    Shared(int workers, std::optional<std::chrono::milliseconds> timeout, WorkerOptions options)
        : executor({.workers = workers, .timeout = timeout, .worker = std::move(options)}) {}
    std::mutex mutex;
    std::condition_variable wake;
    std::deque<std::pair<std::size_t, Executor::Result>> ended;
    bool closed = false;
    Executor executor;
  };

  bool forked() const noexcept { return owner_ != ::getpid(); }

  pid_t owner_ = ::getpid();
  std::unique_ptr<Shared> shared_;
};

// How long a wait runs with the GIL released before Python looks for signals (Ctrl-C).
constexpr std::chrono::milliseconds kSignalSlice{50};

// Raises what a Python signal handler raised (KeyboardInterrupt for Ctrl-C), if one ran.
void check_signals() {
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

// PoolWorker.recv(): waits in slices, so that Ctrl-C interrupts it at once; the call stays in
// flight (recv() again, or kill()).
py::tuple worker_recv(Worker& w) {
  for (;;) {
    bool ended = false;
    {
      py::gil_scoped_release release;
      ended = w.wait_for(kSignalSlice);
    }
    if (ended) break;
    check_signals();
  }
  End end;
  {
    py::gil_scoped_release release;
    end = end_of([&w] { return w.recv(); });
  }
  return tuple_of(end);
}

// PoolWorker.join(timeout): the same, without a limit when none is given.
void worker_join(Worker& w, std::optional<double> timeout) {
  using Clock = std::chrono::steady_clock;
  std::optional<Clock::time_point> deadline;
  if (std::optional<std::chrono::milliseconds> limit = milliseconds_of(timeout)) {
    deadline = Clock::now() + *limit;
  }
  for (;;) {
    auto slice = kSignalSlice;
    if (deadline) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now());
      slice = std::clamp(left, std::chrono::milliseconds(0), slice);
    }
    bool exited = false;
    {
      py::gil_scoped_release release;
      exited = w.join(slice);
    }
    if (exited || (deadline && Clock::now() >= *deadline)) return;
    check_signals();
  }
}

void bind_worker(py::module_& m) {
  py::class_<Worker>(m, "PoolWorker")
      .def(py::init([](const py::kwargs& kw) { return Worker(worker_options(kw)); }))
      .def("send",
           [](Worker& w, const py::bytes& payload, std::optional<double> timeout) {
             Value args = binary_of(payload);
             std::optional<std::chrono::milliseconds> limit = milliseconds_of(timeout);
             py::gil_scoped_release release;
             w.send(kTask, args, limit);
           })
      .def("recv", &worker_recv)
      .def("kill", &Worker::kill, py::call_guard<py::gil_scoped_release>())
      .def("is_alive", &Worker::is_alive, py::call_guard<py::gil_scoped_release>())
      .def("join", &worker_join, py::arg("timeout"))
      .def_property_readonly("pid", &Worker::pid);
}

void bind_executor(py::module_& m) {
  py::class_<PyExecutor>(m, "PoolExecutor")
      .def(py::init([](int workers, std::optional<double> timeout, const py::kwargs& kw) {
             return std::make_unique<PyExecutor>(workers, milliseconds_of(timeout),
                                                 worker_options(kw));
           }),
           py::arg("workers"), py::arg("timeout"))
      .def("submit", &PyExecutor::submit, py::arg("first"), py::arg("payloads"))
      .def("collect", &PyExecutor::collect)
      .def("shutdown", &PyExecutor::shutdown, py::arg("wait"));
}

// The worker program's side: serves the task "python" by calling `handler(payload)`, which
// returns (True, pickled result) or (False, pickled exception, type name, message).
std::optional<int> serve_pool_worker(const std::vector<std::string>& args, py::function handler) {
  kiln::pool::register_task(kTask, [handler = std::move(handler)](Value payload) -> Value {
    py::gil_scoped_acquire gil;
    const auto& bytes = payload.get_binary();
    py::tuple answer;
    try {
      answer = handler(py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
    } catch (py::error_already_set& e) {  // the handler itself failed: say so, without pickle
      throw TaskError("RuntimeError", e.what());
    }
    auto data = answer[1].cast<std::string>();
    if (answer[0].cast<bool>()) return Value::binary({data.begin(), data.end()});
    throw TaskError(answer[2].cast<std::string>(), answer[3].cast<std::string>(), std::move(data));
  });
  py::gil_scoped_release release;
  return kiln::pool::serve_worker(args);
}

}  // namespace

void bind_pool(py::module_& m) {
  bind_pool_template(m);
  bind_worker(m);
  bind_executor(m);
  m.def("serve_pool_worker", &serve_pool_worker, py::arg("args"), py::arg("handler"));
  m.def("task_begins", &kiln::pool::task_begins);
  m.def("task_ends_process", &kiln::pool::task_ends_process, py::arg("code"));
  m.attr("max_message_bytes") = kiln::pool::kMaxMessageBytes;
  m.def(
      "kill_child_processes", [](pid_t pid) { return kiln::kill_child_processes(pid); },
      py::arg("pid"), py::call_guard<py::gil_scoped_release>());
}

}  // namespace kiln::python
