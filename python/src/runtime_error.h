// tvm.support raises RuntimeError in places where kiln's C++ layer reports a missing file or tool
// as kiln::FileNotFound / kiln::ToolNotFound (FileNotFoundError in Python, errors.cc): "could
// not find bitcode", "cannot find ld.lld", "Cannot find ROCm path". A binding wraps such a call
// in as_runtime_error<kiln::X>(...), so that exactly that failure becomes RuntimeError with
// kiln's message, while other failures (e.g. a missing program to run) keep their types.
#pragma once

#include <stdexcept>
#include <utility>

namespace kiln::python {

template <class KilnError, class Fn>
decltype(auto) as_runtime_error(Fn&& fn) {
  try {
    return std::forward<Fn>(fn)();
  } catch (const KilnError& e) {
    throw std::runtime_error(e.what());  // pybind11 raises it as RuntimeError
  }
}

}  // namespace kiln::python
