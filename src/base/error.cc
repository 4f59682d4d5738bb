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

std::string tool_failed_message(std::string_view label, std::string_view output,
                                std::string_view command_line, std::string_view status) {
  std::string message = fmt::format("{}\n{}", label, output);
  if (!status.empty()) {
    if (!message.ends_with('\n')) message += '\n';
    message += status;
  }
  return fmt::format("{}\nCommand line: {}", message, command_line);
}

}  // namespace

namespace {
std::string status_line(const Ending& ending, std::string status) {
  if (!status.empty() || ending.kind == Ending::Kind::exited) return status;
  return ending.text();
}
}  // namespace

ToolFailed::ToolFailed(std::string label, std::string output, std::string command_line,
                       Ending ending, std::string status)
    : Error(tool_failed_message(label, output, command_line, status_line(ending, status))),
      label_(std::move(label)),
      output_(std::move(output)),
      command_line_(std::move(command_line)),
      ending_(ending),
      status_(status_line(ending, std::move(status))) {}

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
