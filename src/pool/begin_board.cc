#include "begin_board.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <new>
#include <utility>

#include "kiln/error.h"

namespace kiln::internal {

// Lock-free 64-bit atomics are address-free, so two processes may share them. The worker stores
// the time, then (release) the request; the parent loads the request (acquire), then the time. A
// worker already on its next request may have stored that one's later time: the parent then sees
// a later start for a call whose answer is already in the pipe, which it reads first.
struct BeginBoard::Board {
  std::atomic<std::uint64_t> request;
  std::atomic<std::int64_t> began_ns;
};

namespace {

constexpr std::size_t kBoardBytes = 4096;
constexpr int kSeals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;

void* map_board(int fd) {
  void* p = ::mmap(nullptr, kBoardBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : p;
}

}  // namespace

BeginBoard::~BeginBoard() {
  if (board_ != nullptr) (void)::munmap(board_, kBoardBytes);
}

BeginBoard::BeginBoard(BeginBoard&& other) noexcept
    : board_(std::exchange(other.board_, nullptr)), fd_(std::move(other.fd_)) {}

BeginBoard& BeginBoard::operator=(BeginBoard&& other) noexcept {
  if (this != &other) {
    if (board_ != nullptr) (void)::munmap(board_, kBoardBytes);
    board_ = std::exchange(other.board_, nullptr);
    fd_ = std::move(other.fd_);
  }
  return *this;
}

BeginBoard BeginBoard::create() {
  BeginBoard b;
  b.fd_.reset(::memfd_create("kiln-pool-board", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!b.fd_) throw SystemError("memfd_create (pool worker board)", errno);
  if (::ftruncate(b.fd_.get(), kBoardBytes) != 0) throw SystemError("ftruncate", errno);
  if (::fcntl(b.fd_.get(), F_ADD_SEALS, kSeals) != 0) throw SystemError("fcntl F_ADD_SEALS", errno);
  void* p = map_board(b.fd_.get());
  if (p == nullptr) throw SystemError("mmap (pool worker board)", errno);
  b.board_ = new (p) Board{};  // request 0, which no call has
  return b;
}

BeginBoard BeginBoard::adopt(int fd) {
  BeginBoard b;
  // Only a sealed memfd of the board's size is taken for one: a worker started by an older
  // parent may find any file at this number.
  struct stat st {};
  if (::fcntl(fd, F_GET_SEALS) != kSeals || ::fstat(fd, &st) != 0 ||
      st.st_size != static_cast<off_t>(kBoardBytes)) {
    return b;
  }
  b.board_ = static_cast<Board*>(map_board(fd));
  if (b.board_ != nullptr) (void)::close(fd);  // the mapping stays; no task inherits it
  return b;
}

void BeginBoard::post(std::uint64_t request) noexcept {
  if (board_ == nullptr) return;
  auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch());
  board_->began_ns.store(now.count(), std::memory_order_relaxed);
  board_->request.store(request, std::memory_order_release);
}

std::optional<Clock::time_point> BeginBoard::began(std::uint64_t request) const noexcept {
  if (board_ == nullptr || board_->request.load(std::memory_order_acquire) != request) {
    return std::nullopt;
  }
  std::chrono::nanoseconds ns(board_->began_ns.load(std::memory_order_relaxed));
  return Clock::time_point(std::chrono::duration_cast<Clock::duration>(ns));
}

}  // namespace kiln::internal
