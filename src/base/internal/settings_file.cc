#include "internal/settings_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "internal/fd.h"
#include "kiln/error.h"
#include "kiln/settings.h"
#include "kiln/text.h"

namespace kiln::internal {

namespace {

constexpr off_t kMaxBytes = 64 << 10;

// The file's bytes, or why it is ignored whole ("" and std::nullopt text: it does not exist).
std::string read_trusted(const std::string& path, std::string& why) {
  UniqueFd fd(retry_eintr([&] {
    return ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  }));
  if (!fd) {
    if (errno != ENOENT && errno != ENOTDIR) why = std::strerror(errno);
    return "";
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) {
    why = std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    why = "not a regular file";
  } else if (st.st_uid != ::geteuid() && st.st_uid != 0) {
    why = "owned by another user";
  } else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    why = "writable by others";
  } else if (st.st_size > kMaxBytes) {
    why = fmt::format("{} bytes, more than a settings file's {}", st.st_size, kMaxBytes);
  }
  if (!why.empty()) return "";
  std::string text(static_cast<size_t>(st.st_size), '\0');
  ssize_t got = retry_eintr([&] { return ::read(fd.get(), text.data(), text.size()); });
  if (got < 0) {
    why = std::strerror(errno);
    return "";
  }
  text.resize(static_cast<size_t>(got));
  return text;
}

// The problem with `name` as a line of the file, "" when it may be set there.
std::string refused_name(const std::string& name) {
  try {
    if (settings::find(name).environment_only) {
      return fmt::format("{} is read only from the environment", name);
    }
  } catch (const InvalidArgument&) {
    return fmt::format("{} is not a kiln setting", printable(name));
  }
  return "";
}

}  // namespace

SettingsFile read_settings_file(const std::string& path) {
  SettingsFile file;
  std::string why;
  std::string text = read_trusted(path, why);
  if (!why.empty()) {
    file.problems.push_back(fmt::format("settings file {}: {}: ignored", path, why));
    return file;
  }
  size_t number = 0;
  for (std::string_view rest = text; !rest.empty();) {
    size_t end = std::min(rest.find('\n'), rest.size());
    std::string_view line = trimmed(rest.substr(0, end));
    rest.remove_prefix(std::min(end + 1, rest.size()));
    ++number;
    if (line.empty() || line.front() == '#') continue;
    std::string where = fmt::format("{}:{}", path, number);
    size_t equals = line.find('=');
    if (equals == std::string_view::npos) {
      file.problems.push_back(fmt::format("{}: not NAME=value: '{}'", where, printable(line)));
      continue;
    }
    std::string name(trimmed(line.substr(0, equals)));
    std::string value(trimmed(line.substr(equals + 1)));
    if (std::string problem = refused_name(name); !problem.empty()) {
      file.problems.push_back(fmt::format("{}: {}", where, problem));
      continue;
    }
    if (value.empty()) {
      file.values.erase(name);
    } else {
      file.values[name] = {std::move(value), std::move(where)};
    }
  }
  return file;
}

}  // namespace kiln::internal
