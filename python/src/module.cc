// kiln._kiln: the extension module of the Python package (see bindings.h).
#include "bindings.h"

PYBIND11_MODULE(_kiln, m) {
  m.doc() = "kiln's C++ library for the Python package kiln (use kiln.support, not this module)";
  kiln::python::bind_errors(m);
  kiln::python::bind_base(m);
  kiln::python::bind_settings(m);
  kiln::python::bind_cc(m);
  kiln::python::bind_rocm(m);
  kiln::python::bind_ndk(m);
  kiln::python::bind_xcode(m);
  kiln::python::bind_emcc(m);
  kiln::python::bind_clang(m);
  kiln::python::bind_cuda(m);
  kiln::python::bind_pool(m);
}
