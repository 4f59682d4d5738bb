// The library check: what a built shared library (libtvm.so) needs, found the way the dynamic
// linker would find it, and what of that is missing: libraries, symbols (as immediate binding
// would resolve them), and symbol versions (the guide's old-libstdc++ case). ELF is read with
// kiln's own reader (kiln/elf_dynamic.h), never from ldd's text.
#include <cxxabi.h>
#include <elf.h>
#include <glob.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "internal/files.h"
#include "internal/path_list.h"
#include "kiln/doctor.h"
#include "kiln/elf_dynamic.h"
#include "kiln/error.h"
#include "kiln/text.h"
#include "support.h"

namespace kiln::doctor {
namespace {

namespace fs = std::filesystem;

struct Loaded {
  fs::path path;
  ElfDynamicInfo info;
  bool preloaded = false;  // in the process before the library (LoadContext)
};

std::string demangle(const std::string& name) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> text(
      abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status), &std::free);
  return status == 0 && text ? std::string(text.get()) : name;
}

// The directories /etc/ld.so.conf names (following its `include` globs): what ldconfig caches.
void read_ld_so_conf(const fs::path& file, std::vector<std::string>& dirs, int depth = 0) {
  std::ifstream in(file);
  for (std::string line; depth < 8 && std::getline(in, line);) {
    line = std::string(trimmed(line.substr(0, line.find('#'))));
    if (line.empty()) continue;
    if (line.starts_with("include") && line.size() > 7 && (line[7] == ' ' || line[7] == '\t')) {
      std::string pattern(trimmed(line.substr(8)));
      if (!pattern.starts_with('/')) pattern = (file.parent_path() / pattern).string();
      glob_t matches{};
      if (::glob(pattern.c_str(), 0, nullptr, &matches) == 0) {
        for (size_t i = 0; i < matches.gl_pathc; ++i) {
          read_ld_so_conf(matches.gl_pathv[i], dirs, depth + 1);
        }
      }
      ::globfree(&matches);
    } else if (line.starts_with('/')) {
      dirs.push_back(line);
    }
  }
}

std::string multiarch(ElfMachine machine) {
  switch (machine) {
    case EM_X86_64:
      return "x86_64-linux-gnu";
    case EM_AARCH64:
      return "aarch64-linux-gnu";
    case EM_386:
      return "i386-linux-gnu";
    default:
      return "";
  }
}

// Resolves DT_NEEDED names as ld.so does: RPATH (when there is no RUNPATH), LD_LIBRARY_PATH,
// RUNPATH, the ld.so.conf directories, then the default directories; a candidate must be ELF
// of the same machine and class. $ORIGIN is the directory of the object that needs the library.
class Resolver {
 public:
  Resolver(const ElfDynamicInfo& root, const std::vector<Loaded>& preloaded)
      : machine_(root.machine), is_64bit_(root.is_64bit), preloaded_(preloaded) {
    if (auto value = internal::env("LD_LIBRARY_PATH")) {
      for (const std::string& dir : internal::split_path_list(*value)) {
        if (!dir.empty()) ld_library_path_.push_back(dir);
      }
    }
    read_ld_so_conf("/etc/ld.so.conf", system_);
    std::string triple = multiarch(machine_);
    for (const char* base : {"/lib", "/usr/lib"}) {
      if (!triple.empty()) system_.push_back(fmt::format("{}/{}", base, triple));
    }
    for (const char* dir : {"/lib64", "/usr/lib64", "/lib", "/usr/lib"}) system_.emplace_back(dir);
  }

  std::optional<Loaded> find(const std::string& name, const Loaded& needer) const {
    // ld.so first takes an object already loaded under that name (its SONAME), searching nothing.
    for (const Loaded& object : preloaded_) {
      bool named =
          object.info.soname.empty() ? object.path.filename() == name : object.info.soname == name;
      if (named || object.path == name) return object;
    }
    if (name.find('/') != std::string::npos) return accept(name);
    fs::path origin = detail::real_path(needer.path).parent_path();
    std::vector<std::string> dirs;
    auto add = [&](const std::vector<std::string>& list) {
      for (const std::string& dir : list) dirs.push_back(expand_origin(dir, origin));
    };
    if (needer.info.runpath.empty()) add(needer.info.rpath);
    dirs.insert(dirs.end(), ld_library_path_.begin(), ld_library_path_.end());
    add(needer.info.runpath);
    dirs.insert(dirs.end(), system_.begin(), system_.end());
    for (const std::string& dir : dirs) {
      if (std::optional<Loaded> found = accept((fs::path(dir) / name).lexically_normal())) {
        return found;
      }
    }
    return std::nullopt;
  }

 private:
  static std::string expand_origin(std::string dir, const fs::path& origin) {
    for (const char* token : {"${ORIGIN}", "$ORIGIN"}) {
      for (size_t at = dir.find(token); at != std::string::npos; at = dir.find(token)) {
        dir.replace(at, std::string_view(token).size(), origin.string());
      }
    }
    return dir;
  }

  std::optional<Loaded> accept(const fs::path& path) const {
    if (!internal::is_file(path)) return std::nullopt;
    try {
      ElfDynamicInfo info = read_elf_dynamic(path);
      if (info.machine != machine_ || info.is_64bit != is_64bit_) return std::nullopt;
      return Loaded{path, std::move(info), false};
    } catch (const Error&) {
      return std::nullopt;  // not ELF, unreadable or malformed: ld.so skips it too
    }
  }

  ElfMachine machine_;
  bool is_64bit_;
  const std::vector<Loaded>& preloaded_;
  std::vector<std::string> ld_library_path_;
  std::vector<std::string> system_;
};

std::string listed(const std::vector<std::string>& items, size_t most = 12) {
  std::vector<std::string> shown(items.begin(),
                                 items.begin() + static_cast<long>(std::min(most, items.size())));
  std::string text = fmt::format("{}", fmt::join(shown, ", "));
  if (items.size() > most) text += fmt::format(" and {} more", items.size() - most);
  return text;
}

// Every object the dynamic linker would load for the root, breadth first, once each.
struct Closure {
  std::vector<Loaded> loaded{};             // the root first
  std::map<std::string, size_t> by_name{};  // DT_NEEDED name -> index in `loaded`
  std::vector<std::string> missing{};       // "name (needed by path)"
  std::vector<std::string> resolved{};      // the root's own: "name => path"
  std::vector<Loaded> preloaded{};          // the context's objects (their symbols are in scope)
};

// The context's objects, read; one that cannot be read is left out (it cannot have been loaded).
std::vector<Loaded> read_preloaded(const LoadContext& context, const fs::path& library) {
  std::vector<Loaded> objects;
  for (const fs::path& path : context.preloaded) {
    if (detail::real_path(path) == detail::real_path(library)) continue;
    try {
      objects.push_back({path, read_elf_dynamic(path), true});
    } catch (const Error&) {
    }
  }
  return objects;
}

// Resolves DT_NEEDED names from the root outwards as ld.so would, each name once.
Closure load_closure(const Loaded& root, std::vector<Loaded> preloaded) {
  Closure c{.loaded = {root}, .preloaded = std::move(preloaded)};
  Resolver resolver(root.info, c.preloaded);
  std::set<std::string> tried;
  for (size_t i = 0; i < c.loaded.size(); ++i) {
    std::vector<std::string> needed = c.loaded[i].info.needed;
    for (const std::string& need : needed) {
      if (!tried.insert(need).second) continue;
      if (std::optional<Loaded> found = resolver.find(need, c.loaded[i])) {
        if (i == 0) {
          c.resolved.push_back(fmt::format("{} => {}{}", need, found->path.string(),
                                           found->preloaded ? " (already loaded)" : ""));
        }
        c.by_name[need] = c.loaded.size();
        c.loaded.push_back(std::move(*found));
      } else {
        c.missing.push_back(fmt::format("{} (needed by {})", need, c.loaded[i].path.string()));
      }
    }
  }
  return c;
}

// What the library needs and where each was found; a failure when something is not found.
Finding needs_finding(const fs::path& library, const Loaded& root, const Closure& c,
                      const std::string& how) {
  Finding needs{"Library", Status::pass, "", ""};
  needs.finding = fmt::format("{} needs {}{}", library.string(),
                              root.info.needed.empty() ? "no libraries" : listed(c.resolved, 40),
                              root.info.bind_now ? " (linked with immediate binding)" : "");
  needs.finding +=
      how.empty() ? " (judged as loaded on its own)" : fmt::format(" (judged {})", how);
  if (!c.missing.empty()) {
    needs.status = Status::fail;
    needs.finding += fmt::format("; not found: {}", listed(c.missing));
    needs.fix =
        "install the missing libraries, or add their directory to the library's RUNPATH "
        "(-Wl,-rpath) or to LD_LIBRARY_PATH";
  }
  return needs;
}

// A warning when the library links libLLVM dynamically; std::nullopt when it does not.
std::optional<Finding> llvm_finding(const Loaded& root, const std::string& name) {
  std::vector<std::string> llvm;
  for (const std::string& need : root.info.needed) {
    if (need.starts_with("libLLVM")) llvm.push_back(need);
  }
  if (llvm.empty()) return std::nullopt;
  return Finding{
      "Library LLVM", Status::warn,
      fmt::format("{} links LLVM dynamically ({}): at run time it gets whichever libLLVM the "
                  "dynamic linker finds first, and another LLVM's (from PyTorch, Conda or the "
                  "system) gives undefined symbols or crashes",
                  name, listed(llvm)),
      "link LLVM statically: set(USE_LLVM \"/usr/lib/llvm-N/bin/llvm-config --link-static\") "
      "and rebuild"};
}

// The root's strong undefined symbols that no loaded object defines (with a matching version),
// each as "name (demangled)@version"; `first` gets the first one's raw name.
std::vector<std::string> unresolved_symbols(const Loaded& root, const Closure& c,
                                            std::string& first) {
  std::map<std::string, std::set<std::string>, std::less<>> defined;
  for (const std::vector<Loaded>* objects : {&c.loaded, &c.preloaded}) {
    for (const Loaded& object : *objects) {
      for (const ElfSymbol& symbol : object.info.defined) {
        defined[symbol.name].insert(symbol.version);
      }
    }
  }
  std::vector<std::string> unresolved;
  for (const ElfSymbol& symbol : root.info.undefined) {
    if (symbol.weak) continue;
    auto it = defined.find(symbol.name);
    bool found =
        it != defined.end() && (symbol.version.empty() || it->second.contains(symbol.version));
    if (found) continue;
    if (first.empty()) first = symbol.name;
    std::string readable = demangle(symbol.name);
    std::string text =
        readable != symbol.name ? fmt::format("{} ({})", symbol.name, readable) : symbol.name;
    if (!symbol.version.empty()) text += "@" + symbol.version;
    unresolved.push_back(std::move(text));
  }
  return unresolved;
}

// Whether every undefined symbol of the root is defined by what it loads (as immediate binding
// would resolve them).
Finding symbols_finding(const Loaded& root, const Closure& c, const std::string& name) {
  std::string first_unresolved;
  std::vector<std::string> unresolved = unresolved_symbols(root, c, first_unresolved);
  if (unresolved.empty()) {
    return {"Library symbols", Status::pass,
            fmt::format("all {} undefined symbols of {} are defined by the libraries it loads{}",
                        root.info.undefined.size(), name,
                        c.preloaded.empty() ? "" : " or that are loaded before it"),
            ""};
  }
  return {"Library symbols", Status::fail,
          fmt::format("{} undefined symbol{} of {} that no library it loads defines: {} (loading "
                      "it with immediate binding fails: `undefined symbol: {}`; unless the "
                      "program loading it defines them)",
                      unresolved.size(), unresolved.size() == 1 ? "" : "s", name,
                      listed(unresolved), first_unresolved),
          "link the library that defines them, or rebuild against the same LLVM and C++ library "
          "it will run with"};
}

// The failure for `object` needing `version` from `need.file`, which `provider` lacks; names the
// newest version of the same family (GLIBCXX_, GLIBC_, ...) that it has.
Finding missing_version_finding(const Loaded& object, const ElfVersionNeed& need,
                                const Loaded& provider, const std::string& version) {
  std::string family = version.substr(0, version.find('_') + 1);
  std::vector<std::string> same_family;
  for (const std::string& v : provider.info.version_definitions) {
    if (v.starts_with(family)) same_family.push_back(v);
  }
  std::string newest = same_family.empty() ? "none of that family" : same_family.back();
  return {"Library versions", Status::fail,
          fmt::format("{} needs {} from {}, but {} lacks it (its newest {}* is {}): loading "
                      "fails with `version '{}' not found` (built with a newer compiler or C "
                      "library than this machine has)",
                      object.path.string(), version, need.file, provider.path.string(), family,
                      newest, version),
          fmt::format("build on (or for) this machine's {}, link libstdc++ statically "
                      "(-static-libstdc++), or install a newer {} (e.g. a newer GCC's runtime)",
                      need.file, need.file)};
}

// Each symbol version an object needs from a loaded library, against that library's
// definitions: one failure per version missing, else one pass naming the C/C++ runtime versions
// the root needs.
std::vector<Finding> version_findings(const Loaded& root, const Closure& c,
                                      const std::string& name) {
  std::vector<Finding> findings;
  for (const Loaded& object : c.loaded) {
    for (const ElfVersionNeed& need : object.info.version_needs) {
      auto it = c.by_name.find(need.file);
      if (it == c.by_name.end()) continue;  // reported as a missing library
      const Loaded& provider = c.loaded[it->second];
      const std::vector<std::string>& offered = provider.info.version_definitions;
      for (const std::string& version : need.versions) {
        if (std::find(offered.begin(), offered.end(), version) != offered.end()) continue;
        findings.push_back(missing_version_finding(object, need, provider, version));
      }
    }
  }
  if (!findings.empty()) return findings;
  std::vector<std::string> needed_versions;
  for (const ElfVersionNeed& need : root.info.version_needs) {
    for (const std::string& v : need.versions) {
      if (v.starts_with("GLIBCXX_") || v.starts_with("CXXABI_") || v.starts_with("GLIBC_")) {
        needed_versions.push_back(v);
      }
    }
  }
  findings.push_back(
      {"Library versions", Status::pass,
       fmt::format("every symbol version {} and its libraries need is provided{}", name,
                   needed_versions.empty() ? "" : " (" + listed(needed_versions, 6) + ")"),
       ""});
  return findings;
}

}  // namespace

std::vector<Finding> check_library(const fs::path& library) {
  std::optional<LoadContext> context = tvm_package_context(library);
  return check_library(library, context ? *context : LoadContext{});
}

std::vector<Finding> check_library(const fs::path& library, const LoadContext& context) {
  Loaded root;
  try {
    root = {library, read_elf_dynamic(library)};
  } catch (const Error& e) {
    return {{"Library", Status::fail, fmt::format("--library {}: {}", library.string(), e.what()),
             "pass a built shared library (e.g. --library build/libtvm.so)"}};
  }
  std::string name = library.filename().string();
  Closure closure = load_closure(root, read_preloaded(context, library));
  std::vector<Finding> findings{needs_finding(library, root, closure, context.how)};
  if (std::optional<Finding> llvm = llvm_finding(root, name)) findings.push_back(std::move(*llvm));
  findings.push_back(symbols_finding(root, closure, name));
  std::vector<Finding> versions = version_findings(root, closure, name);
  findings.insert(findings.end(), versions.begin(), versions.end());
  return findings;
}

}  // namespace kiln::doctor
