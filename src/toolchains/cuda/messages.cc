// What a front end tells a person about a CUDA compile (kiln/cuda_messages.h).
#include <algorithm>

#include "kiln/cuda_messages.h"

namespace kiln::cuda {
namespace {

std::string_view first_line(std::string_view text) { return text.substr(0, text.find('\n')); }

}  // namespace

ToolFailed brief_failure(const ToolFailed& failure) {
  std::string_view output = failure.output();
  std::string_view label = first_line(output);
  std::string messages(output.substr(std::min(output.size(), label.size() + 1)));
  return {std::string(label), std::move(messages), failure.command_line(), failure.ending(),
          failure.status()};
}

}  // namespace kiln::cuda
