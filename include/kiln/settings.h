// kiln's own settings: every KILN_* variable that kiln reads, once, in one table with its type,
// default, meaning and the part of kiln that reads it, and the typed readers that are the only
// code reading them. `kiln settings` lists them with their values and origins, and
// docs/settings.md is that table as text (a test keeps the two equal).
//
//   if (kiln::settings::flag("KILN_SERVER_DEBUG")) ...;            // the one flag rule
//   auto limit = kiln::settings::seconds("KILN_REMOTE_CACHE_TIMEOUT");  // the table's default: 2 s
//   kiln::settings::set_by_flag("KILN_REMOTE_CACHE", url, "--remote-cache");  // the CLI's option
//   kiln::settings::Value v = kiln::settings::value("KILN_CACHE_DIR");  // v.origin, v.where
//
// Where a value comes from, strongest first: a CLI flag of this process (set_by_flag), the
// environment, the settings file (KILN_CONFIG, else $XDG_CONFIG_HOME/kiln/kiln.conf, else
// ~/.config/kiln/kiln.conf: NAME=value lines, `#` comments), the table's default. An empty value
// is no value: `KILN_NO_CACHE=` leaves the cache on. Flags: 0, false, no and off (any case) are
// false, anything else is true; a value that is none of 1/true/yes/on/0/false/no/off is taken as
// true with one warning. A value the setting's type does not take (seconds out of range, a mode
// not in its list) is, per setting, an InvalidArgument naming the variable (settings whose wrong
// value would send work somewhere unintended: the remote cache) or one warning and the default.
// Warnings go to stderr once per variable and process. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "kiln/enum_names.h"

namespace kiln::settings {

enum class Type {
  flag,     // on or off
  path,     // a file or directory
  url,      // a URL (checked by its reader, e.g. the remote cache's scheme registry)
  choice,   // one of `choices`
  seconds,  // a number of seconds, maybe fractional, within [minimum, maximum]
  bytes,    // a whole number of bytes within [minimum, maximum]
};

inline constexpr EnumName<Type> kTypeNames[] = {
    {Type::flag, "flag"},     {Type::path, "path"},       {Type::url, "url"},
    {Type::choice, "choice"}, {Type::seconds, "seconds"}, {Type::bytes, "bytes"}};
static_assert(in_enum_order(kTypeNames, Type::bytes), "a name for every settings::Type");

enum class Origin { default_value, file, env, flag };

inline constexpr EnumName<Origin> kOriginNames[] = {{Origin::default_value, "default"},
                                                    {Origin::file, "file"},
                                                    {Origin::env, "env"},
                                                    {Origin::flag, "flag"}};
static_assert(in_enum_order(kOriginNames, Origin::flag), "a name for every settings::Origin");

// "default", "file", "env", "flag" (kOriginNames).
inline std::string_view origin_name(Origin origin) { return enum_name(kOriginNames, origin); }
// "flag", "path", "url", "choice", "seconds", "bytes" (kTypeNames).
inline std::string_view type_name(Type type) { return enum_name(kTypeNames, type); }

// One row of the table.
struct Setting {
  std::string_view name;
  Type type;
  // The default as it would be written in the environment ("2", "read-only"), or "" when the
  // default is not one value (`default_text` then says what happens).
  std::string_view default_value{};
  // The default in words, for the listing and the docs ("$XDG_CACHE_HOME/kiln, else
  // ~/.cache/kiln"); "" when `default_value` says it all.
  std::string_view default_text{};
  // Choice: the values taken, separated by '|'.
  std::string_view choices{};
  // Seconds and bytes: the range taken; `minimum_open`: the minimum itself is not.
  double minimum = 0;
  double maximum = 0;
  bool minimum_open = false;
  // Whether a value the type does not take is an error (InvalidArgument) rather than a warning.
  bool invalid_is_error = false;
  // Read only from the environment, never from the settings file: read where kiln's library
  // is not loaded yet (KILN_TVM, read by the Python startup hook before it may load kiln).
  bool environment_only = false;
  // The part of kiln that reads it: "cache", "remote cache", "NVRTC", "pool", "Python", ...
  std::string_view reader{};
  // One line: what it does.
  std::string_view meaning{};
};

// Every setting, in the order `kiln settings` and docs/settings.md list them.
std::span<const Setting> table();

// The row of `name`; InvalidArgument when kiln has no such setting (a programming error).
const Setting& find(std::string_view name);

// A setting's effective value, before its type is read.
struct Value {
  const Setting* setting = nullptr;
  std::optional<std::string> text;  // std::nullopt: unset (the default applies)
  Origin origin = Origin::default_value;
  // Where it was set: "--remote-cache", "environment", "/home/u/.config/kiln/kiln.conf:3", "".
  std::string where;
};
Value value(std::string_view name);

// The typed readers; each applies the table's default when the setting is unset.
bool flag(std::string_view name);
// Path, URL and choice settings: the text (a choice checked against its list), std::nullopt when
// unset without a default.
std::optional<std::string> text(std::string_view name);
std::optional<std::chrono::milliseconds> seconds(std::string_view name);
std::optional<std::uint64_t> bytes(std::string_view name);

// A seconds or bytes setting's range in words: "in (0, 600]"; "" for the other types.
std::string range_text(const Setting& setting);

// The text of `value` as the setting `name` would read it: "" when fine, else what is wrong
// ("KILN_REMOTE_CACHE_MODE must be read-only or read-write, not 'rw'").
std::string invalid(std::string_view name, std::string_view value);

// A CLI flag's value for `name`, above the environment in this process and passed to the
// processes it starts (child_environment()). InvalidArgument naming `flag_name` when the value is
// not one the setting takes.
void set_by_flag(std::string_view name, std::string_view value, std::string_view flag_name);

// The variables a child process must get so that it sees this process's settings: those set by
// flag (the environment and the settings file reach it by themselves).
std::map<std::string, std::string> child_environment();

// The settings file this process reads (whether or not it exists), and why none when no
// location can be named (no KILN_CONFIG, XDG_CONFIG_HOME or HOME).
std::optional<std::string> file_path();

}  // namespace kiln::settings
