// TVM's Python package on disk, modelled on apache-tvm 0.27's tvm/libinfo.py, tvm/base.py and
// tvm_ffi/libinfo.py (read, not run): the search for the libraries and what comes before them.
#include "tvm_layout.h"

#include <algorithm>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "internal/files.h"
#include "internal/path_list.h"
#include "kiln/doctor.h"
#include "support.h"

namespace kiln::doctor {
namespace detail {

namespace fs = std::filesystem;

std::vector<SearchDir> tvm_search_dirs(const fs::path& package) {
  std::vector<SearchDir> dirs;
  if (std::optional<std::string> value = internal::env("TVM_LIBRARY_PATH")) {
    dirs.push_back({*value, "TVM_LIBRARY_PATH"});
  }
  fs::path tree = package / ".." / "..";
  dirs.push_back({package / "lib", "the package's lib/"});
  dirs.push_back({(tree / "build" / "lib").lexically_normal(), "the source tree's build/lib/"});
  dirs.push_back({(tree / "lib").lexically_normal(), "the source tree's lib/"});
  for (const char* variable : {"LD_LIBRARY_PATH", "PATH"}) {
    if (std::optional<std::string> value = internal::env(variable)) {
      for (const std::string& dir : internal::split_path_list(*value)) {
        if (!dir.empty()) dirs.push_back({dir, variable});
      }
    }
  }
  return dirs;
}

std::optional<FoundLibrary> find_in(const std::vector<SearchDir>& dirs,
                                    std::string_view file_name) {
  for (const SearchDir& search : dirs) {
    fs::path candidate = search.dir / file_name;
    if (internal::is_file(candidate)) return FoundLibrary{real_path(candidate), search.origin};
  }
  return std::nullopt;
}

std::optional<fs::path> tvm_package_of(const fs::path& library) {
  fs::path dir = fs::absolute(library).lexically_normal().parent_path();
  if (dir.filename() == "lib" && dir.parent_path().filename() == "tvm" &&
      internal::is_file(dir.parent_path() / "__init__.py") &&
      internal::is_file(dir.parent_path() / "libinfo.py")) {
    return dir.parent_path();
  }
  std::vector<fs::path> trees;
  if (dir.filename() == "lib" && dir.parent_path().filename() == "build") {
    trees.push_back(dir.parent_path().parent_path());
  }
  if (dir.filename() == "lib" || dir.filename() == "build") trees.push_back(dir.parent_path());
  for (const fs::path& tree : trees) {
    if (internal::is_file(tree / "python" / "tvm" / "__init__.py")) return tree / "python" / "tvm";
  }
  return std::nullopt;
}

std::optional<fs::path> tvm_ffi_library_in(const fs::path& site) {
  std::error_code ec;
  std::vector<fs::path> records;
  for (const auto& entry : fs::directory_iterator(site, ec)) {
    std::string name = entry.path().filename().string();
    if (name.starts_with("apache_tvm_ffi-") && name.ends_with(".dist-info")) {
      records.push_back(entry.path() / "RECORD");
    }
  }
  std::sort(records.begin(), records.end());
  for (const fs::path& record : records) {
    std::ifstream in(record);
    for (std::string line; std::getline(in, line);) {
      std::string file = line.substr(0, line.find(','));
      if (file != "libtvm_ffi.so" && !file.ends_with("/libtvm_ffi.so")) continue;
      fs::path path = (site / file).lexically_normal();
      if (internal::is_file(path)) return real_path(path);
    }
  }
  fs::path beside = site / "tvm_ffi" / "lib" / "libtvm_ffi.so";
  if (internal::is_file(beside)) return real_path(beside);
  return std::nullopt;
}

bool is_tvm_library(std::string_view file_name) {
  bool shared = file_name.ends_with(".so") || file_name.find(".so.") != std::string_view::npos;
  return shared && file_name.starts_with("libtvm") && !file_name.starts_with("libtvm_ffi_testing");
}

LoadContext package_load_context(const fs::path& package, const std::string& name,
                                 const fs::path& ffi_site) {
  LoadContext context;
  std::vector<std::string> first;
  std::string note;
  if (name != "libtvm_ffi.so") {
    if (auto ffi = tvm_ffi_library_in(ffi_site.empty() ? package.parent_path() : ffi_site)) {
      context.preloaded.push_back(*ffi);
      first.push_back(fmt::format("libtvm_ffi.so of the tvm_ffi package ({})", ffi->string()));
    } else {
      note = "; no tvm_ffi package found";
    }
  }
  if (name != "libtvm_ffi.so" && name != "libtvm_runtime.so") {
    auto runtime = find_in(tvm_search_dirs(package), "libtvm_runtime.so");
    if (runtime) {
      context.preloaded.push_back(runtime->path);
      first.push_back(
          fmt::format("libtvm_runtime.so from {} ({})", runtime->origin, runtime->path.string()));
    }
  }
  context.how = fmt::format(
      "as TVM's Python package {} loads it, modelled from its files (tvm/base.py; no Python "
      "run): {}{}",
      package.string(),
      first.empty() ? "nothing of TVM's is loaded before it"
                    : fmt::format("{} loaded first, RTLD_GLOBAL", fmt::join(first, " and ")),
      note);
  return context;
}

}  // namespace detail

std::optional<LoadContext> tvm_package_context(const std::filesystem::path& library) {
  std::optional<std::filesystem::path> package = detail::tvm_package_of(library);
  if (!package) return std::nullopt;
  return detail::package_load_context(*package, library.filename().string());
}

}  // namespace kiln::doctor
