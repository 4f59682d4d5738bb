// kiln::pool for kiln.support.popen_pool. The Python side pickles; here a call's payload is one
// byte string, run in a Python worker (kiln/support/popen_worker.py) by the one task "python".
//
// A call's end reaches Python as a tuple, the same for PoolWorker.recv() and
// PoolExecutor.collect() (where the call's index comes first):
//   ("ok", pickled result)
//   ("exception", pickled exception or b"", type name, message)   the task raised
//   ("timeout" | "died" | "cancelled" | "error", message)         the pool's own errors
// The GIL is released wherever a call may wait: starting a worker, waiting for answers, shutdown.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "bindings.h"
#include "kiln/error.h"
#include "kiln/pool.h"
#include "kiln/process.h"

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

std::optional<std::chrono::milliseconds> millis(std::optional<long long> ms) {
  if (!ms) return std::nullopt;
  return std::chrono::milliseconds(*ms);
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
  options.preparation_timeout = millis(kw["preparation_ms"].cast<std::optional<long long>>());
  return options;
}

// An Executor whose calls end into a queue that Python's collector thread drains. The queue is
// declared first so that it outlives the executor, whose destructor may still end calls.
class PyExecutor {
 public:
  PyExecutor(int workers, std::optional<long long> timeout_ms, WorkerOptions options)
      : executor_(
            {.workers = workers, .timeout = millis(timeout_ms), .worker = std::move(options)}) {}

  void submit(std::size_t first, const std::vector<py::bytes>& payloads) {
    std::vector<Value> items;
    items.reserve(payloads.size());
    for (const py::bytes& p : payloads) items.push_back(binary_of(p));
    // With the GIL held: queueing never waits for long (the dispatcher holds the queue's lock
    // for moments and never takes the GIL), and letting the collector thread have the GIL for
    // each submit would make it bounce between the threads.
    executor_.submit_each(kTask, std::move(items),
                          [this, first](std::size_t index, Executor::Result result) {
                            {
                              std::lock_guard lock(mutex_);
                              ended_.emplace_back(first + index, std::move(result));
                            }
                            wake_.notify_one();
                          });
  }

  // Every call that ended since the last collect(), waiting for one; empty once closed.
  py::list collect() {
    std::vector<std::pair<std::size_t, End>> ends;
    {
      py::gil_scoped_release release;
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return !ended_.empty() || closed_; });
      std::deque<std::pair<std::size_t, Executor::Result>> taken;
      taken.swap(ended_);
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
    {
      py::gil_scoped_release release;
      executor_.shutdown(wait);
    }
    std::lock_guard lock(mutex_);
    closed_ = true;
    wake_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::pair<std::size_t, Executor::Result>> ended_;
  bool closed_ = false;
  Executor executor_;
};

void bind_worker(py::module_& m) {
  py::class_<Worker>(m, "PoolWorker")
      .def(py::init([](const py::kwargs& kw) { return Worker(worker_options(kw)); }))
      .def("send",
           [](Worker& w, const py::bytes& payload, std::optional<long long> timeout_ms) {
             Value args = binary_of(payload);
             py::gil_scoped_release release;
             w.send(kTask, args, millis(timeout_ms));
           })
      .def("recv",
           [](Worker& w) {
             End end;
             {
               py::gil_scoped_release release;
               end = end_of([&w] { return w.recv(); });
             }
             return tuple_of(end);
           })
      .def("kill", &Worker::kill, py::call_guard<py::gil_scoped_release>())
      .def("is_alive", &Worker::is_alive, py::call_guard<py::gil_scoped_release>())
      .def(
          "join",
          [](Worker& w, std::optional<double> timeout_ms) {
            // No limit: a day at a time, which the clock always holds.
            auto limit = std::chrono::milliseconds(static_cast<long long>(timeout_ms.value_or(0)));
            while (!w.join(timeout_ms ? limit : std::chrono::hours(24)) && !timeout_ms) {
            }
          },
          py::arg("timeout_ms"), py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("pid", &Worker::pid);
}

void bind_executor(py::module_& m) {
  py::class_<PyExecutor>(m, "PoolExecutor")
      .def(py::init([](int workers, std::optional<long long> timeout_ms, const py::kwargs& kw) {
             return std::make_unique<PyExecutor>(workers, timeout_ms, worker_options(kw));
           }),
           py::arg("workers"), py::arg("timeout_ms"))
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
  bind_worker(m);
  bind_executor(m);
  m.def("serve_pool_worker", &serve_pool_worker, py::arg("args"), py::arg("handler"));
  m.def("task_begins", &kiln::pool::task_begins);
  m.def(
      "kill_child_processes", [](pid_t pid) { return kiln::kill_child_processes(pid); },
      py::arg("pid"), py::call_guard<py::gil_scoped_release>());
}

}  // namespace kiln::python
