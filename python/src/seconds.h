// The extension's one unit of time: every timeout and duration kiln._kiln takes is in seconds, a
// float (None where there may be no limit), as tvm.support's API gives them; kiln's C++ side
// counts in std::chrono::milliseconds. The conversion happens here and nowhere else.
#pragma once

#include <pybind11/pybind11.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>

namespace kiln::python {

// `seconds` rounded up to whole milliseconds (a limit of a microsecond is one of a millisecond,
// never none), a negative one as 0 (the time is up at once), and one of more than 90 years as 90
// years (a deadline that never comes, which a steady_clock time point still holds). NaN raises
// ValueError and an infinity OverflowError, as Python's math.ceil() does for them.
inline std::chrono::milliseconds milliseconds_of(double seconds) {
  if (std::isnan(seconds)) throw pybind11::value_error("a timeout of NaN seconds");
  if (std::isinf(seconds)) {
    PyErr_SetString(PyExc_OverflowError, "a timeout of infinite seconds (None: no limit)");
    throw pybind11::error_already_set();
  }
  constexpr double kLongest = 90.0 * 365 * 24 * 3600 * 1000;  // milliseconds
  double millis = std::clamp(std::ceil(seconds * 1000), 0.0, kLongest);
  return std::chrono::milliseconds(static_cast<long long>(millis));
}

inline std::optional<std::chrono::milliseconds> milliseconds_of(std::optional<double> seconds) {
  if (!seconds) return std::nullopt;
  return milliseconds_of(*seconds);
}

}  // namespace kiln::python
