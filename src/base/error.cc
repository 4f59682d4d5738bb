#include "kiln/error.h"

#include <cstring>
#include <utility>

#include <fmt/format.h>

namespace kiln {

SystemError::SystemError(std::string_view operation, int error_number)
    : Error(fmt::format("{}: {}", operation, std::strerror(error_number))),
      error_number_(error_number),
      operation_(operation) {}

CannotRunTool::CannotRunTool(std::string tool, const std::string& message)
    : Error(message), tool_(std::move(tool)) {}

namespace {

// The status line a failure shows: the one given, else the ending's unless it is a plain exit.
ToolFailure with_status_line(ToolFailure failure) {
  if (failure.status.empty() && failure.ending.kind != Ending::Kind::exited) {
    failure.status = failure.ending.text();
  }
  return failure;
}

}  // namespace

std::string brief_text(const ToolFailure& failure) {
  std::string message = fmt::format("{}\n{}", failure.label, failure.output);
  if (!failure.status.empty()) {
    if (!message.ends_with('\n')) message += '\n';
    message += failure.status;
  }
  return fmt::format("{}\nCommand line: {}", message, failure.command_line);
}

std::string seed_text(const ToolFailure& failure) {
  if (failure.source.empty()) return brief_text(failure);
  return fmt::format("{}\n{}", failure.source, brief_text(failure));
}

ToolFailed::ToolFailed(ToolFailure failure)
    : Error(seed_text(with_status_line(failure))), failure_(with_status_line(std::move(failure))) {}

ToolFailed::ToolFailed(std::string label, std::string output, std::string command_line,
                       Ending ending, std::string status)
    : ToolFailed(ToolFailure{.label = std::move(label),
                             .output = std::move(output),
                             .command_line = std::move(command_line),
                             .ending = ending,
                             .status = std::move(status)}) {}

TaskError::TaskError(std::string type_name, std::string message, std::string details)
    : Error(fmt::format("{}: {}", type_name, message)),
      type_name_(std::move(type_name)),
      message_(std::move(message)),
      details_(std::move(details)) {}

LibraryCallFailed::LibraryCallFailed(std::string call, int result, const std::string& message)
    : Error(message), call_(std::move(call)), result_(result) {}

UnusableDirectory::UnusableDirectory(std::filesystem::path path, const std::string& message)
    : Error(message), path_(std::move(path)) {}

}  // namespace kiln
