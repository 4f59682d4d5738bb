// Warm worker templates for kiln.support.popen_pool (kiln::pool::prepare_template and
// serve_template): the parent names what a template imports; the template's side forks with
// Python's own fork hooks around it, as os.fork() does.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <string>
#include <variant>
#include <vector>

#include "bindings.h"
#include "kiln/pool.h"
#include "seconds.h"

namespace py = pybind11;

namespace kiln::python {
namespace {

// The template's life: None in a worker it forked (which then serves; its arguments and
// environment come back as a tuple), else the template's exit status.
py::object serve_pool_template(const std::vector<std::string>& args, py::function prepare,
                               py::object sources) {
  kiln::pool::TemplateHooks hooks;
  hooks.prepare = [&prepare](const std::vector<std::string>& names) {
    return prepare(names).cast<std::vector<std::string>>();
  };
  if (!sources.is_none()) {
    hooks.sources = [&sources] { return sources().cast<std::vector<std::string>>(); };
  }
  // The GIL stays held throughout: the template has one thread, and Python's fork hooks need it.
  hooks.before_fork = [] { PyOS_BeforeFork(); };
  hooks.after_fork_in_parent = [] { PyOS_AfterFork_Parent(); };
  hooks.after_fork_in_child = [] { PyOS_AfterFork_Child(); };
  std::variant<int, kiln::pool::ForkedWorker> served = kiln::pool::serve_template(args, hooks);
  if (const int* status = std::get_if<int>(&served)) return py::int_(*status);
  auto& worker = std::get<kiln::pool::ForkedWorker>(served);
  return py::make_tuple(worker.args, worker.environment);
}

py::dict stats() {
  kiln::pool::TemplateStats s = kiln::pool::template_stats();
  py::dict d;
  d["forks"] = s.forks;
  d["fallbacks"] = s.fallbacks;
  d["started"] = s.started;
  d["lost"] = s.lost;
  d["last_reason"] = s.last_reason;
  d["joined"] = s.joined;
  d["stale"] = s.stale;
  d["last_stale"] = s.last_stale;
  return d;
}

}  // namespace

void bind_pool_template(py::module_& m) {
  m.def("serve_pool_template", &serve_pool_template, py::arg("args"), py::arg("prepare"),
        py::arg("sources") = py::none());
  m.def("prepare_template", &kiln::pool::prepare_template, py::arg("command"), py::arg("names"),
        py::arg("unless_elsewhere") = false, py::call_guard<py::gil_scoped_release>());
  m.def(
      "wait_for_template",
      [](const std::vector<std::string>& command, double timeout, bool only_if_preparing,
         const std::vector<std::string>& needed) {
        std::chrono::milliseconds limit = milliseconds_of(timeout);  // may raise: with the GIL
        py::gil_scoped_release release;
        return kiln::pool::wait_for_template(command, limit, only_if_preparing, needed);
      },
      py::arg("command"), py::arg("timeout"), py::arg("only_if_preparing") = false,
      py::arg("needed") = std::vector<std::string>{});
  m.def("template_stats", &stats);
  m.def(
      "template_services",
      [](bool stop) {
        py::list services;
        for (const kiln::pool::TemplateService& service : kiln::pool::template_services(stop)) {
          py::dict d;
          d["socket"] = service.socket.string();
          d["status"] = service.status;
          services.append(d);
        }
        return services;
      },
      py::arg("stop") = false);
}

}  // namespace kiln::python
