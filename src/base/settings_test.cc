#include "kiln/settings.h"

#include <sys/stat.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "internal/settings_file.h"
#include "kiln/error.h"
#include "kiln/temp_directory.h"
#include "testing/test_support.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

using testing::ScopedEnv;

class Settings : public ::testing::Test {
 protected:
  void TearDown() override { internal::forget_settings_state(); }
};

TEST_F(Settings, EveryRowIsAKilnVariableOnceWithAMeaning) {
  std::set<std::string_view> names;
  for (const settings::Setting& setting : settings::table()) {
    SCOPED_TRACE(setting.name);
    EXPECT_TRUE(setting.name.starts_with("KILN_"));
    EXPECT_TRUE(names.insert(setting.name).second) << "listed twice";
    EXPECT_FALSE(setting.meaning.empty());
    EXPECT_FALSE(setting.reader.empty());
    EXPECT_FALSE(setting.default_value.empty() && setting.default_text.empty())
        << "no default, in value or words";
    if (!setting.default_value.empty()) {
      EXPECT_EQ(settings::invalid(setting.name, setting.default_value), "")
          << "the default is not a value the setting takes";
    }
  }
  EXPECT_THROW(settings::find("KILN_NO_SUCH_THING"), InvalidArgument);
}

// The one flag rule: empty is unset, 0/false/no/off (any case) are off, anything else on.
TEST_F(Settings, FlagRule) {
  {
    ScopedEnv unset("KILN_NO_CACHE", std::nullopt);
    EXPECT_FALSE(settings::flag("KILN_NO_CACHE"));
  }
  {
    ScopedEnv empty("KILN_NO_CACHE", "");
    EXPECT_FALSE(settings::flag("KILN_NO_CACHE")) << "an empty KILN_NO_CACHE= leaves the cache on";
    EXPECT_EQ(settings::value("KILN_NO_CACHE").origin, settings::Origin::default_value);
  }
  for (const char* off : {"0", "false", "FALSE", "no", "Off"}) {
    ScopedEnv set("KILN_NO_CACHE", off);
    EXPECT_FALSE(settings::flag("KILN_NO_CACHE")) << off;
  }
  for (const char* on : {"1", "true", "Yes", "ON"}) {
    ScopedEnv set("KILN_NO_CACHE", on);
    EXPECT_TRUE(settings::flag("KILN_NO_CACHE")) << on;
  }
  ScopedEnv odd("KILN_SERVER_DEBUG", "maybe");
  ::testing::internal::CaptureStderr();
  EXPECT_TRUE(settings::flag("KILN_SERVER_DEBUG"));
  EXPECT_TRUE(settings::flag("KILN_SERVER_DEBUG"));
  std::string warned = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warned.find("KILN_SERVER_DEBUG='maybe' is not 1/true/yes/on or 0/false/no/off"),
            std::string::npos)
      << warned;
  EXPECT_EQ(warned.find("KILN_SERVER_DEBUG", warned.find('\n')), std::string::npos)
      << "warned twice: " << warned;
  ScopedEnv pool("KILN_POOL_TEMPLATE", std::nullopt);
  EXPECT_TRUE(settings::flag("KILN_POOL_TEMPLATE")) << "its default is on";
}

TEST_F(Settings, SecondsTakeTheTableDefaultAndRefuseOrWarnPerRow) {
  {
    ScopedEnv unset("KILN_REMOTE_CACHE_TIMEOUT", std::nullopt);
    EXPECT_EQ(settings::seconds("KILN_REMOTE_CACHE_TIMEOUT"), std::chrono::milliseconds(2000));
  }
  {
    ScopedEnv empty("KILN_REMOTE_CACHE_TIMEOUT", "");
    EXPECT_EQ(settings::seconds("KILN_REMOTE_CACHE_TIMEOUT"), std::chrono::milliseconds(2000));
  }
  {
    ScopedEnv valid("KILN_REMOTE_CACHE_TIMEOUT", "0.25");
    EXPECT_EQ(settings::seconds("KILN_REMOTE_CACHE_TIMEOUT"), std::chrono::milliseconds(250));
  }
  for (const char* bad : {"0", "-1", "601", "2s", "nan", "inf"}) {
    ScopedEnv invalid("KILN_REMOTE_CACHE_TIMEOUT", bad);
    try {
      settings::seconds("KILN_REMOTE_CACHE_TIMEOUT");
      ADD_FAILURE() << bad << " was taken";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(std::string(e.what()), std::string("KILN_REMOTE_CACHE_TIMEOUT must be a number of "
                                                   "seconds in (0, 600], not '") +
                                           bad + "'");
    }
  }
  {
    ScopedEnv zero("KILN_REMOTE_CACHE_FAULT_MEMORY", "0");
    EXPECT_EQ(settings::seconds("KILN_REMOTE_CACHE_FAULT_MEMORY"), std::chrono::milliseconds(0));
  }
  // A setting whose wrong value is a warning: the default, and one line that names it.
  ScopedEnv idle("KILN_SERVER_IDLE", "soon");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(settings::seconds("KILN_SERVER_IDLE"), std::chrono::seconds(600));
  std::string warned = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warned.find("KILN_SERVER_IDLE must be a number of seconds in (0, 86400], not 'soon'; "
                        "using the default, 600"),
            std::string::npos)
      << warned;
}

TEST_F(Settings, BytesAndChoices) {
  {
    ScopedEnv unset("KILN_NVRTC_SPLIT", std::nullopt);
    EXPECT_EQ(settings::bytes("KILN_NVRTC_SPLIT"), 32768U);
  }
  {
    ScopedEnv never("KILN_NVRTC_SPLIT", "0");
    EXPECT_EQ(settings::bytes("KILN_NVRTC_SPLIT"), 0U);
  }
  {
    ScopedEnv half("KILN_NVRTC_SPLIT", "1.5");
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(settings::bytes("KILN_NVRTC_SPLIT"), 32768U) << "not a whole number";
    EXPECT_NE(::testing::internal::GetCapturedStderr().find("KILN_NVRTC_SPLIT must be a whole "
                                                            "number of bytes"),
              std::string::npos);
  }
  {
    ScopedEnv unset("KILN_REMOTE_CACHE_MODE", std::nullopt);
    EXPECT_EQ(settings::text("KILN_REMOTE_CACHE_MODE"), "read-only");
  }
  {
    ScopedEnv rw("KILN_REMOTE_CACHE_MODE", "read-write");
    EXPECT_EQ(settings::text("KILN_REMOTE_CACHE_MODE"), "read-write");
  }
  ScopedEnv bad("KILN_REMOTE_CACHE_MODE", "rw");
  try {
    settings::text("KILN_REMOTE_CACHE_MODE");
    ADD_FAILURE() << "rw was taken";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(), "KILN_REMOTE_CACHE_MODE must be read-only or read-write, not 'rw'");
  }
  EXPECT_THROW(settings::seconds("KILN_NO_CACHE"), InvalidArgument) << "a flag read as seconds";
}

TEST_F(Settings, AFlagOfTheCommandLineComesFirstAndReachesChildren) {
  ScopedEnv env("KILN_REMOTE_CACHE_MODE", "read-only");
  EXPECT_EQ(settings::value("KILN_REMOTE_CACHE_MODE").origin, settings::Origin::env);
  try {
    settings::set_by_flag("KILN_REMOTE_CACHE_MODE", "both", "--remote-cache-mode");
    ADD_FAILURE() << "both was taken";
  } catch (const InvalidArgument& e) {
    EXPECT_STREQ(e.what(),
                 "--remote-cache-mode: KILN_REMOTE_CACHE_MODE must be read-only or read-write, "
                 "not 'both'");
  }
  EXPECT_EQ(settings::child_environment(), (std::map<std::string, std::string>{}));
  settings::set_by_flag("KILN_REMOTE_CACHE_MODE", "read-write", "--remote-cache-mode");
  settings::Value value = settings::value("KILN_REMOTE_CACHE_MODE");
  EXPECT_EQ(value.origin, settings::Origin::flag);
  EXPECT_EQ(value.where, "--remote-cache-mode");
  EXPECT_EQ(settings::text("KILN_REMOTE_CACHE_MODE"), "read-write");
  EXPECT_EQ(settings::child_environment(),
            (std::map<std::string, std::string>{{"KILN_REMOTE_CACHE_MODE", "read-write"}}));
  EXPECT_STREQ(std::getenv("KILN_REMOTE_CACHE_MODE"), "read-only")
      << "a flag never changes this process's environment";
}

// A value each type takes, and one it does not ("" for path and URL: any text is one).
std::pair<std::string, std::string> valid_and_invalid(const settings::Setting& setting) {
  switch (setting.type) {
    case settings::Type::flag:
      return {"off", "maybe"};
    case settings::Type::path:
      return {"/tmp/kiln-settings-test", ""};
    case settings::Type::url:
      return {"redis://127.0.0.1:1", ""};
    case settings::Type::choice:
      return {std::string(setting.choices.substr(0, setting.choices.find('|'))), "none of them"};
    case settings::Type::seconds:
    case settings::Type::bytes:
      return {fmt::format("{}", std::floor((setting.minimum + std::min(setting.maximum, 1e6)) / 2)),
              "-5.5"};
  }
  return {};
}

// Each row's reader, as the code that uses it reads it: unset and empty give the default,
// a value of its type is taken with origin env, and one it does not take is an error or one
// warning and the default, as the row says.
TEST_F(Settings, EveryRowsReaderTakesEmptyValidAndInvalidValues) {
  internal::forget_settings_state();
  for (const settings::Setting& setting : settings::table()) {
    SCOPED_TRACE(setting.name);
    std::string name(setting.name);
    auto read = [&]() -> std::optional<std::string> {
      switch (setting.type) {
        case settings::Type::flag:
          return settings::flag(name) ? "on" : "off";
        case settings::Type::path:
        case settings::Type::url:
        case settings::Type::choice:
          return settings::text(name);
        case settings::Type::seconds: {
          auto limit = settings::seconds(name);
          if (!limit) return std::nullopt;
          return fmt::format("{}", std::chrono::duration<double>(*limit).count());
        }
        case settings::Type::bytes: {
          auto count = settings::bytes(name);
          if (!count) return std::nullopt;
          return std::to_string(*count);
        }
      }
      return std::nullopt;
    };
    std::optional<std::string> fallback;
    {
      ScopedEnv unset(name, std::nullopt);
      fallback = read();
      EXPECT_EQ(settings::value(name).origin, settings::Origin::default_value);
    }
    {
      ScopedEnv empty(name, "");
      EXPECT_EQ(read(), fallback) << "an empty value is no value";
    }
    auto [valid, invalid] = valid_and_invalid(setting);
    {
      ScopedEnv set(name, valid);
      EXPECT_EQ(settings::value(name).origin, settings::Origin::env);
      EXPECT_EQ(read(), valid);
    }
    if (invalid.empty()) continue;
    ScopedEnv set(name, invalid);
    ::testing::internal::CaptureStderr();
    if (setting.invalid_is_error) {
      EXPECT_THROW(read(), InvalidArgument);
      (void)::testing::internal::GetCapturedStderr();
    } else if (setting.type == settings::Type::flag) {
      EXPECT_EQ(read(), "on");
      (void)::testing::internal::GetCapturedStderr();
    } else {
      EXPECT_EQ(read(), fallback);
      std::string warned = ::testing::internal::GetCapturedStderr();
      EXPECT_NE(warned.find(name), std::string::npos) << "the warning names the variable";
    }
  }
}

class SettingsFile : public ::testing::Test {
 protected:
  fs::path write(const std::string& text, mode_t mode = 0600) {
    fs::path path = dir_.path() / "kiln.conf";
    std::ofstream(path) << text;
    ::chmod(path.c_str(), mode);
    return path;
  }
  TempDirectory dir_;
};

TEST_F(SettingsFile, NameValueLinesCommentsAndTheirProblems) {
  fs::path path = write(
      "# kiln's settings\n"
      "  KILN_SERVER_IDLE = 30  \n"
      "\n"
      "KILN_NVRTC_SPLIT=0\n"
      "KILN_NVRTC_SPLIT=4096\n"
      "KILN_BOGUS=1\n"
      "KILN_TVM=1\n"
      "no equals sign\n"
      "KILN_NO_SERVER=\n");
  internal::SettingsFile file = internal::read_settings_file(path.string());
  ASSERT_EQ(file.values.size(), 2U);
  EXPECT_EQ(file.values["KILN_SERVER_IDLE"].text, "30");
  EXPECT_EQ(file.values["KILN_SERVER_IDLE"].where, path.string() + ":2");
  EXPECT_EQ(file.values["KILN_NVRTC_SPLIT"].text, "4096") << "a later line wins";
  ASSERT_EQ(file.problems.size(), 3U);
  EXPECT_EQ(file.problems[0], path.string() + ":6: KILN_BOGUS is not a kiln setting");
  EXPECT_EQ(file.problems[1], path.string() + ":7: KILN_TVM is read only from the environment");
  EXPECT_EQ(file.problems[2], path.string() + ":8: not NAME=value: 'no equals sign'");
}

TEST_F(SettingsFile, MissingIsEmptyAndOthersFileIsIgnored) {
  internal::SettingsFile missing = internal::read_settings_file((dir_.path() / "none").string());
  EXPECT_TRUE(missing.values.empty());
  EXPECT_TRUE(missing.problems.empty());
  fs::path path = write("KILN_SERVER_IDLE=30\n", 0666);
  internal::SettingsFile open = internal::read_settings_file(path.string());
  EXPECT_TRUE(open.values.empty());
  ASSERT_EQ(open.problems.size(), 1U);
  EXPECT_EQ(open.problems[0], "settings file " + path.string() + ": writable by others: ignored");
  internal::SettingsFile dir = internal::read_settings_file(dir_.path().string());
  ASSERT_EQ(dir.problems.size(), 1U);
  EXPECT_NE(dir.problems[0].find("not a regular file"), std::string::npos);
}

TEST_F(SettingsFile, ItsPlaceFollowsKilnConfigThenXdgThenHome) {
  ScopedEnv config("KILN_CONFIG", std::nullopt);
  ScopedEnv xdg("XDG_CONFIG_HOME", "/x");
  EXPECT_EQ(settings::file_path(), "/x/kiln/kiln.conf");
  {
    ScopedEnv no_xdg("XDG_CONFIG_HOME", std::nullopt);
    ScopedEnv home("HOME", "/h");
    EXPECT_EQ(settings::file_path(), "/h/.config/kiln/kiln.conf");
  }
  ScopedEnv named("KILN_CONFIG", "/etc/kiln.conf");
  EXPECT_EQ(settings::file_path(), "/etc/kiln.conf");
}

}  // namespace
}  // namespace kiln
