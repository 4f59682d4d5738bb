// Where a worker posts when its current task's preparation ended (pool::task_begins), for the
// parent to read when that task's deadline comes up: a page of memory both share (a memfd the
// parent makes and hands down as descriptor kBoardFd). Reading it costs the parent nothing until
// a deadline passes, and the worker a clock read and two stores per report: no frame on the pipe.
#pragma once

#include <cstdint>
#include <optional>

#include "internal/fd.h"
#include "internal/spawn.h"

namespace kiln::internal {

class BeginBoard {
 public:
  BeginBoard() = default;
  ~BeginBoard();
  BeginBoard(BeginBoard&& other) noexcept;
  BeginBoard& operator=(BeginBoard&& other) noexcept;
  BeginBoard(const BeginBoard&) = delete;
  BeginBoard& operator=(const BeginBoard&) = delete;

  // The parent's side: a fresh board and the descriptor to hand the worker. Throws SystemError.
  static BeginBoard create();
  // The worker's side: the board behind descriptor `fd`, when it is one (a sealed memfd of the
  // board's size); an empty board otherwise, whose post() does nothing. Closes `fd` when it is.
  static BeginBoard adopt(int fd);

  explicit operator bool() const noexcept { return board_ != nullptr; }
  // The descriptor create() made (-1 once adopted or empty).
  int fd() const noexcept { return fd_.get(); }
  // Worker: request number `request` (counted from 1 since the worker started) begins now.
  void post(std::uint64_t request) noexcept;
  // Parent: when request `request` began, if the worker posted it and has posted nothing since.
  std::optional<Clock::time_point> began(std::uint64_t request) const noexcept;

 private:
  struct Board;
  Board* board_ = nullptr;
  UniqueFd fd_;
};

}  // namespace kiln::internal
