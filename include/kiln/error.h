// kiln's errors: one exception hierarchy rooted at kiln::Error.
//
// Every kiln function reports failure by throwing a subclass of kiln::Error; look-ups that may
// legitimately find nothing return std::optional instead. The message of each error names the
// operation, the path or tool involved, and the system's reason where there is one.
//
//   try {
//     kiln::check("Compilation error:", {.argv = {"gcc", "-c", "bad.c"}});
//   } catch (const kiln::ToolFailed& e) {
//     std::cerr << e.what();  // "Compilation error:\n<gcc's output>\nCommand line: gcc -c bad.c"
//   }
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

#include "kiln/ending.h"

namespace kiln {

// The root of every error kiln throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A caller passed something kiln cannot work with (a programming mistake or bad user input).
class InvalidArgument : public Error {
 public:
  using Error::Error;
};

// A file or directory that had to exist does not.
class FileNotFound : public Error {
 public:
  using Error::Error;
};

// A system call failed; the message names the operation, the path and errno's text.
class SystemError : public Error {
 public:
  SystemError(std::string_view operation, int error_number);
  int error_number() const noexcept { return error_number_; }

 private:
  int error_number_;
};

// A tool could not be started at all. Its subclasses say why.
class CannotRunTool : public Error {
 public:
  CannotRunTool(std::string tool, const std::string& message);
  const std::string& tool() const noexcept { return tool_; }

 private:
  std::string tool_;
};

// The executable does not exist (the message names the PATH that was searched).
class ToolNotFound : public CannotRunTool {
 public:
  using CannotRunTool::CannotRunTool;
};

// The executable exists but cannot be executed: a directory, no execute permission, or not a
// format the kernel can run.
class ToolNotExecutable : public CannotRunTool {
 public:
  using CannotRunTool::CannotRunTool;
};

// A tool ran and failed: non-zero exit, killed by a signal, ended at its deadline or cancelled;
// ending() says which (kiln/ending.h). The message is the seed's: the label, the tool's output,
// then "Command line: " and the command; when the tool did not simply exit non-zero, a line with
// its status ("killed by signal SIGSEGV", "timed out after 2s") stands before the command line.
// A library that compiles in-process (NVRTC, nvJitLink) reports a failed compile as a ToolFailed
// with the default ending, exit code 1. kiln::tool_failed() (kiln/process.h) makes one from a
// RunResult.
class ToolFailed : public Error {
 public:
  // `status` empty: ending.text() unless the ending is a plain non-zero exit.
  ToolFailed(std::string label, std::string output, std::string command_line,
             Ending ending = Ending::exited(1), std::string status = {});
  const std::string& label() const noexcept { return label_; }
  const std::string& output() const noexcept { return output_; }
  const std::string& command_line() const noexcept { return command_line_; }
  const Ending& ending() const noexcept { return ending_; }
  // Empty for a plain non-zero exit, else the status line.
  const std::string& status() const noexcept { return status_; }

 private:
  std::string label_;
  std::string output_;
  std::string command_line_;
  Ending ending_;
  std::string status_;
};

// Work did not finish before its deadline.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

// Work was stopped because its RunScope was cancelled (kiln build on Ctrl-C).
class Cancelled : public Error {
 public:
  using Error::Error;
};

// A child process ended unexpectedly (crashed or exited while it owed an answer).
class ChildProcessError : public Error {
 public:
  using Error::Error;
};

// A peer broke the worker protocol: a frame too large, or bytes that do not decode.
class ProtocolError : public Error {
 public:
  using Error::Error;
};

// A pool task threw: carries the exception's type name and message from the worker.
class TaskError : public Error {
 public:
  TaskError(std::string type_name, std::string message);
  const std::string& type_name() const noexcept { return type_name_; }
  // The task's own message, without the type name.
  const std::string& message() const noexcept { return message_; }

 private:
  std::string type_name_;
  std::string message_;
};

}  // namespace kiln
