#include "target_libc.h"

#include <array>
#include <filesystem>
#include <regex>
#include <utility>

#include <fmt/format.h>

namespace kiln::internal {
namespace {

// The messages of GNU ld ("cannot find crti.o: No such file or directory", "cannot find -lc")
// and of ld.lld ("cannot open crti.o", "unable to find library -lc"), and of gcc and clang when
// the C library's own headers are missing ("stdio.h: No such file", "'stdio.h' file not found").
bool says_libc_missing(std::string_view output) {
  static const std::regex missing(
      R"re(cannot (find|open) (S?crt1|crti|crtn)\.o|(cannot find|unable to find library) -lc\b)re"
      R"re(|fatal error: '?(stdio|stdlib|string|features|bits/libc-header-start)\.h'?:? )re"
      R"re((No such file|file not found))re");
  return std::regex_search(output.begin(), output.end(), missing);
}

// The target triple the command compiles for, or "" when it does not say.
std::string target_of(const std::vector<std::string>& argv) {
  for (size_t i = 1; i < argv.size(); ++i) {
    if (argv[i].starts_with("--target=")) return argv[i].substr(9);
    if ((argv[i] == "-target" || argv[i] == "--target") && i + 1 < argv.size()) return argv[i + 1];
  }
  for (const std::string& arg : argv) {  // a launcher may come first: the first TRIPLE-gcc wins
    std::string name = std::filesystem::path(arg).filename().string();
    for (std::string_view driver : {"-gcc", "-g++", "-cc", "-c++", "-clang", "-clang++"}) {
      size_t at = name.rfind(driver);
      if (at != std::string::npos && at > 0 && name.find('-') < at) return name.substr(0, at);
    }
  }
  return {};
}

// Debian's name for the architecture of `triple` ("aarch64-linux-gnu" -> "arm64"), or "".
std::string debian_arch(const std::string& triple) {
  std::string cpu = triple.substr(0, triple.find('-'));
  if (cpu.starts_with("arm") && triple.ends_with("eabihf")) return "armhf";
  if (cpu.starts_with("arm") && triple.ends_with("eabi")) return "armel";
  static const std::array<std::pair<std::string_view, std::string_view>, 8> arches{{
      {"aarch64", "arm64"},
      {"x86_64", "amd64"},
      {"riscv64", "riscv64"},
      {"powerpc64le", "ppc64el"},
      {"s390x", "s390x"},
      {"mips64el", "mips64el"},
      {"i686", "i386"},
      {"i386", "i386"},
  }};
  for (const auto& [name, arch] : arches) {
    if (cpu == name) return std::string(arch);
  }
  return {};
}

// The package holding the C library for `arch`: the native one for this machine's own.
std::string libc_package(const std::string& arch) {
#if defined(__x86_64__)
  if (arch == "amd64") return "libc6-dev";
#elif defined(__aarch64__)
  if (arch == "arm64") return "libc6-dev";
#endif
  return fmt::format("libc6-dev-{}-cross", arch);
}

}  // namespace

std::string missing_target_libc_note(std::string_view output,
                                     const std::vector<std::string>& argv) {
  if (!says_libc_missing(output)) return {};
  std::string triple = target_of(argv);
  std::string arch = triple.empty() ? "" : debian_arch(triple);
  std::string target = triple.empty() ? "this target" : triple;
  if (arch.empty()) {
    return fmt::format(
        "kiln: the toolchain ran, but the C library for {} (its headers, crt1.o, crti.o, libc) is "
        "not "
        "installed: install that target's libc development files",
        target);
  }
  return fmt::format(
      "kiln: the toolchain ran, but the C library for {} (its headers, crt1.o, crti.o, libc) is "
      "not "
      "installed: on Debian, `apt-get install {}`",
      target, libc_package(arch));
}

}  // namespace kiln::internal
