// kiln's exceptions as the Python exceptions tvm.support raises for the same failures: a tool that
// failed is RuntimeError with the seed's message ("Compilation error:\n..."), a missing file or
// tool FileNotFoundError, a bad argument ValueError, a failed system call the OSError subclass of
// its errno (FileExistsError, PermissionError, ...), a deadline TimeoutError, a pool worker that
// died ChildProcessError.
#include <Python.h>

#include <cerrno>
#include <utility>

#include "bindings.h"
#include "kiln/error.h"

namespace kiln::python {
namespace {

void set_os_error(int error_number, const char* message) {
  // OSError(errno, message) constructs the subclass that errno maps to. The instance is made here
  // and raised with its own type: raised as OSError with arguments, Python 3.10 would match it
  // against `except FileNotFoundError` before normalizing it, as plain OSError, and miss.
  PyObject* args = Py_BuildValue("(is)", error_number, message);
  if (args == nullptr) return;
  PyObject* error = PyObject_Call(PyExc_OSError, args, nullptr);
  Py_DECREF(args);
  if (error == nullptr) return;  // the call's own exception stands
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error)), error);
  Py_DECREF(error);
}

void translate(std::exception_ptr error) {
  try {
    std::rethrow_exception(std::move(error));
  } catch (const FileNotFound& e) {
    set_os_error(ENOENT, e.what());
  } catch (const ToolNotFound& e) {
    set_os_error(ENOENT, e.what());
  } catch (const ToolNotExecutable& e) {
    set_os_error(EACCES, e.what());
  } catch (const SystemError& e) {
    set_os_error(e.error_number(), e.what());
  } catch (const InvalidArgument& e) {
    PyErr_SetString(PyExc_ValueError, e.what());
  } catch (const kiln::TimeoutError& e) {
    PyErr_SetString(PyExc_TimeoutError, e.what());
  } catch (const kiln::ChildProcessError& e) {
    PyErr_SetString(PyExc_ChildProcessError, e.what());
  } catch (const Error& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  }
}

}  // namespace

void bind_errors(pybind11::module_& /*m*/) { pybind11::register_exception_translator(translate); }

}  // namespace kiln::python
