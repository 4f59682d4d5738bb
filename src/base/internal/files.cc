#include "internal/files.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "kiln/error.h"

namespace kiln::internal {

namespace fs = std::filesystem;

void move_into_place(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (!ec) return;
  if (ec != std::errc::cross_device_link) {
    throw SystemError(fmt::format("rename '{}' to '{}'", from.string(), to.string()), ec.value());
  }
  fs::path staging = to;
  staging += ".kiln-tmp";
  fs::copy_file(from, staging, fs::copy_options::overwrite_existing);
  fs::rename(staging, to);
}

void write_file_atomically(const fs::path& path, std::string_view bytes,
                           std::optional<unsigned> mode) {
  static std::atomic<unsigned long> counter{0};
  fs::path temp = path.parent_path() / fmt::format(".kiln-tmp-{}-{}-{}", ::getpid(), counter++,
                                                   path.filename().string());
  std::error_code ec;
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (out.flush()) {
      out.close();
      if (!mode || ::chmod(temp.c_str(), *mode) == 0) {
        fs::rename(temp, path, ec);
        if (!ec) return;
      }
    }
  }
  fs::remove(temp, ec);
  throw FileNotFound("cannot write " + path.string());
}

std::string read_file(const fs::path& path, std::string_view missing) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileNotFound(fmt::format("{} '{}'", missing, path.string()));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

bool is_file(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec);
}

bool is_dir(const fs::path& path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

}  // namespace kiln::internal
