// How one call ended, as plain data. The exception a caller sees is made from it in the caller's
// own thread (unwrap), so no exception object is ever shared between threads. (Sharing one goes
// through reference counts inside libstdc++ that ThreadSanitizer cannot see.)
#pragma once

#include <string>

#include "kiln/error.h"
#include "kiln/pool.h"

namespace kiln::internal {

struct Outcome {
  enum Kind {
    kValue,
    kTimeout,
    kChildDied,
    kProtocol,
    kTask,
    kCancelled,
    kInvalidArgument,
    kSystem,
    kOther,  // an error of a type the pool does not carry: unwrap() throws the root class
  } kind = kValue;
  Value value{};
  std::string type{};     // kTask: the task's exception type; kSystem: the failed operation
  std::string message{};  // everything but kValue
  int error_number = 0;   // kSystem

  static Outcome of_value(Value v) { return {kValue, std::move(v), {}, {}}; }
  static Outcome error(Kind kind, std::string message) {
    return {kind, nullptr, {}, std::move(message)};
  }
};

// The result, or the exception the outcome stands for.
inline Value unwrap(Outcome outcome) {
  switch (outcome.kind) {
    case Outcome::kValue:
      return std::move(outcome.value);
    case Outcome::kTimeout:
      throw TimeoutError(outcome.message);
    case Outcome::kChildDied:
      throw ChildProcessError(outcome.message);
    case Outcome::kProtocol:
      throw ProtocolError(outcome.message);
    case Outcome::kTask:
      throw TaskError(outcome.type, outcome.message);
    case Outcome::kCancelled:
      throw Cancelled(outcome.message);
    case Outcome::kInvalidArgument:
      throw InvalidArgument(outcome.message);
    case Outcome::kSystem:
      throw SystemError(outcome.type, outcome.error_number);
    case Outcome::kOther:
      break;
  }
  throw Error(outcome.message);
}

}  // namespace kiln::internal
