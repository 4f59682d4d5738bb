// Turning a length of time into a deadline without overflowing the clock.
//
// std::chrono adds durations in the clock's integer ticks: `now + seconds(1e10)` wraps around
// (undefined behaviour, in practice a deadline in the past: "timed out after 0s"). A limit the
// clock cannot hold means no limit.
#pragma once

#include <chrono>
#include <cmath>
#include <optional>

namespace kiln::internal {

// start + limit, or std::nullopt (no deadline) when that point lies beyond what the clock holds.
template <class Clock, class Rep, class Period>
std::optional<typename Clock::time_point> deadline_after(typename Clock::time_point start,
                                                         std::chrono::duration<Rep, Period> limit) {
  using Duration = typename Clock::duration;
  if (limit <= limit.zero()) return start;
  // Compared in double seconds, where neither side can overflow; the second of margin absorbs
  // the rounding of `room` to a double.
  double room = std::chrono::duration<double>(Clock::time_point::max() - start).count();
  double wanted = std::chrono::duration<double>(limit).count();
  if (!(wanted < room - 1.0)) return std::nullopt;
  return start + std::chrono::duration_cast<Duration>(std::chrono::duration<double>(wanted));
}

// The deadline of a limit given in seconds (a manifest's or --timeout's): 0, or one the clock
// cannot hold (1e300, infinity), means none. NaN and negative values are the caller's to refuse;
// here they mean none too.
template <class Clock>
std::optional<typename Clock::time_point> deadline_after_seconds(typename Clock::time_point start,
                                                                 double seconds) {
  if (!(seconds > 0) || std::isinf(seconds)) return std::nullopt;
  return deadline_after<Clock>(start, std::chrono::duration<double>(seconds));
}

}  // namespace kiln::internal
