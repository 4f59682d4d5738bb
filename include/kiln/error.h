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

#include <filesystem>
#include <optional>
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
  // What failed, as given: the message without errno's text.
  const std::string& operation() const noexcept { return operation_; }

 private:
  int error_number_;
  std::string operation_;
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

// What a failed tool run is made of, as data. kiln's front ends, the pool and the compile server
// carry these fields; the seed's message and the brief one are two ways of writing them
// (seed_text, brief_text), and neither is ever parsed back.
struct ToolFailure {
  // What failed, in the seed's words: "Compilation error:", "NVRTC compilation failed:",
  // "AR error:", "Linking error using ld.lld:".
  std::string label{};
  // The tool's own messages (its output, NVRTC's log), with any note kiln added.
  std::string output{};
  // The command as a shell would show it ("nvrtc --gpu-architecture=sm_80 ..." for NVRTC).
  std::string command_line{};
  Ending ending = Ending::exited(1);
  // "" for a plain non-zero exit, else the status line ("killed by signal SIGSEGV").
  std::string status{};
  // A CUDA compile's program text, which the seed's message starts with; "" for other tools.
  std::string source{};
  // The user's file that source came from, when the caller named one.
  std::filesystem::path source_path{};
};

// The seed's message: the source (when there is one), the label, the output, the status line
// (when there is one), then "Command line: " and the command.
//   "__global__ void k() { x }\nNVRTC compilation failed:\n<log>\nCommand line: nvrtc ..."
std::string seed_text(const ToolFailure& failure);

// The same without the source, for a person reading a build log: the compiler's messages
// already name the user's file and lines.
//   "NVRTC compilation failed:\n<log>\nCommand line: nvrtc ..."
std::string brief_text(const ToolFailure& failure);

// A tool ran and failed: non-zero exit, killed by a signal, ended at its deadline or cancelled;
// ending() says which (kiln/ending.h). The message is the seed's (seed_text); when the tool did
// not simply exit non-zero, a line with its status ("killed by signal SIGSEGV", "timed out after
// 2s") stands before the command line. A library that compiles in-process (NVRTC, nvJitLink)
// reports a failed compile as a ToolFailed with the default ending, exit code 1, whose source()
// is the program. kiln::tool_failed() (kiln/process.h) makes one from a RunResult.
class ToolFailed : public Error {
 public:
  // An empty `status` becomes ending.text() unless the ending is a plain non-zero exit.
  explicit ToolFailed(ToolFailure failure);
  ToolFailed(std::string label, std::string output, std::string command_line,
             Ending ending = Ending::exited(1), std::string status = {});
  const ToolFailure& failure() const noexcept { return failure_; }
  const std::string& label() const noexcept { return failure_.label; }
  const std::string& output() const noexcept { return failure_.output; }
  const std::string& command_line() const noexcept { return failure_.command_line; }
  const Ending& ending() const noexcept { return failure_.ending; }
  // Empty for a plain non-zero exit, else the status line.
  const std::string& status() const noexcept { return failure_.status; }
  const std::string& source() const noexcept { return failure_.source; }
  const std::filesystem::path& source_path() const noexcept { return failure_.source_path; }

 private:
  ToolFailure failure_;
};

// Work did not finish before its deadline.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

// Work was stopped before it finished: its RunScope was cancelled (kiln build on Ctrl-C), or the
// pool running it was shut down without waiting.
class Cancelled : public Error {
 public:
  using Error::Error;
};

// A child process ended unexpectedly (crashed or exited while it owed an answer). ending() says
// how, when that is known: Ending::signaled(SIGSEGV) for a worker that crashed, exited(N) for one
// that exited; std::nullopt when its status was taken elsewhere or it is alive but broke off.
class ChildProcessError : public Error {
 public:
  explicit ChildProcessError(const std::string& message, std::optional<Ending> ending = {})
      : Error(message), ending_(ending) {}
  const std::optional<Ending>& ending() const noexcept { return ending_; }

 private:
  std::optional<Ending> ending_;
};

// A peer broke the worker protocol: a frame too large, or bytes that do not decode.
class ProtocolError : public Error {
 public:
  using Error::Error;
};

// A pool task threw: carries the exception's type name and message from the worker.
class TaskError : public Error {
 public:
  // A task may throw one itself, to choose the type name its caller sees and to attach details
  // (bytes: a Python worker's pickled exception).
  TaskError(std::string type_name, std::string message, std::string details = {});
  const std::string& type_name() const noexcept { return type_name_; }
  // The task's own message, without the type name.
  const std::string& message() const noexcept { return message_; }
  // What the task attached; empty when nothing.
  const std::string& details() const noexcept { return details_; }

 private:
  std::string type_name_;
  std::string message_;
  std::string details_;
};

// A call into a library kiln loads at run time (NVRTC, nvJitLink) returned an error code. The
// message names the call and gives the library's own text for the code where it has one.
class LibraryCallFailed : public Error {
 public:
  LibraryCallFailed(std::string call, int result, const std::string& message);
  // The library function, e.g. "nvrtcCreateProgram".
  const std::string& call() const noexcept { return call_; }
  // What it returned (an nvrtcResult, an nvJitLinkResult).
  int result() const noexcept { return result_; }

 private:
  std::string call_;
  int result_;
};

// libarchive could not read or write an archive: a corrupt or truncated archive, a format it does
// not read, a file that changed while it was archived. The message starts with the seed's
// "Tar error: " and names the archive.
class ArchiveError : public Error {
 public:
  using Error::Error;
};

// untar refused a member that would write outside its target directory or make something other
// than files, directories and links within it (an absolute name, "..", a link leading out, a
// device). The archive is hostile or broken; nothing of the member was written. The message names
// the member, the archive and the reason.
class UnsafeArchiveMember : public ArchiveError {
 public:
  using ArchiveError::ArchiveError;
};

// A directory kiln must be able to trust (the cache, the parent of kept debug temp directories) is
// not a real directory, belongs to another user, or others can write to it, so whoever controls it
// could plant or alter files; or none is configured at all. kiln refuses to use it; the message
// names the directory (empty path() when there was none) and how to fix it.
class UnusableDirectory : public Error {
 public:
  UnusableDirectory(std::filesystem::path path, const std::string& message);
  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

// A tool, library or file gave kiln an answer it cannot use: a CUDA version file that holds no
// version, `nvcc --version` or `cc -dumpmachine` that tell nothing, a compiler that reports
// success but produced no bytes.
class UnexpectedOutput : public Error {
 public:
  using Error::Error;
};

// An object was used in a state that forbids the call: a programming mistake, like submit() to a
// pool after its shutdown(), or Worker::recv() with no call sent. A kind of InvalidArgument (the
// object called is the argument in the wrong state).
class InvalidState : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

}  // namespace kiln
