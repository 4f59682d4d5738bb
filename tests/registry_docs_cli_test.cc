// Each registry of kiln against its documentation (docs/extending.md): a row added to a table
// without its documentation, or a file docs/extending.md names that no longer exists, fails here.
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "cli_support.h"
#include "kiln/launcher.h"
#include "kiln/manifest.h"
#include "kiln/remote_store.h"
#include "kiln/settings.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

std::string source_file(const std::string& relative) {
  std::ifstream in(fs::path(KILN_SOURCE_DIR) / relative);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(RegistryDocs, EveryRemoteSchemeAndItsFormIsInTheRemoteCacheDoc) {
  std::string doc = source_file("docs/remote-cache.md");
  ASSERT_FALSE(doc.empty());
  for (const RemoteBackendInfo& backend : remote_backends()) {
    EXPECT_NE(doc.find(backend.scheme + "://"), std::string::npos)
        << "docs/remote-cache.md does not name the scheme " << backend.scheme;
  }
}

TEST(RegistryDocs, EveryJobKindIsInTheManifestDoc) {
  std::string doc = source_file("docs/manifest.md");
  ASSERT_FALSE(doc.empty());
  for (const auto& row : build::kJobKindNames) {
    std::string name(row.name);
    EXPECT_TRUE(doc.find('`' + name + '`') != std::string::npos ||
                doc.find('"' + name + '"') != std::string::npos)
        << "docs/manifest.md does not name the job kind " << name;
  }
}

TEST(RegistryDocs, EveryLauncherIsInTheReadmeOrTheDistributedDoc) {
  std::string docs = source_file("README.md") + source_file("docs/distributed.md");
  for (const auto& row : kLaunchers) {
    EXPECT_NE(docs.find(std::string(row.name)), std::string::npos)
        << "neither README.md nor docs/distributed.md names the launcher " << row.name;
  }
}

TEST(RegistryDocs, EverySettingIsInTheSettingsDoc) {
  std::string doc = source_file("docs/settings.md");
  for (const settings::Setting& setting : settings::table()) {
    EXPECT_NE(doc.find('`' + std::string(setting.name) + '`'), std::string::npos)
        << "docs/settings.md does not name " << setting.name;
  }
}

// The subcommands `kiln --help` lists (CLI11: the lines under "Subcommands:").
std::vector<std::string> subcommands() {
  RunResult help = testing::kiln_cli({"--help"});
  EXPECT_EQ(help.exit_code, 0) << help.output;
  std::vector<std::string> names;
  std::istringstream lines(help.output);
  bool listing = false;
  for (std::string line; std::getline(lines, line);) {
    if (line.starts_with("Subcommands:")) {
      listing = true;
    } else if (listing && line.starts_with("  ") && line.size() > 2 && line[2] != ' ') {
      names.push_back(line.substr(2, line.find(' ', 2) - 2));
    } else if (listing && !line.empty()) {
      break;
    }
  }
  return names;
}

TEST(RegistryDocs, EverySubcommandIsInTheReadme) {
  std::string readme = source_file("README.md");
  std::vector<std::string> names = subcommands();
  EXPECT_GE(names.size(), 10U) << "kiln --help listed too few subcommands to be read right";
  for (const std::string& name : names) {
    EXPECT_NE(readme.find("kiln " + name), std::string::npos)
        << "README.md does not show `kiln " << name << "`";
  }
}

// Every file docs/extending.md names in backquotes (a path with a '/' and an extension, without
// a <placeholder>) exists.
TEST(RegistryDocs, EveryFileTheExtendingDocNamesExists) {
  std::string doc = source_file("docs/extending.md");
  ASSERT_FALSE(doc.empty());
  std::regex path("`([A-Za-z0-9_./-]+/[A-Za-z0-9_.-]+\\.(cc|h|py|md|txt|cmake))`");
  int named = 0;
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), path); it != std::sregex_iterator();
       ++it) {
    ++named;
    std::string file = (*it)[1].str();
    EXPECT_TRUE(fs::exists(fs::path(KILN_SOURCE_DIR) / file))
        << "docs/extending.md names " << file << ", which does not exist";
  }
  EXPECT_GE(named, 20) << "docs/extending.md names too few files to be read right";
}

}  // namespace
}  // namespace kiln
