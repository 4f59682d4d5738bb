// How one call ended, as plain data. The exception a caller sees is made from it in the caller's
// own thread (unwrap), so no exception object is ever shared between threads. (Sharing one goes
// through reference counts inside libstdc++ that ThreadSanitizer cannot see.)
#pragma once

#include <optional>
#include <string>

#include "kiln/error.h"
#include "kiln/pool.h"
#include "tool_failure_codec.h"

namespace kiln::internal {

struct Outcome {
  enum class Kind {
    value,
    timeout,
    child_died,
    protocol,
    task,
    cancelled,
    invalid_argument,
    system,
    other,  // an error of a type the pool does not carry: unwrap() throws the root class
  };
  Kind kind = Kind::value;
  Value value{};
  std::string type{};              // task: the task's exception type; system: the failed operation
  std::string message{};           // everything but value
  int error_number = 0;            // system
  std::string details{};           // task: what the task attached (kiln::TaskError::details)
  std::optional<Ending> ending{};  // child_died: how the worker ended, when known

  static Outcome of_value(Value v) { return {Kind::value, std::move(v), {}, {}}; }
  static Outcome error(Kind kind, std::string message) {
    return {kind, nullptr, {}, std::move(message)};
  }
};

// The result, or the exception the outcome stands for.
inline Value unwrap(Outcome outcome) {
  switch (outcome.kind) {
    case Outcome::Kind::value:
      return std::move(outcome.value);
    case Outcome::Kind::timeout:
      throw TimeoutError(outcome.message);
    case Outcome::Kind::child_died:
      throw ChildProcessError(outcome.message, outcome.ending);
    case Outcome::Kind::protocol:
      throw ProtocolError(outcome.message);
    case Outcome::Kind::task:
      if (outcome.type == kToolFailedType) {  // the worker sent its fields: the same ToolFailed
        if (std::optional<ToolFailure> failure = decode_failure(outcome.details)) {
          throw ToolFailed(std::move(*failure));
        }
      }
      throw TaskError(outcome.type, outcome.message, std::move(outcome.details));
    case Outcome::Kind::cancelled:
      throw Cancelled(outcome.message);
    case Outcome::Kind::invalid_argument:
      throw InvalidArgument(outcome.message);
    case Outcome::Kind::system:
      throw SystemError(outcome.type, outcome.error_number);
    case Outcome::Kind::other:
      break;
  }
  throw Error(outcome.message);
}

}  // namespace kiln::internal
