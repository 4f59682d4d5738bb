// The settings file (kiln/settings.h): NAME=value lines, read once per process.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace kiln::internal {

struct SettingsFile {
  struct Entry {
    std::string text;   // the value, never empty
    std::string where;  // "<path>:<line>"
  };
  std::map<std::string, Entry> values;  // by setting name; a later line wins
  // What was wrong, one message each ("<path>:3: KILN_FOO is not a kiln setting"); the file is
  // ignored whole when others may write it or it is no regular file.
  std::vector<std::string> problems;
};

// Reads `path`: a missing file is an empty one. Lines are `NAME=value` (spaces around either
// trimmed), blank, or comments starting with '#'; an empty value is no value. Names must be
// settings of the table that the file may hold (not environment-only ones). The file must be a
// regular file of at most 64 KiB, owned by this user (or root) and not writable by others.
SettingsFile read_settings_file(const std::string& path);

}  // namespace kiln::internal

namespace kiln::internal {

// Forgets every value settings::set_by_flag() set and which variables were warned about: for
// tests, which must not leave a flag's value (or a spent warning) to the tests after them.
void forget_settings_state();

}  // namespace kiln::internal
