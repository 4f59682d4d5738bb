// The LLVM checks: which llvm-config a build would use, whether it is new enough and has its
// headers, whether clang, ld.lld and llvm-config come from one LLVM, and how many LLVMs there are.
#include <algorithm>
#include <map>
#include <regex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "internal/files.h"
#include "internal/path_list.h"
#include "kiln/doctor.h"
#include "kiln/error.h"
#include "support.h"

namespace kiln::doctor {
namespace {

namespace fs = std::filesystem;
using detail::real_path;

struct LlvmConfig {
  fs::path path;  // as found (or given)
  std::vector<int> version{};
  fs::path includedir{};
  std::string error{};  // why it gave no version ("" when it did)

  fs::path prefix() const { return real_path(path).parent_path().parent_path(); }
  int major() const { return version.empty() ? -1 : version[0]; }
};

LlvmConfig probe(const fs::path& path) {
  LlvmConfig config{.path = path};
  RunResult result;
  try {
    result = run({.argv = {path.string(), "--version", "--includedir"},
                  .timeout = std::chrono::seconds(20)});
  } catch (const CannotRunTool& e) {
    config.error = e.what();
    return config;
  }
  std::string version_line = detail::first_line(result.output);
  config.version = result.ok() ? parse_version(version_line) : std::vector<int>{};
  if (config.version.empty()) {
    config.error = fmt::format("`{} --version --includedir` gave {}: {}", path.string(),
                               result.status_text(), result.output);
    return config;
  }
  std::string rest = result.output.substr(std::min(result.output.size(), version_line.size() + 1));
  config.includedir = detail::first_line(rest);
  return config;
}

bool is_llvm_config_name(const std::string& name) {
  static const std::regex pattern(R"(llvm-config(-\d+(\.\d+)*)?)");
  return std::regex_match(name, pattern);
}

// Every llvm-config: llvm-config and llvm-config-N in each PATH entry, then
// /usr/lib/llvm-*/bin/llvm-config; one entry per real file, first spelling kept.
std::vector<fs::path> llvm_config_candidates() {
  std::vector<fs::path> found;
  std::vector<fs::path> seen;
  auto add = [&](const fs::path& path) {
    if (!internal::is_file(path)) return;
    fs::path real = real_path(path);
    if (std::find(seen.begin(), seen.end(), real) != seen.end()) return;
    seen.push_back(real);
    found.push_back(path);
  };
  std::vector<std::string> dirs;
  if (std::optional<std::string> path = internal::env("PATH")) {
    dirs = internal::split_path_list(*path);
  }
  for (const std::string& dir : dirs) {
    std::error_code ec;
    std::vector<fs::path> names;
    for (const auto& entry : fs::directory_iterator(dir.empty() ? "." : dir, ec)) {
      if (is_llvm_config_name(entry.path().filename().string())) names.push_back(entry.path());
    }
    std::sort(names.begin(), names.end());  // llvm-config before llvm-config-14 before -15
    for (const fs::path& name : names) add(name);
  }
  std::error_code ec;
  std::vector<fs::path> lib_dirs;
  for (const auto& entry : fs::directory_iterator("/usr/lib", ec)) {
    if (entry.path().filename().string().starts_with("llvm-")) lib_dirs.push_back(entry.path());
  }
  std::sort(lib_dirs.begin(), lib_dirs.end());
  for (const fs::path& dir : lib_dirs) add(dir / "bin" / "llvm-config");
  return found;
}

// The LLVM installations: the prefix of every llvm-config, and each /usr/lib/llvm-* directory
// (a clang-N package alone installs one without llvm-config).
std::map<fs::path, std::string> installations(const std::vector<LlvmConfig>& configs) {
  std::map<fs::path, std::string> found;
  for (const LlvmConfig& config : configs) {
    found[config.prefix()] =
        config.version.empty() ? "version unknown" : detail::version_text(config.version);
  }
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/usr/lib", ec)) {
    std::string name = entry.path().filename().string();
    if (!name.starts_with("llvm-") || !internal::is_dir(entry.path() / "bin")) continue;
    fs::path prefix = real_path(entry.path());
    if (!found.contains(prefix)) found[prefix] = "LLVM " + name.substr(5) + ", no llvm-config";
  }
  return found;
}

Finding selected_finding(const std::optional<LlvmConfig>& selected, const std::string& how) {
  Finding f{"LLVM", Status::pass, "", ""};
  if (!selected) {
    f.status = Status::warn;
    f.finding = "no llvm-config on PATH or in /usr/lib/llvm-*: TVM cannot be built with USE_LLVM";
    f.fix = "install LLVM >= 14 with its headers (Debian: apt-get install llvm-14-dev)";
    return f;
  }
  const LlvmConfig& config = *selected;
  std::string name = fmt::format("{} ({})", config.path.string(), how);
  if (!config.error.empty()) {
    f.status = Status::fail;
    f.finding = fmt::format("{} does not work: {}", name, config.error);
    f.fix = "reinstall that LLVM, or pass --llvm-config with a working one";
    return f;
  }
  std::string version = detail::version_text(config.version);
  if (config.major() < 14) {
    f.status = Status::fail;
    f.finding = fmt::format("{} is LLVM {}: TVM needs LLVM 14 or newer", name, version);
    f.fix =
        "install LLVM >= 14 (apt-get install llvm-15-dev) and set USE_LLVM to the full path of "
        "its llvm-config";
    return f;
  }
  fs::path header = config.includedir / "llvm" / "IR" / "IRBuilder.h";
  if (!internal::is_file(header)) {
    f.status = Status::fail;
    f.finding = fmt::format(
        "{} is LLVM {}, but its --includedir {} has no llvm/IR/IRBuilder.h: TVM's LLVM code "
        "generator will not compile (the runtime package was installed without the headers)",
        name, version, config.includedir.string());
    f.fix = fmt::format(
        "install LLVM {}'s headers (Debian: apt-get install llvm-{}-dev), or set USE_LLVM to an "
        "llvm-config whose --includedir holds them",
        config.major(), config.major());
    return f;
  }
  f.finding = fmt::format("{}: LLVM {}, headers in {}", name, version, config.includedir.string());
  return f;
}

Finding tools_finding(const LlvmConfig& config) {
  Finding f{"LLVM tools", Status::pass, "", ""};
  struct Tool {
    std::string name;
    std::string path;
    std::vector<int> version;
  };
  std::vector<Tool> tools{{"llvm-config", config.path.string(), config.version}};
  std::vector<std::string> absent;
  for (const char* name : {"clang", "ld.lld"}) {
    if (std::optional<fs::path> path = detail::first_on_path(name)) {
      tools.push_back({name, path->string(), detail::tool_version(path->string())});
    } else {
      absent.emplace_back(name);
    }
  }
  std::vector<std::string> parts;
  bool agree = true;
  for (const Tool& tool : tools) {
    std::string real = real_path(tool.path).string();
    parts.push_back(fmt::format("{} {}{} is {}", tool.name, tool.path,
                                real != tool.path ? " (" + real + ")" : "",
                                detail::version_text(tool.version)));
    if (tool.version.empty() || tool.version[0] != config.major()) agree = false;
  }
  std::string listed = fmt::format("{}", fmt::join(parts, "; "));
  if (!absent.empty()) listed += fmt::format("; not on PATH: {}", fmt::join(absent, ", "));
  if (agree) {
    f.finding = fmt::format("one LLVM major ({}): {}", config.major(), listed);
    return f;
  }
  f.status = Status::fail;
  f.finding = fmt::format(
      "LLVM majors disagree: {}. Code compiled against one LLVM and linked or loaded with "
      "another breaks at run time (undefined symbol: llvm::IRBuilder<...>::CreateAlloca, or a "
      "crash in FoldConstant)",
      listed);
  fs::path bin = real_path(config.path).parent_path();
  f.fix = fmt::format(
      "use one LLVM for all three: put {} first on PATH (or call clang-{} and ld.lld-{}) and "
      "set USE_LLVM to {}",
      bin.string(), config.major(), config.major(), (bin / "llvm-config").string());
  return f;
}

Finding installations_finding(const std::map<fs::path, std::string>& found,
                              const LlvmConfig& selected) {
  Finding f{"LLVM installs", Status::pass, "", ""};
  std::vector<std::string> listed;
  for (const auto& [prefix, version] : found) {
    listed.push_back(fmt::format("{} ({})", prefix.string(), version));
  }
  if (found.size() <= 1) {
    f.finding = fmt::format("one LLVM installation: {}", fmt::join(listed, ", "));
    return f;
  }
  f.status = Status::warn;
  f.finding = fmt::format(
      "{} LLVM installations: {}. USE_LLVM=ON may find one while the dynamic linker loads "
      "another libLLVM at run time",
      found.size(), fmt::join(listed, ", "));
  fs::path config = real_path(selected.path);
  f.fix = fmt::format(
      "name llvm-config by its full path and link LLVM statically: "
      "set(USE_LLVM \"{} --link-static\")",
      config.string());
  return f;
}

}  // namespace

std::vector<Finding> check_llvm(const fs::path& llvm_config) {
  std::vector<LlvmConfig> configs;
  for (const fs::path& path : llvm_config_candidates()) configs.push_back(probe(path));

  std::optional<LlvmConfig> selected;
  std::string how;
  if (!llvm_config.empty()) {
    std::optional<fs::path> path = llvm_config;
    if (!llvm_config.has_parent_path()) path = detail::first_on_path(llvm_config.string());
    if (!path || !internal::is_file(*path)) {
      return {{"LLVM", Status::fail,
               fmt::format("--llvm-config {}: no such file{}", llvm_config.string(),
                           llvm_config.has_parent_path() ? "" : " on PATH"),
               "pass the full path of an llvm-config (e.g. /usr/lib/llvm-14/bin/llvm-config)"}};
    }
    selected = probe(*path);
    how = "--llvm-config";
    if (std::none_of(configs.begin(), configs.end(),
                     [&](const LlvmConfig& c) { return real_path(c.path) == real_path(*path); })) {
      configs.push_back(*selected);
    }
  } else if (std::optional<fs::path> path = detail::first_on_path("llvm-config")) {
    selected = probe(*path);
    how = "first on PATH";
  } else if (!configs.empty()) {
    selected = *std::max_element(
        configs.begin(), configs.end(),
        [](const LlvmConfig& a, const LlvmConfig& b) { return a.version < b.version; });
    how = "no llvm-config on PATH; the newest found";
  }

  std::vector<Finding> findings{selected_finding(selected, how)};
  if (!selected || !selected->error.empty()) return findings;
  findings.push_back(tools_finding(*selected));
  findings.push_back(installations_finding(installations(configs), *selected));
  return findings;
}

}  // namespace kiln::doctor
