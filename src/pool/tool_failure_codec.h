// A ToolFailed crosses the worker boundary as its fields: the worker answers an error of type
// "kiln::ToolFailed" whose details are encode_failure()'s bytes, and the caller throws a
// ToolFailed again from decode_failure(), equal field for field, rather than a TaskError that
// only holds the message.
//
//   std::string details = encode_failure(e.failure());          // in the worker
//   if (auto failure = decode_failure(details)) throw ToolFailed(std::move(*failure));
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "kiln/error.h"

namespace kiln::internal {

// The type name a worker answers a ToolFailed under (what the demangler names it).
inline constexpr std::string_view kToolFailedType = "kiln::ToolFailed";

// The fields as CBOR bytes.
std::string encode_failure(const ToolFailure& failure);

// The fields again; std::nullopt for bytes that are not encode_failure()'s (a worker of another
// kiln version, a task that attached its own details): the caller keeps the TaskError.
std::optional<ToolFailure> decode_failure(std::string_view details);

}  // namespace kiln::internal
