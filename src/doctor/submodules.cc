// The submodule check: each submodule's checked-out commit against the commit the superproject
// records in its index (the .gitmodules file records none), recursively.
#include <fmt/format.h>

#include "internal/files.h"
#include "kiln/doctor.h"
#include "kiln/error.h"
#include "kiln/text.h"
#include "support.h"

namespace kiln::doctor {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFix =
    "cd {} && git submodule sync --recursive && git submodule update --init --recursive";

struct Git {
  RunResult result;
  std::string err() const { return std::string(trimmed(result.error_output)); }
  std::string out() const { return std::string(trimmed(result.output)); }
};

// `git -C dir args...`; stderr kept apart so that the output is git's answer alone.
Git git(const fs::path& dir, std::vector<std::string> args) {
  std::vector<std::string> argv{"git", "-C", dir.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return {
      run({.argv = std::move(argv), .merge_stderr = false, .timeout = std::chrono::seconds(60)})};
}

struct Gitlink {
  std::string commit;
  std::string path;
};

// The submodules (mode 160000 entries) the index of the repository at `top` records.
std::vector<Gitlink> recorded_submodules(const fs::path& top) {
  Git listed = git(top, {"ls-files", "--stage", "-z"});
  if (!listed.result.ok()) {
    throw tool_failed("git ls-files failed:", listed.result.error_output, listed.result);
  }
  std::vector<Gitlink> links;
  const std::string& text = listed.result.output;
  for (size_t begin = 0; begin < text.size();) {
    size_t end = text.find('\0', begin);
    if (end == std::string::npos) end = text.size();
    std::string entry = text.substr(begin, end - begin);
    begin = end + 1;
    // "<mode> <object> <stage>\t<path>"
    size_t tab = entry.find('\t');
    if (!entry.starts_with("160000 ") || tab == std::string::npos) continue;
    std::string object = entry.substr(7, entry.find(' ', 7) - 7);
    links.push_back({object, entry.substr(tab + 1)});
  }
  return links;
}

void check_repository(const fs::path& top, const std::string& prefix, const fs::path& source,
                      std::vector<Finding>& problems, int& checked) {
  std::string super = git(top, {"rev-parse", "HEAD"}).out();
  for (const Gitlink& link : recorded_submodules(top)) {
    std::string path = prefix + link.path;
    fs::path dir = top / link.path;
    ++checked;
    Finding f{"Submodules", Status::fail, "", fmt::format(kFix, source.string())};
    if (!fs::exists(dir / ".git")) {
      f.finding = fmt::format(
          "{} is not checked out (uninitialized): superproject commit {} records {}; the build "
          "fails on its missing headers",
          path, super, link.commit);
      problems.push_back(std::move(f));
      continue;
    }
    Git head = git(dir, {"rev-parse", "HEAD"});
    if (!head.result.ok()) {
      f.finding = fmt::format(
          "{}: `git rev-parse HEAD` failed there ({}); superproject commit {} "
          "records {}",
          path, head.err(), super, link.commit);
      problems.push_back(std::move(f));
      continue;
    }
    if (head.out() != link.commit) {
      f.finding = fmt::format(
          "{} is at {}, but superproject commit {} records {}: a submodule at another commit "
          "fails to compile in ways that do not name it",
          path, head.out(), super, link.commit);
      problems.push_back(std::move(f));
    }
    check_repository(dir, path + "/", source, problems, checked);
  }
}

}  // namespace

std::vector<Finding> check_submodules(const fs::path& source) {
  Finding f{"Submodules", Status::pass, "", ""};
  if (!internal::is_dir(source)) {
    f.status = Status::fail;
    f.finding = fmt::format("--source {}: no such directory", source.string());
    f.fix = "pass the root of a git checkout (e.g. --source ~/tvm)";
    return {f};
  }
  Git top;
  try {
    top = git(source, {"rev-parse", "--show-toplevel"});
  } catch (const CannotRunTool& e) {
    f.status = Status::fail;
    f.finding = fmt::format("cannot check submodules of {}: {}", source.string(), e.what());
    f.fix = "install git (apt-get install git)";
    return {f};
  }
  if (!top.result.ok()) {
    f.status = Status::fail;
    f.finding = fmt::format("--source {} is not a git checkout: {}", source.string(), top.err());
    f.fix = "pass the root of a git clone (git clone --recursive https://github.com/apache/tvm)";
    return {f};
  }
  std::vector<Finding> problems;
  int checked = 0;
  check_repository(top.out(), "", top.out(), problems, checked);
  if (!problems.empty()) return problems;
  f.finding = checked == 0 ? fmt::format("{} has no submodules", top.out())
                           : fmt::format(
                                 "{}: all {} submodules (recursively) are at the commits "
                                 "the superproject records",
                                 top.out(), checked);
  return {f};
}

}  // namespace kiln::doctor
