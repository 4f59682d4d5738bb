// How a tool run ended, as one typed value: it exited with a code, was killed by a signal, was
// ended by kiln at its deadline, or was ended (or never started) because its RunScope was
// cancelled. kiln::RunResult (kiln/process.h) and kiln::ToolFailed (kiln/error.h) carry one, so
// that whoever reacts to a failure (kiln build's scheduler, a retry policy) switches on this value
// instead of parsing messages.
//
//   kiln::Ending e = kiln::Ending::signaled(SIGSEGV);
//   e.kind == kiln::Ending::Kind::signaled;   // e.text() == "killed by signal SIGSEGV"
//   kiln::Ending::exited(0).ok();             // true
#pragma once

#include <string>

namespace kiln {

struct Ending {
  enum class Kind { exited, signaled, timed_out, cancelled };

  Kind kind = Kind::exited;
  // The exit status (exited) or the signal number (signaled); 0 for the other kinds.
  int value = 0;

  static constexpr Ending exited(int code) { return {Kind::exited, code}; }
  static constexpr Ending signaled(int signal) { return {Kind::signaled, signal}; }
  static constexpr Ending timed_out() { return {Kind::timed_out, 0}; }
  static constexpr Ending cancelled() { return {Kind::cancelled, 0}; }

  // Exited with status 0.
  constexpr bool ok() const noexcept { return kind == Kind::exited && value == 0; }
  // "exit code 2", "killed by signal SIGSEGV", "timed out", "cancelled".
  std::string text() const;

  friend constexpr bool operator==(const Ending&, const Ending&) = default;
};

}  // namespace kiln
