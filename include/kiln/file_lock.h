// Exclusive file locks between processes and threads, as tvm.support's FileLock.
//
// The lock is a Linux open-file-description lock (F_OFD_SETLK) on the whole file: the kernel
// drops it when its holder closes it or dies, even by SIGKILL, so a killed process can never
// leave a lock behind. It conflicts with the seed's lockf/fcntl locks on the same file, and,
// unlike those, two FileLocks in one process exclude each other too.
//
//   {
//     kiln::FileLock lock("/tmp/cache.lock");          // blocks until held
//     ... update the cache ...
//   }                                                   // released here
//   if (auto lock = kiln::FileLock::try_lock(path)) { ... }                  // never blocks
//   if (auto lock = kiln::FileLock::lock_for(path, std::chrono::seconds(5))) { ... }
//
// The lock file is created (mode 0600) when missing and is never truncated or removed.
// A FileLock object is not itself safe to use from two threads at once; separate objects are.
#pragma once

#include <chrono>
#include <filesystem>
#include <optional>

namespace kiln {

class FileLock {
 public:
  // Blocks until the lock on `path` is held. Throws SystemError (the message names the path)
  // when the file cannot be opened or locked.
  explicit FileLock(const std::filesystem::path& path);
  // The lock if it is free now, else std::nullopt.
  static std::optional<FileLock> try_lock(const std::filesystem::path& path);
  // The lock if it becomes free within `timeout`, else std::nullopt.
  static std::optional<FileLock> lock_for(const std::filesystem::path& path,
                                          std::chrono::milliseconds timeout);

  FileLock(FileLock&& other) noexcept;
  FileLock& operator=(FileLock&& other) noexcept;
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;
  // Releases the lock if still held.
  ~FileLock();

  const std::filesystem::path& path() const noexcept { return path_; }
  bool held() const noexcept { return fd_ >= 0; }
  // Releases the lock now. Idempotent.
  void release() noexcept;

 private:
  FileLock(std::filesystem::path path, int fd) noexcept;

  std::filesystem::path path_;
  int fd_ = -1;
};

// The seed's spelling: a blocking lock on `path`.
FileLock filelock(const std::filesystem::path& path);

}  // namespace kiln
