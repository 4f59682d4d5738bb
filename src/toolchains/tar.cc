#include "kiln/tar.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "archive.h"
#include "internal/fd.h"
#include "internal/files.h"
#include "kiln/error.h"
#include "kiln/temp_directory.h"
#include "kiln_build_info.h"

namespace kiln {
namespace fs = std::filesystem;
namespace {

using internal::UniqueFd;

struct WriteDeleter {
  void operator()(archive* a) const noexcept { archive_write_free(a); }
};
struct EntryDeleter {
  void operator()(archive_entry* e) const noexcept { archive_entry_free(e); }
};
using Writer = std::unique_ptr<archive, WriteDeleter>;
using Entry = std::unique_ptr<archive_entry, EntryDeleter>;

// ---- tar() ----

// The member names: the inputs' base names, each one only once.
std::vector<std::string> member_names(const std::vector<fs::path>& files) {
  std::vector<std::string> names;
  std::set<std::string> seen;
  for (const fs::path& file : files) {
    std::string name = file.filename().string();
    if (name.empty() || name == "." || name == "..") {
      throw InvalidArgument(fmt::format("tar: '{}' does not name a file", file.string()));
    }
    if (!seen.insert(name).second) throw InvalidArgument("duplicate file name " + name);
    names.push_back(std::move(name));
  }
  return names;
}

// A file created beside `output` under a fresh name; removed unless commit() renamed it onto
// `output`, so a failure never leaves a partial archive.
class TempOutput {
 public:
  explicit TempOutput(const fs::path& output) : output_(output) {
    static std::atomic<unsigned> sequence{0};
    int error = 0;
    for (int attempt = 0; attempt < 100 && !fd_; ++attempt) {
      path_ = output;
      path_.replace_filename(fmt::format(".{}.kiln-{}-{}.tmp", output.filename().string(),
                                         ::getpid(), sequence.fetch_add(1)));
      fd_.reset(internal::retry_eintr(
          [&] { return ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666); }));
      error = errno;
      if (!fd_ && error != EEXIST) break;
    }
    if (!fd_) {
      path_.clear();  // nothing of ours to remove
      throw SystemError(fmt::format("create '{}'", output.string()), error);
    }
  }
  TempOutput(const TempOutput&) = delete;
  TempOutput& operator=(const TempOutput&) = delete;
  ~TempOutput() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }

  int fd() const noexcept { return fd_.get(); }

  void commit() {
    fd_.reset();
    internal::move_into_place(path_, output_);  // never over a device: it says what is there
    path_.clear();
  }

 private:
  fs::path output_;
  fs::path path_;
  UniqueFd fd_;
};

[[noreturn]] void throw_write_error(archive* writer, const fs::path& output) {
  throw ArchiveError(
      fmt::format("Tar error: writing '{}': {}", output.string(), internal::archive_error(writer)));
}

// Streams exactly `size` bytes of `fd` into the current member.
void copy_file_data(archive* writer, int fd, off_t size, const fs::path& file,
                    const fs::path& output) {
  std::string buffer(internal::kArchiveBlock, '\0');
  off_t left = size;
  while (left > 0) {
    size_t want = static_cast<size_t>(std::min<off_t>(left, static_cast<off_t>(buffer.size())));
    ssize_t n = internal::retry_eintr([&] { return ::read(fd, buffer.data(), want); });
    if (n < 0) throw SystemError(fmt::format("read '{}'", file.string()), errno);
    if (n == 0) {
      throw ArchiveError(fmt::format("Tar error: '{}' shrank while archived", file.string()));
    }
    if (archive_write_data(writer, buffer.data(), static_cast<size_t>(n)) < 0) {
      throw_write_error(writer, output);
    }
    left -= n;
  }
}

// Adds `file` as the regular-file member `name`: its bytes, rwx bits and mtime.
void add_file(archive* writer, const fs::path& file, const std::string& name,
              const fs::path& output) {
  UniqueFd fd = internal::open_input(file, "tar: input file");
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0)
    throw SystemError(fmt::format("fstat '{}'", file.string()), errno);
  if (!S_ISREG(st.st_mode)) {
    throw InvalidArgument(fmt::format("tar: '{}' is not a regular file", file.string()));
  }
  Entry entry(archive_entry_new());
  archive_entry_copy_pathname(entry.get(), name.c_str());
  archive_entry_set_filetype(entry.get(), AE_IFREG);
  archive_entry_set_perm(entry.get(), st.st_mode & 0777);
  archive_entry_set_size(entry.get(), st.st_size);
  archive_entry_set_mtime(entry.get(), st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  if (archive_write_header(writer, entry.get()) != ARCHIVE_OK) throw_write_error(writer, output);
  copy_file_data(writer, fd.get(), st.st_size, file, output);
  if (archive_write_finish_entry(writer) != ARCHIVE_OK) throw_write_error(writer, output);
}

// A gzip-compressed pax (ustar-compatible) writer onto `fd`.
Writer open_gzip_writer(int fd, const fs::path& output) {
  Writer writer(archive_write_new());
  if (!writer) throw ArchiveError("Tar error: libarchive could not allocate a writer");
  if (archive_write_add_filter_gzip(writer.get()) != ARCHIVE_OK ||
      archive_write_set_filter_option(writer.get(), "gzip", "compression-level", "1") !=
          ARCHIVE_OK ||
      archive_write_set_format_pax_restricted(writer.get()) != ARCHIVE_OK ||
      archive_write_open_fd(writer.get(), fd) != ARCHIVE_OK) {
    throw_write_error(writer.get(), output);
  }
  return writer;
}

// The regular files under `directory` (symbolic links not followed), sorted.
std::vector<fs::path> regular_files(const fs::path& directory) {
  std::vector<fs::path> found;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(directory, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->symlink_status(ec).type() == fs::file_type::regular) found.push_back(it->path());
  }
  if (ec) throw SystemError(fmt::format("list '{}'", directory.string()), ec.value());
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace

void tar(const fs::path& output, const std::vector<fs::path>& files) {
  std::vector<std::string> names = member_names(files);
  TempOutput temp(output);
  Writer writer = open_gzip_writer(temp.fd(), output);
  for (size_t i = 0; i < files.size(); ++i) add_file(writer.get(), files[i], names[i], output);
  if (archive_write_close(writer.get()) != ARCHIVE_OK) throw_write_error(writer.get(), output);
  temp.commit();
}
Recipe tar_recipe(const fs::path& output, const std::vector<fs::path>& files) {
  std::string version = std::string("kiln tar ") + KILN_VERSION_STRING;
  Recipe recipe{.tools = {{.what = "kiln's tar",
                           .program = version,
                           .identity = version,
                           .in_process = true}},
                .inputs = files};
  recipe.steps.emplace_back(
      CallStep{.name = "tar", .tool = version, .call = [output, files] { tar(output, files); }});
  return recipe;
}

std::vector<fs::path> normalize_file_list_by_unpacking_tars(const TempDirectory& temp,
                                                            const std::vector<fs::path>& files) {
  return normalize_file_list_by_unpacking_tars(temp.path(), files);
}

std::vector<fs::path> normalize_file_list_by_unpacking_tars(const fs::path& temp,
                                                            const std::vector<fs::path>& files) {
  std::vector<fs::path> result;
  int count = 0;
  for (const fs::path& file : files) {
    if (!file.string().ends_with(".tar")) {
      result.push_back(file);
      continue;
    }
    fs::path directory = temp / fmt::format("temp{}", count++);
    if (::mkdir(directory.c_str(), 0777) != 0) {
      throw SystemError(fmt::format("mkdir '{}'", directory.string()), errno);
    }
    untar(file, directory);
    std::vector<fs::path> inside = regular_files(directory);
    result.insert(result.end(), inside.begin(), inside.end());
  }
  return result;
}

}  // namespace kiln
