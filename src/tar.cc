#include "kiln/tar.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "internal/fd.h"
#include "kiln/error.h"
#include "kiln/temp_directory.h"

namespace kiln {
namespace fs = std::filesystem;
namespace {

using internal::UniqueFd;

constexpr size_t kBlock = size_t{64} * 1024;

struct ReadDeleter {
  void operator()(archive* a) const noexcept { archive_read_free(a); }
};
struct WriteDeleter {
  void operator()(archive* a) const noexcept { archive_write_free(a); }
};
struct EntryDeleter {
  void operator()(archive_entry* e) const noexcept { archive_entry_free(e); }
};
using Reader = std::unique_ptr<archive, ReadDeleter>;
using Writer = std::unique_ptr<archive, WriteDeleter>;
using Entry = std::unique_ptr<archive_entry, EntryDeleter>;

std::string archive_error(archive* a) {
  const char* text = archive_error_string(a);
  return text != nullptr ? text : "unknown libarchive error";
}

// Opens an existing file read-only and close-on-exec; a missing one is FileNotFound.
UniqueFd open_input(const fs::path& path, std::string_view what) {
  UniqueFd fd(internal::retry_eintr([&] { return ::open(path.c_str(), O_RDONLY | O_CLOEXEC); }));
  if (fd) return fd;
  int error = errno;
  if (error == ENOENT) {
    throw FileNotFound(fmt::format("{} '{}' does not exist", what, path.string()));
  }
  throw SystemError(fmt::format("open '{}'", path.string()), error);
}

// Splits a member name at '/', dropping empty and "." components.
std::vector<std::string_view> components(std::string_view path) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    size_t slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    if (!part.empty() && part != ".") parts.push_back(part);
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
  }
  return parts;
}

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
    if (::rename(path_.c_str(), output_.c_str()) != 0) {
      throw SystemError(fmt::format("rename '{}' to '{}'", path_.string(), output_.string()),
                        errno);
    }
    path_.clear();
  }

 private:
  fs::path output_;
  fs::path path_;
  UniqueFd fd_;
};

[[noreturn]] void throw_write_error(archive* writer, const fs::path& output) {
  throw Error(fmt::format("Tar error: writing '{}': {}", output.string(), archive_error(writer)));
}

// Streams exactly `size` bytes of `fd` into the current member.
void copy_file_data(archive* writer, int fd, off_t size, const fs::path& file,
                    const fs::path& output) {
  std::string buffer(kBlock, '\0');
  off_t left = size;
  while (left > 0) {
    size_t want = static_cast<size_t>(std::min<off_t>(left, static_cast<off_t>(buffer.size())));
    ssize_t n = internal::retry_eintr([&] { return ::read(fd, buffer.data(), want); });
    if (n < 0) throw SystemError(fmt::format("read '{}'", file.string()), errno);
    if (n == 0) throw Error(fmt::format("Tar error: '{}' shrank while archived", file.string()));
    if (archive_write_data(writer, buffer.data(), static_cast<size_t>(n)) < 0) {
      throw_write_error(writer, output);
    }
    left -= n;
  }
}

// Adds `file` as the regular-file member `name`: its bytes, rwx bits and mtime.
void add_file(archive* writer, const fs::path& file, const std::string& name,
              const fs::path& output) {
  UniqueFd fd = open_input(file, "tar: input file");
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
  if (!writer) throw Error("Tar error: libarchive could not allocate a writer");
  if (archive_write_add_filter_gzip(writer.get()) != ARCHIVE_OK ||
      archive_write_set_filter_option(writer.get(), "gzip", "compression-level", "1") !=
          ARCHIVE_OK ||
      archive_write_set_format_pax_restricted(writer.get()) != ARCHIVE_OK ||
      archive_write_open_fd(writer.get(), fd) != ARCHIVE_OK) {
    throw_write_error(writer.get(), output);
  }
  return writer;
}

// ---- untar() ----

// One extraction: the archive being read and the canonical directory members land in.
struct Extraction {
  fs::path archive_path;
  std::string base;  // canonical target directory, no trailing '/'
  archive* reader = nullptr;
  archive* writer = nullptr;
};

[[noreturn]] void refuse(const Extraction& x, std::string_view member, std::string_view reason) {
  throw Error(fmt::format("Tar error: refusing member '{}' of '{}': {}", member,
                          x.archive_path.string(), reason));
}

[[noreturn]] void throw_read_error(const Extraction& x, archive* a, std::string_view member) {
  if (member.empty()) {
    throw Error(
        fmt::format("Tar error: reading '{}': {}", x.archive_path.string(), archive_error(a)));
  }
  throw Error(fmt::format("Tar error: extracting member '{}' of '{}': {}", member,
                          x.archive_path.string(), archive_error(a)));
}

// Gzip, bzip2, xz and zstd in-process; libarchive's other filters would run external programs.
Reader open_reader(const Extraction& x, int fd) {
  Reader reader(archive_read_new());
  if (!reader) throw Error("Tar error: libarchive could not allocate a reader");
  archive* r = reader.get();
  if (archive_read_support_filter_gzip(r) != ARCHIVE_OK ||
      archive_read_support_filter_bzip2(r) != ARCHIVE_OK ||
      archive_read_support_filter_xz(r) != ARCHIVE_OK ||
      archive_read_support_filter_zstd(r) != ARCHIVE_OK ||
      archive_read_support_format_tar(r) != ARCHIVE_OK ||
      archive_read_open_fd(r, fd, kBlock) != ARCHIVE_OK) {
    throw_read_error(x, r, {});
  }
  return reader;
}

// libarchive's own guards, on top of kiln's checks. SECURE_NOABSOLUTEPATHS is left out because
// kiln hands libarchive absolute paths (the target directory plus the member name, already
// checked to be relative): libarchive resolves relative paths against the process-wide working
// directory, which a library must not change.
Writer open_disk_writer() {
  Writer writer(archive_write_disk_new());
  if (!writer) throw Error("Tar error: libarchive could not allocate a disk writer");
  archive_write_disk_set_options(writer.get(), ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                                   ARCHIVE_EXTRACT_SECURE_NODOTDOT |
                                                   ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_PERM);
  return writer;
}

// Refuses absolute names, ".." components and names that denote the target directory itself
// for anything but a directory.
void check_name(const Extraction& x, std::string_view name, bool is_directory) {
  if (name.empty()) refuse(x, name, "the member has no name");
  if (name.front() == '/') refuse(x, name, "absolute path");
  std::vector<std::string_view> parts = components(name);
  if (std::find(parts.begin(), parts.end(), "..") != parts.end()) {
    refuse(x, name, "'..' component in the path");
  }
  if (parts.empty() && !is_directory) refuse(x, name, "it names the target directory itself");
}

// Refuses a member whose parent directories include a symbolic link already on disk: writing
// through it could land anywhere.
void check_parents(const Extraction& x, std::string_view member, std::string_view name) {
  std::vector<std::string_view> parts = components(name);
  std::string path = x.base;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    path += '/';
    path += parts[i];
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return;  // nothing deeper exists yet
    if (S_ISLNK(st.st_mode)) {
      refuse(x, member, fmt::format("'{}' on its path is a symbolic link", path));
    }
  }
}

// A symbolic link may climb with leading ".." no higher than its own directory's depth and then
// only descend. A ".." after a name is refused: the name may itself be a link (to "." say), so
// such a target cannot be judged from its text. Every link kept this way resolves inside.
void check_symlink(const Extraction& x, std::string_view member, std::string_view target) {
  if (target.empty()) refuse(x, member, "symbolic link with an empty target");
  if (target.front() == '/') {
    refuse(x, member, fmt::format("symbolic link to the absolute path '{}'", target));
  }
  size_t depth = components(member).size() - 1;
  size_t climbs = 0;
  bool descended = false;
  for (std::string_view part : components(target)) {
    if (part != "..") {
      descended = true;
    } else if (descended) {
      refuse(x, member, fmt::format("symbolic link target '{}' has '..' after a name", target));
    } else if (++climbs > depth) {
      refuse(x, member, fmt::format("symbolic link to '{}' leads outside the target", target));
    }
  }
}

// A hard link must name a regular file inside the target: relative, no "..", and not a symbolic
// link (link(2) would copy the link itself, whose relative target means something else here).
void check_hardlink(const Extraction& x, std::string_view member, std::string_view target) {
  if (target.empty() || target.front() == '/') {
    refuse(x, member, fmt::format("hard link to '{}' outside the target", target));
  }
  std::vector<std::string_view> parts = components(target);
  if (parts.empty() || std::find(parts.begin(), parts.end(), "..") != parts.end()) {
    refuse(x, member, fmt::format("hard link to '{}' outside the target", target));
  }
  check_parents(x, member, target);
  struct stat st {};
  std::string path = x.base + "/" + std::string(target);
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    refuse(x, member, fmt::format("hard link to '{}', which is not a regular file", target));
  }
}

// Only directories, regular files and symbolic links are extracted.
void check_type(const Extraction& x, std::string_view member, archive_entry* entry) {
  switch (archive_entry_filetype(entry)) {
    case AE_IFREG:
    case AE_IFDIR:
    case AE_IFLNK:
      return;
    case AE_IFCHR:
      refuse(x, member, "character device node");
    case AE_IFBLK:
      refuse(x, member, "block device node");
    case AE_IFIFO:
      refuse(x, member, "FIFO");
    case AE_IFSOCK:
      refuse(x, member, "socket");
    default:
      refuse(x, member, fmt::format("unsupported member type {:o}", archive_entry_filetype(entry)));
  }
}

// Every check, before anything of the member is written.
void check_member(const Extraction& x, archive_entry* entry, std::string_view name) {
  const char* hardlink = archive_entry_hardlink(entry);
  bool is_directory = hardlink == nullptr && archive_entry_filetype(entry) == AE_IFDIR;
  check_name(x, name, is_directory);
  check_parents(x, name, name);
  if ((archive_entry_mode(entry) & (S_ISUID | S_ISGID)) != 0) {
    refuse(x, name, "setuid or setgid bit set");
  }
  if (hardlink != nullptr) {
    check_hardlink(x, name, hardlink);
    return;
  }
  check_type(x, name, entry);
  if (archive_entry_filetype(entry) == AE_IFLNK) {
    const char* target = archive_entry_symlink(entry);
    check_symlink(x, name, target != nullptr ? target : "");
  }
}

void copy_member_data(const Extraction& x, std::string_view member) {
  const void* block = nullptr;
  size_t size = 0;
  la_int64_t offset = 0;
  for (;;) {
    int r = archive_read_data_block(x.reader, &block, &size, &offset);
    if (r == ARCHIVE_EOF) return;
    if (r < ARCHIVE_WARN) throw_read_error(x, x.reader, member);
    if (archive_write_data_block(x.writer, block, size, offset) < ARCHIVE_WARN) {
      throw_read_error(x, x.writer, member);
    }
  }
}

// Checks the member, then writes it under the target directory.
void extract_member(const Extraction& x, archive_entry* entry) {
  const char* raw_name = archive_entry_pathname(entry);
  if (raw_name == nullptr) refuse(x, "?", "the member's name cannot be decoded");
  std::string name = raw_name;
  check_member(x, entry, name);
  archive_entry_copy_pathname(entry, (x.base + "/" + name).c_str());
  if (const char* hardlink = archive_entry_hardlink(entry)) {
    archive_entry_copy_hardlink(entry, (x.base + "/" + hardlink).c_str());
  }
  if (archive_write_header(x.writer, entry) < ARCHIVE_WARN) throw_read_error(x, x.writer, name);
  if (archive_entry_size(entry) > 0) copy_member_data(x, name);
  if (archive_write_finish_entry(x.writer) < ARCHIVE_WARN) throw_read_error(x, x.writer, name);
}

// The target directory, created if missing, without symbolic links in its path (libarchive's
// SECURE_SYMLINKS would refuse every member below one).
std::string canonical_directory(const fs::path& directory) {
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (ec) throw SystemError(fmt::format("create directory '{}'", directory.string()), ec.value());
  fs::path canonical = fs::canonical(directory, ec);
  if (ec) throw SystemError(fmt::format("resolve '{}'", directory.string()), ec.value());
  std::string base = canonical.string();
  if (base == "/") base.clear();
  return base;
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

void untar(const fs::path& archive_path, const fs::path& directory) {
  UniqueFd fd = open_input(archive_path, "tar: archive");
  Extraction x{.archive_path = archive_path, .base = canonical_directory(directory)};
  Reader reader = open_reader(x, fd.get());
  Writer writer = open_disk_writer();
  x.reader = reader.get();
  x.writer = writer.get();
  for (;;) {
    archive_entry* entry = nullptr;
    int r = archive_read_next_header(x.reader, &entry);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) throw_read_error(x, x.reader, {});
    extract_member(x, entry);
  }
  // Directory permissions and times are applied here, after their contents were written.
  if (archive_write_close(x.writer) != ARCHIVE_OK) throw_read_error(x, x.writer, {});
}

std::vector<fs::path> normalize_file_list_by_unpacking_tars(const TempDirectory& temp,
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
